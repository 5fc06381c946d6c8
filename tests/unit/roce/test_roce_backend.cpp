// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The RoCE backend: which group a join names, which GID it is sent from, the record (as
// rdma_cm's cma_iboe_join_multicast makes it), and its members' kernel memberships; then the
// whole engine on an Ethernet port over it, counting per (network namespace, netdev, group).
#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/engine.hpp"
#include "fake_syscalls.hpp"
#include "fakes/fake_sa.hpp"
#include "fakes/fake_timers.hpp"
#include "port/port_registry.hpp"
#include "roce/roce_backend.hpp"
#include "roce_engine.hpp"

namespace mcastd::test {
namespace {

using roce::RoceBackend;
using roce::RoceGid;
using roce::RoceGroup;
using roce::RocePort;

constexpr std::uint64_t kHostNs = 4096, kContainerNs = 8192;

Gid gid(const char *text) { return *parse_gid(text); }
IpAddress ip(const char *text) { return *parse_ip(text); }

std::shared_ptr<const RoceJoin> roce_join(std::optional<IpAddress> group, std::optional<GidType> type, int fd = -1) {
    return std::make_shared<const RoceJoin>(group, type, fd);
}

// Host 1 of the Ethernet bed's fake device (doc/ethernet-bed.md §5): its GID table on veth1.
std::vector<RoceGid> bed_gids() {
    return {
        {0, gid("fe80::4dff:fe00:1"), GidType::roce_v1, "veth1"},
        {1, gid("::ffff:10.77.0.1"), GidType::roce_v2, "veth1"},
        {3, gid("fd00:77::1"), GidType::roce_v2, "veth1"},
        {4, gid("::ffff:10.77.0.1"), GidType::roce_v1, "veth1"},
    };
}

struct FakePorts final : roce::RocePorts {
    std::optional<RocePort> rxe0 = RocePort{"rxe0/1", bed_gids(), std::nullopt};
    std::optional<unsigned> mtu = 1500;
    std::optional<RocePort> port(PortIndex) const override { return rxe0; }
    std::optional<unsigned> netdev_mtu(const std::string &netdev) const override {
        return netdev == "veth1" || netdev == "veth9" ? mtu : std::nullopt;
    }
};

std::string message(const std::variant<RoceGroup, Error> &r) {
    return std::holds_alternative<Error>(r) ? std::get<Error>(r).message : "(resolved)";
}

// ---- the group a join names ----

TEST(RoceGroupOf, AnIpGroupOrItsMgidInEveryForm) {
    struct Case {
        const char *what;
        Gid mgid;
        std::optional<IpAddress> ip;
        std::optional<GidType> type;
        Gid want_mgid;
        GidType want_type;
    };
    const Case cases[] = {
        {"IPv4, default type", {}, ip("239.1.2.3"), std::nullopt, gid("::ffff:239.1.2.3"), GidType::roce_v2},
        {"IPv4 on RoCE v1", {}, ip("239.1.2.3"), GidType::roce_v1, gid("ff0e::ffff:ef01:203"), GidType::roce_v1},
        {"IPv6 on RoCE v1", {}, ip("ff0e::1:2"), GidType::roce_v1, gid("ff0e::1:2"), GidType::roce_v1},
        {"RoCE v2 MGID of IPv4", gid("::ffff:239.1.2.3"), std::nullopt, std::nullopt, gid("::ffff:239.1.2.3"),
         GidType::roce_v2},
        {"RoCE v1 MGID of IPv4", gid("ff0e::ffff:ef01:203"), std::nullopt, std::nullopt, gid("ff0e::ffff:ef01:203"),
         GidType::roce_v1},
        {"IPv6 MGID, default type", gid("ff0e::1:2"), std::nullopt, std::nullopt, gid("ff0e::1:2"), GidType::roce_v2},
        {"both, agreeing", gid("::ffff:239.1.2.3"), ip("239.1.2.3"), GidType::roce_v2, gid("::ffff:239.1.2.3"),
         GidType::roce_v2},
    };
    for (const Case &c : cases) {
        auto join = roce_join(c.ip, c.type);
        const auto r = roce::resolve_group(c.mgid, join.get(), GidType::roce_v2);
        ASSERT_TRUE(std::holds_alternative<RoceGroup>(r)) << c.what << ": " << message(r);
        EXPECT_EQ(std::get<RoceGroup>(r).mgid, c.want_mgid) << c.what;
        EXPECT_EQ(std::get<RoceGroup>(r).type, c.want_type) << c.what;
    }
    const auto plain = roce::resolve_group(gid("ff0e::1:2"), nullptr, GidType::roce_v1);
    EXPECT_EQ(std::get<RoceGroup>(plain).type, GidType::roce_v1) << "the port's default";
    EXPECT_EQ(std::get<RoceGroup>(plain).ip, ip("ff0e::1:2"));
}

TEST(RoceGroupOf, WhatNamesNoGroupIsRefusedSayingWhy) {
    auto r = [](Gid mgid, std::optional<IpAddress> group, std::optional<GidType> type = std::nullopt) {
        auto join = roce_join(group, type);
        return message(roce::resolve_group(mgid, join.get(), GidType::roce_v2));
    };
    EXPECT_EQ(r({}, std::nullopt),
              "a join on a RoCE port names an IP multicast group or its MGID: there is no SA to assign one");
    EXPECT_EQ(r({}, ip("10.0.0.1")), "10.0.0.1 is not an IP multicast group (224.0.0.0/4 or ff00::/8)");
    EXPECT_NE(r(gid("fe80::1"), std::nullopt).find("mgid fe80::1 names no IP multicast group"), std::string::npos);
    EXPECT_EQ(r(gid("::ffff:239.1.2.3"), std::nullopt, GidType::roce_v1),
              "mgid ::ffff:239.1.2.3 is the group 239.1.2.3 on roce_v2, not on roce_v1");
    EXPECT_EQ(r(gid("ff0e::ffff:ef01:203"), ip("239.1.2.3"), GidType::roce_v2),
              "mgid ff0e::ffff:ef01:203 is not the group 239.1.2.3, whose MGID on roce_v2 is ::ffff:239.1.2.3");
    EXPECT_EQ(r({}, ip("239.1.2.3"), GidType::ib), "gid_type ib is not a RoCE GID type (roce_v1 or roce_v2)");
}

TEST(RoceGroupOf, IPv6OnRoceV2IsRefusedUnlessAllowedAndThePortsDefaultTypeHolds) {
    FakePorts ports;
    FakeSyscalls sys;
    RoceBackend strict(ports, sys);
    JoinRequest req;
    req.roce = roce_join(ip("ff0e::1:2"), std::nullopt);
    auto refused = strict.group_of(0, req);
    ASSERT_TRUE(std::holds_alternative<Error>(refused));
    EXPECT_EQ(std::get<Error>(refused).message,
              "the IPv6 group ff0e::1:2 on a RoCE v2 GID would need an MLD membership, which rdma_cm refuses to "
              "make; so does this daemon unless groups.roce_ipv6 is true (or join it on roce_v1, or an IPv4 group)");
    ports.rxe0->default_type = GidType::roce_v1;
    EXPECT_EQ(std::get<Gid>(strict.group_of(0, req)), gid("ff0e::1:2")) << "v1 is the port's default";
    ports.rxe0->default_type.reset();
    RoceBackend lenient(ports, sys, roce::RoceOptions{.ipv6_on_roce_v2 = true});
    EXPECT_EQ(std::get<Gid>(lenient.group_of(0, req)), gid("ff0e::1:2"));
    req.roce = roce_join(ip("239.1.2.3"), std::nullopt);
    EXPECT_EQ(std::get<Gid>(strict.group_of(0, req)), gid("::ffff:239.1.2.3"));
}

// ---- which GID ----

TEST(RoceSourceGid, TheLowestEntryOfTheTypeAndTheGroupsFamily) {
    const auto gids = bed_gids();
    auto index = [&](GidType t, const char *group) {
        auto g = roce::source_gid(gids, t, ip(group));
        return g ? static_cast<int>(g->index) : -1;
    };
    EXPECT_EQ(index(GidType::roce_v2, "239.1.2.3"), 1) << "an IPv4 source for an IPv4 group";
    EXPECT_EQ(index(GidType::roce_v2, "ff0e::1:2"), 3) << "an IPv6 source for an IPv6 group";
    EXPECT_EQ(index(GidType::roce_v1, "239.1.2.3"), 4) << "RoCE v1: the group's family first";
    EXPECT_EQ(index(GidType::roce_v1, "ff0e::1:2"), 0);
    const std::vector<RoceGid> v6_only = {{2, gid("fd00:77::1"), GidType::roce_v2, "veth1"}};
    EXPECT_FALSE(roce::source_gid(v6_only, GidType::roce_v2, ip("239.1.2.3"))) << "RoCE v2 packets are IP";
    const std::vector<RoceGid> v1_v6 = {{5, gid("fe80::1"), GidType::roce_v1, "veth1"}};
    EXPECT_EQ(roce::source_gid(v1_v6, GidType::roce_v1, ip("239.1.2.3"))->index, 5u) << "v1 takes any";
}

// ---- the backend on its own ----

class Backend : public ::testing::Test {
protected:
    Backend() {
        sys.netdev(kHostNs, "veth1", 7);
        sys.netdev(kContainerNs, "veth1", 3);
    }

