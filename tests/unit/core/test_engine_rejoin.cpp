// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The engine's re-join state machine against fake events: SM restarts, ports going down and
// coming back, events during a re-join, clients leaving meanwhile, the membership audit.
#include "engine_fixture.hpp"

namespace mcastd::test {
namespace {

using Fate = FakeSa::Fate;
using Kind = MembershipEvent::Kind;
const Gid kA = gid("ff15:1234::a");
const Gid kB = gid("ff15:1234::b");
const Gid kFar = make_gid(0xfe80000000000000ULL, 0x200001);

EngineConfig no_jitter() {
    EngineConfig c;
    c.rejoin_jitter = Duration{0};
    return c;
}

class Rejoin : public EngineFixture {
protected:
    Rejoin() : EngineFixture(no_jitter()) {}

    // An SM restart: the SA forgets every group. `taken` MLIDs go to groups created by
    // someone else first, so that ours come back with other MLIDs.
    void sm_restart(int taken = 0) {
        sa.state = FakeSaState{};
        for (int i = 0; i < taken; ++i)
            sa.state.seed(gid(("ff15:9999::" + std::to_string(i + 1)).c_str()), kFar, join::full);
    }

    std::vector<RecordingSink::Event> events_for(MembershipId id) const {
        std::vector<RecordingSink::Event> out;
        for (const auto &e : sink.events)
            if (e.id == id)
                out.push_back(e);
        return out;
    }
};

TEST_F(Rejoin, SmRestartRejoinsEveryGroupAndTellsEachMemberWithTheNewMlid) {
    MembershipId a1, a2, b1;
    auto ja = join(client, request(kA, join::full), &a1);
    join(other, request(kA, join::full), &a2);
    join(client, request(kB, join::send_only_full), &b1);
    settle();
    const std::uint16_t old_mlid = ja->result.record.mlid;
    sm_restart(/*taken=*/2);
    engine.invalidate_port(port, "SM restarted");
    settle();
    EXPECT_EQ(sa_bits(kA), join::full);
    EXPECT_EQ(sa_bits(kB), join::send_only_full);
    for (MembershipId id : {a1, a2, b1}) {
        auto ev = events_for(id);
        ASSERT_EQ(ev.size(), 1u) << "membership " << id;
        EXPECT_EQ(ev[0].ev.kind, Kind::restored);
        EXPECT_TRUE(ev[0].ev.changed & field::mlid) << "the SA gave the group another MLID";
        const Gid m = id == b1 ? kB : kA;
        EXPECT_EQ(ev[0].ev.record.mlid, sa.state.groups.at(m).rec.mlid);
    }
    EXPECT_NE(events_for(a1)[0].ev.record.mlid, old_mlid);
    const PortView pv = engine.ports()[port];
    EXPECT_FALSE(pv.rejoining);
    EXPECT_EQ(pv.rejoin_groups, 2u);
    EXPECT_EQ(pv.rejoin_reason, "SM restarted");
    ASSERT_TRUE(pv.rejoin_started && pv.rejoin_finished);
    EXPECT_EQ(pv.rejoins, 1u);
    EXPECT_EQ(engine.stats().restored, 3u) << "one restored event per membership";
    EXPECT_EQ(engine.stats().lost, 0u);
}

TEST_F(Rejoin, ARejoinWithNoGroupsFinishesAsItStarts) {
    MembershipId a;
    join(client, request(kA, join::full), &a);
    settle();
    engine.invalidate_port(port, "SM restarted");
    settle();
    const TimePoint first_finished = *engine.ports()[port].rejoin_finished;
    engine.leave(client, a);
    settle();
    timers.advance(std::chrono::seconds(5));
    engine.invalidate_port(port, "client reregister");
    settle();
    const PortView pv = engine.ports()[port];
    EXPECT_FALSE(pv.rejoining);
    EXPECT_EQ(pv.rejoin_groups, 0u);
    ASSERT_TRUE(pv.rejoin_started && pv.rejoin_finished);
    EXPECT_EQ(*pv.rejoin_finished, *pv.rejoin_started) << "not the earlier re-join's finish";
    EXPECT_GT(*pv.rejoin_finished, first_finished);
}

TEST_F(Rejoin, UnchangedRecordStillSaysRestoredWithNothingChanged) {
    MembershipId a;
    join(client, request(kA, join::full), &a);
    settle();
    sm_restart(0); // the first free MLID is the same again
    engine.invalidate_port(port, "client reregister");
    settle();
    auto ev = events_for(a);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].ev.kind, Kind::restored);
    EXPECT_EQ(ev[0].ev.changed, 0u);
}

