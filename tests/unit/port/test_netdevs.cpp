// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A GID table's netdevs as the daemon's network namespace has them: one lookup per netdev
// however many entries name it, gone when not there; and the real lookup on this host's `lo`,
// also where no IP socket may be made (a unit whose RestrictAddressFamilies= leaves IP out).
#include <gtest/gtest.h>

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>

#include <map>
#include <string>
#include <vector>

#include "port/netdevs.hpp"

namespace mcastd::port {
namespace {

Gid gid(const char *text) { return *parse_gid(text); }

TEST(Netdevs, EachNetdevIsLookedUpOnceAndAMissingOneIsGone) {
    std::vector<GidEntry> table{{0, gid("fe80::1"), GidType::roce_v1, "veth1"},
                                {1, gid("::ffff:10.77.0.1"), GidType::roce_v2, "veth1"},
                                {2, gid("::ffff:10.78.0.1"), GidType::roce_v2, "veth2"},
                                {3, gid("fe80::2:c903:0:1"), GidType::ib, ""}};
    std::map<std::string, int> asked;
    annotate_netdevs(table, [&asked](const std::string &netdev) {
        ++asked[netdev];
        return netdev == "veth1" ? NetdevState{true, 7, 1500} : NetdevState{};
    });
    EXPECT_EQ(asked, (std::map<std::string, int>{{"veth1", 1}, {"veth2", 1}}));
    EXPECT_FALSE(table[0].netdev_gone);
    EXPECT_EQ(table[1].ifindex, 7);
    EXPECT_EQ(table[1].mtu, 1500u);
    EXPECT_TRUE(table[2].netdev_gone);
    EXPECT_EQ(table[2].ifindex, 0);
    EXPECT_FALSE(table[3].netdev_gone) << "InfiniBand: no netdev to look up";
}

TEST(Netdevs, TheHostLookupSeesLoopbackAndNotANameThatIsNotThere) {
    const NetdevState lo = lookup_netdev("lo");
    EXPECT_TRUE(lo.present);
    EXPECT_GT(lo.ifindex, 0);
    EXPECT_GT(lo.mtu, 0u);
    EXPECT_FALSE(lookup_netdev("mcastd-none0").present);
    EXPECT_FALSE(lookup_netdev("").present);
    EXPECT_FALSE(lookup_netdev("a-name-far-too-long-for-ifnamsiz").present);
}

// socket(AF_INET or AF_INET6, ...) fails with EAFNOSUPPORT from here on, as under systemd's
// RestrictAddressFamilies= without them (a seccomp filter on the first argument).
bool refuse_ip_sockets() {
    constexpr unsigned kFamily = offsetof(seccomp_data, args); // the low half of args[0] (little endian)
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kFamily),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
    return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// In a child (the filter cannot be lifted): exit 0 when the filter holds and lo's MTU is read.
TEST(Netdevs, TheMtuIsReadWithoutAnIpSocket) {
    EXPECT_EXIT(
        {
            if (!refuse_ip_sockets())
                ::_exit(2);
            if (::socket(AF_INET, SOCK_DGRAM, 0) >= 0 || errno != EAFNOSUPPORT)
                ::_exit(3); // the filter does not hold: the test would prove nothing
            ::_exit(lookup_netdev("lo").mtu > 0 ? 0 : 4);
        },
        ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace mcastd::port
