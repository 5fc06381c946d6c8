// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// MembershipSyscalls over a model of the kernel: network namespaces with named netdevs,
// sockets made in one of them (a descriptor and its copies share one socket, whose memberships
// end with its last descriptor), a per-socket limit on memberships (ENOBUFS for IPv4 past
// net.ipv4.igmp_max_memberships, ENOMEM for IPv6 past what optmem allows), and the kernel's
// count per (namespace, netdev, group): /proc/net/igmp's Users.
//
// Descriptors are real (of /dev/null), so that a RoceJoin may close the client's copy as it
// does in the daemon: the model notices a descriptor closed behind its back at its next call.
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "roce/membership_syscalls.hpp"

namespace mcastd::test {

class FakeSyscalls final : public roce::MembershipSyscalls {
public:
    using Key = std::tuple<std::uint64_t, int, IpAddress>; // (namespace, ifindex, group)

    unsigned max_v4 = 20; // net.ipv4.igmp_max_memberships
    unsigned max_v6 = 30; // what net.core.optmem_max leaves room for
    std::optional<int> cookie_errno;           // SO_NETNS_COOKIE refused (a kernel before 5.14)
    std::optional<int> add_errno;              // the next add refused with this (once)
    std::uint64_t own_netns = 0;               // the daemon's namespace: where open_socket() makes one
    unsigned adds = 0, drops = 0, keeps = 0, closes = 0, opens = 0; // calls made
    unsigned still_held = 0; // adds answered EADDRINUSE: held already, nothing sent
    std::function<void(const IpAddress &)> on_add; // told of each add before it is answered

    // A netdev `name` with `index` in namespace `netns`.
    void netdev(std::uint64_t netns, const std::string &name, int index) { netdevs_[{netns, name}] = index; }
    void remove_netdev(std::uint64_t netns, const std::string &name) { netdevs_.erase({netns, name}); }

    FakeSyscalls() = default;
    FakeSyscalls(const FakeSyscalls &) = delete;
    FakeSyscalls &operator=(const FakeSyscalls &) = delete;
    ~FakeSyscalls() override {
        for (const auto &[fd, sock] : fds_)
            ::close(fd);
    }

    // A socket a client made in `netns`: its descriptor.
    int socket(std::uint64_t netns, int family = AF_INET, int type = SOCK_DGRAM) {
        reap();
        const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            throw std::runtime_error("FakeSyscalls: cannot open /dev/null");
        const int sock = next_socket_++;
        sockets_[sock] = Socket{netns, family, type, {}};
        fds_[fd] = sock;
        return fd;
    }
    // The client closes its copy.
    void client_close(int fd) {
        ::close(fd);
        reap();
    }

    // The kernel's count of sockets holding the group on the netdev (0: not reported).
    unsigned users(std::uint64_t netns, int ifindex, const IpAddress &group) {
        reap();
        auto it = users_.find(Key{netns, ifindex, group});
        return it == users_.end() ? 0 : it->second;
    }
    // Memberships the kernel holds in all, and descriptors open (the clients' and the daemon's).
    std::size_t memberships() {
        reap();
        return users_.size();
    }
    std::size_t open_fds() {
        reap();
        return fds_.size();
    }

