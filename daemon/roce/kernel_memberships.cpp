// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "roce/kernel_memberships.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mcastd::roce {

namespace {

// What a refused call means for the join: the client's socket, namespace or netdev cannot do
// it (invalid-argument), the kernel's per-socket limit (limit), or something unexpected.
Errc errc_of(int err) {
    switch (err) {
    case ENODEV:
    case ENXIO:
    case EADDRNOTAVAIL:
    case EINVAL:
    case EAFNOSUPPORT:
    case ENOTSOCK:
    case EBADF:
        return Errc::invalid_argument;
    case ENOBUFS:
    case ENOMEM:
        return Errc::limit;
    default:
        return Errc::internal;
    }
}

Error refused(std::string call, int err) { return Error{errc_of(err), call + ": " + errno_text(err), {}}; }

std::string on(const IpAddress &group, const std::string &netdev) { return format_ip(group) + " on " + netdev; }

} // namespace

std::string errno_text(int err) {
    const char *name = ::strerrorname_np(err);
    return std::string(name ? name : "errno " + std::to_string(err)) + " (" + std::strerror(err) + ")";
}

const char *membership_option(const IpAddress &group, bool add) {
    if (group.is_v4())
        return add ? "IP_ADD_MEMBERSHIP" : "IP_DROP_MEMBERSHIP";
    return add ? "IPV6_ADD_MEMBERSHIP" : "IPV6_DROP_MEMBERSHIP";
}

bool says_full(const IpAddress &group, int err) { return err == (group.is_v4() ? ENOBUFS : ENOMEM); }

KernelMemberships::~KernelMemberships() {
    for (auto &[id, s] : sockets_) {
        if (handed_over_)
            sys_.close(s.fd); // the stored copy keeps its memberships for the next instance
        else
            close_kept(id, s.fd);
    }
}

void KernelMemberships::close_kept(SocketId id, int fd) {
    if (store_ && !handed_over_)
        store_->remove(id);
    sys_.close(fd);
}

unsigned KernelMemberships::holders(const MembershipKey &key) const {
    auto it = held_.find(key);
    return it == held_.end() ? 0 : it->second.holders;
}

unsigned KernelMemberships::active(const MembershipKey &key) const {
    auto it = held_.find(key);
    return it == held_.end() ? 0 : it->second.active;
}

// A membership every holder had set aside (suspend) is made again on the socket that keeps its
// slot; one the kernel still holds answers EADDRINUSE, which changes nothing.
std::optional<Error> KernelMemberships::hold_again(const MembershipKey &key, const std::string &netdev) {
    const int err = sys_.add_membership(sockets_.at(held_.at(key).socket).fd, key.group, key.ifindex);
    if (err && err != EADDRINUSE)
        return refused(std::string(membership_option(key.group, true)) + " " + on(key.group, netdev), err);
    return std::nullopt;
}

std::variant<MembershipKey, Error> KernelMemberships::acquire(int fd, const std::string &netdev,
                                                              const IpAddress &group, std::string_view if_no_netdev) {
    const bool v6 = !group.is_v4();
    const auto kind = sys_.kind(fd);
    if (const Errno *err = std::get_if<Errno>(&kind))
        return refused("the socket handed with the join", err->value);
    const SocketKind k = std::get<SocketKind>(kind);
    if (k.family != (v6 ? AF_INET6 : AF_INET) || k.type != SOCK_DGRAM)
        return Error{Errc::invalid_argument,
                     std::string("the socket handed with the join must be a UDP socket of the group's family (") +
                         (v6 ? "AF_INET6" : "AF_INET") + ") made in the client's network namespace",
                     {}};
    const auto cookie = sys_.netns_cookie(fd);
    if (const Errno *err = std::get_if<Errno>(&cookie))
        return refused("SO_NETNS_COOKIE", err->value); // Linux 5.14 or later
    const auto index = sys_.ifindex(fd, netdev);
    if (const Errno *err = std::get_if<Errno>(&index)) {
        Error e = refused("SIOCGIFINDEX " + netdev + " in the client's network namespace", err->value);
        if (err->value == ENODEV)
            e.message += if_no_netdev;
        return e;
    }
    const MembershipKey key{std::get<std::uint64_t>(cookie), std::get<int>(index), group};

    if (auto it = held_.find(key); it != held_.end()) {
        // The kernel holds it already: one more to count, nothing to send. Unless every holder
        // had set it aside (another group of the same IP group whose source is gone).
        if (it->second.active == 0)
            if (auto err = hold_again(key, netdev))
                return std::move(*err);
        ++it->second.holders;
        ++it->second.active;
        return key;
    }
    std::variant<SocketId, Error> made = SocketId{0};
    if (auto kept = add_on_kept(key, netdev))
        made = std::move(*kept);
    else
        made = add_on_handed(fd, key, netdev);
    if (Error *err = std::get_if<Error>(&made))
        return std::move(*err);
    note_held(std::get<SocketId>(made), key, netdev);
    return key;
}