class RejoinWithJitter : public EngineFixture {};

TEST_F(RejoinWithJitter, TheRejoinWaitsForItsJitter) {
    join(client, request(kA, join::full));
    settle();
    sa.state = FakeSaState{};
    const std::size_t before = requests();
    const TimePoint t0 = timers.now();
    engine.invalidate_port(port, "SM restarted");
    sa.run();
    EXPECT_EQ(requests(), before) << "nothing before the pause is over";
    EXPECT_FALSE(engine.idle());
    settle();
    EXPECT_GT(timers.now(), t0) << "a real pause";
    EXPECT_LE(timers.now() - t0, EngineConfig{}.rejoin_jitter) << "no longer than the configured jitter";
    EXPECT_EQ(sa_bits(kA), join::full);
}

TEST_F(Rejoin, PortDownTellsLostAndComingBackRestores) {
    MembershipId a;
    join(client, request(kA, join::full), &a);
    settle();
    sa.state.groups.erase(kA); // the SA drops a port whose link went down
    set_usable(port, false, "port down");
    ASSERT_EQ(events_for(a).size(), 1u);
    const auto lost = events_for(a)[0].ev;
    EXPECT_EQ(lost.kind, Kind::lost);
    ASSERT_TRUE(lost.reason);
    EXPECT_EQ(lost.reason->code, Errc::port_not_active);
    EXPECT_NE(lost.reason->message.find("port down"), std::string::npos) << lost.reason->message;
    EXPECT_EQ(engine.groups()[0].members[0].state, MemberView::State::lost);

    auto refused = join(other, request(kA, join::full));
    EXPECT_EQ(refused->code(), Errc::port_not_active);

    set_usable(port, true, "port up");
    settle();
    EXPECT_EQ(sa_bits(kA), join::full);
    ASSERT_EQ(events_for(a).size(), 2u);
    EXPECT_EQ(events_for(a)[1].ev.kind, Kind::restored);
    EXPECT_EQ(engine.groups()[0].members[0].state, MemberView::State::active);
    EXPECT_EQ(engine.stats().lost, 1u);
    EXPECT_EQ(engine.stats().restored, 1u);
}

TEST_F(Rejoin, EachRejoinStartedCountsOnceAndOneThatRunsIsNotCountedAgain) {
    join(client, request(kA, join::full));
    settle();
    EXPECT_EQ(engine.ports()[port].rejoins, 0u);
    sm_restart();
    engine.invalidate_port(port, "SM restarted");
    engine.invalidate_port(port, "SM restarted, seen by the poll too"); // before it ran: the same one
    settle();
    EXPECT_EQ(engine.ports()[port].rejoins, 1u);
    engine.invalidate_port(port, "client reregister");
    settle();
    EXPECT_EQ(engine.ports()[port].rejoins, 2u);
}

