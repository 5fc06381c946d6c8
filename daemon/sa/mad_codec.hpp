// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SA MAD encode/decode: MCMemberRecord (Get, Set, Delete and their responses) and
// SMInfoRecord (Get and its response), built on rdma-core's struct umad_sa_packet and
// struct umad_sa_mcmember_record. Layouts: doc/sa-multicast.md §2-§5 and §16.
//
// Encoders are total: they take host-order values and always produce a 256-byte MAD.
// Decoders read bytes from the wire (and from the fuzzer): they check the length and every
// header field they rely on, and return a CodecError naming what was wrong instead of a value.
// They never read outside the span and never have undefined behaviour, whatever the bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <variant>

#include <infiniband/umad_sa.h>
#include <infiniband/umad_types.h>

#include "common/record.hpp"
#include "core/sa_service.hpp"
#include "sa/mad_transport.hpp"

namespace mcastd::sa {

// MAD header constants (IBA 13.4.2; UMAD_* in rdma-core).
namespace mad {
inline constexpr std::uint8_t base_version = UMAD_BASE_VERSION;
inline constexpr std::uint8_t class_subn_adm = UMAD_CLASS_SUBN_ADM;
inline constexpr std::uint8_t class_smp_directed = UMAD_CLASS_SUBN_DIRECTED_ROUTE;
inline constexpr std::uint8_t sa_class_version = UMAD_SA_CLASS_VERSION;
inline constexpr std::uint8_t method_get = UMAD_METHOD_GET;
inline constexpr std::uint8_t method_set = UMAD_METHOD_SET;
inline constexpr std::uint8_t method_get_resp = UMAD_METHOD_GET_RESP;
inline constexpr std::uint8_t method_delete = UMAD_SA_METHOD_DELETE;
inline constexpr std::uint8_t method_delete_resp = UMAD_SA_METHOD_DELETE_RESP;
inline constexpr std::uint8_t response_bit = UMAD_METHOD_RESP_MASK;
inline constexpr std::uint16_t attr_sm_info_record = UMAD_SA_ATTR_SM_INFO_REC;
inline constexpr std::uint16_t attr_mcmember_record = UMAD_SA_ATTR_MCMEMBER_REC;
// The common MAD header (base version .. attribute modifier) is this long.
inline constexpr std::size_t header_size = 24;
} // namespace mad

// SMInfoRecord component mask bits (doc/sa-multicast.md §16; bit 1 is reserved).
namespace sminfo_field {
inline constexpr std::uint64_t lid = 1ULL << 0;
inline constexpr std::uint64_t guid = 1ULL << 2;
inline constexpr std::uint64_t sm_key = 1ULL << 3;
inline constexpr std::uint64_t act_count = 1ULL << 4;
inline constexpr std::uint64_t priority = 1ULL << 5;
inline constexpr std::uint64_t sm_state = 1ULL << 6;
} // namespace sminfo_field

// SMInfo.SMState values.
namespace sm_state {
inline constexpr std::uint8_t not_active = 0;
inline constexpr std::uint8_t discovering = 1;
inline constexpr std::uint8_t standby = 2;
inline constexpr std::uint8_t master = 3;
} // namespace sm_state

// Why a MAD could not be decoded. `got` and `want` carry the offending and the expected value
// (the length in bytes for bad_length; a method, class or attribute otherwise).
struct CodecError {
    enum class Code : std::uint8_t {
        bad_length,         // not exactly one 256-byte MAD (or shorter than a MAD header)
        bad_base_version,   // byte 0 is not 1
        wrong_class,        // byte 1 is not the expected management class
        bad_class_version,  // byte 2 is not the expected class version
        not_a_response,     // the R bit (0x80) of the method is clear
        unexpected_method,  // a response, but not one that answers the request's method
        wrong_attribute,    // not the attribute that was asked for
    };
    Code code;
    std::uint32_t got = 0;
    std::uint32_t want = 0;