std::optional<std::variant<KernelMemberships::SocketId, Error>>
KernelMemberships::add_on_kept(const MembershipKey &key, const std::string &netdev) {
    auto pool = room_.find(Pool{key.netns, !key.group.is_v4()});
    if (pool == room_.end())
        return std::nullopt;
    std::set<SocketId> &room = pool->second;
    while (!room.empty()) {
        const SocketId id = *room.begin();
        if (store_ && before_add_ && !handed_over_)
            before_add_(KeptAdding{id, key.group, key.ifindex});
        const int err = sys_.add_membership(sockets_.at(id).fd, key.group, key.ifindex);
        if (!err)
            return id;
        if (!says_full(key.group, err))
            return refused(std::string(membership_option(key.group, true)) + " " + on(key.group, netdev), err);
        room.erase(room.begin()); // full: it gets room again when one of its memberships goes
    }
    return std::nullopt;
}

std::variant<KernelMemberships::SocketId, Error> KernelMemberships::add_on_handed(int fd, const MembershipKey &key,
                                                                                  const std::string &netdev) {
    const auto copy = sys_.keep(fd);
    if (const Errno *err = std::get_if<Errno>(&copy))
        return refused("F_DUPFD_CLOEXEC of the socket handed with the join", err->value);
    return add_on_new(std::get<int>(copy), key, netdev);
}

std::variant<KernelMemberships::SocketId, Error> KernelMemberships::add_on_new(int fd, const MembershipKey &key,
                                                                               const std::string &netdev) {
    if (const int err = sys_.add_membership(fd, key.group, key.ifindex)) {
        sys_.close(fd);
        Error e = refused(std::string(membership_option(key.group, true)) + " " + on(key.group, netdev), err);
        if (says_full(key.group, err))
            e.message += key.group.is_v4() ? " on a socket holding nothing (net.ipv4.igmp_max_memberships)"
                                           : " on a socket holding nothing (net.core.optmem_max)";
        return e;
    }
    return keep_socket(fd, key.netns, !key.group.is_v4());
}

KernelMemberships::SocketId KernelMemberships::keep_socket(int fd, std::uint64_t netns, bool v6,
                                                           std::optional<SocketId> id) {
    const SocketId sid = id ? *id : next_++;
    sockets_.emplace(sid, Socket{fd, netns, v6, 0});
    room_[Pool{netns, v6}].insert(sid);
    if (store_ && !id)
        store_->store(sid, fd); // an adopted one is in the store already
    return sid;
}

void KernelMemberships::note_held(SocketId id, const MembershipKey &key, const std::string &netdev,
                                  unsigned holders, std::optional<unsigned> active) {
    ++sockets_.at(id).held;
    held_.emplace(key, Held{id, holders, active.value_or(holders), netdev});
}

namespace {

// Of a kept membership's holders, how many are not set aside.
unsigned active_of(const KeptMembership &m, const std::set<std::uint64_t> &aside) {
    return static_cast<unsigned>(
        std::count_if(m.members.begin(), m.members.end(), [&](std::uint64_t id) { return !aside.count(id); }));
}

} // namespace

std::optional<Error> KernelMemberships::drop(const MembershipKey &key, SocketId id) {
    if (const int err = sys_.drop_membership(sockets_.at(id).fd, key.group, key.ifindex))
        return refused(std::string(membership_option(key.group, false)) + " " + format_ip(key.group) +
                           " on interface " + std::to_string(key.ifindex),
                       err);
    return std::nullopt;
}

