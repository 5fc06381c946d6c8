// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `status` per port: the SM, the MTU and the last re-join, built from hand-made engine and port
// state (the sim tier checks the same fields against a real OpenSM); and the whole of it from a
// Service over the fake SA: memberships per JoinState, re-joins and the events they told.
#include <gtest/gtest.h>

#include "fakes/fake_port.hpp"
#include "fakes/fake_sa.hpp"
#include "fakes/fake_timers.hpp"
#include "service/views.hpp"

namespace mcastd {
namespace {

using namespace std::chrono_literals;

port::PortAttributes attrs() {
    port::PortAttributes a;
    a.device = "mlx5_0";
    a.port_num = 1;
    a.lid = 3;
    a.sm_lid = 1;
    a.state = static_cast<std::uint8_t>(port::PortState::active);
    a.link_layer = "InfiniBand";
    a.mtu = 5; // IBA enum: 4096 bytes
    return a;
}

const TimePoint kNow = TimePoint{} + 1000s;

// The registry's entry of a port with these attributes.
port::RegisteredPort registered(const port::PortAttributes &a, port::SmView sm = {}, bool usable = false) {
    port::RegisteredPort p;
    p.attributes = a;
    p.sm = sm;
    p.usable = usable;
    return p;
}

TEST(StatusView, SmAndMtuOfAPort) {
    const port::SmView sm{1, 0x0002c90300000001, 42, true};
    PortView pv;
    pv.groups = 4;
    const auto ps = port_status(registered(attrs(), sm, true), pv, kNow);
    EXPECT_EQ(ps.state, "ACTIVE");
    EXPECT_EQ(ps.mtu, 4096u);
    EXPECT_EQ(ps.sm_guid, 0x0002c90300000001u);
    EXPECT_EQ(ps.sm_act_count, 42u);
    EXPECT_EQ(ps.groups, 4u);
    EXPECT_FALSE(ps.rejoining);
    EXPECT_FALSE(ps.last_rejoin) << "never re-joined";
}

TEST(StatusView, UnknownSmAndMtuStayUnset) {
    auto a = attrs();
    a.mtu = 0; // no PortInfo answer yet
    const auto ps = port_status(registered(a), PortView{}, kNow);
    EXPECT_EQ(ps.mtu, 0u);
    EXPECT_FALSE(ps.sm_guid);
    EXPECT_FALSE(ps.sm_act_count);
}

// An Ethernet port has no PortInfo: its MTU is its RoCE records', from its GID's netdev.
TEST(StatusView, AnEthernetPortsMtuIsItsRecordsFromTheNetdev) {
    port::PortAttributes a;
    a.device = "rxe0";
    a.port_num = 1;
    a.link_layer = "Ethernet";
    port::GidEntry ib_like{0, {}, GidType::ib, "veth1", false, 3, 9000};
    port::GidEntry gone{1, {}, GidType::roce_v2, "veth0", true, 0, 0};
    port::GidEntry v2{2, {}, GidType::roce_v2, "veth1", false, 3, 1500};
    a.gids = {ib_like, gone, v2};
    port::RegisteredPort p = registered(a, {}, true);
    p.link_layer = LinkLayer::ethernet;
    EXPECT_EQ(port_status(p, PortView{}, kNow).mtu, 1024u) << "1500 bytes of Ethernet carry an IB MTU of 1024";
    p.attributes.gids = {gone};
    EXPECT_EQ(port_status(p, PortView{}, kNow).mtu, 0u) << "no netdev there: unknown";
}

TEST(StatusView, RunningRejoinHasNoDuration) {
    PortView pv;
    pv.rejoining = true;
    pv.rejoin_reason = "SM changed";
    pv.rejoin_started = kNow - 2500ms;
    pv.rejoin_groups = 7;
    const auto ps = port_status(registered(attrs()), pv, kNow);
    EXPECT_TRUE(ps.rejoining);
    ASSERT_TRUE(ps.last_rejoin);
    EXPECT_EQ(ps.last_rejoin->reason, "SM changed");
    EXPECT_DOUBLE_EQ(ps.last_rejoin->started_ago_s, 2.5);
    EXPECT_FALSE(ps.last_rejoin->duration_s);
    EXPECT_EQ(ps.last_rejoin->groups, 7u);
}

TEST(StatusView, FinishedRejoinHasItsDuration) {
    PortView pv;
    pv.rejoin_reason = "LID changed";
    pv.rejoin_started = kNow - 60s;
    pv.rejoin_finished = kNow - 60s + 420ms;
    pv.rejoin_groups = 3;
    const auto ps = port_status(registered(attrs()), pv, kNow);
    ASSERT_TRUE(ps.last_rejoin);
    EXPECT_DOUBLE_EQ(ps.last_rejoin->started_ago_s, 60.0);
    ASSERT_TRUE(ps.last_rejoin->duration_s);
    EXPECT_DOUBLE_EQ(*ps.last_rejoin->duration_s, 0.42);
}

struct NoSink final : MembershipEventSink {
    void membership_event(ClientId, MembershipId, const MembershipEvent &) override {}
};

TEST(StatusView, APortsMembershipsPerJoinStateItsRejoinsAndTheEventsTheyTold) {
    test::FakeSa sa;
    test::FakeTimers timers;
    Service service(EngineConfig{}, sa, timers);
    const PortIndex p = service.add_port(test::test_port(), true);
    sa.port_gids[p] = test::test_port().port_gid();
    NoSink sink;
    const ClientId a = service.add_client(ClientInfo{1, 1000, 100, "a"}, &sink);
    const ClientId b = service.add_client(ClientInfo{2, 1001, 100, "b"}, &sink);
    const auto join = [&](ClientId c, const char *mgid, std::uint8_t bits) {
        JoinRequest r = test::join_request(mgid);
        r.join_state = bits;
        bool ok = false;
        service.join(c, r, [&ok](const JoinResult &res) { ok = !res.error; });
        sa.run();
        EXPECT_TRUE(ok) << mgid;
    };
    join(a, "ff15::1", join::full);
    join(b, "ff15::1", join::full);
    join(a, "ff15::2", join::send_only_full);
    const StatusExtras extras{"rdma-mcastd test", std::chrono::steady_clock::now(), 2};
    proto::StatusResult st = status_view(service, extras);
    ASSERT_EQ(st.ports.size(), 1u);
    EXPECT_EQ(st.ports[0].memberships, (std::array<std::uint64_t, 4>{2, 0, 0, 1}));
    EXPECT_EQ(st.ports[0].rejoins, 0u);
    EXPECT_EQ(st.counters.restored, 0u);

    service.port_invalidated(p, port::Trigger::sm_restart, "SM restarted");
    for (int i = 0; i < 100 && (sa.pending() || !service.idle()); ++i) {
        sa.run();
        timers.step();
    }
    st = status_view(service, extras);
    EXPECT_EQ(st.ports[0].rejoins, 1u);
    EXPECT_EQ(st.counters.restored, 3u) << "one per membership";
    EXPECT_EQ(st.counters.lost, 0u);
    service.port_usable(p, false, "port down");
    st = status_view(service, extras);
    EXPECT_EQ(st.counters.lost, 3u);
}

} // namespace
} // namespace mcastd
