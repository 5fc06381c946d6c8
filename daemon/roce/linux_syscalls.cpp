// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "roce/linux_syscalls.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mcastd::roce {

namespace {

int membership(int fd, const IpAddress &group, int ifindex, bool add) {
    int r;
    if (group.is_v4()) {
        ip_mreqn m{};
        std::memcpy(&m.imr_multiaddr, group.bytes.data() + 12, 4);
        m.imr_ifindex = ifindex;
        r = ::setsockopt(fd, IPPROTO_IP, add ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m, sizeof m);
    } else {
        ipv6_mreq m{};
        std::memcpy(&m.ipv6mr_multiaddr, group.bytes.data(), 16);
        m.ipv6mr_interface = static_cast<unsigned>(ifindex);
        r = ::setsockopt(fd, IPPROTO_IPV6, add ? IPV6_ADD_MEMBERSHIP : IPV6_DROP_MEMBERSHIP, &m, sizeof m);
    }
    return r == 0 ? 0 : errno;
}

} // namespace

SysResult<SocketKind> LinuxSyscalls::kind(int fd) {
    SocketKind k;
    socklen_t len = sizeof k.family;
    if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &k.family, &len) != 0)
        return Errno{errno};
    len = sizeof k.type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &k.type, &len) != 0)
        return Errno{errno};
    return k;
}

SysResult<std::uint64_t> LinuxSyscalls::netns_cookie(int fd) {
    std::uint64_t cookie = 0;
    socklen_t len = sizeof cookie;
    if (::getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) != 0)
        return Errno{errno};
    return cookie;
}

SysResult<int> LinuxSyscalls::ifindex(int fd, const std::string &netdev) {
    ifreq req{};
    if (netdev.empty() || netdev.size() >= sizeof req.ifr_name)
        return Errno{ENODEV};
    std::memcpy(req.ifr_name, netdev.c_str(), netdev.size() + 1);
    if (::ioctl(fd, SIOCGIFINDEX, &req) != 0)
        return Errno{errno};
    return req.ifr_ifindex;
}

int LinuxSyscalls::add_membership(int fd, const IpAddress &group, int ifindex) {
    return membership(fd, group, ifindex, true);
}

int LinuxSyscalls::drop_membership(int fd, const IpAddress &group, int ifindex) {
    return membership(fd, group, ifindex, false);
}

SysResult<int> LinuxSyscalls::keep(int fd) {
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (copy < 0)
        return Errno{errno};
    return copy;
}

void LinuxSyscalls::close(int fd) { ::close(fd); }

SysResult<int> LinuxSyscalls::open_socket(bool v6) {
    const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return Errno{errno};
    return fd;
}

} // namespace mcastd::roce