    // `next` (over `sys2`) takes back what an older daemon kept of member 1 of 239.1.2.3 on
    // RoCE v2: the group, with no source, and its kernel membership on veth1 (index 7) in the
    // daemon's own namespace, made again (no store).
    roce::Adoption take_back_one(RoceBackend &next) {
        roce::KeptRoce kept;
        kept.groups.push_back(roce::KeptGroup{"rxe0", 1, v2, GidType::roce_v2});
        kept.sockets.push_back(roce::KeptSocket{
            1, kHostNs, false, {roce::KeptMembership{*parse_ip("239.1.2.3"), 7, "veth1", {1}}}});
        sys2.own_netns = kHostNs;
        sys2.netdev(kHostNs, "veth1", 7);
        return next.adopt(
            kept, {}, [](const std::string &, std::uint8_t) -> std::optional<PortIndex> { return 0; }, {{1, {0, v2}}});
    }

    FabricResult make(const Gid &mgid, std::shared_ptr<const RoceJoin> roce = nullptr, GroupParams params = {},
                      bool rejoin = false) {
        FabricJoin j;
        j.mgid = mgid;
        j.bits = join::full;
        j.params = params;
        j.roce = std::move(roce);
        j.rejoin = rejoin;
        FabricResult out;
        int calls = 0;
        backend.make(j, [&](const FabricResult &r) {
            out = r;
            ++calls;
        });
        EXPECT_EQ(calls, 1) << "answered inside make()";
        return out;
    }
    std::optional<Error> add(MembershipId id, const Gid &mgid, std::uint8_t bits, std::uint64_t netns,
                             std::optional<GidType> type = std::nullopt) {
        const int fd = sys.socket(netns);
        auto r = backend.add_member(FabricMember{0, mgid, id, bits, roce_join(std::nullopt, type, fd), false});
        return r; // the RoceJoin closes fd here: the fake's client copy
    }

