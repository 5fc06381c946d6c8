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
//
// Restarts (doc/architecture.md §9). Closing a socket ends its memberships and the kernel
// sends the leave, which a snooping switch obeys at once; so every kept socket goes to a
// SocketStore (the service manager's fd store) as it is kept and leaves it just before it is
// closed, and kept() says what each holds for the restart state. The next instance adopts
// the stored sockets (adopt()); without them it makes the memberships again in its own
// namespace, on sockets it makes there.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/error.hpp"
#include "roce/kept_state.hpp"
#include "roce/membership_syscalls.hpp"

namespace mcastd::roce {

// One kernel membership: a group on a netdev of a namespace.
struct MembershipKey {
    std::uint64_t netns = 0; // SO_NETNS_COOKIE
    int ifindex = 0;         // in that namespace
    IpAddress group;
    auto operator<=>(const MembershipKey &) const = default;
};

// Where kept sockets outlive the daemon (the service manager's fd store), by their id.
class SocketStore {
public:
    virtual void store(std::uint64_t socket, int fd) = 0;
    // The previous instance stored it: this one may remove it.
    virtual void adopted(std::uint64_t socket) = 0;
    // Before the socket is closed: a stored copy would keep its memberships.
    virtual void remove(std::uint64_t socket) = 0;

protected:
    ~SocketStore() = default;
};

// What adopt() did with the previous instance's memberships.
struct Adoption {
    std::size_t adopted = 0; // kept sockets' memberships taken over as they were
    std::size_t remade = 0;  // made again in the daemon's namespace (their socket was not stored)
    std::vector<std::string> dropped; // one sentence per membership or socket let go, and why
    // The engine's memberships (MembershipIds) whose kernel membership was let go, each with its
    // sentence: the daemon can no longer hold what they joined, so they are released.
    std::map<std::uint64_t, std::string> lost;
};

class KernelMemberships {
public:
    explicit KernelMemberships(MembershipSyscalls &sys) : sys_(sys) {}
    // Closes every kept socket (out of the store first): their memberships end with them. After
    // hand_over() it only closes its own descriptors.
    ~KernelMemberships();
    KernelMemberships(const KernelMemberships &) = delete;
    KernelMemberships &operator=(const KernelMemberships &) = delete;

    // One more holder of `group` on `netdev` in the namespace of `fd` (a socket the client
    // made there; the caller still owns it and closes it afterwards). The error names the
    // call and the errno that refused it; `if_no_netdev` is added to it when the namespace has
    // no interface of that name (ENODEV).
    std::variant<MembershipKey, Error> acquire(int fd, const std::string &netdev, const IpAddress &group,
                                               std::string_view if_no_netdev = {});
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

    // From now on every kept socket goes to `store` too (set before the first acquire or
    // adopt; null: none).
    void set_store(SocketStore *store) { store_ = store; }
    // Called before the kernel is asked for a membership on a socket the store keeps already:
    // the restart state writes it down first (KeptAdding), so that a crash before its next
    // write of what is held cannot leave it on that socket unnamed.
    using BeforeAdd = std::function<void(const KeptAdding &)>;
    void set_before_add(BeforeAdd fn) { before_add_ = std::move(fn); }
    // The kept sockets and what they hold (KeptMembership::members left empty).
    std::vector<KeptSocket> kept() const;
    // Takes over what the previous instance kept: `saved` (its kept(), each membership's
    // `members` those still held by somebody now) and `stored`, the sockets the store gave back
    // by id (taken: each is kept or closed). A stored socket is adopted when its namespace
    // (SO_NETNS_COOKIE) and family are the saved ones, and each of its memberships when the
    // netdev has the saved index there and somebody holds it (asked of the kernel again: still
    // held, EADDRINUSE, sends nothing); the rest are dropped (the kernel sends the leave). A saved socket the store did not give back has its memberships made
    // again when it was of the daemon's own namespace (a socket the daemon makes there);
    // another namespace's cannot be made without a socket of its own. Stored sockets the state
    // does not name are closed. Every membership let go names its holders in `lost`. Holders in
    // `aside` had set theirs aside (suspend): one only they hold is taken back set aside, not
    // asked of the kernel (on a stored socket; without one it is let go). A membership `adding`
    // says was being added on a stored socket that `saved` does not name there is dropped (a
    // crash came before the state named it). Call once, before anything is acquired.
    Adoption adopt(const std::vector<KeptSocket> &saved, std::map<std::uint64_t, int> stored,
                   const std::set<std::uint64_t> &aside = {}, const std::vector<KeptAdding> &adding = {});
    // The daemon restarts: the stored copies carry the memberships to the next instance, so
    // nothing is dropped or removed from the store from now on, whatever is released.
    void hand_over() { handed_over_ = true; }

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
        std::string netdev; // for kept(): the index is checked against it at adoption
    };
    using Pool = std::pair<std::uint64_t, bool>; // (namespace, IPv6)