TEST_F(Rejoin, AnEventDuringTheRejoinStartsItAgain) {
    MembershipId a;
    join(client, request(kA, join::full), &a);
    settle();
    sm_restart();
    engine.invalidate_port(port, "SM restarted");
    timers.run_due();         // the (zero) jitter: the re-join's Set is now in flight
    ASSERT_EQ(sa.pending(), 1u);
    sa.step();                // the SA answers it...
    sm_restart(1);            // ...and restarts again, with the answer already on its way
    engine.invalidate_port(port, "SM restarted again");
    settle();
    EXPECT_EQ(sa_bits(kA), join::full);
    EXPECT_EQ(events_for(a).back().ev.kind, Kind::restored);
    EXPECT_EQ(events_for(a).back().ev.record.mlid, sa.state.groups.at(kA).rec.mlid);
}

TEST_F(Rejoin, AnAnswerFromBeforeTheEventIsNotTrusted) {
    MembershipId a;
    join(client, request(kA, join::full), &a);
    settle();
    sm_restart();
    engine.invalidate_port(port, "first");
    timers.run_due();
    // The SA answers the re-join's Set, but the restart it answers for is superseded: the
    // next SA has nothing, so the engine must set it again instead of believing the answer.
    sa.step();
    sa.state = FakeSaState{};
    engine.invalidate_port(port, "second");
    settle();
    EXPECT_EQ(sa_bits(kA), join::full);
}

TEST_F(Rejoin, AClientLeavingWhileItsGroupIsRejoinedLeavesNothingBehind) {
    MembershipId a;
    join(client, request(kA, join::full), &a);
    settle();
    sm_restart();
    engine.invalidate_port(port, "SM restarted");
    timers.run_due(); // the re-join's Set is in flight
    ASSERT_EQ(sa.pending(), 1u);
    EXPECT_FALSE(engine.leave(client, a));
    settle();
    EXPECT_EQ(sa_bits(kA), std::nullopt);
    EXPECT_TRUE(engine.groups().empty());
}

TEST_F(Rejoin, AJoinDuringTheRejoinWaitsForIt) {
    join(client, request(kA, join::full));
    settle();
    sm_restart();
    engine.invalidate_port(port, "SM restarted");
    auto waiting = join(other, request(kA, join::full)); // the port "holds" nothing now
    EXPECT_EQ(waiting->calls, 0);
    settle();
    ASSERT_TRUE(waiting->ok()) << waiting->message();
    EXPECT_EQ(waiting->result.record.mlid, sa.state.groups.at(kA).rec.mlid);
    EXPECT_EQ(sa.count(SaMethod::set), 2) << "the original join and one re-join; the waiting join is local";
}

// Every host re-joins at once after an SM restart; a client's join must not queue behind them.
TEST_F(Rejoin, RejoinSetsGoBehindTheClientsAtTheSa) {
    join(client, request(kA, join::full));
    settle();
    sm_restart();
    const std::size_t from = sa.log.size();
    engine.invalidate_port(port, "SM restarted");
    settle();
    ASSERT_EQ(sa.count(SaMethod::set), 2) << "the join and its re-join";
    for (std::size_t i = from; i < sa.log.size(); ++i)
        EXPECT_EQ(sa.log[i].lane, SaLane::background) << "request " << i << " belongs to the re-join";

    const std::size_t next = sa.log.size();
    auto b = join(other, request(kB, join::full));
    settle();
    ASSERT_TRUE(b->ok()) << b->message();
    ASSERT_GT(sa.log.size(), next);
    for (std::size_t i = next; i < sa.log.size(); ++i)
        EXPECT_EQ(sa.log[i].lane, SaLane::window) << "request " << i << " is a client's join";
}

TEST_F(Rejoin, ARejoinAJoinWaitsForIsTheClients) {
    join(client, request(kA, join::full));
    settle();
    sm_restart();
    const std::size_t from = sa.log.size();
    engine.invalidate_port(port, "SM restarted");
    auto waiting = join(other, request(kA, join::full));
    settle();
    ASSERT_TRUE(waiting->ok()) << waiting->message();
    ASSERT_GT(sa.log.size(), from);
    EXPECT_EQ(sa.log[from].method, SaMethod::set);
    EXPECT_EQ(sa.log[from].lane, SaLane::window) << "a client waits for this re-join";
    EXPECT_TRUE(sa.hastened.empty()) << "it was the client's from the start";
}

