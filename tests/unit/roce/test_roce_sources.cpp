// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A RoCE port's sources (issue 27 §4, doc/roce-multicast.md §8): the GID a group is sent from
// going away (or its netdev leaving the daemon's network namespace) tells its members `lost`
// and drops the kernel membership; the GID coming back, at its index or another, makes it again
// and tells them `restored` with the record's new sgid_index; a link flap does nothing at all.
// The engine over the real RoCE backend and a model of the kernel (fake_syscalls.hpp). A
// restart carries a suspended group: its members wait, set aside, in the next instance.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/engine.hpp"
#include "fake_store.hpp"
#include "fake_syscalls.hpp"
#include "fakes/fake_sa.hpp"
#include "fakes/fake_timers.hpp"
#include "port/port_registry.hpp"
#include "roce/roce_backend.hpp"
#include "roce_engine.hpp"

namespace mcastd::test {
namespace {

using roce::RoceGid;
using roce::RocePort;

constexpr std::uint64_t kHostNs = 4096;
constexpr int kVeth1 = 7;

Gid gid(const char *text) { return *parse_gid(text); }
IpAddress ip(const char *text) { return *parse_ip(text); }

const RoceGid kLinkLocalV1{0, gid("fe80::4dff:fe00:1"), GidType::roce_v1, "veth1"};
const RoceGid kIpv4V2{1, gid("::ffff:10.77.0.1"), GidType::roce_v2, "veth1"};

struct Ports final : roce::RocePorts {
    std::vector<RoceGid> gids{kLinkLocalV1, kIpv4V2};
    std::optional<RocePort> port(PortIndex) const override { return RocePort{"rxe0/1", gids, std::nullopt}; }
    std::optional<unsigned> netdev_mtu(const std::string &) const override { return 1500; }
};

struct Heard final : MembershipEventSink {
    struct One {
        ClientId client;
        MembershipEvent ev;
    };
    std::vector<One> events;
    void membership_event(ClientId client, MembershipId, const MembershipEvent &ev) override {
        events.push_back({client, ev});
    }
    std::size_t count(MembershipEvent::Kind kind) const {
        std::size_t n = 0;
        for (const One &e : events)
            n += e.ev.kind == kind;
        return n;
    }
};

class RoceSources : public ::testing::Test {
protected:
    RoceSources() : engine(EngineConfig{}, registry, sa, timers) {
        sys.netdev(kHostNs, "veth1", kVeth1);
        engine.set_backend(LinkLayer::ethernet, backend);
        engine.set_event_sink(&heard);
        serve_rxe0(registry, engine);
        for (int i = 0; i < 2; ++i)
            clients.push_back(engine.add_client(ClientInfo{100 + i, 1000, 1000, "app"}));
    }

    JoinResult join(ClientId client, const char *group, std::optional<GidType> type = std::nullopt) {
        JoinRequest r;
        r.device = "rxe0";
        r.port = 1;
        r.join_state = join::full;
        r.roce = std::make_shared<const RoceJoin>(ip(group), type, sys.socket(kHostNs));
        JoinResult out;
        engine.join(client, r, [&out](const JoinResult &res) { out = res; });
        return out;
    }
    // What the port's watch does after a re-read: the engine judges every group, then the
    // re-join's jitter passes.
    void sources_changed() {
        engine.sources_changed(0, "GID table changed");
        timers.run_until_idle();
    }
    unsigned users(const char *group, int ifindex = kVeth1) { return sys.users(kHostNs, ifindex, ip(group)); }

