// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Directed-route SMP Get(PortInfo) to the local port: a pure encoder and a strict decoder.
//
// This is how the daemon reads its port's live LID, PortState and MasterSMLID without the SA
// (doc/sa-multicast.md §17). Under umad2sim it is the only live source: the sysfs that
// libibumad reads is a snapshot. The transport sends the request to the permissive LID on
// QP0 through an agent registered for class 0x81 version 1; nothing here does I/O.
//
// Layouts: IBA 14.2.1.2 (DR SMP) and 14.2.5.6 (PortInfo), cross-checked with rdma-core's
// struct umad_smp and libibmad's PortInfo field table, and OpenSM's ib_port_info_t.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <variant>

namespace mcastd::port {

inline constexpr std::size_t kSmpSize = 256;
inline constexpr std::size_t kPortInfoSize = 64; // the SMP data area
using SmpBuf = std::array<std::uint8_t, kSmpSize>;

inline constexpr std::uint8_t kSmpClassDirectedRoute = 0x81;
inline constexpr std::uint8_t kSmpClassVersion = 1;
inline constexpr std::uint16_t kAttrPortInfo = 0x0015;
// Where the request goes: the permissive LID, QP0.
inline constexpr std::uint16_t kPermissiveLid = 0xFFFF;
inline constexpr std::uint32_t kSmiQp = 0;

// The PortInfo fields the daemon uses, host order. Enumerations are kept as the raw IBA
// numbers (see port_attributes.hpp for PortState/PhysState and record.hpp's mtu_bytes()).
struct PortInfo {
    std::uint64_t gid_prefix = 0;
    std::uint16_t lid = 0;
    std::uint16_t master_sm_lid = 0;
    std::uint32_t capability_mask = 0;
    std::uint8_t local_port_num = 0;
    std::uint8_t link_width_active = 0; // bit set: 1 = 1X, 2 = 4X, 4 = 8X, 8 = 12X, 16 = 2X
    std::uint8_t port_state = 0;        // 1 Down .. 4 Active (validated)
    std::uint8_t phys_state = 0;        // 1 Sleep .. 7 PhyTest (validated); 5 = LinkUp
    std::uint8_t lmc = 0;               // 0..7
    std::uint8_t link_speed_active = 0; // 1 = 2.5, 2 = 5.0, 4 = 10.0 Gb/s per lane
    std::uint8_t neighbor_mtu = 0;      // MTU enum: 1 = 256 .. 5 = 4096
    std::uint8_t master_sm_sl = 0;      // the SL for SA MADs
    std::uint8_t mtu_cap = 0;           // MTU enum
    bool client_reregister = false;
    std::uint8_t subnet_timeout = 0;
    std::uint16_t capability_mask2 = 0;
    std::uint8_t link_speed_ext_active = 0; // 0 = none, 1 = FDR 14, 2 = EDR 25, ...

    bool operator==(const PortInfo &) const = default;
};

// Why a MAD was not a usable PortInfo answer.
struct SmpError {
    // The SMP's status bits 14:0 when the responder refused the request (e.g. 0x001C
    // "invalid attribute or modifier"); 0 when the bytes themselves are malformed.
    std::uint16_t status = 0;
    std::string message;
};

struct PortInfoReply {
    std::uint64_t tid = 0; // as received: match on the low 32 bits (the upper ones get rewritten)
    PortInfo info;
};

// The Get(PortInfo) request to the local port: hop pointer and count 0, DrSLID = DrDLID =
// 0xFFFF, M_Key 0, AttributeModifier = `port_num` (a CA answers for the port the SMP arrived
// on; ibsim accepts 0 as well).
SmpBuf encode_portinfo_get(std::uint64_t tid, std::uint8_t port_num);

// Decodes a complete 256-byte SMP that should answer encode_portinfo_get(). Rejects anything
// else: wrong size, base/class version, class, method (a bounced request still says Get),
// attribute, direction bit, non-zero hop count, a non-zero status, or PortInfo content that
// decode_portinfo() rejects.
std::variant<PortInfoReply, SmpError> decode_portinfo_reply(std::span<const std::uint8_t> mad);

// Decodes the 64-byte PortInfo attribute alone (the SMP data area, or what `smpdump` prints).
// Rejects a wrong size and reserved PortState/PhysState values (the daemon acts on those two);
// other reserved bits are ignored, as the IBA asks of receivers.
std::variant<PortInfo, SmpError> decode_portinfo(std::span<const std::uint8_t> data);

} // namespace mcastd::port
