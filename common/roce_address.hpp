// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// RoCE's addressing: on a port whose link layer is Ethernet a multicast group is an IP multicast
// group, and its MGID, destination MAC, hop limit and MTU follow from the group, the port's GID
// type and the netdev, by the rules of the Linux kernel's rdma_cm (doc/roce-multicast.md cites
// each). Pure functions shared by the daemon, the protocol codec and librdmamcast; no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/gid.hpp"
#include "common/link_layer.hpp"

namespace mcastd {

// A GID table entry's type. The values are the C API's (enum rdmamcast_gid_type), where zero is
// what a record from a daemon that knows no RoCE means. The kernel gives InfiniBand and RoCE v1
// one type (IB_GID_TYPE_IB == IB_GID_TYPE_ROCE, which sysfs shows as "IB/RoCE v1"); here they
// are two, because a record says which link layer it is for, and both map an IP group alike.
enum class GidType : std::uint8_t { ib = 0, roce_v1 = 1, roce_v2 = 2 };
// A RoCE entry of a GID table (v1 or v2), not an InfiniBand one.
inline constexpr bool is_roce(GidType t) { return t == GidType::roce_v1 || t == GidType::roce_v2; }

// "ib", "roce_v1", "roce_v2": the protocol's names (the join's "gid_type", the record's).
std::string_view gid_type_name(GidType type);
// "roce_v1" or "roce_v2"; nullopt for anything else ("ib" too: a client chooses between the
// RoCE versions only; an InfiniBand port has one kind of GID).
std::optional<GidType> parse_roce_gid_type(std::string_view name);

// A link layer from its name exactly as link_layer_name() and sysfs's link_layer file have it
// (without the newline): "InfiniBand" or "Ethernet"; nullopt for anything else. Strict, unlike
// link_layer_from(), because a protocol reader must refuse what it does not know.
std::optional<LinkLayer> parse_link_layer(std::string_view name);

// An IP address in 16 bytes, network byte order, an IPv4 address as the IPv4-mapped IPv6
// address ::ffff:a.b.c.d (RFC 4291 §2.5.5.2): the form the C API's rdmamcast_record.ip has, and
// the one RoCE v2 uses as the MGID of an IPv4 group.
struct IpAddress {
    std::array<std::uint8_t, 16> bytes{};

    // From a.b.c.d in network byte order.
    static IpAddress v4(const std::array<std::uint8_t, 4> &octets);
    bool is_v4() const; // in ::ffff:0:0/96
    auto operator<=>(const IpAddress &) const = default;
};

// "239.1.2.3" or an IPv6 address in text form ("ff0e::1:2"; "::ffff:239.1.2.3" is the IPv4
// address it maps). Nullopt for anything else.
std::optional<IpAddress> parse_ip(std::string_view text);
// Dotted quad for an IPv4 address, inet_ntop's compressed form otherwise.
std::string format_ip(const IpAddress &ip);

// An IP multicast group: IPv4 224.0.0.0/4 (RFC 5771) or IPv6 ff00::/8 (RFC 4291 §2.7).
bool is_multicast_group(const IpAddress &ip);

// The MGID of IP group `group` on a GID of `type` (the kernel's cma_iboe_set_mgid,
// drivers/infiniband/core/cma.c): an IPv6 group is its own MGID; an IPv4 group a.b.c.d is
// ::ffff:a.b.c.d on RoCE v2 and ff0e::ffff:a.b.c.d on RoCE v1 (and GidType::ib, which the
// kernel does not tell apart from RoCE v1).
Gid roce_mgid(const IpAddress &group, GidType type);

// The IP group an MGID stands for: ::ffff:a.b.c.d (RoCE v2) and ff0e::ffff:a.b.c.d (RoCE v1)
// are the IPv4 group a.b.c.d when that is a multicast address; any other MGID in ff00::/8 is the
// IPv6 group of the same bytes. Nullopt when the MGID is neither.
std::optional<IpAddress> roce_ip_group(const Gid &mgid);

// An Ethernet MAC address.
using Mac = std::array<std::uint8_t, 6>;
// "01:00:5e:01:02:03": six pairs of lowercase hex digits.
std::string format_mac(const Mac &mac);
// Six colon-separated pairs of hex digits (either case); nullopt for anything else.
std::optional<Mac> parse_mac(std::string_view text);

// The destination MAC of the frames a RoCE QP sends to `mgid`, as the kernel resolves it for a
// multicast address handle (ib_resolve_eth_dmac, drivers/infiniband/core/verbs.c): an
// IPv4-mapped MGID (an IPv4 group on RoCE v2) takes 01:00:5e and the low 23 bits of the IPv4
// address (RFC 1112 §6.4); any other MGID 33:33 and its low 32 bits (RFC 2464 §7;
// rdma_get_mcast_mac in include/rdma/ib_addr.h). So an IPv4 group on RoCE v1, whose MGID is
// ff0e::ffff:a.b.c.d, is sent to 33:33:a:b:c:d.
Mac roce_dmac(const Gid &mgid);

// The hop limit of a RoCE group's record, as cma_iboe_join_multicast sets it: 64
// (IPV6_DEFAULT_HOPLIMIT) for an IPv4 group on RoCE v2, whose packets are routable UDP/IP; 1 for
// everything else (RoCE v1 frames are not routed; an IPv6 group on RoCE v2 rdma_cm refuses, see
// rdma_cm_refuses(), after setting 1).
std::uint8_t roce_hop_limit(const IpAddress &group, GidType type);

// rdma_cm refuses this combination: an IPv6 group on a RoCE v2 GID (cma_iboe_join_multicast
// returns -ENOTSUPP: it would need an MLD membership, which the kernel does not make). The
// daemon serves it only where its configuration allows.
bool rdma_cm_refuses(const IpAddress &group, GidType type);

// Whether a membership in this join state holds the host's IP membership of the group, so
// that the kernel reports it (IGMP for IPv4, MLD for IPv6) and answers the queries of snooping
// switches and routers: FullMember and NonMember do, the send-only states do not (they receive
// nothing, and rdma_cm sends no report for them either). Any bit of `join_state` counts.
bool holds_ip_membership(std::uint8_t join_state);

// The IB MTU (enum 1..5 = 256..4096 bytes) of a RoCE port whose netdev has MTU `netdev_mtu`, as
// the kernel's iboe_get_mtu (include/rdma/ib_addr.h) computes it: the largest that fits with
// RoCE's headers (GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28 and ICRC 4 bytes: 96). 0 when none
// fits.
std::uint8_t roce_mtu(unsigned netdev_mtu);

// The Q_Key rdma_cm gives its UDP groups (RDMA_UDP_QKEY): the daemon's default on RoCE ports.
inline constexpr std::uint32_t kRoceDefaultQkey = 0x01234567;
// RoCE has no partitions: every group's P_Key is the default one.
inline constexpr std::uint16_t kRocePkey = 0xffff;

} // namespace mcastd
