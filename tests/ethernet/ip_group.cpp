// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/ip_group.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <stdexcept>

namespace mcastd::eth {

std::optional<IpGroup> IpGroup::from_v4(const std::array<std::uint8_t, 4> &bytes) {
    if ((bytes[0] & 0xf0) != 0xe0) // 224.0.0.0/4
        return std::nullopt;
    IpGroup g;
    std::copy(bytes.begin(), bytes.end(), g.addr_.begin());
    return g;
}

std::optional<IpGroup> IpGroup::from_v6(const std::array<std::uint8_t, 16> &bytes) {
    if (bytes[0] != 0xff) // ff00::/8
        return std::nullopt;
    IpGroup g;
    g.v6_ = true;
    g.addr_ = bytes;
    return g;
}

std::optional<IpGroup> IpGroup::parse(std::string_view text) {
    const std::string s(text);
    std::array<std::uint8_t, 4> v4{};
    if (::inet_pton(AF_INET, s.c_str(), v4.data()) == 1)
        return from_v4(v4);
    std::array<std::uint8_t, 16> v6{};
    if (::inet_pton(AF_INET6, s.c_str(), v6.data()) == 1)
        return from_v6(v6);
    return std::nullopt;
}

IpGroup IpGroup::of(std::string_view text) {
    auto g = parse(text);
    if (!g)
        throw std::invalid_argument("not an IP multicast group: '" + std::string(text) + "'");
    return *g;
}

std::string IpGroup::text() const {
    char buf[INET6_ADDRSTRLEN];
    ::inet_ntop(v6_ ? AF_INET6 : AF_INET, addr_.data(), buf, sizeof buf);
    return buf;
}

Mac IpGroup::mac() const {
    if (v6_)
        return {0x33, 0x33, addr_[12], addr_[13], addr_[14], addr_[15]};
    return {0x01, 0x00, 0x5e, static_cast<std::uint8_t>(addr_[1] & 0x7f), addr_[2], addr_[3]};
}

std::ostream &operator<<(std::ostream &out, const IpGroup &group) { return out << group.text(); }

} // namespace mcastd::eth