    // The next instance of the daemon, over the same port, kernel and fd store.
    struct Next {
        explicit Next(Ports &ports, FakeSyscalls &sys) : backend(ports, sys), engine(EngineConfig{}, registry, sa, timers) {
            engine.set_backend(LinkLayer::ethernet, backend);
            engine.set_event_sink(&heard);
            serve_rxe0(registry, engine);
        }
        FakeTimers timers;
        FakeSa sa;
        port::PortRegistry registry;
        roce::RoceBackend backend;
        Heard heard;
        Engine engine;
    };
    // A planned restart under the fd store, as restart/keeper.cpp writes the state and takes it
    // back: each group with its bits and record, each membership; a group with uncertain bits
    // only is one being made again, whose members' kernel memberships were set aside.
    std::unique_ptr<Next> restart() {
        const roce::KeptRoce kept = backend.kept([](PortIndex) { return roce::RoceBackend::PortName{"rxe0", 1}; });
        const std::vector<GroupView> saved = engine.groups();
        backend.hand_over();
        auto next = std::make_unique<Next>(ports, sys);
        next->backend.set_store(&store);
        std::map<MembershipId, roce::RoceBackend::TakenBack> adopted;
        std::map<ClientId, ClientId> client_of;
        for (const GroupView &g : saved) {
            next->engine.adopt_group(0, g.mgid, g.held, g.uncertain,
                                     g.have_record ? std::optional<McRecord>(g.record) : std::nullopt);
            for (const MemberView &m : g.members) {
                if (!client_of.count(m.client))
                    client_of[m.client] = next->engine.add_client(ClientInfo{200 + static_cast<int>(m.client), 1000, 1000, "app"});
                EXPECT_TRUE(next->engine.adopt_member(client_of[m.client], m.id, 0, g.mgid, m.join_state, m.params));
                adopted[m.id] = {0, g.mgid, !g.held && g.uncertain};
            }
        }
        const roce::Adoption a = next->backend.adopt(
            kept, store.passed(), [](const std::string &, std::uint8_t) -> std::optional<PortIndex> { return 0; },
            adopted);
        EXPECT_TRUE(a.lost.empty());
        next->engine.end_adoption();
        next->timers.run_until_idle();
        return next;
    }

