// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sa/mad_codec.hpp"

#include <endian.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_sa_mcm.h>
#include <infiniband/umad_types.h>

#include <algorithm>
#include <cstdio>
#include <cstddef>
#include <cstring>
#include <optional>

namespace mcastd::sa {

// The core's numbering must be the IBA's, which rdma-core spells UMAD_SA_MCM_*.
static_assert(field::mgid == UMAD_SA_MCM_COMP_MASK_MGID);
static_assert(field::port_gid == UMAD_SA_MCM_COMP_MASK_PORT_GID);
static_assert(field::qkey == UMAD_SA_MCM_COMP_MASK_QKEY);
static_assert(field::mlid == UMAD_SA_MCM_COMP_MASK_MLID);
static_assert(field::mtu_selector == UMAD_SA_MCM_COMP_MASK_MTU_SEL);
static_assert(field::mtu == UMAD_SA_MCM_COMP_MASK_MTU);
static_assert(field::tclass == UMAD_SA_MCM_COMP_MASK_TCLASS);
static_assert(field::pkey == UMAD_SA_MCM_COMP_MASK_PKEY);
static_assert(field::rate_selector == UMAD_SA_MCM_COMP_MASK_RATE_SEL);
static_assert(field::rate == UMAD_SA_MCM_COMP_MASK_RATE);
static_assert(field::life_selector == UMAD_SA_MCM_COMP_MASK_LIFE_TIME_SEL);
static_assert(field::packet_life == UMAD_SA_MCM_COMP_MASK_LIFE_TIME);
static_assert(field::sl == UMAD_SA_MCM_COMP_MASK_SL);
static_assert(field::flow_label == UMAD_SA_MCM_COMP_MASK_FLOW_LABEL);
static_assert(field::hop_limit == UMAD_SA_MCM_COMP_MASK_HOP_LIMIT);
static_assert(field::scope == UMAD_SA_MCM_COMP_MASK_SCOPE);
static_assert(field::join_state == UMAD_SA_MCM_COMP_MASK_JOIN_STATE);
static_assert(field::proxy_join == UMAD_SA_MCM_COMP_MASK_PROXY_JOIN);

static_assert(join::full == UMAD_SA_MCM_JOIN_STATE_FULL_MEMBER);
static_assert(join::non_member == UMAD_SA_MCM_JOIN_STATE_NON_MEMBER);
static_assert(join::send_only_non_member == UMAD_SA_MCM_JOIN_STATE_SEND_ONLY_NON_MEMBER);
static_assert(join::send_only_full == UMAD_SA_MCM_JOIN_STATE_SEND_ONLY_FULL_MEMBER);

static_assert(static_cast<unsigned>(Selector::greater) == UMAD_SA_SELECTOR_GREATER_THAN);
static_assert(static_cast<unsigned>(Selector::less) == UMAD_SA_SELECTOR_LESS_THAN);
static_assert(static_cast<unsigned>(Selector::exactly) == UMAD_SA_SELECTOR_EXACTLY);
static_assert(static_cast<unsigned>(Selector::best) == UMAD_SA_SELECTOR_LARGEST_AVAIL);

static_assert(mad::header_size == sizeof(umad_hdr));

// The wire layouts the codec relies on (doc/sa-multicast.md §2 and §4).
static_assert(sizeof(umad_sa_packet) == kMadSize);
static_assert(offsetof(umad_sa_packet, comp_mask) == 48);
static_assert(offsetof(umad_sa_packet, data) == 56);
static_assert(sizeof(umad_sa_mcmember_record) == 56);
static_assert(offsetof(umad_sa_mcmember_record, sl_flow_hop) == 44);
static_assert(offsetof(umad_sa_mcmember_record, scope_state) == 48);
static_assert(offsetof(umad_sa_mcmember_record, proxy_join) == 49);

namespace {

// SMInfoRecord has no rdma-core struct; offsets within the SA data (doc/sa-multicast.md §16).
namespace smir {
constexpr std::size_t lid = 0;
constexpr std::size_t guid = 4;
constexpr std::size_t sm_key = 12;
constexpr std::size_t act_count = 20;
constexpr std::size_t prio_state = 24;
constexpr std::size_t size = 32;
} // namespace smir
static_assert(smir::size <= UMAD_LEN_SA_DATA);

constexpr std::uint8_t kSixBits = UMAD_SA_RATE_MTU_PKT_LIFE_MASK;
constexpr std::uint8_t kProxyJoinBit = 0x80;

// Big-endian loads/stores into byte arrays that have no struct field of their own.
void store_be16(std::uint8_t *p, std::uint16_t v) {
    const std::uint16_t be = htobe16(v);
    std::memcpy(p, &be, sizeof be);
}
void store_be32(std::uint8_t *p, std::uint32_t v) {
    const std::uint32_t be = htobe32(v);
    std::memcpy(p, &be, sizeof be);
}
void store_be64(std::uint8_t *p, std::uint64_t v) {
    const std::uint64_t be = htobe64(v);
    std::memcpy(p, &be, sizeof be);
}
std::uint16_t load_be16(const std::uint8_t *p) {
    std::uint16_t be;
    std::memcpy(&be, p, sizeof be);
    return be16toh(be);
}
std::uint32_t load_be32(const std::uint8_t *p) {
    std::uint32_t be;
    std::memcpy(&be, p, sizeof be);
    return be32toh(be);
}
std::uint64_t load_be64(const std::uint8_t *p) {
    std::uint64_t be;
    std::memcpy(&be, p, sizeof be);
    return be64toh(be);
}

std::uint8_t pack_selector(Selector sel, std::uint8_t value) {
    return umad_sa_set_rate_mtu_or_life(static_cast<std::uint8_t>(sel), value);
}
Selector selector_of(std::uint8_t byte) {
    return static_cast<Selector>((byte >> UMAD_SA_SELECTOR_SHIFT) & UMAD_SA_SELECTOR_MASK);
}

// A zeroed SA MAD with the common header filled in. SM_Key stays 0 ("untrusted",
// doc/sa-multicast.md §1): a wrong non-zero key makes OpenSM drop the request silently.
umad_sa_packet sa_packet(std::uint8_t method, std::uint16_t status, std::uint64_t tid,
                         std::uint16_t attr_id, std::uint64_t comp_mask) {
    umad_sa_packet p{};
    p.mad_hdr.base_version = mad::base_version;
    p.mad_hdr.mgmt_class = mad::class_subn_adm;
    p.mad_hdr.class_version = mad::sa_class_version;
    p.mad_hdr.method = method;
    p.mad_hdr.status = htobe16(status);
    p.mad_hdr.tid = htobe64(tid);
    p.mad_hdr.attr_id = htobe16(attr_id);
    p.comp_mask = htobe64(comp_mask);
    return p;
}

MadBuf to_buf(const umad_sa_packet &p) {
    MadBuf buf;
    std::memcpy(buf.data(), &p, sizeof p);
    return buf;
}

// Checks the parts of an SA response header common to every attribute; on success `out`
// holds the whole packet, copied so that fields are read through properly aligned members.
std::optional<CodecError> check_sa_response(std::span<const std::uint8_t> bytes,
                                            std::uint16_t attr_id, umad_sa_packet &out) {
    using C = CodecError::Code;
    if (bytes.size() != sizeof out)
        return CodecError{C::bad_length, static_cast<std::uint32_t>(std::min<std::size_t>(
                                             bytes.size(), UINT32_MAX)),
                          static_cast<std::uint32_t>(sizeof out)};
    std::memcpy(&out, bytes.data(), sizeof out);
    const umad_hdr &h = out.mad_hdr;
    if (h.base_version != mad::base_version)
        return CodecError{C::bad_base_version, h.base_version, mad::base_version};
    if (h.mgmt_class != mad::class_subn_adm)
        return CodecError{C::wrong_class, h.mgmt_class, mad::class_subn_adm};
    if (h.class_version != mad::sa_class_version)
        return CodecError{C::bad_class_version, h.class_version, mad::sa_class_version};
    if (!(h.method & mad::response_bit))
        return CodecError{C::not_a_response, h.method, 0};
    if (be16toh(h.attr_id) != attr_id)
        return CodecError{C::wrong_attribute, be16toh(h.attr_id), attr_id};
    return std::nullopt;
}

std::uint8_t normal_response(SaMethod m) {
    return m == SaMethod::del ? mad::method_delete_resp : mad::method_get_resp;
}

} // namespace

std::string CodecError::message() const {
    char buf[96];
    switch (code) {
    case Code::bad_length:
        std::snprintf(buf, sizeof buf, "MAD of %u bytes, expected %u", got, want);
        break;
    case Code::bad_base_version:
        std::snprintf(buf, sizeof buf, "base version %u, expected %u", got, want);
        break;
    case Code::wrong_class:
        std::snprintf(buf, sizeof buf, "management class 0x%02x, expected 0x%02x", got, want);
        break;
    case Code::bad_class_version:
        std::snprintf(buf, sizeof buf, "class version %u, expected %u", got, want);
        break;
    case Code::not_a_response:
        std::snprintf(buf, sizeof buf, "method 0x%02x is a request, not a response", got);
        break;
    case Code::unexpected_method:
        std::snprintf(buf, sizeof buf, "response method 0x%02x, expected 0x%02x", got, want);
        break;
    case Code::wrong_attribute:
        std::snprintf(buf, sizeof buf, "attribute 0x%04x, expected 0x%04x", got, want);
        break;
    default:
        std::snprintf(buf, sizeof buf, "undecodable MAD");
        break;
    }
    return buf;
}

Decoded<MadHeader> decode_mad_header(std::span<const std::uint8_t> mad) {
    if (mad.size() < sizeof(umad_hdr))
        return CodecError{CodecError::Code::bad_length, static_cast<std::uint32_t>(mad.size()),
                          static_cast<std::uint32_t>(sizeof(umad_hdr))};
    umad_hdr h;
    std::memcpy(&h, mad.data(), sizeof h);
    return MadHeader{
        .base_version = h.base_version,
        .mgmt_class = h.mgmt_class,
        .class_version = h.class_version,
        .method = h.method,
        .status = be16toh(h.status),
        .class_specific = be16toh(h.class_specific),
        .tid = be64toh(h.tid),
        .attr_id = be16toh(h.attr_id),
        .attr_mod = be32toh(h.attr_mod),
    };
}

void set_mad_tid(MadBuf &mad, std::uint64_t tid) {
    store_be64(mad.data() + offsetof(umad_hdr, tid), tid);
}

std::uint8_t request_method(SaMethod m) {
    switch (m) {
    case SaMethod::get:
        return mad::method_get;
    case SaMethod::set:
        return mad::method_set;
    case SaMethod::del:
        return mad::method_delete;
    }
    return mad::method_get;
}

MadBuf encode_mcmember_mad(const McMemberMad &m) {
    const McRecord &r = m.record;
    umad_sa_mcmember_record rec{};
    std::memcpy(rec.mgid, r.mgid.data(), sizeof rec.mgid);
    std::memcpy(rec.portgid, r.port_gid.data(), sizeof rec.portgid);
    rec.qkey = htobe32(r.qkey);
    rec.mlid = htobe16(r.mlid);
    rec.mtu = pack_selector(r.mtu_selector, r.mtu);
    rec.tclass = r.tclass;
    rec.pkey = htobe16(r.pkey);
    rec.rate = pack_selector(r.rate_selector, r.rate);
    rec.pkt_life = pack_selector(r.life_selector, r.packet_life);
    // rdma-core masks the flow label but not SL or HopLimit; SL must not spill past 4 bits.
    rec.sl_flow_hop = umad_sa_mcm_set_sl_flow_hop(r.sl & 0x0f, r.flow_label, r.hop_limit);
    rec.scope_state = umad_sa_mcm_set_scope_state(r.scope & 0x0f, r.join_state & 0x0f);
    rec.proxy_join = r.proxy_join ? kProxyJoinBit : 0;

    umad_sa_packet p = sa_packet(m.method, m.status, m.tid, mad::attr_mcmember_record, m.comp_mask);
    std::memcpy(p.data, &rec, sizeof rec);
    return to_buf(p);
}

MadBuf encode_mcmember_request(SaMethod method, const McRecord &record, std::uint64_t comp_mask,
                               std::uint64_t tid) {
    return encode_mcmember_mad(McMemberMad{.method = request_method(method),
                                           .status = 0,
                                           .tid = tid,
                                           .comp_mask = comp_mask,
                                           .record = record});
}

Decoded<McMemberMad> decode_mcmember_response(std::span<const std::uint8_t> bytes,
                                              SaMethod request) {
    umad_sa_packet p;
    if (auto err = check_sa_response(bytes, mad::attr_mcmember_record, p))
        return *err;

    const std::uint8_t method = p.mad_hdr.method;
    const std::uint16_t status = be16toh(p.mad_hdr.status);
    const std::uint8_t normal = normal_response(request);
    const bool failed_echo = status != 0 && method == (request_method(request) | mad::response_bit);
    if (method != normal && !failed_echo)
        return CodecError{CodecError::Code::unexpected_method, method, normal};

    umad_sa_mcmember_record rec;
    std::memcpy(&rec, p.data, sizeof rec);

    McMemberMad m;
    m.method = method;
    m.status = status;
    m.tid = be64toh(p.mad_hdr.tid);
    m.comp_mask = be64toh(p.comp_mask);
    McRecord &r = m.record;
    std::memcpy(r.mgid.data(), rec.mgid, sizeof rec.mgid);
    std::memcpy(r.port_gid.data(), rec.portgid, sizeof rec.portgid);
    r.qkey = be32toh(rec.qkey);
    r.mlid = be16toh(rec.mlid);
    r.mtu_selector = selector_of(rec.mtu);
    r.mtu = umad_sa_get_rate_mtu_or_life(rec.mtu);
    r.tclass = rec.tclass;
    r.pkey = be16toh(rec.pkey);
    r.rate_selector = selector_of(rec.rate);
    r.rate = umad_sa_get_rate_mtu_or_life(rec.rate);
    r.life_selector = selector_of(rec.pkt_life);
    r.packet_life = umad_sa_get_rate_mtu_or_life(rec.pkt_life);
    umad_sa_mcm_get_sl_flow_hop(rec.sl_flow_hop, &r.sl, &r.flow_label, &r.hop_limit);
    umad_sa_mcm_get_scope_state(rec.scope_state, &r.scope, &r.join_state);
    r.proxy_join = umad_sa_mcm_get_proxy_join(&rec) != 0;
    return m;
}

MadBuf encode_sminfo_mad(const SmInfoMad &m) {
    umad_sa_packet p = sa_packet(m.method, m.status, m.tid, mad::attr_sm_info_record, m.comp_mask);
    const SmInfoRecord &r = m.record;
    store_be16(p.data + smir::lid, r.lid);
    store_be64(p.data + smir::guid, r.guid);
    store_be64(p.data + smir::sm_key, r.sm_key);
    store_be32(p.data + smir::act_count, r.act_count);
    p.data[smir::prio_state] =
        static_cast<std::uint8_t>((r.priority & 0x0f) << 4 | (r.sm_state & 0x0f));
    return to_buf(p);
}

MadBuf encode_sminfo_get(const SmInfoRecord &match, std::uint64_t comp_mask, std::uint64_t tid) {
    return encode_sminfo_mad(SmInfoMad{.method = mad::method_get,
                                       .status = 0,
                                       .tid = tid,
                                       .comp_mask = comp_mask,
                                       .record = match});
}

Decoded<SmInfoMad> decode_sminfo_response(std::span<const std::uint8_t> bytes) {
    umad_sa_packet p;
    if (auto err = check_sa_response(bytes, mad::attr_sm_info_record, p))
        return *err;
    if (p.mad_hdr.method != mad::method_get_resp)
        return CodecError{CodecError::Code::unexpected_method, p.mad_hdr.method,
                          mad::method_get_resp};

    SmInfoMad m;
    m.method = p.mad_hdr.method;
    m.status = be16toh(p.mad_hdr.status);
    m.tid = be64toh(p.mad_hdr.tid);
    m.comp_mask = be64toh(p.comp_mask);
    SmInfoRecord &r = m.record;
    r.lid = load_be16(p.data + smir::lid);
    r.guid = load_be64(p.data + smir::guid);
    r.sm_key = load_be64(p.data + smir::sm_key);
    r.act_count = load_be32(p.data + smir::act_count);
    r.priority = static_cast<std::uint8_t>(p.data[smir::prio_state] >> 4);
    r.sm_state = static_cast<std::uint8_t>(p.data[smir::prio_state] & 0x0f);
    return m;
}

} // namespace mcastd::sa