    FakePorts ports;
    FakeSyscalls sys;
    RoceBackend backend{ports, sys};
    FakeSyscalls sys2; // a next instance's view of the same kernel (take_back_one)
    const Gid v2 = gid("::ffff:239.1.2.3");
    const Gid v1 = gid("ff0e::ffff:ef01:203");
};

TEST_F(Backend, TheRecordIsRdmaCmsOnBothVersions) {
    const FabricResult r2 = make(v2);
    ASSERT_FALSE(r2.error) << r2.error->message;
    EXPECT_EQ(r2.record.mgid, v2);
    EXPECT_EQ(r2.record.port_gid, gid("::ffff:10.77.0.1")) << "the RoCE v2 GID of the group's family";
    EXPECT_EQ(r2.record.mlid, 0);
    EXPECT_EQ(r2.record.qkey, 0x01234567u);
    EXPECT_EQ(r2.record.pkey, 0xffff);
    EXPECT_EQ(r2.record.mtu_selector, Selector::exactly);
    EXPECT_EQ(r2.record.mtu, 3) << "1500 bytes of Ethernet carry an IB MTU of 1024";
    EXPECT_EQ(r2.record.rate, 0) << "the port's current rate";
    EXPECT_EQ(r2.record.hop_limit, 64) << "IPv4 on RoCE v2";
    // The RoCE keys: what the client's verbs helpers and its users read (the IP group and the
    // MAC follow from the MGID).
    EXPECT_EQ(r2.record.link_layer, LinkLayer::ethernet);
    EXPECT_EQ(r2.record.gid_type, GidType::roce_v2);
    EXPECT_EQ(r2.record.sgid_index, 1);
    EXPECT_EQ(r2.record.netdev, "veth1");
    const FabricResult r1 = make(v1);
    ASSERT_FALSE(r1.error) << r1.error->message;
    EXPECT_EQ(r1.record.port_gid, gid("::ffff:10.77.0.1")) << "index 4, the v1 entry";
    EXPECT_EQ(r1.record.hop_limit, 1) << "RoCE v1 is not routed";
    EXPECT_EQ(r1.record.link_layer, LinkLayer::ethernet);
    EXPECT_EQ(r1.record.gid_type, GidType::roce_v1);
    EXPECT_EQ(r1.record.sgid_index, 4);
    EXPECT_EQ(sys.adds, 0u) << "a group's make sends nothing";

    GroupParams p;
    p.qkey = 0x80010000;
    p.tclass = 0x28;
    EXPECT_EQ(make(gid("::ffff:239.1.2.4"), nullptr, p).record.qkey, 0x80010000u) << "the first join's Q_Key";
    EXPECT_EQ(make(gid("::ffff:239.1.2.4"), nullptr, p).record.tclass, 0x28);
    ports.mtu = 9000;
    EXPECT_EQ(make(v2).record.mtu, 5) << "9000 bytes: 4096";
}

TEST_F(Backend, AMakeThePortCannotServeIsRefusedNamingWhy) {
    ports.rxe0->gids = {{2, gid("fd00:77::1"), GidType::roce_v2, "veth1"}};
    EXPECT_EQ(make(v2).error->message, "rxe0/1 has no roce_v2 GID with an IPv4 address for the group 239.1.2.3");
    ports.rxe0->gids = bed_gids();
    ports.mtu.reset();
    EXPECT_EQ(make(v2).error->message, "cannot read the MTU of veth1");
    ports.mtu = 300;
    EXPECT_EQ(make(v2).error->message, "the MTU of veth1 (300 bytes) is too small for RoCE");
}

TEST_F(Backend, FullAndNonMembersHoldTheMembershipSendersNone) {
    ASSERT_FALSE(make(v2).error);
    EXPECT_FALSE(add(1, v2, join::send_only_non_member, kHostNs));
    EXPECT_FALSE(add(2, v2, join::send_only_full, kHostNs));
    EXPECT_EQ(sys.memberships(), 0u) << "no report for a sender";
    EXPECT_FALSE(backend.add_member(FabricMember{0, v2, 3, join::send_only_full, nullptr, false}))
        << "and no socket needed";
    EXPECT_FALSE(add(4, v2, join::full, kHostNs));
    EXPECT_FALSE(add(5, v2, join::non_member, kHostNs));
    EXPECT_EQ(sys.users(kHostNs, 7, ip("239.1.2.3")), 1u) << "one membership for both";
    EXPECT_EQ(sys.open_fds(), 1u) << "one socket kept";
    EXPECT_FALSE(backend.remove_member(FabricMember{0, v2, 1, join::send_only_non_member, nullptr, false}));
    EXPECT_FALSE(backend.remove_member(FabricMember{0, v2, 4, join::full, nullptr, false}));
    EXPECT_EQ(sys.users(kHostNs, 7, ip("239.1.2.3")), 1u);
    EXPECT_FALSE(backend.remove_member(FabricMember{0, v2, 5, join::non_member, nullptr, false}));
    EXPECT_EQ(sys.memberships(), 0u);
    EXPECT_EQ(sys.open_fds(), 0u);
}

// A restart: what kept() says of the groups and of the members holding each kernel membership
// is what the next instance's adopt() takes back, for the members the engine took back; a
// membership held by nobody taken back is dropped, and a leave of an adopted member drops the
// last holder's membership as any leave does.
TEST_F(Backend, WhatItKeepsTheNextInstanceTakesBackForTheMembersTakenBack) {
    const Gid v6 = gid("ff0e::1:2");
    ASSERT_FALSE(make(v2).error);
    ASSERT_FALSE(make(v6, roce_join(std::nullopt, GidType::roce_v1)).error);
    ASSERT_FALSE(add(1, v2, join::full, kHostNs));
    ASSERT_FALSE(add(2, v2, join::full, kHostNs));
    ASSERT_FALSE(add(3, v2, join::full, kContainerNs));
    ASSERT_FALSE(backend.add_member(FabricMember{
        0, v6, 4, join::full, roce_join(std::nullopt, GidType::roce_v1, sys.socket(kHostNs, AF_INET6)), false}));
    ASSERT_FALSE(add(5, v2, join::send_only_full, kHostNs));
    const roce::KeptRoce kept = backend.kept([](PortIndex) { return RoceBackend::PortName{"rxe0", 1}; });
    ASSERT_EQ(kept.groups.size(), 2u);
    // Each with the GID entry it is sent from: the next instance checks it against the table.
    const roce::KeptSource v2_source{1, gid("::ffff:10.77.0.1"), "veth1", 0, 0};
    EXPECT_EQ(kept.groups[0], (roce::KeptGroup{"rxe0", 1, v2, GidType::roce_v2, v2_source}));
    EXPECT_EQ(kept.groups[1], (roce::KeptGroup{"rxe0", 1, v6, GidType::roce_v1,
                                               roce::KeptSource{0, gid("fe80::4dff:fe00:1"), "veth1", 0, 0}}))
        << "an IPv6 MGID does not say";
    std::map<std::pair<std::uint64_t, std::string>, std::vector<std::uint64_t>> holders;
    for (const roce::KeptSocket &s : kept.sockets)
        for (const roce::KeptMembership &m : s.memberships) {
            EXPECT_EQ(m.netdev, "veth1");
            holders[{s.netns, format_ip(m.group)}] = m.members;
        }
    using Holders = decltype(holders);
    EXPECT_EQ(holders, (Holders{{{kHostNs, "239.1.2.3"}, {1, 2}},
                                {{kHostNs, "ff0e::1:2"}, {4}},
                                {{kContainerNs, "239.1.2.3"}, {3}}}))
        << "a sender holds none";
    backend.hand_over(); // a restart without a store: the process ends, and with it the sockets

    // sys2: the next instance's view of the same kernel (a model each).
    sys2.own_netns = kHostNs;
    sys2.netdev(kHostNs, "veth1", 7);
    RoceBackend next{ports, sys2};
    const roce::Adoption a = next.adopt(
        kept, {},
        [](const std::string &device, std::uint8_t port) -> std::optional<PortIndex> {
            if (device == "rxe0" && port == 1)
                return 0;
            return std::nullopt;
        },
        {{1, {0, v2}}, {2, {0, v2}}, {3, {0, v2}}}); // member 4's session was not taken back
    EXPECT_EQ(a.remade, 1u) << "239.1.2.3 in the daemon's namespace";
    ASSERT_EQ(a.dropped.size(), 1u) << "the container's: no socket of its namespace";
    EXPECT_EQ(a.lost, (std::map<std::uint64_t, std::string>{{3, a.dropped[0]}}))
        << "its holder is named, for the caller to release";
    EXPECT_EQ(sys2.users(kHostNs, 7, ip("239.1.2.3")), 1u);
    EXPECT_EQ(sys2.users(kHostNs, 7, ip("ff0e::1:2")), 0u) << "nobody holds it again";
    const roce::KeptRoce now = next.kept([](PortIndex) { return RoceBackend::PortName{"rxe0", 1}; });
    EXPECT_EQ(now.groups, (std::vector<roce::KeptGroup>{{"rxe0", 1, v2, GidType::roce_v2, v2_source}}))
        << "the IPv6 group's only member was not taken back: the group is forgotten";

    // The groups are known again: a new member joins without a make, on the same membership.
    EXPECT_FALSE(next.add_member(
        FabricMember{0, v2, 6, join::full, roce_join(std::nullopt, std::nullopt, sys2.socket(kHostNs)), false}));
    EXPECT_EQ(sys2.users(kHostNs, 7, ip("239.1.2.3")), 1u);
    for (MembershipId id : {1, 2, 3, 6})
        EXPECT_FALSE(next.remove_member(FabricMember{0, v2, id, join::full, nullptr, false}));
    EXPECT_EQ(sys2.memberships(), 0u) << "the last adopted holder's leave drops it";
    EXPECT_EQ(sys2.open_fds(), 0u);
}

// A member taken back is where the engine says it is: when its group's source GID goes, its
// kernel membership is set aside like any other's (the kernel sends the leave).
TEST_F(Backend, AMemberTakenBackIsSetAsideWhenItsSourceGoes) {
    RoceBackend next{ports, sys2};
    ASSERT_EQ(take_back_one(next).remade, 1u);
    ASSERT_EQ(sys2.users(kHostNs, 7, ip("239.1.2.3")), 1u);
    next.suspend(0, v2);
    EXPECT_EQ(sys2.users(kHostNs, 7, ip("239.1.2.3")), 0u) << "set aside: the kernel dropped it";
    EXPECT_FALSE(next.remove_member(FabricMember{0, v2, 1, join::full, nullptr, false}));
    EXPECT_EQ(sys2.open_fds(), 0u);
}

// A state of an older daemon names no group's source. A group no GID serves as it is taken back
// waits for one, and its member's kernel membership follows the source's netdev when it comes
// back, as any member's does that named no interface of its own.
TEST_F(Backend, AMemberOfAGroupTakenBackWithNoSourceFollowsItsSourceBack) {
    ports.rxe0->gids = {bed_gids()[0]}; // the IPv4 RoCE v2 entry is gone
    RoceBackend next{ports, sys2};
    ASSERT_EQ(take_back_one(next).remade, 1u);
    EXPECT_EQ(next.check_source(0, v2).state, SourceCheck::State::gone);
    next.suspend(0, v2);
    ASSERT_EQ(sys2.users(kHostNs, 7, ip("239.1.2.3")), 0u);

    sys2.netdev(kHostNs, "veth9", 9); // the address comes back on another netdev
    ports.rxe0->gids = {bed_gids()[0], {1, gid("::ffff:10.77.0.1"), GidType::roce_v2, "veth9"}};
    EXPECT_EQ(next.check_source(0, v2).state, SourceCheck::State::moved);
    FabricJoin j;
    j.mgid = v2;
    j.bits = join::full;
    j.rejoin = true;
    next.make(j, [](const FabricResult &r) { EXPECT_FALSE(r.error); });
    EXPECT_FALSE(next.add_member(FabricMember{0, v2, 1, join::full, nullptr, true}));
    EXPECT_EQ(sys2.users(kHostNs, 9, ip("239.1.2.3")), 1u) << "on the source's netdev";
    EXPECT_EQ(sys2.users(kHostNs, 7, ip("239.1.2.3")), 0u);
}

// A container's interface may be named otherwise than the source GID's netdev: the join names
// it (`ifname`), and the membership is held there, across a re-join and a restart too.
TEST_F(Backend, AClientMayNameTheInterfaceOfItsNamespace) {
    ASSERT_FALSE(make(v2).error);
    sys.netdev(kContainerNs, "eth0", 5);
    const auto named = [&](MembershipId id, bool rejoin) {
        return backend.add_member(FabricMember{
            0, v2, id, join::full,
            std::make_shared<const RoceJoin>(std::nullopt, std::nullopt, sys.socket(kContainerNs), "eth0"), rejoin});
    };
    EXPECT_FALSE(named(1, false));
    EXPECT_EQ(sys.users(kContainerNs, 5, ip("239.1.2.3")), 1u) << "on the interface it named";
    EXPECT_EQ(sys.users(kContainerNs, 3, ip("239.1.2.3")), 0u) << "not on the one named as the source's netdev";
    EXPECT_FALSE(named(1, true)) << "a re-join asks again on the same interface";
    EXPECT_EQ(sys.users(kContainerNs, 5, ip("239.1.2.3")), 1u);

    const roce::KeptRoce kept = backend.kept([](PortIndex) { return RoceBackend::PortName{"rxe0", 1}; });
    ASSERT_EQ(kept.sockets.size(), 1u);
    EXPECT_EQ(kept.sockets[0].memberships.at(0).netdev, "eth0");
    backend.hand_over();
}

TEST_F(Backend, AMemberWithoutASocketOrOfAnotherTypeIsRefused) {
    ASSERT_FALSE(make(gid("ff0e::1:2"), roce_join(std::nullopt, GidType::roce_v1)).error);
    auto no_socket = backend.add_member(FabricMember{0, gid("ff0e::1:2"), 1, join::full,
                                                     roce_join(std::nullopt, GidType::roce_v1), false});
    ASSERT_TRUE(no_socket);
    EXPECT_EQ(no_socket->code, Errc::invalid_argument);
    EXPECT_EQ(no_socket->message, "a full join on a RoCE port hands over a UDP socket made in the client's network "
                                  "namespace (SCM_RIGHTS), on which the daemon holds the group's MLD membership");
    auto other_type = add(2, gid("ff0e::1:2"), join::send_only_full, kHostNs, GidType::roce_v2);
    ASSERT_TRUE(other_type);
    EXPECT_EQ(other_type->code, Errc::conflict);
    EXPECT_EQ(other_type->message, "the group ff0e::1:2 is joined on roce_v1, not roce_v2");
    EXPECT_EQ(backend.add_member(FabricMember{0, gid("ff0e::1:9"), 3, join::full, nullptr, false})->code,
              Errc::internal)
        << "a group never made";
}

TEST_F(Backend, TheMembershipIsHeldOnTheGidsNetdevInEachClientsNamespace) {
    ASSERT_FALSE(make(v2).error);
    EXPECT_FALSE(add(1, v2, join::full, kHostNs));
    EXPECT_FALSE(add(2, v2, join::full, kContainerNs));
    EXPECT_FALSE(add(3, v2, join::full, kContainerNs));
    EXPECT_EQ(sys.users(kHostNs, 7, ip("239.1.2.3")), 1u);
    EXPECT_EQ(sys.users(kContainerNs, 3, ip("239.1.2.3")), 1u);
    EXPECT_EQ(backend.kernel().memberships(), 2u);
    sys.remove_netdev(kContainerNs, "veth1");
    auto gone = add(4, v2, join::full, kContainerNs);
    ASSERT_TRUE(gone);
    EXPECT_EQ(gone->message, "SIOCGIFINDEX veth1 in the client's network namespace: ENODEV (No such device); a "
                             "client whose network namespace names the interface otherwise gives its name as ifname");
}

TEST_F(Backend, AReJoinReassertsWhatItHoldsAndRefusesWhatItCannot) {
    ASSERT_FALSE(make(v2).error);
    EXPECT_FALSE(add(1, v2, join::full, kHostNs));
    ASSERT_FALSE(make(v2, nullptr, {}, true).error) << "made again as before";
    const unsigned adds = sys.adds;
    EXPECT_FALSE(backend.add_member(FabricMember{0, v2, 1, join::full, nullptr, true}));
    EXPECT_EQ(sys.adds, adds + 1) << "asked once more";
    EXPECT_EQ(sys.users(kHostNs, 7, ip("239.1.2.3")), 1u) << "and still held once";
    auto unknown = backend.add_member(FabricMember{0, v2, 2, join::full, nullptr, true});
    ASSERT_TRUE(unknown) << "a member it never held has no socket to be made on";
}

TEST_F(Backend, AReJoinKeepsTheGroupsGidType) {
    const Gid v6 = gid("ff0e::1:2");
    ASSERT_FALSE(make(v6, roce_join(std::nullopt, GidType::roce_v1)).error);
    const FabricResult again = make(v6, nullptr, {}, true);
    ASSERT_FALSE(again.error) << again.error->message;
    EXPECT_EQ(again.record.port_gid, gid("fe80::4dff:fe00:1")) << "still RoCE v1's, not the default v2";
}

// ---- the engine over it ----

class EngineOverRoce : public ::testing::Test {
protected:
    EngineOverRoce() : engine(EngineConfig{}, registry, sa, timers) {
        sys.netdev(kHostNs, "veth1", 7);
        sys.netdev(kContainerNs, "veth1", 3);
        engine.set_backend(LinkLayer::ethernet, backend);
        serve_rxe0(registry, engine);
        for (int i = 0; i < 3; ++i)
            clients.push_back(engine.add_client(ClientInfo{100 + i, 1000, 1000, "app"}));
    }