std::optional<Error> KernelMemberships::release(const MembershipKey &key, bool suspended) {
    auto it = held_.find(key);
    if (handed_over_ || it == held_.end())
        return std::nullopt; // handed over: the next instance holds it
    Held &h = it->second;
    const bool in_kernel = h.active > 0;
    if (!suspended && h.active > 0)
        --h.active;
    const SocketId id = h.socket;
    if (--h.holders > 0) // the others keep it; set aside by all that are left, the kernel lets it go
        return in_kernel && h.active == 0 ? drop(key, id) : std::nullopt;
    held_.erase(it);
    std::optional<Error> out = in_kernel ? drop(key, id) : std::nullopt;
    unhold(id);
    return out;
}

void KernelMemberships::suspend(const MembershipKey &key) {
    auto it = held_.find(key);
    if (it == held_.end() || it->second.active == 0 || --it->second.active > 0)
        return;
    // The socket keeps its slot: the membership comes back on it (hold_again).
    const int err = sys_.drop_membership(sockets_.at(it->second.socket).fd, key.group, key.ifindex);
    (void)err; // ENODEV, EADDRNOTAVAIL: the netdev went, and the membership with it
}

void KernelMemberships::unhold(SocketId id) {
    Socket &s = sockets_.at(id);
    const Pool pool{s.netns, s.v6};
    if (--s.held > 0) {
        room_[pool].insert(id); // the kernel counts one fewer on it
        return;
    }
    forget_socket(id); // a socket that holds nothing costs a descriptor for nothing
}

void KernelMemberships::forget_socket(SocketId id) {
    const Socket s = sockets_.at(id);
    const Pool pool{s.netns, s.v6};
    close_kept(id, s.fd);
    sockets_.erase(id);
    if (auto r = room_.find(pool); r != room_.end()) {
        r->second.erase(id);
        if (r->second.empty())
            room_.erase(r);
    }
}

std::variant<MembershipKey, Error> KernelMemberships::reassert(const MembershipKey &key, const std::string &netdev,
                                                               bool suspended) {
    auto it = held_.find(key);
    if (it == held_.end())
        return Error{Errc::internal, "no kernel membership of " + format_ip(key.group) + " to re-assert", {}};
    const SocketId id = it->second.socket;
    const int fd = sockets_.at(id).fd;
    const auto index = sys_.ifindex(fd, netdev);
    if (const Errno *err = std::get_if<Errno>(&index))
        return refused("SIOCGIFINDEX " + netdev + " in the client's network namespace", err->value);
    if (std::get<int>(index) == key.ifindex) {
        // Still held (EADDRINUSE): nothing goes out. Made again (0): the kernel reports it.
        if (auto err = hold_again(key, netdev))
            return std::move(*err);
        if (suspended)
            ++it->second.active;
        return key;
    }
    // The netdev came back under another index: one holder moves there, on a kept socket.
    MembershipKey moved = key;
    moved.ifindex = std::get<int>(index);
    if (auto there = held_.find(moved); there != held_.end()) {
        if (there->second.active == 0)
            if (auto err = hold_again(moved, netdev))
                return std::move(*err);
        ++there->second.holders;
        ++there->second.active;
    } else {
        auto kept = add_on_kept(moved, netdev);
        if (!kept)
            return Error{Errc::limit,
                         std::string(membership_option(key.group, true)) + " " + on(key.group, netdev) +
                             ": every socket kept for the namespace is full",
                         {}};
        if (Error *err = std::get_if<Error>(&*kept))
            return std::move(*err);
        note_held(std::get<SocketId>(*kept), moved, netdev);
    }
    release(key, suspended); // the old index is gone: its drop may fail, and nothing is left to keep
    return moved;
}

std::vector<KeptSocket> KernelMemberships::kept() const {
    std::map<SocketId, KeptSocket> out;
    for (const auto &[id, s] : sockets_)
        out.emplace(id, KeptSocket{id, s.netns, s.v6, {}});
    for (const auto &[key, h] : held_)
        out.at(h.socket).memberships.push_back(KeptMembership{key.group, key.ifindex, h.netdev, {}});
    std::vector<KeptSocket> v;
    for (auto &[id, k] : out)
        v.push_back(std::move(k));
    return v;
}

