// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The kernel memberships over the real system calls (LinuxSyscalls): UDP sockets in the test's
// own network namespace, memberships on `lo`, judged by the kernel's own table
// (/proc/self/net/igmp, its Users column). Skips, saying why, where the kernel does not allow it.
// Groups are unique to the process (ctest runs each test in a process of its own, in parallel,
// in one namespace).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/roce_address.hpp"
#include "roce/kernel_memberships.hpp"
#include "roce/linux_syscalls.hpp"

namespace mcastd::test {
namespace {

using roce::KernelMemberships;
using roce::LinuxSyscalls;
using roce::MembershipKey;

// 239.X.Y.i, with X.Y from the pid.
IpAddress group(std::uint8_t i) {
    const auto pid = static_cast<unsigned>(::getpid());
    return IpAddress::v4({239, static_cast<std::uint8_t>(128 + ((pid >> 8) % 128)), static_cast<std::uint8_t>(pid & 0xff), i});
}

// Users of `g` on `dev` in /proc/self/net/igmp (0: not listed). The file prints a group as its
// 32 bits in host byte order, under a line naming the device.
unsigned igmp_users(const std::string &dev, const IpAddress &g) {
    std::ifstream in("/proc/self/net/igmp");
    std::uint32_t addr;
    std::memcpy(&addr, g.bytes.data() + 12, 4);
    char want[9];
    std::snprintf(want, sizeof want, "%08X", addr);
    std::string line, current;
    std::getline(in, line); // header
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        if (!line.empty() && line[0] != '\t' && line[0] != ' ') {
            std::string idx;
            fields >> idx >> current;
            continue;
        }
        std::string hex;
        unsigned users = 0;
        fields >> hex >> users;
        if (current == dev && hex == want)
            return users;
    }
    return 0;
}

// Users of `g` on `dev` in /proc/self/net/igmp6, which prints the group as 32 hex digits.
unsigned igmp6_users(const std::string &dev, const IpAddress &g) {
    std::ifstream in("/proc/self/net/igmp6");
    char want[33];
    for (int i = 0; i < 16; ++i)
        std::snprintf(want + 2 * i, 3, "%02x", g.bytes[static_cast<std::size_t>(i)]);
    std::string idx, name, hex;
    unsigned users = 0;
    std::string rest;
    while (in >> idx >> name >> hex >> users && std::getline(in, rest))
        if (name == dev && hex == want)
            return users;
    return 0;
}

int udp_socket() { return ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); }

unsigned open_fds() {
    unsigned n = 0;
    for (int fd = 0; fd < 4096; ++fd)
        n += ::fcntl(fd, F_GETFD) != -1;
    return n;
}

class RealSockets : public ::testing::Test {
protected:
    void SetUp() override {
        const int fd = udp_socket();
        ASSERT_GE(fd, 0) << std::strerror(errno);
        std::uint64_t cookie = 0;
        socklen_t len = sizeof cookie;
        const bool has_cookie = ::getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) == 0;
        const int cookie_err = errno;
        ip_mreqn m{};
        const IpAddress probe = group(250);
        std::memcpy(&m.imr_multiaddr, probe.bytes.data() + 12, 4);
        m.imr_ifindex = static_cast<int>(::if_nametoindex("lo"));
        const bool joins = m.imr_ifindex > 0 && ::setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) == 0;
        const int join_err = errno;
        ::close(fd);
        if (!has_cookie)
            GTEST_SKIP() << "SO_NETNS_COOKIE: " << std::strerror(cookie_err) << " (Linux 5.14 or later needed)";
        if (!joins)
            GTEST_SKIP() << "IP_ADD_MEMBERSHIP on lo: "
                         << (m.imr_ifindex > 0 ? std::strerror(join_err) : "no interface lo");
        netns = cookie;
    }

    // A client's join: a socket handed over, closed by the client afterwards.
    std::variant<MembershipKey, Error> join(const IpAddress &g, const std::string &netdev = "lo") {
        const int fd = udp_socket();
        auto out = kernel.acquire(fd, netdev, g);
        ::close(fd);
        return out;
    }

    std::uint64_t netns = 0;
    LinuxSyscalls sys;
    KernelMemberships kernel{sys};
};