    FakeTimers timers;
    FakeSa sa;
    port::PortRegistry registry;
    Ports ports;
    FakeSyscalls sys;
    FakeStore store{sys};
    roce::RoceBackend backend{ports, sys};
    Heard heard;
    Engine engine;
    std::vector<ClientId> clients;
};

TEST_F(RoceSources, TheRecordNamesItsSource) {
    const JoinResult r = join(clients[0], "239.1.2.3");
    ASSERT_FALSE(r.error) << r.error->message;
    EXPECT_EQ(r.record.link_layer, LinkLayer::ethernet);
    EXPECT_EQ(r.record.gid_type, GidType::roce_v2);
    EXPECT_EQ(r.record.sgid_index, 1);
    EXPECT_EQ(r.record.netdev, "veth1");
}

TEST_F(RoceSources, TheGidGoneLosesTheMembershipAndItsReturnAtAnotherIndexRestoresIt) {
    for (ClientId c : clients)
        ASSERT_FALSE(join(c, "239.1.2.3").error);
    ASSERT_EQ(users("239.1.2.3"), 1u);

    ports.gids = {kLinkLocalV1}; // the address is removed from veth1
    sources_changed();
    ASSERT_EQ(heard.count(MembershipEvent::Kind::lost), 2u);
    EXPECT_EQ(heard.events[0].ev.reason->code, Errc::port_not_active);
    EXPECT_NE(heard.events[0].ev.reason->message.find("::ffff:10.77.0.1 (index 1 on veth1) is gone from the GID table"),
              std::string::npos)
        << heard.events[0].ev.reason->message;
    EXPECT_EQ(users("239.1.2.3"), 0u) << "the kernel membership is dropped: the switch prunes the port";
    EXPECT_EQ(sys.open_fds(), 1u) << "its socket is kept to make it again";
    ASSERT_EQ(engine.groups().size(), 1u) << "the members stay, for when the address comes back";
    EXPECT_EQ(engine.groups()[0].counts[0], 2u);

    const JoinResult refused = join(clients[0], "239.1.2.3");
    ASSERT_TRUE(refused.error) << "a join of a group with no source fails";
    EXPECT_EQ(refused.error->code, Errc::port_not_active);

    heard.events.clear();
    RoceGid back = kIpv4V2;
    back.index = 5; // re-added, at another index
    ports.gids = {kLinkLocalV1, back};
    sources_changed();
    ASSERT_EQ(heard.count(MembershipEvent::Kind::restored), 2u);
    for (const auto &e : heard.events) {
        EXPECT_EQ(e.ev.record.sgid_index, 5);
        EXPECT_TRUE(e.ev.changed & field::sgid_index) << "rebuild the address handle";
    }
    EXPECT_EQ(users("239.1.2.3"), 1u) << "made again, once for both";

    for (ClientId c : clients)
        engine.remove_client(c);
    EXPECT_EQ(sys.memberships(), 0u);
    EXPECT_EQ(sys.open_fds(), 0u);
}

TEST_F(RoceSources, TheNetdevGoneFromTheNamespaceLosesItAndItsReturnUnderANewIndexRestoresIt) {
    ASSERT_FALSE(join(clients[0], "239.1.2.3").error);
    RoceGid gone = kIpv4V2;
    gone.netdev_gone = true;
    ports.gids = {kLinkLocalV1, gone};
    sys.remove_netdev(kHostNs, "veth1"); // the kernel drops its memberships with it
    sources_changed();
    ASSERT_EQ(heard.count(MembershipEvent::Kind::lost), 1u);
    EXPECT_NE(heard.events[0].ev.reason->message.find("veth1 is gone from the daemon's network namespace"),
              std::string::npos)
        << heard.events[0].ev.reason->message;

    heard.events.clear();
    sys.netdev(kHostNs, "veth1", 9); // moved back: a new index
    RoceGid back = kIpv4V2;
    back.ifindex = 9;
    ports.gids = {kLinkLocalV1, back};
    sources_changed();
    ASSERT_EQ(heard.count(MembershipEvent::Kind::restored), 1u);
    EXPECT_EQ(heard.events[0].ev.record.sgid_index, 1);
    EXPECT_EQ(users("239.1.2.3", 9), 1u) << "held on the netdev's new index";
    engine.remove_client(clients[0]);
    EXPECT_EQ(sys.memberships(), 0u);
    EXPECT_EQ(sys.open_fds(), 0u);
}

TEST_F(RoceSources, AnEntryMovedBetweenTwoReadsIsRestoredWithoutALoss) {
    ASSERT_FALSE(join(clients[0], "239.1.2.3").error);
    const unsigned drops = sys.drops;
    RoceGid moved = kIpv4V2;
    moved.index = 2;
    ports.gids = {kLinkLocalV1, moved};
    sources_changed();
    EXPECT_EQ(heard.count(MembershipEvent::Kind::lost), 0u);
    ASSERT_EQ(heard.count(MembershipEvent::Kind::restored), 1u);
    EXPECT_EQ(heard.events[0].ev.record.sgid_index, 2);
    EXPECT_EQ(heard.events[0].ev.changed, field::sgid_index);
    EXPECT_EQ(sys.drops, drops) << "the kernel membership stays";
    EXPECT_EQ(users("239.1.2.3"), 1u);
}

TEST_F(RoceSources, OnlyTheGroupsOfTheGoneSourceAreTouched) {
    ASSERT_FALSE(join(clients[0], "239.1.2.3").error);                     // RoCE v2, index 1
    ASSERT_FALSE(join(clients[1], "239.1.2.3", GidType::roce_v1).error);   // RoCE v1, index 0
    ASSERT_EQ(users("239.1.2.3"), 1u) << "one kernel membership for both groups";
    ports.gids = {kLinkLocalV1};
    sources_changed();
    ASSERT_EQ(heard.count(MembershipEvent::Kind::lost), 1u);
    EXPECT_EQ(heard.events[0].client, clients[0]);
    EXPECT_EQ(users("239.1.2.3"), 1u) << "the RoCE v1 group still holds it";
    engine.remove_client(clients[1]);
    EXPECT_EQ(users("239.1.2.3"), 0u) << "the only holder left is set aside";
    ports.gids = {kLinkLocalV1, kIpv4V2};
    sources_changed();
    EXPECT_EQ(heard.count(MembershipEvent::Kind::restored), 1u);
    EXPECT_EQ(users("239.1.2.3"), 1u);
}

TEST_F(RoceSources, ALeaveWhileTheSourceIsGoneEndsItWithNoKernelCall) {
    ASSERT_FALSE(join(clients[0], "239.1.2.3").error);
    ports.gids = {kLinkLocalV1};
    sources_changed();
    const unsigned drops = sys.drops;
    engine.remove_client(clients[0]);
    EXPECT_EQ(sys.drops, drops) << "dropped already";
    EXPECT_EQ(sys.open_fds(), 0u);
    EXPECT_TRUE(engine.groups().empty());
    const auto name_of = [](PortIndex) { return roce::RoceBackend::PortName{"rxe0", 1}; };
    EXPECT_TRUE(backend.kept(name_of).groups.empty()) << "the backend forgot the group too";
    ports.gids = {kLinkLocalV1, kIpv4V2};
    sources_changed();
    EXPECT_EQ(sys.memberships(), 0u);
}

TEST_F(RoceSources, ALinkFlapCausesNoKernelMembershipCallAndNoEvent) {
    ASSERT_FALSE(join(clients[0], "239.1.2.3").error);
    ASSERT_FALSE(join(clients[1], "239.1.2.4").error);
    const unsigned adds = sys.adds, drops = sys.drops;
    registry.set_usable(0, false);
    engine.port_usable_changed(0, "the link is DOWN");
    timers.run_until_idle();
    registry.set_usable(0, true);
    engine.port_usable_changed(0, "");
    timers.run_until_idle();
    EXPECT_EQ(sys.adds, adds) << "no re-join";
    EXPECT_EQ(sys.drops, drops);
    EXPECT_TRUE(heard.events.empty()) << "no lost, no restored";
    EXPECT_EQ(users("239.1.2.3"), 1u);
    EXPECT_EQ(users("239.1.2.4"), 1u);
    EXPECT_EQ(engine.ports().at(0).rejoins, 0u);
}

TEST_F(RoceSources, NothingChangedMeansNothingDone) {
    ASSERT_FALSE(join(clients[0], "239.1.2.3").error);
    const unsigned adds = sys.adds, drops = sys.drops;
    sources_changed();
    EXPECT_EQ(sys.adds, adds);
    EXPECT_EQ(sys.drops, drops);
    EXPECT_TRUE(heard.events.empty());
}

// A planned restart while a group's source is gone: the next instance takes its members back
// still lost (no event, no report: nothing could be sent from the group's source), and the
// address's return restores them as it would have before the restart.
TEST_F(RoceSources, ARestartWhileTheSourceIsGoneKeepsTheMembersForItsReturn) {
    backend.set_store(&store);
    for (ClientId c : clients)
        ASSERT_FALSE(join(c, "239.1.2.3").error);
    ports.gids = {kLinkLocalV1};
    sources_changed();
    ASSERT_EQ(heard.count(MembershipEvent::Kind::lost), 2u);
    ASSERT_EQ(users("239.1.2.3"), 0u);
    const unsigned adds = sys.adds;

    auto next = restart();
    EXPECT_TRUE(next->heard.events.empty()) << "they were told `lost` once, before the restart";
    EXPECT_EQ(sys.adds, adds) << "the kernel was not asked to hold the group";
    EXPECT_EQ(users("239.1.2.3"), 0u);
    const std::vector<GroupView> groups = next->engine.groups();
    ASSERT_EQ(groups.size(), 1u);
    ASSERT_EQ(groups[0].members.size(), 2u);
    for (const MemberView &m : groups[0].members)
        EXPECT_EQ(m.state, MemberView::State::lost) << "waiting for the source";

    RoceGid back = kIpv4V2;
    back.index = 4;
    ports.gids = {kLinkLocalV1, back};
    next->engine.sources_changed(0, "GID table changed");
    next->timers.run_until_idle();
    ASSERT_EQ(next->heard.count(MembershipEvent::Kind::restored), 2u);
    EXPECT_EQ(next->heard.events[0].ev.record.sgid_index, 4);
    EXPECT_EQ(users("239.1.2.3"), 1u) << "made again, once for both, on the socket the store kept";
    const auto held = next->engine.groups(); // a range-for over a temporary's member would dangle
    for (const MemberView &m : held.at(0).members)
        EXPECT_EQ(m.state, MemberView::State::active);
    next->engine.remove_client(next->engine.groups().at(0).members.at(0).client);
    next->engine.remove_client(next->engine.groups().at(0).members.at(0).client);
    EXPECT_EQ(sys.memberships(), 0u);
    EXPECT_TRUE(next->engine.groups().empty());
}

// The source came back while no instance watched: the next instance makes the group again at
// once, and its members hear `restored`.
TEST_F(RoceSources, ASourceBackDuringTheRestartRestoresTheMembersAtOnce) {
    backend.set_store(&store);
    ASSERT_FALSE(join(clients[0], "239.1.2.3").error);
    ports.gids = {kLinkLocalV1};
    sources_changed();
    ASSERT_EQ(heard.count(MembershipEvent::Kind::lost), 1u);
    ports.gids = {kLinkLocalV1, kIpv4V2};

    auto next = restart();
    ASSERT_EQ(next->heard.count(MembershipEvent::Kind::restored), 1u);
    EXPECT_EQ(next->heard.count(MembershipEvent::Kind::lost), 0u);
    EXPECT_EQ(users("239.1.2.3"), 1u);
}

// The source went while no instance watched: the next instance suspends the group it took
// back as held, as a change of the GID table would have, naming the source the state kept.
TEST_F(RoceSources, ASourceGoneDuringTheRestartSuspendsTheGroupItTookBack) {
    backend.set_store(&store);
    ASSERT_FALSE(join(clients[0], "239.1.2.3").error);
    ASSERT_EQ(users("239.1.2.3"), 1u);
    ports.gids = {kLinkLocalV1};

    auto next = restart();
    ASSERT_EQ(next->heard.count(MembershipEvent::Kind::lost), 1u);
    EXPECT_NE(next->heard.events[0].ev.reason->message.find(
                  "the source roce_v2 GID ::ffff:10.77.0.1 (index 1 on veth1) is gone from the GID table"),
              std::string::npos)
        << next->heard.events[0].ev.reason->message;
    EXPECT_EQ(users("239.1.2.3"), 0u) << "set aside: the switch prunes the port";
    ports.gids = {kLinkLocalV1, kIpv4V2};
    next->engine.sources_changed(0, "GID table changed");
    next->timers.run_until_idle();
    EXPECT_EQ(next->heard.count(MembershipEvent::Kind::restored), 1u);
    EXPECT_EQ(users("239.1.2.3"), 1u);
}

// The source moved to another index while no instance watched: the next instance makes the
// group again from it, and its members hear `restored` with the new sgid_index (their address
// handles name the old one), the kernel membership staying as it is.
TEST_F(RoceSources, ASourceMovedDuringTheRestartRestoresTheMembersWithTheNewIndex) {
    backend.set_store(&store);
    ASSERT_FALSE(join(clients[0], "239.1.2.3").error);
    RoceGid moved = kIpv4V2;
    moved.index = 6;
    ports.gids = {kLinkLocalV1, moved};
    const unsigned drops = sys.drops;

    auto next = restart();
    ASSERT_EQ(next->heard.count(MembershipEvent::Kind::restored), 1u);
    EXPECT_EQ(next->heard.count(MembershipEvent::Kind::lost), 0u);
    EXPECT_EQ(next->heard.events[0].ev.record.sgid_index, 6);
    EXPECT_TRUE(next->heard.events[0].ev.changed & field::sgid_index);
    EXPECT_EQ(sys.drops, drops);
    EXPECT_EQ(users("239.1.2.3"), 1u);
}

} // namespace
} // namespace mcastd::test