Adoption KernelMemberships::adopt(const std::vector<KeptSocket> &saved, std::map<std::uint64_t, int> stored,
                                  const std::set<std::uint64_t> &aside, const std::vector<KeptAdding> &adding) {
    Adoption out;
    // Ids go on from the previous instance's: a name in the store is never reused.
    for (const KeptSocket &k : saved)
        next_ = std::max(next_, k.id + 1);
    for (const auto &[id, fd] : stored) {
        next_ = std::max(next_, id + 1);
        if (store_)
            store_->adopted(id); // in the store already: kept as it is, or removed below
    }
    for (const KeptSocket &k : saved) {
        auto fd = stored.find(k.id);
        if (fd == stored.end()) {
            remake(k, aside, out);
            continue;
        }
        const int f = fd->second;
        stored.erase(fd);
        out.adopted += adopt_stored(k, f, aside, adding, out);
    }
    for (const auto &[id, fd] : stored) {
        out.dropped.push_back("stored socket " + std::to_string(id) +
                              " closed: the restart state does not say what it holds");
        close_kept(id, fd);
    }
    return out;
}

std::size_t KernelMemberships::adopt_stored(const KeptSocket &saved, int fd, const std::set<std::uint64_t> &aside,
                                            const std::vector<KeptAdding> &adding, Adoption &out) {
    const std::string which = "stored socket " + std::to_string(saved.id);
    const auto cookie = sys_.netns_cookie(fd);
    const auto kind = sys_.kind(fd);
    const bool same = std::holds_alternative<std::uint64_t>(cookie) &&
                      std::get<std::uint64_t>(cookie) == saved.netns && std::holds_alternative<SocketKind>(kind) &&
                      std::get<SocketKind>(kind).family == (saved.v6 ? AF_INET6 : AF_INET);
    if (!same) {
        const std::string sentence = which + " closed: it is not the socket the state names (another network "
                                             "namespace or family); its " +
                                     std::to_string(saved.memberships.size()) + " membership(s) end";
        out.dropped.push_back(sentence);
        for (const KeptMembership &m : saved.memberships)
            for (std::uint64_t member : m.members)
                out.lost.emplace(member, sentence);
        close_kept(saved.id, fd);
        return 0;
    }
    const SocketId id = keep_socket(fd, saved.netns, saved.v6, saved.id);
    std::size_t adopted = 0;
    for (const KeptMembership &m : saved.memberships) {
        const MembershipKey key{saved.netns, m.ifindex, m.group};
        const auto index = sys_.ifindex(fd, m.netdev);
        std::string why;
        if (m.members.empty())
            why = "nobody holds it now";
        else if (!std::holds_alternative<int>(index))
            why = m.netdev + " is gone (" + errno_text(std::get<Errno>(index).value) + ")";
        else if (std::get<int>(index) != m.ifindex)
            why = m.netdev + " is another netdev now (index " + std::to_string(std::get<int>(index)) + ", not " +
                  std::to_string(m.ifindex) + ")";
        else if (held_.count(key))
            why = "it is held on another socket too";
        const unsigned active = active_of(m, aside);
        if (why.empty() && active == 0) {
            // Set aside by every holder: the kernel lets it go (it had, unless a crash came
            // first) and the socket keeps its slot for making it again (hold_again).
            sys_.drop_membership(fd, m.group, m.ifindex);
            note_held(id, key, m.netdev, static_cast<unsigned>(m.members.size()), 0);
            ++adopted;
            continue;
        }
        if (why.empty()) {
            // The socket may have changed after the state was written (a crash): asked again,
            // the kernel says "still held" (EADDRINUSE, nothing sent) or makes it (a report).
            if (const int err = sys_.add_membership(fd, m.group, m.ifindex); err && err != EADDRINUSE)
                why = std::string(membership_option(m.group, true)) + " refused: " + errno_text(err);
        }
        if (why.empty()) {
            note_held(id, key, m.netdev, static_cast<unsigned>(m.members.size()), active);
            ++adopted;
            continue;
        }
        sys_.drop_membership(fd, m.group, m.ifindex); // the leave goes out now (it may be gone already)
        let_go(m, format_ip(m.group) + " on " + m.netdev + " (" + which + ") dropped: " + why, out);
    }
    // Added after the state was last written, and not named since: nobody here holds it.
    for (const KeptAdding &a : adding) {
        if (a.socket != saved.id || std::any_of(saved.memberships.begin(), saved.memberships.end(),
                                                [&](const KeptMembership &m) {
                                                    return m.group == a.group && m.ifindex == a.ifindex;
                                                }))
            continue;
        if (sys_.drop_membership(fd, a.group, a.ifindex) == 0) // else the add had failed, or never came
            out.dropped.push_back(format_ip(a.group) + " on interface " + std::to_string(a.ifindex) + " (" + which +
                                  ") dropped: it was added after the restart state was last written");
    }
    if (sockets_.at(id).held == 0)
        forget_socket(id);
    return adopted;
}

