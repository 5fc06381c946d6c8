// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The few system calls a RoCE port's kernel memberships need (doc/roce-multicast.md §7), as an
// interface: the production one makes them (linux_syscalls.hpp), tests put a fake here, so the
// logic over them (kernel_memberships.hpp) is tested without a network namespace.
//
// Every call acts on a UDP socket a client made in its own network namespace and handed over
// (SCM_RIGHTS), or on a copy the daemon kept of one: names, indexes and memberships are that
// namespace's, whichever namespace the daemon runs in. No call makes a socket.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "common/roce_address.hpp"

namespace mcastd::roce {

// The errno a call failed with.
struct Errno {
    int value = 0;
};
// A value, or the errno that refused it.
template <typename T>
using SysResult = std::variant<T, Errno>;

// What a socket is: its address family and type (SO_DOMAIN, SO_TYPE).
struct SocketKind {
    int family = 0; // AF_INET, AF_INET6
    int type = 0;   // SOCK_DGRAM
};

class MembershipSyscalls {
public:
    virtual ~MembershipSyscalls() = default;

    virtual SysResult<SocketKind> kind(int fd) = 0;
    // SO_NETNS_COOKIE (Linux 5.14): the socket's network namespace, never reused while the
    // system runs (an inode number may be).
    virtual SysResult<std::uint64_t> netns_cookie(int fd) = 0;
    // SIOCGIFINDEX on the socket: the index of `netdev` in the socket's namespace.
    virtual SysResult<int> ifindex(int fd, const std::string &netdev) = 0;
    // IP_ADD_MEMBERSHIP (struct ip_mreqn with the index) for an IPv4 group,
    // IPV6_ADD_MEMBERSHIP (struct ipv6_mreq) for an IPv6 one; 0 or the errno.
    virtual int add_membership(int fd, const IpAddress &group, int ifindex) = 0;
    // IP_DROP_MEMBERSHIP / IPV6_DROP_MEMBERSHIP; 0 or the errno.
    virtual int drop_membership(int fd, const IpAddress &group, int ifindex) = 0;
    // A descriptor of the same socket the daemon keeps (F_DUPFD_CLOEXEC), or the errno.
    virtual SysResult<int> keep(int fd) = 0;
    virtual void close(int fd) = 0;
    // A UDP socket of `v6 ? AF_INET6 : AF_INET` in the daemon's own namespace (SOCK_CLOEXEC).
    virtual SysResult<int> open_socket(bool v6) = 0;
};

// "ENODEV (No such device)": an errno as the messages name it.
std::string errno_text(int err);

// The option a membership call uses for `group`'s family: "IP_ADD_MEMBERSHIP",
// "IPV6_DROP_MEMBERSHIP", ...
const char *membership_option(const IpAddress &group, bool add);

} // namespace mcastd::roce