    // Makes `key`'s membership on a kept socket of its pool with room; nullopt when every one
    // is full (or none is kept), else the socket or the error that is not "full".
    std::optional<std::variant<SocketId, Error>> add_on_kept(const MembershipKey &key, const std::string &netdev);
    // Keeps a copy of the handed socket `fd` and makes `key`'s membership on it.
    std::variant<SocketId, Error> add_on_handed(int fd, const MembershipKey &key, const std::string &netdev);
    // Makes `key`'s membership on `fd`, a socket of the key's namespace now the daemon's (a
    // copy, or one it made): kept and stored when it worked, closed otherwise.
    std::variant<SocketId, Error> add_on_new(int fd, const MembershipKey &key, const std::string &netdev);
    SocketId keep_socket(int fd, std::uint64_t netns, bool v6, std::optional<SocketId> id = std::nullopt);
    void note_held(SocketId id, const MembershipKey &key, const std::string &netdev, unsigned holders = 1,
                   std::optional<unsigned> active = std::nullopt);
    // Takes over a stored socket of `saved`: the memberships adopted.
    std::size_t adopt_stored(const KeptSocket &saved, int fd, const std::set<std::uint64_t> &aside,
                             const std::vector<KeptAdding> &adding, Adoption &out);
    // Makes `saved`'s memberships again on sockets of the daemon's own namespace.
    void remake(const KeptSocket &saved, const std::set<std::uint64_t> &aside, Adoption &out);
    // `m` is not taken back, for the reason `sentence` says: named, and its members lost.
    static void let_go(const KeptMembership &m, std::string sentence, Adoption &out);
    // The daemon's own namespace (SO_NETNS_COOKIE of a socket it makes), asked once.
    std::optional<std::uint64_t> own_netns();
    // Out of the store, then closed.
    void close_kept(SocketId id, int fd);
    // Makes the key's membership again on the socket that keeps its slot (EADDRINUSE: held).
    std::optional<Error> hold_again(const MembershipKey &key, const std::string &netdev);
    // The kernel drops the key's membership (its socket keeps the slot); the error names a drop
    // the kernel refused.
    std::optional<Error> drop(const MembershipKey &key, SocketId id);
    // One membership fewer on the socket: it has room again, or is closed when it holds none.
    void unhold(SocketId id);
    void forget_socket(SocketId id); // closed (out of the store first) and forgotten
    // Makes `key`'s membership for `holders` (`active` of them not set aside) on a socket of the
    // daemon's own namespace (a kept one with room, or one it makes); the error when it cannot.
    std::optional<Error> acquire_own(const MembershipKey &key, const std::string &netdev, unsigned holders,
                                     unsigned active);

    MembershipSyscalls &sys_;
    std::map<MembershipKey, Held> held_;
    std::map<SocketId, Socket> sockets_;
    std::map<Pool, std::set<SocketId>> room_; // kept sockets the kernel has not said are full
    SocketId next_ = 1;
    SocketStore *store_ = nullptr;
    BeforeAdd before_add_;
    bool handed_over_ = false;
    std::optional<std::optional<std::uint64_t>> own_netns_; // asked, and what was answered
};

// The error of a membership call the kernel refused: "IP_ADD_MEMBERSHIP 239.1.2.3 on veth1:
// ENODEV (No such device)". `full` says the socket had no room (ENOBUFS on IPv4, ENOMEM on IPv6).
bool says_full(const IpAddress &group, int err);

} // namespace mcastd::roce
