// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The kernel's multicast tables as text, parsed: a host's IGMP and MLD memberships
// (/proc/net/igmp, /proc/net/igmp6: what its sockets joined) and a bridge's multicast database
// (`bridge -j mdb show`: what the switch learned from the reports). These are the judges of the
// Ethernet bed (doc/ethernet-bed.md §4); they are pure, so their parsing is unit-tested.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ethernet/ip_group.hpp"

namespace mcastd::eth {

// Group -> Users: how many sockets of the namespace joined it on that interface.
using GroupUsers = std::map<IpGroup, int>;

// /proc/net/igmp: per interface name, its IPv4 groups. The kernel prints a group as its
// 32-bit value in host byte order (239.1.2.3 is 030201EF on x86). Throws std::runtime_error
// naming the line it cannot read.
std::map<std::string, GroupUsers> parse_proc_igmp(std::string_view text);

// /proc/net/igmp6: per interface name, its IPv6 groups (32 hex digits, network order).
std::map<std::string, GroupUsers> parse_proc_igmp6(std::string_view text);

// One line of a bridge's multicast database: the bridge port that reported `group` ("p1", or
// the bridge itself when its own stack joined), and the entry's state ("temp": learned from a
// report and timed, "permanent": configured).
struct MdbEntry {
    std::string port;
    IpGroup group;
    std::string state;
    std::string source; // an (S,G) entry's source address; "" for (*,G)
    bool operator==(const MdbEntry &) const = default;
};

// `bridge -j mdb show`: every entry of every bridge in the output. Throws std::runtime_error
// when the JSON or an entry's group cannot be read.
std::vector<MdbEntry> parse_mdb_json(std::string_view json);

// `bridge -j link show`: each bridge port's name and STP state ("disabled" until the kernel
// has seen its carrier, then "forwarding" on a bridge without STP). Throws std::runtime_error
// when the JSON cannot be read.
std::map<std::string, std::string> parse_bridge_port_states(std::string_view json);

// `ip -j -6 addr show dev D`: D's link-local addresses that can be a packet's source now (not
// tentative, not failed DAD). Throws std::runtime_error when the JSON cannot be read.
std::vector<std::string> parse_usable_link_locals(std::string_view json);

} // namespace mcastd::eth