TEST_F(RealSockets, ThreeHoldersAreOneMembershipUntilTheLastGoes) {
    const unsigned fds_before = open_fds();
    std::vector<MembershipKey> keys;
    for (int i = 0; i < 3; ++i) {
        auto k = join(group(1));
        ASSERT_TRUE(std::holds_alternative<MembershipKey>(k)) << std::get<Error>(k).message;
        keys.push_back(std::get<MembershipKey>(k));
    }
    EXPECT_EQ(keys[0].netns, netns) << "the socket's namespace: the test's own";
    EXPECT_EQ(keys[0].ifindex, static_cast<int>(::if_nametoindex("lo")));
    EXPECT_EQ(igmp_users("lo", group(1)), 1u) << "Users 1 in /proc/net/igmp";
    EXPECT_EQ(open_fds(), fds_before + 1) << "one socket kept, the handed ones closed";
    kernel.release(keys[0]);
    kernel.release(keys[1]);
    EXPECT_EQ(igmp_users("lo", group(1)), 1u);
    EXPECT_FALSE(kernel.release(keys[2]));
    EXPECT_EQ(igmp_users("lo", group(1)), 0u) << "dropped with the last holder";
    EXPECT_EQ(open_fds(), fds_before) << "and the emptied socket closed";
}

TEST_F(RealSockets, GroupsArePackedUpToTheKernelsLimitPerSocket) {
    unsigned limit = 0;
    std::ifstream("/proc/sys/net/ipv4/igmp_max_memberships") >> limit;
    if (limit == 0 || limit > 200)
        GTEST_SKIP() << "net.ipv4.igmp_max_memberships is " << limit << ": packing needs a small limit to show";
    const unsigned fds_before = open_fds();
    const unsigned groups = limit + 5;
    std::vector<MembershipKey> keys;
    for (unsigned i = 0; i < groups; ++i) {
        auto k = join(group(static_cast<std::uint8_t>(i)));
        ASSERT_TRUE(std::holds_alternative<MembershipKey>(k)) << std::get<Error>(k).message;
        keys.push_back(std::get<MembershipKey>(k));
    }
    EXPECT_EQ(kernel.sockets(), 2u) << limit << " groups on the first socket (then ENOBUFS), 5 on the second";
    EXPECT_EQ(open_fds(), fds_before + 2);
    for (unsigned i = 0; i < groups; ++i)
        EXPECT_EQ(igmp_users("lo", group(static_cast<std::uint8_t>(i))), 1u) << i;
    for (const MembershipKey &k : keys)
        EXPECT_FALSE(kernel.release(k));
    EXPECT_EQ(kernel.sockets(), 0u);
    EXPECT_EQ(open_fds(), fds_before);
    EXPECT_EQ(igmp_users("lo", group(0)), 0u);
}

TEST_F(RealSockets, AnIPv6GroupIsHeldTheSameWay) {
    const int fd = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        GTEST_SKIP() << "no IPv6 sockets: " << std::strerror(errno);
    IpAddress g = *parse_ip("ff0e::1:0");
    g.bytes[13] = static_cast<std::uint8_t>(::getpid() >> 8);
    g.bytes[14] = static_cast<std::uint8_t>(::getpid());
    auto k = kernel.acquire(fd, "lo", g);
    ::close(fd);
    if (auto *e = std::get_if<Error>(&k))
        GTEST_SKIP() << "IPV6_ADD_MEMBERSHIP on lo: " << e->message;
    EXPECT_EQ(igmp6_users("lo", g), 1u) << "in /proc/net/igmp6";
    auto again = join(g); // an IPv4 socket for an IPv6 group
    ASSERT_TRUE(std::holds_alternative<Error>(again));
    EXPECT_EQ(std::get<Error>(again).code, Errc::invalid_argument);
    EXPECT_FALSE(kernel.release(std::get<MembershipKey>(k)));
    EXPECT_EQ(igmp6_users("lo", g), 0u);
    EXPECT_EQ(kernel.sockets(), 0u);
}

TEST_F(RealSockets, TheKernelsRefusalsAreNamed) {
    auto no_dev = join(group(1), "nosuchdev0");
    ASSERT_TRUE(std::holds_alternative<Error>(no_dev));
    EXPECT_EQ(std::get<Error>(no_dev).message,
              "SIOCGIFINDEX nosuchdev0 in the client's network namespace: ENODEV (No such device)");
    auto not_group = join(IpAddress::v4({10, 1, 2, 3}));
    ASSERT_TRUE(std::holds_alternative<Error>(not_group));
    EXPECT_EQ(std::get<Error>(not_group).message, "IP_ADD_MEMBERSHIP 10.1.2.3 on lo: EINVAL (Invalid argument)");
    const int v6 = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (v6 >= 0) {
        auto wrong = kernel.acquire(v6, "lo", group(1));
        ::close(v6);
        ASSERT_TRUE(std::holds_alternative<Error>(wrong));
        EXPECT_EQ(std::get<Error>(wrong).code, Errc::invalid_argument);
    }
    EXPECT_EQ(kernel.sockets(), 0u);
}

} // namespace
} // namespace mcastd::test
