// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/roce_address.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>

#include "common/record.hpp"

namespace mcastd {

namespace {

// ::ffff:0:0/96, the IPv4-mapped prefix.
constexpr std::array<std::uint8_t, 12> kV4Mapped{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
// ff0e::ffff:0:0/96, RoCE v1's prefix for an IPv4 group (cma_iboe_set_mgid).
constexpr std::array<std::uint8_t, 12> kRoceV1V4{0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

template <std::size_t N> bool starts_with(const std::array<std::uint8_t, 16> &a, const std::array<std::uint8_t, N> &p) {
    return std::equal(p.begin(), p.end(), a.begin());
}

bool ipv4_multicast(std::uint8_t first_octet) { return (first_octet & 0xf0) == 0xe0; }

} // namespace

std::string_view gid_type_name(GidType type) {
    switch (type) {
    case GidType::ib: return "ib";
    case GidType::roce_v1: return "roce_v1";
    case GidType::roce_v2: return "roce_v2";
    }
    return "?";
}

std::optional<GidType> parse_roce_gid_type(std::string_view name) {
    for (GidType t : {GidType::roce_v1, GidType::roce_v2})
        if (name == gid_type_name(t))
            return t;
    return std::nullopt;
}

std::optional<LinkLayer> parse_link_layer(std::string_view name) {
    for (LinkLayer l : {LinkLayer::infiniband, LinkLayer::ethernet})
        if (name == link_layer_name(l))
            return l;
    return std::nullopt;
}

IpAddress IpAddress::v4(const std::array<std::uint8_t, 4> &octets) {
    IpAddress a;
    std::copy(kV4Mapped.begin(), kV4Mapped.end(), a.bytes.begin());
    std::copy(octets.begin(), octets.end(), a.bytes.begin() + 12);
    return a;
}

bool IpAddress::is_v4() const { return starts_with(bytes, kV4Mapped); }

std::optional<IpAddress> parse_ip(std::string_view text) {
    // inet_pton wants a terminated string; no address is longer than INET6_ADDRSTRLEN.
    if (text.empty() || text.size() >= INET6_ADDRSTRLEN)
        return std::nullopt;
    const std::string s(text);
    std::array<std::uint8_t, 4> v4{};
    if (::inet_pton(AF_INET, s.c_str(), v4.data()) == 1)
        return IpAddress::v4(v4);
    IpAddress a;
    if (::inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1)
        return a;
    return std::nullopt;
}

std::string format_ip(const IpAddress &ip) {
    char buf[INET6_ADDRSTRLEN];
    const bool v4 = ip.is_v4();
    if (!::inet_ntop(v4 ? AF_INET : AF_INET6, ip.bytes.data() + (v4 ? 12 : 0), buf, sizeof buf))
        return {};
    return buf;
}

bool is_multicast_group(const IpAddress &ip) {
    return ip.is_v4() ? ipv4_multicast(ip.bytes[12]) : ip.bytes[0] == 0xff;
}

Gid roce_mgid(const IpAddress &group, GidType type) {
    if (!group.is_v4())
        return group.bytes;
    Gid mgid = group.bytes; // ::ffff:a.b.c.d, RoCE v2's
    if (type != GidType::roce_v2)
        std::copy(kRoceV1V4.begin(), kRoceV1V4.end(), mgid.begin());
    return mgid;
}

std::optional<IpAddress> roce_ip_group(const Gid &mgid) {
    const bool v2_form = starts_with(mgid, kV4Mapped), v1_form = starts_with(mgid, kRoceV1V4);
    if ((v2_form || v1_form) && ipv4_multicast(mgid[12]))
        return IpAddress::v4({mgid[12], mgid[13], mgid[14], mgid[15]});
    if (mgid[0] != 0xff)
        return std::nullopt;
    return IpAddress{mgid};
}

std::string format_mac(const Mac &mac) {
    char text[18];
    std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                  mac[4], mac[5]);
    return text;
}

std::optional<Mac> parse_mac(std::string_view text) {
    Mac mac{};
    if (text.size() != 17)
        return std::nullopt;
    for (std::size_t i = 0; i < mac.size(); ++i) {
        if (i > 0 && text[i * 3 - 1] != ':')
            return std::nullopt;
        unsigned byte = 0;
        for (char c : text.substr(i * 3, 2)) {
            const int digit = c >= '0' && c <= '9'   ? c - '0'
                              : c >= 'a' && c <= 'f' ? c - 'a' + 10
                              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                     : -1;
            if (digit < 0)
                return std::nullopt;
            byte = byte * 16 + static_cast<unsigned>(digit);
        }
        mac[i] = static_cast<std::uint8_t>(byte);
    }
    return mac;
}

Mac roce_dmac(const Gid &mgid) {
    if (starts_with(mgid, kV4Mapped))
        return {0x01, 0x00, 0x5e, static_cast<std::uint8_t>(mgid[13] & 0x7f), mgid[14], mgid[15]};
    return {0x33, 0x33, mgid[12], mgid[13], mgid[14], mgid[15]};
}

std::uint8_t roce_hop_limit(const IpAddress &group, GidType type) {
    return group.is_v4() && type == GidType::roce_v2 ? 64 : 1;
}

bool rdma_cm_refuses(const IpAddress &group, GidType type) {
    return !group.is_v4() && type == GidType::roce_v2;
}

bool holds_ip_membership(std::uint8_t join_state) {
    return (join_state & (join::full | join::non_member)) != 0;
}

std::uint8_t roce_mtu(unsigned netdev_mtu) {
    constexpr unsigned kHeaders = 40 + 8 + 12 + 4 + 28 + 4; // GRH UDP BTH XRC AtomicETH ICRC
    if (netdev_mtu < kHeaders)
        return 0;
    for (std::uint8_t e = 5; e >= 1; --e)
        if (mtu_bytes(e) <= netdev_mtu - kHeaders)
            return e;
    return 0;
}

} // namespace mcastd
