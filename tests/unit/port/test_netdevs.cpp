// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A GID table's netdevs as the daemon's network namespace has them: one lookup per netdev
// however many entries name it, gone when not there; and the real lookup on this host's `lo`.
#include <gtest/gtest.h>

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

} // namespace
} // namespace mcastd::port
