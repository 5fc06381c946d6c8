// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The host's IP memberships a RoCE port's members hold (doc/roce-multicast.md §7): one kernel
// membership per (network namespace, netdev, IP group), however many members share it, made on
// sockets of that namespace that clients handed over.
//
// A member's join comes with a UDP socket its client made in its own namespace. The namespace
// is the socket's SO_NETNS_COOKIE, the netdev's index is looked up on that socket (the name is
// the namespace's), and the first member of a (namespace, index, group) makes the membership
// (IP_ADD_MEMBERSHIP / IPV6_ADD_MEMBERSHIP); the others only count. The last one to go drops
// it, and the kernel sends the leave that lets a snooping switch prune the port.
//
// A socket holds at most net.ipv4.igmp_max_memberships IPv4 groups (20 by default; one more is
// ENOBUFS) and what net.core.optmem_max allows of IPv6 ones (ENOMEM), so groups are packed onto
// the sockets kept for a namespace and family: a new membership goes on a kept socket with
// room, and the handed socket is kept (a copy of its descriptor) only when every kept one is
// full; otherwise the caller closes it at once. N groups cost about N/20 descriptors, and a
// socket left holding nothing is closed.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>

#include "common/error.hpp"
#include "roce/membership_syscalls.hpp"

namespace mcastd::roce {

// One kernel membership: a group on a netdev of a namespace.
struct MembershipKey {
    std::uint64_t netns = 0; // SO_NETNS_COOKIE
    int ifindex = 0;         // in that namespace
    IpAddress group;
    auto operator<=>(const MembershipKey &) const = default;
};

class KernelMemberships {
public:
    explicit KernelMemberships(MembershipSyscalls &sys) : sys_(sys) {}
    // Closes every kept socket: their memberships end with them.
    ~KernelMemberships();
    KernelMemberships(const KernelMemberships &) = delete;
    KernelMemberships &operator=(const KernelMemberships &) = delete;

    // One more holder of `group` on `netdev` in the namespace of `fd` (a socket the client
    // made there; the caller still owns it and closes it afterwards). The error names the
    // call and the errno that refused it.
    std::variant<MembershipKey, Error> acquire(int fd, const std::string &netdev, const IpAddress &group);
    // One holder fewer (`suspended`: one suspend() had set aside); the last one drops the
    // membership. An error names a drop the kernel refused: the membership is forgotten anyway
    // (its socket may still hold it until closed).
    std::optional<Error> release(const MembershipKey &key, bool suspended = false);
    // One holder sets its membership aside (its source GID is gone): once every holder of the
    // key has, the kernel drops the membership (its leave lets a snooping switch prune the
    // port) and the socket is kept for making it again. A netdev that is gone took the
    // membership with it: the drop's ENODEV or EADDRNOTAVAIL is no error.
    void suspend(const MembershipKey &key);
    // After the port's memberships may have been lost, or a suspended holder's source is back
    // (`suspended`): the netdev's index is looked up again in the key's namespace and the kernel
    // asked to hold the group there (it may still: then nothing changes and no report goes out).
    // One holder moves to the new key when the netdev has a new index. Returns the key held now.
    std::variant<MembershipKey, Error> reassert(const MembershipKey &key, const std::string &netdev,
                                                bool suspended = false);

    // Kernel memberships held (set aside ones included), sockets kept, and a membership's
    // holders (0: none) and those of them not set aside.
    std::size_t memberships() const { return held_.size(); }
    std::size_t sockets() const { return sockets_.size(); }
    unsigned holders(const MembershipKey &key) const;
    unsigned active(const MembershipKey &key) const;

private:
    using SocketId = std::uint64_t;
    struct Socket {
        int fd = -1;
        std::uint64_t netns = 0;
        bool v6 = false;
        std::size_t held = 0; // memberships on it
    };
    struct Held {
        SocketId socket = 0;
        unsigned holders = 0;
        unsigned active = 0; // holders not set aside (suspend): the kernel holds it while > 0
    };
    using Pool = std::pair<std::uint64_t, bool>; // (namespace, IPv6)

    // Makes `key`'s membership on a kept socket of its pool with room; nullopt when every one
    // is full (or none is kept), else the socket or the error that is not "full".
    std::optional<std::variant<SocketId, Error>> add_on_kept(const MembershipKey &key, const std::string &netdev);
    // Keeps a copy of the handed socket `fd` and makes `key`'s membership on it.
    std::variant<SocketId, Error> add_on_handed(int fd, const MembershipKey &key, const std::string &netdev);
    void note_held(SocketId id, const MembershipKey &key);
    // Makes the key's membership again on the socket that keeps its slot (EADDRINUSE: held).
    std::optional<Error> hold_again(const MembershipKey &key, const std::string &netdev);
    // The kernel drops the key's membership (its socket keeps the slot); the error names a drop
    // the kernel refused.
    std::optional<Error> drop(const MembershipKey &key, SocketId id);
    // One membership fewer on the socket: it has room again, or is closed when it holds none.
    void unhold(SocketId id);

    MembershipSyscalls &sys_;
    std::map<MembershipKey, Held> held_;
    std::map<SocketId, Socket> sockets_;
    std::map<Pool, std::set<SocketId>> room_; // kept sockets the kernel has not said are full
    SocketId next_ = 1;
};

// The error of a membership call the kernel refused: "IP_ADD_MEMBERSHIP 239.1.2.3 on veth1:
// ENODEV (No such device)". `full` says the socket had no room (ENOBUFS on IPv4, ENOMEM on IPv6).
bool says_full(const IpAddress &group, int err);

} // namespace mcastd::roce
