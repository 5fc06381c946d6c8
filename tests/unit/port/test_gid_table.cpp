// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The GID table's parsers: the texts sysfs shows per index become used entries, the way the
// kernel leaves unused ones (zeros, unreadable attributes) is "no entry", and a change between
// two reads names what went, what came and what moved.
#include <gtest/gtest.h>

#include <vector>

#include "port/gid_table.hpp"

namespace mcastd::port {
namespace {

constexpr const char *kZeros = "0000:0000:0000:0000:0000:0000:0000:0000\n";
constexpr const char *kLinkLocal = "fe80:0000:0000:0000:0000:4dff:fe00:0001\n";
constexpr const char *kIpv4 = "0000:0000:0000:0000:0000:ffff:0a4d:0001\n";

Gid gid(const char *text) { return *parse_gid(text); }

TEST(GidTable, SysfsTextsParse) {
    EXPECT_EQ(parse_sysfs_gid(kLinkLocal), gid("fe80::4dff:fe00:1"));
    EXPECT_EQ(parse_sysfs_gid(kIpv4), gid("::ffff:10.77.0.1"));
    EXPECT_EQ(parse_sysfs_gid(kZeros), kZeroGid);
    EXPECT_EQ(parse_sysfs_gid("fe80::1"), gid("fe80::1")) << "any IPv6 text is taken";
    EXPECT_FALSE(parse_sysfs_gid("fe80:0000\n"));
    EXPECT_FALSE(parse_sysfs_gid(""));
    EXPECT_TRUE(unused_gid_text(kZeros));
    EXPECT_FALSE(unused_gid_text(kLinkLocal));
    EXPECT_FALSE(unused_gid_text("garbage")) << "not a GID is not an unused entry: it is a problem";
    EXPECT_EQ(trim_sysfs_text("  eth0\n"), "eth0");
    EXPECT_EQ(trim_sysfs_text("\n"), "");
}

TEST(GidTable, TheTypeDependsOnTheLinkLayerForV1) {
    // The kernel gives InfiniBand and RoCE v1 one type, shown as "IB/RoCE v1".
    EXPECT_EQ(parse_sysfs_gid_type("IB/RoCE v1\n", LinkLayer::ethernet), GidType::roce_v1);
    EXPECT_EQ(parse_sysfs_gid_type("IB/RoCE v1\n", LinkLayer::infiniband), GidType::ib);
    EXPECT_EQ(parse_sysfs_gid_type("RoCE v2\n", LinkLayer::ethernet), GidType::roce_v2);
    EXPECT_EQ(parse_sysfs_gid_type("RoCE v2", LinkLayer::infiniband), GidType::roce_v2);
    EXPECT_FALSE(parse_sysfs_gid_type("RoCE v3\n", LinkLayer::ethernet));
    EXPECT_FALSE(parse_sysfs_gid_type("roce v2\n", LinkLayer::ethernet));
    EXPECT_FALSE(parse_sysfs_gid_type("", LinkLayer::ethernet));
}

TEST(GidTable, UsedEntriesComeInIndexOrderAndUnusedOnesAreLeftOut) {
    const std::vector<GidFiles> files{
        {3, kIpv4, "RoCE v2\n", "veth1\n"},
        {0, kLinkLocal, "IB/RoCE v1\n", "veth1\n"},
        {1, kIpv4, "IB/RoCE v1\n", "veth1\n"},
        // Unused, as the kernel shows it: zeros, and reading its attributes fails (EINVAL).
        {2, kZeros, std::nullopt, std::nullopt},
        // Unused, as a fake tree might show it: zeros, and attributes that say something.
        {4, kZeros, "RoCE v2\n", "veth1\n"},
    };
    const GidTable t = parse_gid_table(files, LinkLayer::ethernet);
    EXPECT_TRUE(t.problems.empty());
    EXPECT_EQ(t.entries, (std::vector<GidEntry>{
                             {0, gid("fe80::4dff:fe00:1"), GidType::roce_v1, "veth1"},
                             {1, gid("::ffff:10.77.0.1"), GidType::roce_v1, "veth1"},
                             {3, gid("::ffff:10.77.0.1"), GidType::roce_v2, "veth1"},
                         }));
}

TEST(GidTable, AnEntryWhoseFilesCannotBeReadIsNotThere) {
    const std::vector<GidFiles> files{
        {0, std::nullopt, std::nullopt, std::nullopt},     // gids/0 unreadable
        {1, kIpv4, std::nullopt, "veth1\n"},               // removed between the reads
        {2, kIpv4, "RoCE v2\n", std::nullopt},             // the same, its netdev gone first
        {3, kIpv4, "RoCE v2\n", "\n"},                     // a netdev with no name
        {4, kLinkLocal, "IB/RoCE v1\n", "veth1\n"},
    };
    const GidTable t = parse_gid_table(files, LinkLayer::ethernet);
    EXPECT_TRUE(t.problems.empty()) << t.problems.front();
    ASSERT_EQ(t.entries.size(), 1u);
    EXPECT_EQ(t.entries[0].index, 4u);
}

TEST(GidTable, AnInfiniBandEntryHasNoNetdev) {
    const std::vector<GidFiles> files{{0, "fe80:0000:0000:0000:0002:c903:0000:0001\n", "IB/RoCE v1\n", std::nullopt}};
    const GidTable t = parse_gid_table(files, LinkLayer::infiniband);
    EXPECT_EQ(t.entries, (std::vector<GidEntry>{{0, gid("fe80::2:c903:0:1"), GidType::ib, ""}}));
}

TEST(GidTable, WhatMakesNoSenseIsAProblemThatCostsItsEntryOnly) {
    const std::vector<GidFiles> files{
        {0, "not a gid\n", "RoCE v2\n", "veth1\n"},
        {1, kIpv4, "RoCE v9\n", "veth1\n"},
        {2, kIpv4, "RoCE v2\n", "veth1\n"},
    };
    const GidTable t = parse_gid_table(files, LinkLayer::ethernet);
    EXPECT_EQ(t.problems, (std::vector<std::string>{"gids/0: 'not a gid' is not a GID",
                                                    "gid_attrs/types/1: unknown GID type 'RoCE v9'"}));
    ASSERT_EQ(t.entries.size(), 1u);
    EXPECT_EQ(t.entries[0].index, 2u);
}

TEST(GidTable, AChangeNamesWhatWentWhatCameAndWhatMoved) {
    const GidEntry ll{0, gid("fe80::4dff:fe00:1"), GidType::roce_v1, "veth1"};
    const GidEntry v4{1, gid("::ffff:10.77.0.1"), GidType::roce_v2, "veth1"};
    const GidEntry v6{3, gid("fd00:77::1"), GidType::roce_v2, "veth1"};
    const std::vector<GidEntry> before{ll, v4, v6};

    EXPECT_TRUE(diff_gid_tables(before, before).empty());

    // The IPv4 address removed from the netdev: its entry goes.
    const std::vector<GidEntry> without_v4{ll, v6};
    const GidTableChange gone = diff_gid_tables(before, without_v4);
    EXPECT_EQ(gone.removed, std::vector<GidEntry>{v4});
    EXPECT_TRUE(gone.added.empty());
    EXPECT_TRUE(gone.moved.empty());

    // Added back, at another index: the same address, moved.
    GidEntry v4_again = v4;
    v4_again.index = 2;
    const std::vector<GidEntry> back{ll, v4_again, v6};
    EXPECT_EQ(diff_gid_tables(without_v4, back).added, std::vector<GidEntry>{v4_again});
    const GidTableChange moved = diff_gid_tables(before, back);
    EXPECT_EQ(moved.moved, std::vector<GidEntry>{v4_again});
    EXPECT_TRUE(moved.removed.empty());
    EXPECT_TRUE(moved.added.empty());

    // The same GID on another netdev, or of another type, is another address.
    GidEntry elsewhere = v4;
    elsewhere.netdev = "veth2";
    const GidTableChange other = diff_gid_tables(before, std::vector<GidEntry>{ll, elsewhere, v6});
    EXPECT_EQ(other.removed, std::vector<GidEntry>{v4});
    EXPECT_EQ(other.added, std::vector<GidEntry>{elsewhere});
}

// The netdev under an entry, as the daemon looks it up in its own namespace: gone, back under a
// new index, another MTU. The entry is the same address at the same index; its netdev changed.
TEST(GidTable, AChangeNamesTheNetdevsThatChanged) {
    GidEntry v4{1, gid("::ffff:10.77.0.1"), GidType::roce_v2, "veth1"};
    v4.ifindex = 7;
    v4.mtu = 1500;
    GidEntry gone = v4;
    gone.netdev_gone = true;
    gone.ifindex = 0;
    gone.mtu = 0;
    const GidTableChange left = diff_gid_tables(std::vector<GidEntry>{v4}, std::vector<GidEntry>{gone});
    EXPECT_EQ(left.netdev, std::vector<GidEntry>{gone});
    EXPECT_TRUE(left.removed.empty() && left.added.empty() && left.moved.empty());
    EXPECT_EQ(describe(left), "netdev 1 ::ffff:10.77.0.1 roce_v2 veth1 (not in the daemon's network namespace)");
    GidEntry anew = v4;
    anew.ifindex = 9;
    EXPECT_EQ(diff_gid_tables(std::vector<GidEntry>{v4}, std::vector<GidEntry>{anew}).netdev, std::vector<GidEntry>{anew});
    GidEntry jumbo = v4;
    jumbo.mtu = 9000;
    EXPECT_EQ(describe(diff_gid_tables(std::vector<GidEntry>{v4}, std::vector<GidEntry>{jumbo})),
              "netdev 1 ::ffff:10.77.0.1 roce_v2 veth1 (ifindex 7, MTU 9000)");
}

TEST(GidTable, AChangeIsDescribedForTheLog) {
    const GidEntry v4{1, gid("::ffff:10.77.0.1"), GidType::roce_v2, "veth1"};
    const GidEntry ib{0, gid("fe80::2:c903:0:1"), GidType::ib, ""};
    EXPECT_EQ(describe(v4), "1 ::ffff:10.77.0.1 roce_v2 veth1");
    EXPECT_EQ(describe(ib), "0 fe80::2:c903:0:1 ib");
    GidEntry moved = v4;
    moved.index = 2;
    EXPECT_EQ(describe(GidTableChange{{v4, ib}, {}, {moved}, {}}),
              "removed 1 ::ffff:10.77.0.1 roce_v2 veth1, 0 fe80::2:c903:0:1 ib; moved 2 ::ffff:10.77.0.1 roce_v2 veth1");
    EXPECT_EQ(describe(GidTableChange{}), "");
}

} // namespace
} // namespace mcastd::port
