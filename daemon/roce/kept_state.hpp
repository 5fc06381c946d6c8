// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What a RoCE port's kernel memberships are, for the next instance of the daemon
// (doc/architecture.md §9, doc/roce-multicast.md §9): the restart state keeps it
// (restart/saved_state.hpp), the sockets themselves ride the service manager's fd store.
// Value types, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/gid.hpp"
#include "common/roce_address.hpp"

namespace mcastd::roce {

// One kernel membership on a kept socket, and the engine's memberships that hold it.
struct KeptMembership {
    IpAddress group;
    int ifindex = 0;    // the netdev's index in the socket's namespace when it was made
    std::string netdev; // its name there: the index is looked up again to tell a new netdev
    std::vector<std::uint64_t> members; // MembershipIds
    bool operator==(const KeptMembership &) const = default;
};

// One socket the memberships are held on: made by a client in its namespace (or by the
// daemon in its own), stored under "roce-membership-<id>" (server/fd_store.hpp).
struct KeptSocket {
    std::uint64_t id = 0;
    std::uint64_t netns = 0; // SO_NETNS_COOKIE
    bool v6 = false;
    std::vector<KeptMembership> memberships;
    bool operator==(const KeptSocket &) const = default;
};

// The GID entry a group was made from: checked against the port's table at adoption as after
// any change of it, so a source that moved or went while no instance watched is handled as then.
struct KeptSource {
    unsigned index = 0;
    Gid gid{};
    std::string netdev;
    int ifindex = 0;
    unsigned mtu = 0;
    bool operator==(const KeptSource &) const = default;
};

// A group the RoCE backend made: the GID type it is sent with (an IPv6 group's MGID does not
// say) and its source (none: a group waiting for one; absent from older files, where the source
// is read again from the port).
struct KeptGroup {
    std::string device;
    std::uint8_t port = 0;
    Gid mgid{};
    GidType type = GidType::roce_v2;
    std::optional<KeptSource> source{};
    bool operator==(const KeptGroup &) const = default;
};

// A kernel membership about to be added on a socket the fd store keeps: written to the change
// log before the kernel is asked (KernelMemberships::set_before_add), so that after a crash
// before the next write of the section the next instance drops one the section does not name.
struct KeptAdding {
    std::uint64_t socket = 0;
    IpAddress group;
    int ifindex = 0;
    bool operator==(const KeptAdding &) const = default;
};

struct KeptRoce {
    std::vector<KeptGroup> groups;
    std::vector<KeptSocket> sockets;
    // From the change log only: what was being added after the section was last written (a
    // later section replaces them, as it names what came of them).
    std::vector<KeptAdding> adding;
    bool empty() const { return groups.empty() && sockets.empty() && adding.empty(); }
    bool operator==(const KeptRoce &) const = default;
};

} // namespace mcastd::roce
