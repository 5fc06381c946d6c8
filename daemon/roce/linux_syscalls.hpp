// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// MembershipSyscalls as Linux has them: getsockopt, ioctl and setsockopt on the sockets clients
// hand over, and socket(2) for the daemon's own.
#pragma once

#include "roce/membership_syscalls.hpp"

namespace mcastd::roce {

class LinuxSyscalls final : public MembershipSyscalls {
public:
    SysResult<SocketKind> kind(int fd) override;
    SysResult<std::uint64_t> netns_cookie(int fd) override;
    SysResult<int> ifindex(int fd, const std::string &netdev) override;
    int add_membership(int fd, const IpAddress &group, int ifindex) override;
    int drop_membership(int fd, const IpAddress &group, int ifindex) override;
    SysResult<int> keep(int fd) override;
    void close(int fd) override;
    SysResult<int> open_socket(bool v6) override;
};

} // namespace mcastd::roce