// The re-join's Set already waits at the SA as background work when a client comes to wait
// for it: the engine hastens it, once.
TEST_F(Rejoin, AJoinHastensTheRejoinTransactionItWaitsFor) {
    join(client, request(kA, join::full));
    settle();
    sm_restart();
    engine.invalidate_port(port, "SM restarted");
    while (sa.pending() == 0 && timers.step()) {
    }
    ASSERT_EQ(sa.pending(), 1u);
    ASSERT_EQ(sa.log.back().lane, SaLane::background);
    auto first = join(other, request(kA, join::full));
    EXPECT_EQ(sa.hastened.size(), 1u);
    auto second = join(other, request(kA, join::full));
    EXPECT_EQ(sa.hastened.size(), 1u) << "already the client's";
    settle();
    EXPECT_TRUE(first->ok()) << first->message();
    EXPECT_TRUE(second->ok()) << second->message();
    EXPECT_EQ(sa.count(SaMethod::set), 2) << "the original join and one re-join; the waiting joins are local";
}

TEST_F(Rejoin, AGroupRecreatedIncompatiblyIsLostWithTheSaStatus) {
    MembershipId a;
    join(client, request(kA, join::full), &a);
    settle();
    sm_restart();
    sa.state.seed(kA, kFar, join::full, /*qkey=*/0x7777); // someone else re-created it first
    engine.invalidate_port(port, "SM restarted");
    settle();
    ASSERT_EQ(events_for(a).size(), 1u);
    const auto ev = events_for(a)[0].ev;
    EXPECT_EQ(ev.kind, Kind::lost);
    ASSERT_TRUE(ev.reason);
    EXPECT_EQ(ev.reason->code, Errc::sa_error);
    EXPECT_EQ(ev.reason->sa_status, sa_status::req_invalid);
    EXPECT_EQ(sa_bits(kA), std::nullopt);
    EXPECT_FALSE(engine.ports()[port].rejoining) << "a lost group does not keep the re-join open";
}

TEST_F(Rejoin, TimeoutsAreRetriedWithBackoff) {
    join(client, request(kA, join::full));
    settle();
    sm_restart();
    int sets = 0;
    sa.fate = [&](const SaRequest &r) {
        return r.method == SaMethod::set && sets++ < 2 ? Fate::bounce : Fate::deliver;
    };
    const TimePoint t0 = timers.now();
    engine.invalidate_port(port, "SM restarted");
    settle();
    EXPECT_EQ(sa_bits(kA), join::full);
    EXPECT_GE(timers.now() - t0, std::chrono::seconds(3)) << "1 s then 2 s";
}

TEST_F(Rejoin, TheAuditFindingALostFullMembershipRejoinsTheWholePort) {
    // An SM restart that neither the PortInfo nor the SMInfo poll noticed: the audit is the
    // first to see it, on one group, and every group comes back at once.
    MembershipId a, b;
    join(client, request(kA, join::full), &a);
    join(client, request(kB, join::send_only_full), &b);
    settle();
    std::vector<PortIndex> lost; // the port rules hear of it: a new SMInfo baseline
    engine.set_memberships_gone_listener([&](PortIndex p) { lost.push_back(p); });
    sm_restart(/*taken=*/1);
    engine.audit_next(port); // one Get, of kA
    settle();
    EXPECT_EQ(lost, std::vector<PortIndex>{port});
    EXPECT_EQ(sa_bits(kA), join::full);
    EXPECT_EQ(sa_bits(kB), join::send_only_full) << "re-joined without an audit of its own";
    for (MembershipId id : {a, b}) {
        ASSERT_EQ(events_for(id).size(), 1u) << "membership " << id;
        EXPECT_EQ(events_for(id)[0].ev.kind, Kind::restored);
    }
    const PortView pv = engine.ports()[port];
    EXPECT_EQ(pv.rejoin_groups, 2u);
    EXPECT_NE(pv.rejoin_reason.find("the SA no longer holds this port's full membership of group "
                                    "ff15:1234::a"),
              std::string::npos)
        << pv.rejoin_reason;
}

