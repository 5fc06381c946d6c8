// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The multicast group record as the core sees it: an MCMemberRecord's fields in host order.
//
// The core never touches MAD bytes; daemon/sa converts between this and rdma-core's
// struct umad_sa_mcmember_record. Field and join-state numbering follow the IBA (and so
// rdma-core's UMAD_SA_MCM_* constants; daemon/sa static_asserts that they agree).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/gid.hpp"
#include "common/roce_address.hpp"

namespace mcastd {

// JoinState bits (IBA 15.2.5.17; UMAD_SA_MCM_JOIN_STATE_*).
namespace join {
inline constexpr std::uint8_t full = 0x1;
inline constexpr std::uint8_t non_member = 0x2;
inline constexpr std::uint8_t send_only_non_member = 0x4;
inline constexpr std::uint8_t send_only_full = 0x8;
inline constexpr std::uint8_t all = 0xf;
} // namespace join

// "full", "nonmember", "sendonly-nonmember", "sendonly-full"; several bits are joined by '+'.
std::string join_state_name(std::uint8_t bits);

// MCMemberRecord component mask bits (IBA table 197; UMAD_SA_MCM_COMP_MASK_*).
namespace field {
inline constexpr std::uint64_t mgid = 1ULL << 0;
inline constexpr std::uint64_t port_gid = 1ULL << 1;
inline constexpr std::uint64_t qkey = 1ULL << 2;
inline constexpr std::uint64_t mlid = 1ULL << 3;
inline constexpr std::uint64_t mtu_selector = 1ULL << 4;
inline constexpr std::uint64_t mtu = 1ULL << 5;
inline constexpr std::uint64_t tclass = 1ULL << 6;
inline constexpr std::uint64_t pkey = 1ULL << 7;
inline constexpr std::uint64_t rate_selector = 1ULL << 8;
inline constexpr std::uint64_t rate = 1ULL << 9;
inline constexpr std::uint64_t life_selector = 1ULL << 10;
inline constexpr std::uint64_t packet_life = 1ULL << 11;
inline constexpr std::uint64_t sl = 1ULL << 12;
inline constexpr std::uint64_t flow_label = 1ULL << 13;
inline constexpr std::uint64_t hop_limit = 1ULL << 14;
inline constexpr std::uint64_t scope = 1ULL << 15;
inline constexpr std::uint64_t join_state = 1ULL << 16;
inline constexpr std::uint64_t proxy_join = 1ULL << 17;

// Not MCMemberRecord components: the fields a RoCE record adds (doc/roce-multicast.md), in
// bits the IBA mask never uses, so that a `restored` event can say they changed.
inline constexpr std::uint64_t sgid_index = 1ULL << 32;
inline constexpr std::uint64_t netdev = 1ULL << 33;

// The minimum for any Set or Delete (OpenSM JOIN_MC_COMP_MASK). Cannot create.
inline constexpr std::uint64_t join_mask = mgid | port_gid | join_state;
// The minimum to create a group (OpenSM REQUIRED_MC_CREATE_COMP_MASK, 0x130C7).
inline constexpr std::uint64_t create_mask = join_mask | qkey | tclass | pkey | sl | flow_label;
} // namespace field

// Selector in the top two bits of the MTU, rate and packet-lifetime bytes.
enum class Selector : std::uint8_t { greater = 0, less = 1, exactly = 2, best = 3 };

struct McRecord {
    Gid mgid{};
    Gid port_gid{};
    std::uint32_t qkey = 0;
    std::uint16_t mlid = 0;
    Selector mtu_selector = Selector::greater;
    std::uint8_t mtu = 0; // IBA enum: 1=256 .. 5=4096
    std::uint8_t tclass = 0;
    std::uint16_t pkey = 0;
    Selector rate_selector = Selector::greater;
    std::uint8_t rate = 0; // IBA enum: 2=2.5 Gb/s, 3=10 Gb/s, ...
    Selector life_selector = Selector::greater;
    std::uint8_t packet_life = 0;
    std::uint8_t sl = 0;
    std::uint32_t flow_label = 0; // 20 bits
    std::uint8_t hop_limit = 0;
    std::uint8_t scope = 0;      // 4 bits
    std::uint8_t join_state = 0; // 4 bits
    bool proxy_join = false;
    // Where the group lives. On an InfiniBand port (the default, and all an older daemon
    // knows) the rest is unused. On an Ethernet (RoCE) port the group is an IP multicast group
    // (roce_ip_group(mgid)) reached from the GID at sgid_index, of type gid_type, whose
    // netdev (its gid_attrs/ndevs entry) holds the host's IGMP/MLD membership; mlid is 0 and
    // the destination MAC is roce_dmac(mgid).
    LinkLayer link_layer = LinkLayer::infiniband;
    GidType gid_type = GidType::ib;
    std::uint8_t sgid_index = 0;
    std::string netdev{};

    bool operator==(const McRecord &) const = default;
};

// Where a RoCE group is sent from: the source GID's type and index in the port's GID table and
// that GID's netdev. What `list`, `monitor` and the journal say of a RoCE membership besides its
// MGID (the record carries the same three fields).
struct RoceSource {
    GidType gid_type = GidType::roce_v2;
    std::uint8_t sgid_index = 0;
    std::string netdev{};
    bool operator==(const RoceSource &) const = default;
};
// The record's, when it is a RoCE record (link_layer Ethernet); nullopt otherwise.
std::optional<RoceSource> roce_source(const McRecord &r);

// Does `value` satisfy `requested` under `sel`? (IBA selector semantics, as OpenSM and the
// kernel's cmp_rec apply them to an existing group.)
bool selector_matches(Selector sel, std::uint8_t requested, std::uint8_t value);

// MTU enum -> bytes (0 when out of range); rate enum -> Mb/s (0 when unknown).
unsigned mtu_bytes(std::uint8_t mtu_enum);
unsigned rate_mbps(std::uint8_t rate_enum);

} // namespace mcastd