void KernelMemberships::remake(const KeptSocket &saved, const std::set<std::uint64_t> &aside, Adoption &out) {
    const auto own = own_netns();
    for (const KeptMembership &m : saved.memberships) {
        if (m.members.empty())
            continue; // nobody to make it for
        const std::string what = format_ip(m.group) + " on " + m.netdev;
        const unsigned active = active_of(m, aside);
        if (active == 0) {
            let_go(m, what + " is not taken back: it was set aside (its source GID gone) and its socket was not "
                             "kept (no fd store) to make it again on",
                   out);
            continue;
        }
        if (!own || *own != saved.netns) {
            let_go(m,
                   what + " in network namespace " + std::to_string(saved.netns) +
                       " is not made again: its socket was not kept (no fd store) and the daemon has none of "
                       "that namespace",
                   out);
            continue;
        }
        const MembershipKey key{saved.netns, m.ifindex, m.group};
        auto made = acquire_own(key, m.netdev, static_cast<unsigned>(m.members.size()), active);
        if (made) {
            let_go(m, what + " is not made again: " + made->message, out);
            continue;
        }
        ++out.remade;
    }
}

void KernelMemberships::let_go(const KeptMembership &m, std::string sentence, Adoption &out) {
    for (std::uint64_t member : m.members)
        out.lost.emplace(member, sentence);
    out.dropped.push_back(std::move(sentence));
}

std::optional<Error> KernelMemberships::acquire_own(const MembershipKey &key, const std::string &netdev,
                                                    unsigned holders, unsigned active) {
    if (held_.count(key))
        return Error{Errc::internal, "it is held already", {}};
    std::variant<SocketId, Error> made = SocketId{0};
    if (auto kept = add_on_kept(key, netdev)) {
        made = std::move(*kept);
    } else {
        const auto fd = sys_.open_socket(!key.group.is_v4());
        if (const Errno *err = std::get_if<Errno>(&fd))
            return refused("socket(2) in the daemon's network namespace", err->value);
        const auto index = sys_.ifindex(std::get<int>(fd), netdev);
        if (!std::holds_alternative<int>(index) || std::get<int>(index) != key.ifindex) {
            sys_.close(std::get<int>(fd));
            return Error{Errc::invalid_argument, netdev + " is not the netdev it was (index " +
                                                     std::to_string(key.ifindex) + ")", {}};
        }
        made = add_on_new(std::get<int>(fd), key, netdev);
    }
    if (Error *err = std::get_if<Error>(&made))
        return std::move(*err);
    note_held(std::get<SocketId>(made), key, netdev, holders, active);
    return std::nullopt;
}

std::optional<std::uint64_t> KernelMemberships::own_netns() {
    if (own_netns_)
        return *own_netns_;
    own_netns_.emplace();
    const auto fd = sys_.open_socket(false);
    if (!std::holds_alternative<int>(fd))
        return std::nullopt;
    if (const auto cookie = sys_.netns_cookie(std::get<int>(fd)); std::holds_alternative<std::uint64_t>(cookie))
        *own_netns_ = std::get<std::uint64_t>(cookie);
    sys_.close(std::get<int>(fd));
    return *own_netns_;
}

} // namespace mcastd::roce
