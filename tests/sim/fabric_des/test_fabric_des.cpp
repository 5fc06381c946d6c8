// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric re-join simulation on small fabrics: its own clock, and the accounting of a run.
//
// These assert only what holds whatever the SA transaction layer's policy (today's fixed
// window and timeouts, or congestion control): every membership comes back within the cap,
// each costs the SA at least one Set, and the counts of the hosts, of the engine and of the
// SA agree with each other. Targets for the re-join itself belong with the policy that meets
// them.
#include <gtest/gtest.h>

#include <cstdio>

#include <chrono>
#include <vector>

#include "event_queue.hpp"
#include "fabric_des.hpp"

namespace mcastd::des {
namespace {

using namespace std::chrono_literals;

// What must hold for any run that drained (every membership back, the SA idle).
void expect_consistent(const DesConfig &cfg, const DesResult &r) {
    const std::uint64_t n = static_cast<std::uint64_t>(cfg.hosts) * cfg.groups;
    // One more membership, joined anew; a probe of a held group adds none at the SA.
    const std::uint64_t probe = cfg.probe_join_at && !cfg.probe_join_held ? 1 : 0;
    EXPECT_EQ(r.memberships, n);
    EXPECT_EQ(r.setup_joined, n);
    // Every membership was told `restored`, and the SA holds each one.
    EXPECT_EQ(r.outstanding, 0u);
    EXPECT_GE(r.restored, n);
    EXPECT_LE(r.restored, r.set_ok);
    EXPECT_EQ(r.lost, 0u);
    EXPECT_EQ(r.sa_memberships, n + probe);
    EXPECT_GE(r.sa_complete_s, 0.0);
    EXPECT_LE(r.sa_complete_s, r.completion_s);
    // Every Set transaction was answered or timed out.
    EXPECT_EQ(r.set_refused, 0u);
    EXPECT_EQ(r.set_txns, r.set_ok + r.set_refused + r.set_timeouts);
    EXPECT_GE(r.sets_per_membership(), 1.0);
    // Every MAD the hosts sent reached the SA (or, for PortInfo SMPs, the host's HCA); the SA
    // served all of it (Sets are never dropped) and answered what it did not drop.
    EXPECT_EQ(r.txn.send_errors, 0u);
    EXPECT_EQ(r.txn.sent, r.sa_sets + r.sa_deletes + r.sa_gets + r.smps);
    EXPECT_EQ(r.smps, r.portinfo_polls);
    EXPECT_EQ(r.sa_served_sets, r.sa_sets + r.sa_deletes);
    EXPECT_EQ(r.sa_served_gets, r.sa_gets - r.sa_gets_dropped);
    // Every answer that reached a host completed a transaction or was counted as late.
    EXPECT_EQ(r.sa_served_sets + r.sa_served_gets - r.answers_dropped_late + r.smps,
              r.txn.responses + r.txn.late + r.txn.rejected);
    EXPECT_EQ(r.txn.rejected, 0u);
    // A retransmit is a try after the first: one MAD per try.
    EXPECT_EQ(r.txn.sent, r.txn.retransmits + r.set_txns + r.get_txns + r.sminfo_polls + r.portinfo_polls);
    // One re-join per host, however many of CLIENT_REREGISTER, the SMInfoRecord poll and the
    // audit see the one restart: each re-join takes a new SMInfo baseline (port_rules.hpp).
    EXPECT_EQ(r.invalidations + r.audit_rejoins, cfg.hosts);
    if (cfg.reregister) {
        EXPECT_EQ(r.invalidations, cfg.hosts);
    }
    EXPECT_EQ(r.restored, n);
    EXPECT_EQ(r.set_ok, n + probe);
}

TEST(FabricDes, SmallFabricRejoinsWithinTheCap) {
    DesConfig cfg; // today's defaults
    cfg.hosts = 50;
    cfg.groups = 20;
    cfg.sa_rate = 2000;
    const DesResult r = run_des(cfg);
    ASSERT_TRUE(r.done) << r.restored << " of " << r.memberships << " restored";
    EXPECT_LE(r.completion_s, std::chrono::duration<double>(cfg.cap).count());
    EXPECT_GE(r.completion_s, r.first_restored_s);
    EXPECT_GT(r.ideal_s, 0.0);
    expect_consistent(cfg, r);
}

// The goals for the daemon's congestion control (sa.congestion_control), at full size: 2,000
// hosts re-join 50 memberships each after an SM restart. The same run with a fixed window of 16
// (the daemon before congestion control) never finishes within 400 s; mcastd-fabric-des
// --table prints both. Without CLIENT_REREGISTER (as on ibsim) most hosts learn of the restart
// from an audit, and that re-join restarts the window too (HostPorts' state-lost listener).
TEST(FabricDes, TwoThousandHostsRejoinWithoutARetransmissionStorm) {
    struct Goal {
        double sa_rate, max_sets_per_membership, max_x_ideal, max_p99_s;
        bool reregister = true;
    };
    for (const Goal g :
         {Goal{7000, 1.05, 1.7, 0.5}, Goal{2000, 1.1, 2.0, 2.0}, Goal{7000, 1.05, 1.7, 0.5, /*reregister=*/false}}) {
        DesConfig cfg;
        cfg.txn.congestion.enabled = true; // the daemon's default
        cfg.hosts = 2000;
        cfg.groups = 50;
        cfg.sa_rate = g.sa_rate;
        cfg.reregister = g.reregister;
        cfg.sminfo_shows_restart = !g.reregister;
        const DesResult r = run_des(cfg);
        const double jitter_s = std::chrono::duration<double>(cfg.engine.rejoin_jitter).count();
        std::printf("[ figures ] 2000 x 50 at %.0f/s%s: done at %.1f s (ideal %.1f s), %.3f Sets per membership, "
                    "%llu failed, SA queue p99 %.2f s, max %.2f s (wall %.1f s)\n",
                    g.sa_rate, g.reregister ? "" : " (no CLIENT_REREGISTER)", r.completion_s, r.ideal_s,
                    r.sets_per_membership(), static_cast<unsigned long long>(r.set_timeouts), r.set_delay_p99,
                    r.set_delay_max, r.wall_s);
        ASSERT_TRUE(r.done) << g.sa_rate << "/s: " << r.restored << " of " << r.memberships << " restored";
        EXPECT_LE(r.sets_per_membership(), g.max_sets_per_membership) << g.sa_rate;
        EXPECT_EQ(r.set_timeouts, 0u) << g.sa_rate << "/s: failed transactions";
        EXPECT_LE(r.completion_s, g.max_x_ideal * r.ideal_s + jitter_s) << g.sa_rate;
        EXPECT_LE(r.set_delay_p99, g.max_p99_s) << g.sa_rate;
        expect_consistent(cfg, r);
    }
}

// A fabric budget (config/README.md, `fabric`): every port paced at its share B / N, the re-join
// spread over N / B. The SA then sees at most the budget, with no burst at the start: no Set is
// sent twice, and the fabric takes memberships / B. (Without the budget this fabric's first Sets
// queue 1.5 s at the SA and some are sent again; `mcastd-fabric-des --budget-fraction` shows both.)
// 2,000 hosts x 10 at 2,000/s with a budget of 1,800/s, and a client's join on host 0 2 s
// into the re-join, when it has 8 of its 10 re-join Sets to go.
DesConfig budget_with_a_probe_join() {
    DesConfig cfg;
    cfg.txn.congestion.enabled = true;
    cfg.hosts = 2000;
    cfg.groups = 10;
    cfg.sa_rate = 2000;
    cfg.budget_fraction = 0.9;
    cfg.probe_join_at = std::chrono::seconds(2);
    return cfg;
}

TEST(FabricDes, AFabricBudgetKeepsTheSaWithinItFromTheFirstMad) {
    const DesConfig cfg = budget_with_a_probe_join();
    const sa::FabricBudget budget = fabric_budget(cfg);
    ASSERT_EQ(budget.budget, 1800u);
    const DesResult r = run_des(cfg);
    const double at_budget_s = static_cast<double>(r.memberships) / budget.budget;
    const double spread_s = std::chrono::duration<double>(sa::rejoin_spread(budget)).count();
    std::printf("[ figures ] 2000 x 10 at 2000/s, budget 1800/s: done at %.1f s (memberships / budget %.1f s), "
                "%.3f Sets per membership, %llu retransmits, peak %.0f Sets/s, SA queue max %.3f s\n",
                r.completion_s, at_budget_s, r.sets_per_membership(),
                static_cast<unsigned long long>(r.txn.retransmits), r.peak_set_arrivals, r.set_delay_max);
    ASSERT_TRUE(r.done) << r.restored << " of " << r.memberships << " restored";
    EXPECT_EQ(r.sa_sets, r.memberships + 1) << "one Set per membership, and the client's";
    EXPECT_EQ(r.txn.retransmits, 0u);
    EXPECT_LE(r.peak_set_arrivals, 1.1 * budget.budget) << "Sets arriving in the busiest second";
    EXPECT_LE(r.completion_s, 1.1 * at_budget_s + spread_s);
    EXPECT_LE(r.set_delay_max, 0.1);
    // The client's Get and Set each take the port's next token ahead of the re-join's: two
    // token intervals at most, where behind the re-join it would wait for eight more.
    const double interval_s = 1 / sa::port_rate(budget);
    std::printf("[ figures ] a client's join 2 s into the re-join waited %.2f s (token interval %.2f s)\n",
                r.probe_join_s, interval_s);
    EXPECT_GE(r.probe_join_s, 0.0) << "the join failed or never ended";
    EXPECT_LE(r.probe_join_s, 2 * interval_s + 0.1);
    expect_consistent(cfg, r);
}

// A client's join of a group the port is re-joining waits for that group's re-join, whose Set
// is queued behind the port's other re-joins: the join brings it forward.
TEST(FabricDes, AJoinOfAGroupBeingReJoinedBringsItsReJoinForward) {
    DesConfig cfg = budget_with_a_probe_join();
    cfg.probe_join_held = true; // the group host 0 re-joins last
    const DesResult r = run_des(cfg);
    ASSERT_TRUE(r.done) << r.restored << " of " << r.memberships << " restored";
    const double interval_s = 1 / sa::port_rate(fabric_budget(cfg));
    std::printf("[ figures ] a client's join of a group being re-joined, 2 s in, waited %.2f s (token interval "
                "%.2f s)\n",
                r.probe_join_s, interval_s);
    EXPECT_GE(r.probe_join_s, 0.0) << "the join failed or never ended";
    EXPECT_LE(r.probe_join_s, interval_s + 0.1) << "the group's re-join Set takes the port's next token";
    EXPECT_EQ(r.sa_sets, r.memberships) << "the join needed no Set of its own";
    expect_consistent(cfg, r);
}

// Late answers dropped by the kernel instead of delivered: the same accounting holds.
TEST(FabricDes, KernelTimeoutsKeepTheCountsConsistent) {
    DesConfig cfg;
    cfg.hosts = 60;
    cfg.groups = 20;
    cfg.sa_rate = 1000; // deep enough a queue that answers outlive their tries
    cfg.kernel_drops_late = true;
    const DesResult r = run_des(cfg);
    ASSERT_TRUE(r.done) << r.restored << " of " << r.memberships << " restored";
    EXPECT_GT(r.answers_dropped_late, 0u);
    EXPECT_EQ(r.txn.late, 0u); // nothing late gets through
    expect_consistent(cfg, r);
}

// The port rules see the new SM at their next SMInfoRecord poll too, after the CLIENT_REREGISTER
// re-joined the port: that sample is the new baseline, not a second re-join.
TEST(FabricDes, OneReJoinPerHostWhenSmInfoAlsoShowsTheRestart) {
    DesConfig cfg;
    cfg.hosts = 40;
    cfg.groups = 10;
    cfg.sa_rate = 2000;
    cfg.sminfo_shows_restart = true;
    const DesResult r = run_des(cfg);
    ASSERT_TRUE(r.done) << r.outstanding << " of " << r.memberships << " outstanding";
    EXPECT_EQ(r.invalidations, cfg.hosts);
    EXPECT_EQ(r.audit_rejoins, 0u);
    EXPECT_EQ(r.sa_sets, r.memberships) << "one Set per membership";
    expect_consistent(cfg, r);
}

// As on ibsim: no CLIENT_REREGISTER, every host finds the restart at its own next poll or audit,
// whichever comes first, and re-joins once.
TEST(FabricDes, RestartFoundBySmInfoPollsAndAuditsAlone) {
    DesConfig cfg;
    cfg.hosts = 30;
    cfg.groups = 10;
    cfg.reregister = false;
    cfg.sminfo_shows_restart = true;
    const DesResult r = run_des(cfg);
    ASSERT_TRUE(r.done) << r.outstanding << " of " << r.memberships << " outstanding";
    EXPECT_GT(r.host_rejoin_max_s, 0.0);
    EXPECT_LE(r.host_rejoin_max_s, r.completion_s);
    EXPECT_GT(r.invalidations, 0u) << "some hosts polled SMInfo first";
    EXPECT_GT(r.audit_rejoins, 0u) << "some audited first";
    expect_consistent(cfg, r);
}


// The calibration's form: each host told at its own instant (its real daemon's detection),
// its SA window sampled as the re-join goes.
TEST(FabricDes, EachHostToldAtItsOwnInstant) {
    DesConfig cfg;
    cfg.hosts = 4;
    cfg.groups = 10;
    cfg.engine.rejoin_jitter = 0ms;
    cfg.txn.congestion.enabled = true;
    cfg.reregister_at = {30ms, 0ms, 250ms, 100ms};
    cfg.trace_every = 10ms;
    const DesResult r = run_des(cfg);
    ASSERT_TRUE(r.done) << r.outstanding << " of " << r.memberships << " outstanding";
    ASSERT_EQ(r.host_rejoins.size(), cfg.hosts);
    for (unsigned i = 0; i < cfg.hosts; ++i) {
        EXPECT_DOUBLE_EQ(r.host_rejoins[i].started_s, std::chrono::duration<double>(cfg.reregister_at[i]).count());
        EXPECT_GT(r.host_rejoins[i].length_s, 0.0);
        EXPECT_GE(r.host_rejoins[i].window, 1.0);
        EXPECT_GT(r.host_rejoins[i].srtt_ms, 0.0);
    }
    EXPECT_GE(r.completion_s, 0.25);
    // A sample every 10 ms from t0 until the last host is done; the one at 250 ms or after
    // shows the last host re-joining.
    ASSERT_GE(r.trace.size(), 26u);
    EXPECT_DOUBLE_EQ(r.trace.front().t_s, 0.0);
    for (const auto &s : r.trace)
        EXPECT_EQ(s.hosts.size(), cfg.hosts);
    EXPECT_TRUE(r.trace[25].hosts[2].rejoining);
    expect_consistent(cfg, r);
    cfg.reregister_at.pop_back(); // one instant per host, or none
    EXPECT_THROW(run_des(cfg), std::invalid_argument);
}
// A host that handles each answer in 100 us cannot restore faster than that, whatever the SA;
// several such hosts still share the SA, and the counts still agree.
TEST(FabricDes, HostCostBoundsEachHost) {
    DesConfig cfg;
    cfg.hosts = 1;
    cfg.groups = 200;
    cfg.sa_rate = 50000;
    cfg.engine.rejoin_jitter = 0ms;
    const double alone = run_des(cfg).host_rejoins.at(0).length_s;
    EXPECT_LT(alone, 0.5 * 200 * 100e-6); // 200 / 50,000 s
    cfg.host_cost = 100us;
    const DesResult r = run_des(cfg);
    ASSERT_TRUE(r.done);
    EXPECT_GE(r.host_rejoins.at(0).length_s, 200 * 100e-6);
    EXPECT_LE(r.host_rejoins.at(0).length_s, 1.2 * 200 * 100e-6);
    expect_consistent(cfg, r);
    cfg.hosts = 10;
    const DesResult many = run_des(cfg);
    ASSERT_TRUE(many.done);
    expect_consistent(cfg, many);
}

// With the Gets' server slow enough, OpenSM's overload rule drops Gets, and nothing else.
TEST(FabricDes, OverloadedGetQueueDropsGetsOnly) {
    DesConfig cfg;
    cfg.hosts = 40;
    cfg.groups = 5;
    cfg.sa_rate = 5000;
    cfg.get_rate = 1;
    cfg.get_drop_after = 2s;
    cfg.monitor.audit_per_second = 2;
    cfg.cap = 60s;
    const DesResult r = run_des(cfg);
    ASSERT_TRUE(r.done);
    EXPECT_GT(r.sa_gets_dropped, 0u);
    EXPECT_EQ(r.sa_served_sets, r.sa_sets + r.sa_deletes);
    EXPECT_EQ(r.restored, r.memberships);
}

// The simulation's event queue and the unit tests' FakeTimers run the same fabric the same way.
TEST(FabricDes, EventQueueAgreesWithFakeTimers) {
    DesConfig cfg;
    cfg.hosts = 40;
    cfg.groups = 10;
    cfg.sa_rate = 200;
    cfg.cap = 120s;
    const DesResult a = run_des(cfg);
    cfg.fake_timers = true;
    const DesResult b = run_des(cfg);
    EXPECT_EQ(a.done, b.done);
    EXPECT_EQ(a.completion_s, b.completion_s);
    EXPECT_EQ(a.sa_sets, b.sa_sets);
    EXPECT_EQ(a.sa_gets, b.sa_gets);
    EXPECT_EQ(a.txn, b.txn);
    EXPECT_EQ(a.set_delay_max, b.set_delay_max);
    EXPECT_GT(a.txn.retransmits, 0u); // the case exercises retransmission
}

TEST(EventQueue, FiresInDeadlineThenStartOrder) {
    EventQueue q;
    const TimePoint t0 = q.now();
    std::vector<int> fired;
    std::vector<TimePoint> at;
    auto rec = [&](int n) {
        return [&, n] {
            fired.push_back(n);
            at.push_back(q.now());
        };
    };
    q.start(20ms, rec(1));
    q.start(10ms, rec(2));
    q.start(10ms, rec(3));
    q.start(0ms, [&] {
        fired.push_back(4);
        q.start(0ms, rec(5)); // due now, after everything already due now
    });
    q.start(-5ms, rec(6)); // a negative delay is 0
    while (q.step()) {
    }
    EXPECT_EQ(fired, (std::vector<int>{4, 6, 5, 2, 3, 1}));
    EXPECT_EQ(at.back(), t0 + 20ms);
    EXPECT_EQ(q.pending(), 0u);
}

TEST(EventQueue, CancelIsExactAndIdsAreNotReused) {
    EventQueue q;
    int fired = 0;
    const Timers::Id a = q.start(10ms, [&] { ++fired; });
    q.cancel(a);
    q.cancel(a); // twice: a no-op
    q.cancel(0);
    const Timers::Id b = q.start(10ms, [&] { fired += 10; }); // may take a's slot
    EXPECT_NE(a, b);
    q.cancel(a); // a stale id must not cancel b
    TimePoint due;
    ASSERT_TRUE(q.next_deadline(due));
    EXPECT_EQ(due, q.now() + 10ms);
    EXPECT_TRUE(q.step());
    EXPECT_FALSE(q.step());
    EXPECT_EQ(fired, 10);
    q.cancel(b); // fired: a no-op
    EXPECT_EQ(q.pending(), 0u);
}

} // namespace
} // namespace mcastd::des
