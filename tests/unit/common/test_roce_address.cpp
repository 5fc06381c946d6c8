// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// RoCE's addressing against the kernel's rules (doc/roce-multicast.md): a table of RoCE v1/v2 x
// IPv4/IPv6 x full/send-only to the MGID (cma_iboe_set_mgid), the destination MAC
// (ib_resolve_eth_dmac), the hop limit and rdma_cm's refusal (cma_iboe_join_multicast), and
// whether the membership holds the host's IGMP/MLD membership; then each function's edges.
#include <gtest/gtest.h>

#include <ostream>

#include "common/record.hpp"
#include "common/roce_address.hpp"

namespace mcastd {
namespace {

IpAddress ip(std::string_view text) {
    auto a = parse_ip(text);
    EXPECT_TRUE(a) << text;
    return a.value_or(IpAddress{});
}

Gid gid(std::string_view text) { return parse_gid(text).value(); }

struct Row {
    GidType type;
    const char *group;
    std::uint8_t join_state;
    const char *mgid;
    const char *dmac;
    unsigned hop_limit;
    bool reports; // the host holds the IGMP/MLD membership, so the kernel reports the group
    bool refused; // by rdma_cm
};

std::ostream &operator<<(std::ostream &os, const Row &r) {
    return os << gid_type_name(r.type) << " " << r.group << " " << join_state_name(r.join_state);
}

class RoceMapping : public ::testing::TestWithParam<Row> {};

TEST_P(RoceMapping, FollowsTheKernel) {
    const Row &r = GetParam();
    const IpAddress group = ip(r.group);
    ASSERT_TRUE(is_multicast_group(group));
    const Gid mgid = roce_mgid(group, r.type);
    EXPECT_EQ(mgid, gid(r.mgid)) << format_gid(mgid);
    EXPECT_EQ(format_mac(roce_dmac(mgid)), r.dmac);
    EXPECT_EQ(roce_hop_limit(group, r.type), r.hop_limit);
    EXPECT_EQ(holds_ip_membership(r.join_state), r.reports);
    EXPECT_EQ(rdma_cm_refuses(group, r.type), r.refused);
    // And back: the MGID names the group it came from.
    ASSERT_TRUE(roce_ip_group(mgid));
    EXPECT_EQ(format_ip(*roce_ip_group(mgid)), format_ip(group));
}

constexpr std::uint8_t kFull = join::full, kNon = join::non_member, kSoNon = join::send_only_non_member,
                       kSoFull = join::send_only_full;

INSTANTIATE_TEST_SUITE_P(
    V1V2xV4V6xFullSendOnly, RoceMapping,
    ::testing::Values(
        // IPv4 on RoCE v2: the IPv4-mapped MGID, 01:00:5e + 23 bits, routable (64 hops).
        Row{GidType::roce_v2, "239.1.2.3", kFull, "::ffff:239.1.2.3", "01:00:5e:01:02:03", 64, true, false},
        Row{GidType::roce_v2, "239.1.2.3", kNon, "::ffff:239.1.2.3", "01:00:5e:01:02:03", 64, true, false},
        Row{GidType::roce_v2, "239.1.2.3", kSoFull, "::ffff:239.1.2.3", "01:00:5e:01:02:03", 64, false, false},
        Row{GidType::roce_v2, "239.1.2.3", kSoNon, "::ffff:239.1.2.3", "01:00:5e:01:02:03", 64, false, false},
        // The 24th bit of the group does not reach the MAC (RFC 1112 §6.4).
        Row{GidType::roce_v2, "224.129.2.3", kFull, "::ffff:224.129.2.3", "01:00:5e:01:02:03", 64, true, false},
        // IPv4 on RoCE v1: ff0e::ffff:a.b.c.d, an IPv6 multicast MGID, so 33:33 + 32 bits; one hop.
        Row{GidType::roce_v1, "239.1.2.3", kFull, "ff0e::ffff:ef01:203", "33:33:ef:01:02:03", 1, true, false},
        Row{GidType::roce_v1, "239.1.2.3", kSoFull, "ff0e::ffff:ef01:203", "33:33:ef:01:02:03", 1, false, false},
        Row{GidType::ib, "239.1.2.3", kFull, "ff0e::ffff:ef01:203", "33:33:ef:01:02:03", 1, true, false},
        // IPv6: the group is the MGID, 33:33 + its low 32 bits, one hop; rdma_cm refuses it on v2.
        Row{GidType::roce_v2, "ff0e::1:2", kFull, "ff0e::1:2", "33:33:00:01:00:02", 1, true, true},
        Row{GidType::roce_v2, "ff0e::1:2", kSoFull, "ff0e::1:2", "33:33:00:01:00:02", 1, false, true},
        Row{GidType::roce_v1, "ff12::dead:beef", kFull, "ff12::dead:beef", "33:33:de:ad:be:ef", 1, true, false},
        Row{GidType::roce_v1, "ff12::dead:beef", kSoNon, "ff12::dead:beef", "33:33:de:ad:be:ef", 1, false, false}));

TEST(RoceAddress, ParsesAndPrintsBothFamilies) {
    EXPECT_TRUE(ip("239.1.2.3").is_v4());
    EXPECT_EQ(format_ip(ip("239.1.2.3")), "239.1.2.3");
    EXPECT_EQ(ip("239.1.2.3").bytes, gid("::ffff:239.1.2.3"));
    // The IPv4-mapped text is the same IPv4 address, printed as one.
    EXPECT_EQ(ip("::ffff:239.1.2.3"), ip("239.1.2.3"));
    EXPECT_EQ(format_ip(ip("::FFFF:EF01:0203")), "239.1.2.3");
    EXPECT_FALSE(ip("ff0e::1").is_v4());
    EXPECT_EQ(format_ip(ip("ff0e:0:0::0001")), "ff0e::1");
    for (std::string_view bad : {"", "239.1.2", "239.1.2.3.4", "239.1.2.256", "ff0e::1::2", "mlx5_0",
                                 " 239.1.2.3", "239.1.2.3 ", "ff0e::1%eth0",
                                 "0000:0000:0000:0000:0000:0000:0000:0000:0000:0000"})
        EXPECT_FALSE(parse_ip(bad)) << bad;
}

TEST(RoceAddress, MulticastIsClassDAndFf) {
    for (std::string_view yes : {"224.0.0.0", "224.0.0.1", "239.255.255.255", "ff00::", "ff02::1", "ff0e::ffff:1.2.3.4"})
        EXPECT_TRUE(is_multicast_group(ip(yes))) << yes;
    for (std::string_view no : {"223.255.255.255", "240.0.0.0", "10.0.0.1", "0.0.0.0", "fe80::1", "::", "::1",
                                "::ffff:10.0.0.1"})
        EXPECT_FALSE(is_multicast_group(ip(no))) << no;
}

TEST(RoceAddress, TheIpGroupOfAnMgid) {
    // Both IPv4 forms, with a multicast IPv4 address.
    EXPECT_EQ(format_ip(*roce_ip_group(gid("::ffff:239.1.2.3"))), "239.1.2.3");
    EXPECT_EQ(format_ip(*roce_ip_group(gid("ff0e::ffff:239.1.2.3"))), "239.1.2.3");
    // ff0e::ffff:10.0.0.1 is not an IPv4 group, but it is an IPv6 multicast address.
    EXPECT_EQ(format_ip(*roce_ip_group(gid("ff0e::ffff:10.0.0.1"))), "ff0e::ffff:a00:1");
    // Another scope is not RoCE v1's form: the IPv6 group of those bytes.
    EXPECT_EQ(format_ip(*roce_ip_group(gid("ff05::ffff:239.1.2.3"))), "ff05::ffff:ef01:203");
    EXPECT_EQ(format_ip(*roce_ip_group(gid("ff15::1:2"))), "ff15::1:2");
    EXPECT_FALSE(roce_ip_group(gid("::ffff:10.0.0.1")));
    EXPECT_FALSE(roce_ip_group(gid("fe80::1")));
    EXPECT_FALSE(roce_ip_group(kZeroGid));
}

TEST(RoceAddress, MacsPrintAndParse) {
    EXPECT_EQ(format_mac({0x01, 0x00, 0x5e, 0x7f, 0xff, 0x0a}), "01:00:5e:7f:ff:0a");
    EXPECT_EQ(parse_mac("33:33:DE:ad:be:EF"), (Mac{0x33, 0x33, 0xde, 0xad, 0xbe, 0xef}));
    for (std::string_view bad : {"", "01:00:5e:01:02", "01:00:5e:01:02:03:04", "01-00-5e-01-02-03", "01:00:5e:01:02:0g",
                                 "1:00:5e:01:02:030"})
        EXPECT_FALSE(parse_mac(bad)) << bad;
}

TEST(RoceAddress, NamesOfGidTypesAndLinkLayers) {
    EXPECT_EQ(parse_roce_gid_type("roce_v1"), GidType::roce_v1);
    EXPECT_EQ(parse_roce_gid_type("roce_v2"), GidType::roce_v2);
    for (std::string_view bad : {"ib", "", "RoCE v2", "roce_v3", "ROCE_V2", "IB/RoCE v1"})
        EXPECT_FALSE(parse_roce_gid_type(bad)) << bad;
    EXPECT_EQ(gid_type_name(GidType::ib), "ib");
    EXPECT_EQ(gid_type_name(GidType::roce_v2), "roce_v2");
    // As /sys/class/infiniband/*/ports/*/link_layer spells them.
    EXPECT_EQ(parse_link_layer("InfiniBand"), LinkLayer::infiniband);
    EXPECT_EQ(parse_link_layer("Ethernet"), LinkLayer::ethernet);
    EXPECT_FALSE(parse_link_layer("ethernet"));
    EXPECT_FALSE(parse_link_layer("Ethernet\n"));
    EXPECT_EQ(std::string_view(link_layer_name(LinkLayer::ethernet)), "Ethernet");
    EXPECT_EQ(std::string_view(link_layer_name(LinkLayer::infiniband)), "InfiniBand");
    // Zero means what a record from a daemon that knows no RoCE means.
    EXPECT_EQ(LinkLayer{}, LinkLayer::infiniband);
    EXPECT_EQ(GidType{}, GidType::ib);
}

// iboe_get_mtu: the netdev MTU less 96 bytes of RoCE headers, rounded down to an IB MTU.
TEST(RoceAddress, MtuFromTheNetdev) {
    EXPECT_EQ(roce_mtu(9000), 5);
    EXPECT_EQ(roce_mtu(4096 + 96), 5);
    EXPECT_EQ(roce_mtu(4096 + 95), 4);
    EXPECT_EQ(roce_mtu(1500), 3); // 1404 bytes: 1024
    EXPECT_EQ(roce_mtu(1024 + 96), 3);
    EXPECT_EQ(roce_mtu(1024 + 95), 2);
    EXPECT_EQ(roce_mtu(256 + 96), 1);
    EXPECT_EQ(roce_mtu(256 + 95), 0);
    EXPECT_EQ(roce_mtu(68), 0);
    EXPECT_EQ(roce_mtu(0), 0);
}

TEST(RoceAddress, OnlyFullAndNonMemberHoldTheIpMembership) {
    for (std::uint8_t bits = 0; bits <= join::all; ++bits)
        EXPECT_EQ(holds_ip_membership(bits), (bits & 0x3) != 0) << int(bits);
}

} // namespace
} // namespace mcastd
