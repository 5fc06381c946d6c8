// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// An IP multicast group as an Ethernet fabric sees it: its address, and the destination MAC
// its frames carry (01:00:5e + the low 23 bits of an IPv4 group, RFC 1112 §6.4; 33:33 + the low
// 32 bits of an IPv6 group, RFC 2464 §7). The kernel tables and the frame counter of the
// Ethernet bed (doc/ethernet-bed.md) speak of groups in these terms.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "common/roce_address.hpp"

namespace mcastd::eth {

// MACs as RoCE's addressing writes and reads them ("02:00:4d:00:00:01").
using mcastd::format_mac;
using mcastd::Mac;
using mcastd::parse_mac;

class IpGroup {
public:
    // "239.1.2.3" or "ff0e::1:2" (any text inet_pton takes); nullopt for anything that is not
    // an IPv4 (224.0.0.0/4) or IPv6 (ff00::/8) multicast address.
    static std::optional<IpGroup> parse(std::string_view text);
    // parse() for a literal the caller knows is right; throws std::invalid_argument otherwise.
    static IpGroup of(std::string_view text);
    // From the address bytes in network order; nullopt when not multicast.
    static std::optional<IpGroup> from_v4(const std::array<std::uint8_t, 4> &bytes);
    static std::optional<IpGroup> from_v6(const std::array<std::uint8_t, 16> &bytes);

    bool is_v6() const { return v6_; }
    // The canonical text (inet_ntop), so two spellings of one group print alike.
    std::string text() const;
    // The destination MAC of the group's frames.
    Mac mac() const;
    // Network order; an IPv4 group uses the first 4 bytes, the rest are zero.
    const std::array<std::uint8_t, 16> &bytes() const { return addr_; }

    auto operator<=>(const IpGroup &) const = default;

private:
    bool v6_ = false;
    std::array<std::uint8_t, 16> addr_{};
};

// The canonical text, so GoogleTest prints groups (and maps keyed by them) readably.
std::ostream &operator<<(std::ostream &out, const IpGroup &group);

} // namespace mcastd::eth