    roce::SysResult<roce::SocketKind> kind(int fd) override {
        reap();
        auto s = socket_of(fd);
        if (!s)
            return roce::Errno{EBADF};
        return roce::SocketKind{s->family, s->type};
    }
    roce::SysResult<std::uint64_t> netns_cookie(int fd) override {
        if (cookie_errno)
            return roce::Errno{*cookie_errno};
        auto s = socket_of(fd);
        if (!s)
            return roce::Errno{EBADF};
        return s->netns;
    }
    roce::SysResult<int> ifindex(int fd, const std::string &netdev) override {
        auto s = socket_of(fd);
        if (!s)
            return roce::Errno{EBADF};
        auto it = netdevs_.find({s->netns, netdev});
        if (it == netdevs_.end())
            return roce::Errno{ENODEV};
        return it->second;
    }
    int add_membership(int fd, const IpAddress &group, int ifindex) override {
        ++adds;
        if (on_add)
            on_add(group);
        if (add_errno)
            return *std::exchange(add_errno, std::nullopt);
        auto s = socket_of(fd);
        if (!s)
            return EBADF;
        if (s->groups.count({group, ifindex})) {
            ++still_held;
            return EADDRINUSE;
        }
        if (!has_index(s->netns, ifindex))
            return ENODEV;
        if (s->groups.size() >= (group.is_v4() ? max_v4 : max_v6))
            return group.is_v4() ? ENOBUFS : ENOMEM;
        s->groups.insert({group, ifindex});
        ++users_[Key{s->netns, ifindex, group}];
        return 0;
    }
    int drop_membership(int fd, const IpAddress &group, int ifindex) override {
        ++drops;
        auto s = socket_of(fd);
        if (!s)
            return EBADF;
        if (!s->groups.erase({group, ifindex}))
            return EADDRNOTAVAIL;
        unuse(Key{s->netns, ifindex, group});
        return 0;
    }
    roce::SysResult<int> keep(int fd) override {
        ++keeps;
        auto it = fds_.find(fd);
        if (it == fds_.end())
            return roce::Errno{EBADF};
        const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (copy < 0)
            return roce::Errno{errno};
        fds_[copy] = it->second;
        return copy;
    }
    void close(int fd) override {
        ++closes;
        ::close(fd);
        reap();
    }
    roce::SysResult<int> open_socket(bool v6) override {
        ++opens;
        return socket(own_netns, v6 ? AF_INET6 : AF_INET);
    }

    // Another descriptor of the socket of `fd`, as the service manager's fd store keeps one.
    int duplicate(int fd) {
        const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (copy < 0 || !fds_.count(fd))
            throw std::runtime_error("FakeSyscalls: cannot duplicate a descriptor it does not know");
        fds_[copy] = fds_.at(fd);
        return copy;
    }
    // The memberships the socket of `fd` holds.
    std::size_t held_on(int fd) {
        reap();
        auto s = socket_of(fd);
        return s ? s->groups.size() : 0;
    }

private:
    struct Socket {
        std::uint64_t netns = 0;
        int family = AF_INET;
        int type = SOCK_DGRAM;
        std::set<std::pair<IpAddress, int>> groups;
    };

    Socket *socket_of(int fd) {
        auto it = fds_.find(fd);
        return it == fds_.end() ? nullptr : &sockets_.at(it->second);
    }
    bool has_index(std::uint64_t netns, int index) const {
        for (const auto &[key, i] : netdevs_)
            if (key.first == netns && i == index)
                return true;
        return false;
    }
    void unuse(const Key &key) {
        if (--users_.at(key) == 0)
            users_.erase(key);
    }
    // Forgets the descriptors closed since the last call (by the seam's close or by anyone).
    void reap() {
        std::vector<int> closed;
        for (const auto &[fd, sock] : fds_)
            if (::fcntl(fd, F_GETFD) == -1)
                closed.push_back(fd);
        for (int fd : closed)
            drop_fd(fd);
    }
    void drop_fd(int fd) {
        auto it = fds_.find(fd);
        if (it == fds_.end())
            return;
        const int sock = it->second;
        fds_.erase(it);
        for (const auto &[f, s] : fds_)
            if (s == sock)
                return; // another descriptor keeps the socket
        Socket &s = sockets_.at(sock);
        for (const auto &[group, index] : s.groups) // the kernel drops them with the socket
            unuse(Key{s.netns, index, group});
        sockets_.erase(sock);
    }

    std::map<std::pair<std::uint64_t, std::string>, int> netdevs_;
    std::map<int, Socket> sockets_;
    std::map<int, int> fds_; // descriptor -> socket
    std::map<Key, unsigned> users_;
    int next_socket_ = 1;
};

} // namespace mcastd::test