    // A join from `client` in `netns`, which hands a socket over and closes its own copy.
    JoinResult join(ClientId client, std::uint64_t netns, const char *group, std::uint8_t bits = join::full) {
        JoinRequest r;
        r.device = "rxe0";
        r.port = 1;
        r.join_state = bits;
        r.roce = roce_join(ip(group), std::nullopt, sys.socket(netns));
        JoinResult out;
        engine.join(client, r, [&out](const JoinResult &res) { out = res; });
        return out;
    }

    FakeTimers timers;
    FakeSa sa;
    port::PortRegistry registry;
    FakePorts ports;
    FakeSyscalls sys;
    RoceBackend backend{ports, sys};
    Engine engine;
    std::vector<ClientId> clients;
};

TEST_F(EngineOverRoce, ThreeClientsInOneNamespaceShareOneMembershipAndTheLastDeathDropsIt) {
    for (ClientId c : clients) {
        const JoinResult r = join(c, kHostNs, "239.1.2.3");
        ASSERT_FALSE(r.error) << r.error->message;
        EXPECT_EQ(r.record.mgid, gid("::ffff:239.1.2.3"));
        EXPECT_EQ(r.record.port_gid, gid("::ffff:10.77.0.1")) << "the source GID, not the port's first";
        EXPECT_EQ(r.record.hop_limit, 64);
    }
    EXPECT_EQ(sys.users(kHostNs, 7, ip("239.1.2.3")), 1u) << "Users 1";
    EXPECT_EQ(sys.open_fds(), 1u) << "one descriptor for the three";
    engine.remove_client(clients[0]);
    engine.remove_client(clients[1]);
    EXPECT_EQ(sys.users(kHostNs, 7, ip("239.1.2.3")), 1u);
    engine.remove_client(clients[2]); // as a kill -9 of the last one ends its connection
    EXPECT_EQ(sys.memberships(), 0u);
    EXPECT_EQ(sys.open_fds(), 0u);
    EXPECT_TRUE(engine.groups().empty());
    EXPECT_TRUE(sa.log.empty()) << "no SA on Ethernet";
}

TEST_F(EngineOverRoce, TwoNamespacesOnOnePortHoldOneEach) {
    MembershipId host = 0;
    ASSERT_FALSE(join(clients[0], kHostNs, "239.1.2.3").error);
    ASSERT_FALSE(join(clients[1], kContainerNs, "239.1.2.3").error);
    ASSERT_FALSE(join(clients[2], kContainerNs, "239.1.2.3").error);
    EXPECT_EQ(sys.users(kHostNs, 7, ip("239.1.2.3")), 1u);
    EXPECT_EQ(sys.users(kContainerNs, 3, ip("239.1.2.3")), 1u);
    ASSERT_EQ(engine.groups().size(), 1u) << "one group of the port, one record";
    EXPECT_EQ(engine.groups()[0].counts[0], 3u);
    host = engine.groups()[0].members.at(0).id;
    EXPECT_FALSE(engine.leave(clients[0], host));
    EXPECT_EQ(sys.users(kHostNs, 7, ip("239.1.2.3")), 0u) << "the host's last member left";
    EXPECT_EQ(sys.users(kContainerNs, 3, ip("239.1.2.3")), 1u);
}

TEST_F(EngineOverRoce, SendOnlyJoinsHoldNoneAndAFailedMembershipFailsItsJoin) {
    const JoinResult sender = join(clients[0], kHostNs, "239.1.2.3", join::send_only_full);
    ASSERT_FALSE(sender.error) << sender.error->message;
    EXPECT_EQ(sender.record.mlid, 0);
    EXPECT_EQ(sys.memberships(), 0u);
    EXPECT_EQ(sys.open_fds(), 0u) << "its socket was not kept";
    sys.add_errno = EADDRNOTAVAIL;
    const JoinResult refused = join(clients[1], kHostNs, "239.1.2.3");
    ASSERT_TRUE(refused.error);
    EXPECT_EQ(refused.error->message,
              "IP_ADD_MEMBERSHIP 239.1.2.3 on veth1: EADDRNOTAVAIL (Cannot assign requested address)");
    EXPECT_EQ(sys.memberships(), 0u);
    ASSERT_EQ(engine.groups().size(), 1u);
    EXPECT_EQ(engine.groups()[0].held, join::send_only_full) << "the full bit it made was dropped";
}

TEST_F(EngineOverRoce, AThousandGroupsCostFiftyDescriptors) {
    for (int i = 0; i < 1000; ++i) {
        const std::string group = "239.2." + std::to_string(i / 256) + "." + std::to_string(i % 256);
        const JoinResult r = join(clients[i % 3], kHostNs, group.c_str());
        ASSERT_FALSE(r.error) << r.error->message;
    }
    EXPECT_EQ(sys.memberships(), 1000u);
    EXPECT_EQ(sys.open_fds(), 50u) << "20 groups a socket";
    for (ClientId c : clients)
        engine.remove_client(c);
    EXPECT_EQ(sys.memberships(), 0u);
    EXPECT_EQ(sys.open_fds(), 0u);
}

} // namespace
} // namespace mcastd::test
