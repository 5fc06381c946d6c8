// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The netdevs a RoCE port's GID table names, as the daemon's network namespace has them. sysfs
// names an entry's netdev (gid_attrs/ndevs) but not whether it is still in this namespace, nor
// its index or MTU; the RoCE memberships need all three (doc/roce-multicast.md §3, §8): an entry
// whose netdev went (removed, or moved to another namespace) serves nothing, and one whose netdev
// was made anew (another index) or changed its MTU makes its groups again.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "port/gid_table.hpp"

namespace mcastd::port {

struct NetdevState {
    bool present = false; // in the daemon's network namespace
    int ifindex = 0;
    unsigned mtu = 0; // 0: unreadable
};
using NetdevLookup = std::function<NetdevState(const std::string &netdev)>;

// The netdev in the daemon's network namespace: if_nametoindex and SIOCGIFMTU, two system calls,
// on no IP socket (the shipped unit allows none).
NetdevState lookup_netdev(const std::string &netdev);

// Fills each entry's netdev_gone, ifindex and mtu, looking each netdev named up once: the cost
// of a GID table's check is one lookup per netdev, however many entries share it.
void annotate_netdevs(std::vector<GidEntry> &entries, const NetdevLookup &lookup);

} // namespace mcastd::port