    // "attribute 0x0011, expected 0x0038"
    std::string message() const;
    bool operator==(const CodecError &) const = default;
};

// Either a decoded value or the reason there is none. (std::expected is C++23.)
template <class T> class Decoded {
public:
    Decoded(T value) : v_(std::move(value)) {}
    Decoded(CodecError error) : v_(error) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    // Only when ok().
    const T &value() const { return std::get<0>(v_); }
    const T *operator->() const { return &value(); }
    // Only when !ok().
    const CodecError &error() const { return std::get<1>(v_); }

private:
    std::variant<T, CodecError> v_;
};

// The common MAD header in host order.
struct MadHeader {
    std::uint8_t base_version = 0;
    std::uint8_t mgmt_class = 0;
    std::uint8_t class_version = 0;
    std::uint8_t method = 0;
    std::uint16_t status = 0;
    std::uint16_t class_specific = 0;
    std::uint64_t tid = 0;
    std::uint16_t attr_id = 0;
    std::uint32_t attr_mod = 0;

    bool operator==(const MadHeader &) const = default;
};

// Reads the first 24 bytes of any MAD; checks nothing but the length.
Decoded<MadHeader> decode_mad_header(std::span<const std::uint8_t> mad);

// Overwrites the TransactionID (bytes 8-15, big-endian).
void set_mad_tid(MadBuf &mad, std::uint64_t tid);

// The method byte for an SaMethod (Get 0x01, Set 0x02, Delete 0x15).
std::uint8_t request_method(SaMethod m);

// An SA MAD carrying one MCMemberRecord, any method. SM_Key is always 0 on encode.
struct McMemberMad {
    std::uint8_t method = 0;
    std::uint16_t status = 0;
    std::uint64_t tid = 0;
    std::uint64_t comp_mask = 0; // mcastd::field:: bits
    McRecord record;

    bool operator==(const McMemberMad &) const = default;
};

// Encodes every field of m.record, whatever the mask says (the SA reads only masked ones).
// Values wider than their wire field are truncated to it (SL, Scope and JoinState to 4 bits,
// FlowLabel to 20, MTU/rate/packet life to 6): the core validates ranges before asking.
MadBuf encode_mcmember_mad(const McMemberMad &m);

// A request as the daemon sends it: status 0, the request's method.
MadBuf encode_mcmember_request(SaMethod method, const McRecord &record, std::uint64_t comp_mask,
                               std::uint64_t tid);

// Decodes the answer to an MCMemberRecord request of method `request`. Accepted methods:
// the normal response (GetResp 0x81 for Get and Set, DeleteResp 0x95 for Delete) with any
// status, and request|0x80 with a non-zero status (how some SAs return a failed Set; OpenSM
// uses GetResp). The record is decoded whatever the status (error responses echo the request).
Decoded<McMemberMad> decode_mcmember_response(std::span<const std::uint8_t> mad, SaMethod request);

// SMInfoRecord (attribute 0x0018), host order.
struct SmInfoRecord {
    std::uint16_t lid = 0;    // LID of the SM's port
    std::uint64_t guid = 0;   // the SM's port GUID
    std::uint64_t sm_key = 0; // 0 in answers to untrusted requests
    std::uint32_t act_count = 0;
    std::uint8_t priority = 0; // 4 bits
    std::uint8_t sm_state = 0; // 4 bits, sm_state::

    bool operator==(const SmInfoRecord &) const = default;
};

struct SmInfoMad {
    std::uint8_t method = 0;
    std::uint16_t status = 0;
    std::uint64_t tid = 0;
    std::uint64_t comp_mask = 0; // sminfo_field:: bits
    SmInfoRecord record;

    bool operator==(const SmInfoMad &) const = default;
};

// Priority and SMState are truncated to 4 bits each.
MadBuf encode_sminfo_mad(const SmInfoMad &m);

// Get(SMInfoRecord) matching `match` on the fields in comp_mask.
MadBuf encode_sminfo_get(const SmInfoRecord &match, std::uint64_t comp_mask, std::uint64_t tid);

// Decodes the answer to a Get(SMInfoRecord): GetResp (0x81), any status.
Decoded<SmInfoMad> decode_sminfo_response(std::span<const std::uint8_t> mad);

} // namespace mcastd::sa