TEST_F(Rejoin, AnInvalidationTellsTheListenerOnceAsTheAuditDoes) {
    // The port's event sources and the audit end in the same re-join, which says so once.
    join(client, request(kA, join::full));
    settle();
    std::vector<PortIndex> gone;
    engine.set_memberships_gone_listener([&](PortIndex p) {
        gone.push_back(p);
        EXPECT_TRUE(engine.ports()[p].rejoining) << "told once the re-join is under way";
    });
    engine.invalidate_port(port, "SM restarted");
    EXPECT_EQ(gone, std::vector<PortIndex>{port}) << "before invalidate_port returns";
    settle();
    EXPECT_EQ(gone, std::vector<PortIndex>{port}) << "once";
    EXPECT_EQ(sa_bits(kA), join::full);
}

TEST_F(Rejoin, TheAuditRejoinsJustTheGroupOfALostNonMember) {
    // A non-member loses its membership legitimately when the group's last full member
    // leaves (the SA deletes the group): that says nothing about the port's other groups.
    sa.state.seed(kB, kFar, join::full);
    MembershipId a, b;
    join(client, request(kA, join::full), &a);
    join(client, request(kB, join::non_member), &b);
    settle();
    sa.state.groups.at(kB).members.erase(port_gid()); // lost at the SA, silently
    bool lost = false;
    engine.set_memberships_gone_listener([&](PortIndex) { lost = true; });
    engine.audit_next(port);
    engine.audit_next(port);
    settle();
    EXPECT_FALSE(lost) << "not the port's state";
    EXPECT_EQ(sa_bits(kB), join::non_member) << "re-joined";
    EXPECT_TRUE(events_for(a).empty()) << "the healthy group is left alone";
    ASSERT_EQ(events_for(b).size(), 1u);
    EXPECT_EQ(events_for(b)[0].ev.kind, Kind::restored);
}

TEST_F(Rejoin, TheAuditGoesRoundTheGroups) {
    join(client, request(kA, join::full));
    join(client, request(kB, join::full));
    settle();
    std::vector<Gid> asked;
    const std::size_t from = sa.log.size(); // before: the probes of the joins themselves
    sa.fate = [&](const SaRequest &r) {
        asked.push_back(r.record.mgid);
        return Fate::deliver;
    };
    for (int i = 0; i < 4; ++i) {
        engine.audit_next(port);
        settle();
    }
    EXPECT_EQ(asked, (std::vector<Gid>{kA, kB, kA, kB}));
    for (std::size_t i = from; i < sa.log.size(); ++i) {
        EXPECT_EQ(sa.log[i].method, SaMethod::get);
        EXPECT_EQ(sa.log[i].comp_mask, field::mgid | field::port_gid);
        EXPECT_EQ(sa.log[i].lane, SaLane::audit) << "an audit goes in the SA's audit lane, not the joins' window";
    }
    for (std::size_t i = 0; i < from; ++i)
        EXPECT_EQ(sa.log[i].lane, SaLane::window) << "a join's probe is no audit";
}

TEST_F(Rejoin, TheAuditTellsMembersAboutANewMlid) {
    MembershipId a;
    join(client, request(kA, join::full), &a);
    settle();
    sa.state.groups.at(kA).rec.mlid = 0xc123; // re-created elsewhere under another MLID
    engine.audit_next(port);
    settle();
    ASSERT_EQ(events_for(a).size(), 1u);
    EXPECT_EQ(events_for(a)[0].ev.changed, field::mlid);
    EXPECT_EQ(events_for(a)[0].ev.record.mlid, 0xc123);
}

} // namespace
} // namespace mcastd::test
