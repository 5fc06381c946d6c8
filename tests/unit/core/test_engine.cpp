// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The engine against a scripted fake SA: one behaviour per test.
#include "engine_fixture.hpp"

#include "core/group_machine.hpp"

namespace mcastd::test {
namespace {

using Fate = FakeSa::Fate;
const Gid kGroup = gid("ff12:1234::1");
const Gid kOther = gid("ff15:1234::2");

class EngineTest : public EngineFixture {};

TEST_F(EngineTest, CreatesAnAbsentGroupWithOneSetAfterProbing) {
    auto j = join(client, request(kGroup, join::full));
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    ASSERT_EQ(sa.log.size(), 2u);
    EXPECT_EQ(sa.log[0].method, SaMethod::get); // does the group exist?
    EXPECT_EQ(sa.log[0].comp_mask, field::mgid);
    EXPECT_EQ(sa.log[1].method, SaMethod::set);
    EXPECT_EQ(sa.log[1].comp_mask, field::create_mask);
    EXPECT_EQ(sa.log[1].record.qkey, 0x01234567u); // the configured create default
    EXPECT_EQ(sa_bits(kGroup), join::full);
    const McRecord &r = j->result.record;
    EXPECT_EQ(r.mgid, kGroup);
    EXPECT_EQ(r.mlid, sa.state.groups.at(kGroup).rec.mlid);
    EXPECT_EQ(r.port_gid, port_gid());
    EXPECT_EQ(r.join_state, join::full);
}

TEST_F(EngineTest, JoinsAnExistingGroupWithoutAssertingDefaults) {
    // Another host created the group with a Q_Key that is not our create default.
    sa.state.seed(kGroup, make_gid(kPrefix, 0x200001), join::full, 0xbeef);
    auto j = join(client, request(kGroup, join::full));
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    const SaRequest &set = sa.log.back();
    EXPECT_EQ(set.method, SaMethod::set);
    EXPECT_EQ(set.comp_mask, field::join_mask); // nothing asserted that the member did not ask
    EXPECT_EQ(j->result.record.qkey, 0xbeefu);
    EXPECT_EQ(sa_bits(kGroup), join::full);
}

TEST_F(EngineTest, BurstOfJoinsOfANewGroupCostsOneSet) {
    std::vector<std::shared_ptr<JoinOutcome>> outs;
    for (int i = 0; i < 50; ++i)
        outs.push_back(join(i % 2 ? client : other, request(kGroup, join::full)));
    settle();
    for (auto &o : outs)
        EXPECT_TRUE(o->ok()) << o->message();
    EXPECT_EQ(sa.count(SaMethod::set), 1);
    EXPECT_EQ(engine.stats().joins_local, 49u);
    for (auto &o : outs)
        EXPECT_EQ(o->result.record.mlid, outs[0]->result.record.mlid);
}

TEST_F(EngineTest, HeldBitsAreAnsweredLocallyWithNoMad) {
    join(client, request(kGroup, join::full));
    settle();
    const std::size_t before = requests();
    auto j = join(other, request(kGroup, join::full));
    EXPECT_TRUE(j->ok()) << "answered before any SA work";
    EXPECT_EQ(requests(), before);
    // A send-only-full member is served by the held FullMember too.
    auto s = join(other, request(kGroup, join::send_only_full));
    EXPECT_TRUE(s->ok());
    EXPECT_EQ(s->result.record.join_state, join::send_only_full);
    EXPECT_EQ(requests(), before);
}

TEST_F(EngineTest, MismatchIsAConflictThatNamesTheGroupsValue) {
    auto r = request(kGroup, join::full);
    r.params.qkey = 0x1234;
    join(client, r);
    settle();
    const std::size_t before = requests();
    r.params.qkey = 0x4321;
    auto j = join(other, r);
    EXPECT_EQ(j->code(), Errc::conflict);
    EXPECT_NE(j->message().find("Q_Key 0x00001234"), std::string::npos) << j->message();
    EXPECT_NE(j->message().find("0x00004321"), std::string::npos) << j->message();
    EXPECT_EQ(requests(), before);

    auto m = request(kGroup, join::full);
    m.params.mtu = Selected{Selector::exactly, 5};
    auto jm = join(other, m);
    EXPECT_EQ(jm->code(), Errc::conflict);
    EXPECT_NE(jm->message().find("MTU 2048"), std::string::npos) << jm->message();
}

TEST_F(EngineTest, TwoMembersShareOneMembershipUntilTheLastLeaves) {
    MembershipId a, b;
    join(client, request(kGroup, join::full), &a);
    join(other, request(kGroup, join::full), &b);
    settle();
    ASSERT_EQ(sa_bits(kGroup), join::full);
    EXPECT_FALSE(engine.leave(client, a));
    settle();
    EXPECT_EQ(sa.count(SaMethod::del), 0);
    EXPECT_EQ(sa_bits(kGroup), join::full);
    EXPECT_FALSE(engine.leave(other, b));
    settle();
    EXPECT_EQ(sa.count(SaMethod::del), 1);
    EXPECT_EQ(sa.log.back().record.join_state, join::full);
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
    EXPECT_TRUE(engine.groups().empty());
}

TEST_F(EngineTest, DeleteCarriesExactlyTheBitsWhoseCountReachedZero) {
    MembershipId full, non, non2;
    join(client, request(kGroup, join::full), &full);
    join(other, request(kGroup, join::non_member), &non);
    join(client, request(kGroup, join::non_member | join::send_only_non_member), &non2);
    settle();
    ASSERT_EQ(sa_bits(kGroup), 0x7);
    engine.leave(client, non2);
    settle();
    ASSERT_EQ(sa.count(SaMethod::del), 1);
    EXPECT_EQ(sa.log.back().record.join_state, join::send_only_non_member);
    EXPECT_EQ(sa.log.back().comp_mask, field::join_mask);
    EXPECT_EQ(sa_bits(kGroup), 0x3);
    engine.leave(other, non);
    settle();
    EXPECT_EQ(sa.log.back().record.join_state, join::non_member);
    EXPECT_EQ(sa_bits(kGroup), join::full);
    engine.leave(client, full);
    settle();
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
}

TEST_F(EngineTest, LeavingEverythingIsOneDelete) {
    MembershipId id;
    join(client, request(kGroup, join::full | join::non_member), &id);
    settle();
    ASSERT_EQ(sa_bits(kGroup), 0x3);
    engine.leave(client, id);
    settle();
    ASSERT_EQ(sa.count(SaMethod::del), 1);
    EXPECT_EQ(sa.log.back().record.join_state, 0x3);
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
}

TEST_F(EngineTest, LeavesBitsThePortHeldBeforeTheDaemonAlone) {
    // Another host is a full member; our port already holds NonMember from another agent.
    sa.state.seed(kGroup, make_gid(kPrefix, 0x200001), join::full);
    sa.state.seed(kGroup, port_gid(), join::non_member);
    MembershipId f, n;
    join(client, request(kGroup, join::full), &f);
    auto jn = join(other, request(kGroup, join::non_member), &n);
    settle();
    EXPECT_TRUE(jn->ok());
    EXPECT_EQ(sa_bits(kGroup), 0x3);
    ASSERT_EQ(engine.groups().size(), 1u);
    EXPECT_EQ(engine.groups()[0].foreign, join::non_member);
    EXPECT_EQ(engine.groups()[0].held, join::full);
    EXPECT_EQ(sa.count(SaMethod::set), 1); // NonMember was served by the foreign bit
    engine.leave(client, f);
    engine.leave(other, n);
    settle();
    for (const auto &r : sa.log) {
        if (r.method == SaMethod::del) {
            EXPECT_FALSE(r.record.join_state & join::non_member) << "deleted a foreign bit";
        }
    }
    EXPECT_EQ(sa_bits(kGroup), join::non_member);
}

TEST_F(EngineTest, RefusesFullMemberBesideAnotherAgentsSendOnlyFull) {
    sa.state.seed(kGroup, port_gid(), join::send_only_full);
    auto j = join(client, request(kGroup, join::full));
    settle();
    EXPECT_EQ(j->code(), Errc::conflict);
    EXPECT_NE(j->message().find("leak"), std::string::npos) << j->message();
    EXPECT_EQ(sa.count(SaMethod::set), 0);
    EXPECT_EQ(sa_bits(kGroup), join::send_only_full);
}

TEST_F(EngineTest, RefusesKernelMgidSignaturesByDefault) {
    for (const char *m : {"ff12:401b:ffff::1", "ff12:601b:ffff::1:ff00:1", "ff12:4001:ffff::1:203",
                          "ff12:6001:ffff::1"}) {
        auto j = join(client, request(gid(m), join::full));
        EXPECT_EQ(j->code(), Errc::denied) << m;
        EXPECT_NE(j->message().find("signature"), std::string::npos) << j->message();
    }
    EXPECT_EQ(requests(), 0u);
    auto bad = join(client, request(gid("fe80::1"), join::full));
    EXPECT_EQ(bad->code(), Errc::invalid_argument);
    EXPECT_NE(bad->message().find("not a multicast GID"), std::string::npos);
}

class EngineAllowingKernelMgids : public EngineFixture {
protected:
    static EngineConfig config() {
        EngineConfig c;
        c.allow_ipoib_mgids = true;
        c.allow_rdma_cm_mgids = true;
        return c;
    }
    EngineAllowingKernelMgids() : EngineFixture(config()) {}
};

TEST_F(EngineAllowingKernelMgids, JoinsThemWhenConfigured) {
    auto j = join(client, request(gid("ff12:4001:ffff::1:203"), join::full));
    settle();
    EXPECT_TRUE(j->ok()) << j->message();
}

TEST_F(EngineTest, SaErrorsReachOnlyTheMemberWhoseRequestFailed) {
    int sets = 0;
    sa.fate = [&](const SaRequest &r) {
        return r.method == SaMethod::set && sets++ == 0 ? Fate::inject_status : Fate::deliver;
    };
    sa.injected_status = sa_status::no_resources;
    auto a = join(client, request(kGroup, join::full));
    auto twin = join(client, request(kGroup, join::full)); // same request: same answer
    auto r = request(kGroup, join::full);
    r.params.sl = 0; // a different request gets its own Set
    auto b = join(other, r);
    auto elsewhere = join(other, request(kOther, join::full));
    settle();
    EXPECT_EQ(a->code(), Errc::sa_error);
    ASSERT_TRUE(a->result.error->sa_status);
    EXPECT_EQ(*a->result.error->sa_status, sa_status::no_resources);
    EXPECT_NE(a->message().find("ERR_NO_RESOURCES"), std::string::npos) << a->message();
    EXPECT_EQ(twin->code(), Errc::sa_error);
    EXPECT_TRUE(b->ok()) << b->message();
    EXPECT_TRUE(elsewhere->ok()) << elsewhere->message();
    EXPECT_EQ(sa_bits(kGroup), join::full);
}

TEST_F(EngineTest, EverySaStatusReachesTheCallerByName) {
    for (std::uint16_t st : {sa_status::req_invalid, sa_status::no_resources, sa_status::invalid_gid,
                             sa_status::insufficient_components, sa_status::denied,
                             std::uint16_t(0x000C)}) {
        sa.fate = [](const SaRequest &r) { return r.method == SaMethod::set ? Fate::inject_status : Fate::deliver; };
        sa.injected_status = st;
        auto j = join(client, request(kOther, join::non_member)); // cannot be a create-retry
        settle();
        ASSERT_EQ(j->code(), Errc::sa_error);
        EXPECT_EQ(j->result.error->sa_status, st);
        EXPECT_NE(j->message().find(sa_status_name(st)), std::string::npos) << j->message();
    }
}

TEST_F(EngineTest, RealSaRejectionIsReported) {
    auto r = request(kGroup, join::full);
    r.params.mtu = Selected{Selector::exactly, 5}; // 4096 on a 2048 port
    auto j = join(client, r);
    settle();
    EXPECT_EQ(j->code(), Errc::sa_error);
    EXPECT_NE(j->message().find("0x0200 ERR_REQ_INVALID"), std::string::npos) << j->message();
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
}

TEST_F(EngineTest, TimeoutIsItsOwnError) {
    sa.fate = [](const SaRequest &) { return Fate::lose_request; };
    auto j = join(client, request(kGroup, join::full));
    settle();
    EXPECT_EQ(j->code(), Errc::sa_timeout);
    EXPECT_NE(j->message().find("did not answer"), std::string::npos) << j->message();
    sa.fate = [](const SaRequest &) { return Fate::bounce; };
    auto b = join(client, request(kGroup, join::full));
    settle();
    EXPECT_EQ(b->code(), Errc::sa_timeout);
    EXPECT_NE(b->message().find("unreachable"), std::string::npos) << b->message();
}

// One wording for a join the SA left unanswered, whichever step it was (Set, probe, refresh).
TEST(JoinTimeout, NamesTheGroupAndTheTries) {
    SaResult r;
    r.tries = 6;
    const Error e = core::join_timeout("group ff15::1 on mlx5_0/1", r);
    EXPECT_EQ(e.code, Errc::sa_timeout);
    EXPECT_EQ(e.message, "join of group ff15::1 on mlx5_0/1: the SA did not answer after 6 tries");
    r.tries = 1;
    r.bounced = true;
    EXPECT_EQ(core::join_timeout("new group on mlx5_0/1", r).message,
              "join of new group on mlx5_0/1: the SA was unreachable (requests came back undelivered) after 1 try");
}

TEST_F(EngineTest, ATimedOutJoinSaysSoInTheOneWording) {
    sa.fate = [](const SaRequest &) { return Fate::lose_request; };
    auto j = join(client, request(kGroup, join::full));
    settle();
    const std::string want = "join of group " + format_gid(kGroup) + " on mlx5_0/1: the SA did not answer after ";
    EXPECT_EQ(j->message().rfind(want, 0), 0u) << j->message();
}

TEST_F(EngineTest, ASetWhoseAnswerWasLostIsCleanedUp) {
    int sets = 0;
    sa.fate = [&](const SaRequest &r) {
        return r.method == SaMethod::set && sets++ == 0 ? Fate::lose_response : Fate::deliver;
    };
    auto j = join(client, request(kGroup, join::full));
    settle();
    EXPECT_EQ(j->code(), Errc::sa_timeout);
    EXPECT_EQ(sa_bits(kGroup), std::nullopt) << "the daemon left a membership nobody holds";
    EXPECT_GE(sa.count(SaMethod::del), 1);
}

TEST_F(EngineTest, LeaveWhileTheSetIsInFlight) {
    MembershipId id;
    auto j = join(client, request(kGroup, join::full), &id);
    sa.step(); // the probe is answered; the Set is now in flight
    ASSERT_EQ(sa.pending(), 1u);
    EXPECT_FALSE(engine.leave(client, id));
    EXPECT_EQ(j->calls, 1);
    EXPECT_EQ(j->code(), Errc::cancelled);
    settle();
    EXPECT_EQ(j->calls, 1);
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
    EXPECT_TRUE(engine.groups().empty());
}

TEST_F(EngineTest, LeaveOfAQueuedJoinSendsNothingForIt) {
    join(client, request(kGroup, join::full));
    settle();
    MembershipId id;
    // Queued behind a Delete in flight: withdrawn before it needs anything.
    MembershipId first = engine.groups()[0].members[0].id;
    engine.leave(client, first);
    auto j = join(other, request(kGroup, join::non_member), &id);
    EXPECT_EQ(j->calls, 0);
    engine.leave(other, id);
    EXPECT_EQ(j->code(), Errc::cancelled);
    settle();
    EXPECT_EQ(sa.count(SaMethod::set), 1);
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
}

TEST_F(EngineTest, Mgid0CreatesOneGroupPerJoin) {
    auto r = request(kZeroGid, join::full);
    auto a = join(client, r);
    auto b = join(other, r);
    settle();
    ASSERT_TRUE(a->ok() && b->ok());
    EXPECT_NE(a->result.record.mgid, b->result.record.mgid);
    for (const auto &o : {a, b}) {
        const Gid m = o->result.record.mgid;
        EXPECT_EQ(m[0], 0xff);
        EXPECT_EQ(m[1], 0x15) << "site-local by default";
        EXPECT_EQ(mgid_signature(m), 0xa01b);
        EXPECT_EQ(sa_bits(m), join::full);
    }
    for (const auto &req : sa.log) {
        EXPECT_EQ(req.method, SaMethod::set) << "no probe for a group the SA creates";
        EXPECT_TRUE(req.comp_mask & field::scope);
    }
    // Someone joining the assigned MGID explicitly shares it, answered locally.
    const std::size_t before = requests();
    auto c = join(other, request(a->result.record.mgid, join::full));
    EXPECT_TRUE(c->ok());
    EXPECT_EQ(requests(), before);
}

// The access policy's CreateGate refusing a create: the join fails and leaves nothing behind.
// An MGID-0 create is refused inside join() itself (no probe comes first), and its group,
// emptied before it had any member, must go like any other: the port's group count is the
// groups_per_port quota's measure, so a flood of refused creates would otherwise fill the
// host's quota for everyone (issue 15).
TEST_F(EngineTest, ACreateTheGateRefusesLeavesNoGroupBehind) {
    int asked = 0;
    auto refuse = [&asked]() -> std::optional<Error> {
        ++asked;
        return Error{Errc::limit, "over quota", {}};
    };
    std::vector<std::shared_ptr<JoinOutcome>> outs;
    for (const Gid &m : {kZeroGid, kZeroGid, gid("ff15::9:1")})
        outs.push_back(join(client, request(m, join::full), nullptr, JoinGates{refuse, {}, {}}));
    settle();
    EXPECT_EQ(asked, 3);
    for (const auto &o : outs)
        EXPECT_EQ(o->code(), Errc::limit) << o->message();
    EXPECT_EQ(engine.group_count(port), 0u) << "refused creates hold no group";
    EXPECT_TRUE(engine.groups().empty());
    EXPECT_TRUE(engine.idle());
    EXPECT_EQ(sa.count(SaMethod::set), 0) << "no create reached the SA";

    // A create that is let through still makes its group (and only that one is counted).
    auto ok = join(client, request(kZeroGid, join::full));
    settle();
    ASSERT_TRUE(ok->ok()) << ok->message();
    EXPECT_EQ(engine.group_count(port), 1u);
}

TEST_F(EngineTest, SendOnlyFullMovesToFullAndBackWithoutLeakingTheMlid) {
    MembershipId s, f;
    join(client, request(kGroup, join::send_only_full), &s);
    settle();
    EXPECT_EQ(sa_bits(kGroup), join::send_only_full);
    auto jf = join(other, request(kGroup, join::full), &f);
    settle();
    ASSERT_TRUE(jf->ok());
    EXPECT_EQ(sa_bits(kGroup), join::full) << "upgrade: Set 0x1, then Delete 0x8";
    engine.leave(other, f);
    settle();
    EXPECT_EQ(sa_bits(kGroup), join::send_only_full) << "downgrade: Delete 0x1, then Set 0x8";
    engine.leave(client, s);
    settle();
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
    EXPECT_EQ(sa.state.mlid_leaks, 0);
    EXPECT_TRUE(sa.state.groups.count(kGroup) == 0) << "group and MLID freed";
}

TEST_F(EngineTest, MembersTakeTheMlidChangeWhenTheGroupIsRecreated) {
    MembershipId s, f;
    auto js = join(client, request(kGroup, join::send_only_full), &s);
    join(other, request(kGroup, join::full), &f);
    settle();
    const std::uint16_t before = js->result.record.mlid;
    sa.fate = [&](const SaRequest &r) {
        // Someone else takes the freed MLID before the group is re-created.
        if (r.method == SaMethod::set && !sa.state.groups.count(kGroup))
            sa.state.seed(gid("ff15::99"), make_gid(kPrefix, 0x200001), join::full);
        return Fate::deliver;
    };
    engine.leave(other, f); // the group is deleted and re-created for the send-only member
    settle();
    ASSERT_EQ(sink.events.size(), 1u);
    const auto &ev = sink.events[0];
    EXPECT_EQ(ev.id, s);
    EXPECT_EQ(ev.ev.kind, MembershipEvent::Kind::restored);
    EXPECT_TRUE(ev.ev.changed & field::mlid);
    EXPECT_NE(ev.ev.record.mlid, before);
    EXPECT_EQ(ev.ev.record.mlid, sa.state.groups.at(kGroup).rec.mlid);
}

TEST_F(EngineTest, NonMemberIsToldWhenTheGroupGoesWithTheLastFullMember) {
    MembershipId f, n;
    join(client, request(kGroup, join::full), &f);
    join(other, request(kGroup, join::non_member), &n);
    settle();
    engine.leave(client, f);
    settle();
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
    ASSERT_EQ(sink.events.size(), 1u);
    EXPECT_EQ(sink.events[0].id, n);
    EXPECT_EQ(sink.events[0].ev.kind, MembershipEvent::Kind::lost);
    ASSERT_TRUE(sink.events[0].ev.reason);
    EXPECT_EQ(sink.events[0].ev.reason->sa_status, sa_status::req_invalid);
}

TEST_F(EngineTest, FailedDeleteIsRetriedWithBackoffUntilTheSaHasNothing) {
    MembershipId id;
    join(client, request(kGroup, join::full), &id);
    settle();
    int dels = 0;
    sa.fate = [&](const SaRequest &r) {
        return r.method == SaMethod::del && dels++ < 2 ? Fate::lose_request : Fate::deliver;
    };
    const TimePoint t0 = timers.now();
    engine.leave(client, id);
    settle();
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
    EXPECT_EQ(sa.count(SaMethod::del), 3);
    EXPECT_GE(timers.now() - t0, std::chrono::seconds(3)) << "1 s then 2 s of backoff";
    EXPECT_TRUE(engine.groups().empty());
}

TEST_F(EngineTest, RetransmittedDeleteAnsweredInvalidIsTakenAsDone) {
    MembershipId id;
    join(client, request(kGroup, join::full), &id);
    settle();
    sa.fate = [](const SaRequest &r) { return r.method == SaMethod::del ? Fate::retransmitted : Fate::deliver; };
    const TimePoint t0 = timers.now();
    engine.leave(client, id);
    settle();
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
    EXPECT_EQ(timers.now(), t0) << "re-synced at once, no backoff";
    EXPECT_TRUE(engine.groups().empty());
}

TEST_F(EngineTest, GroupThatVanishedBeforeTheSetIsCreated) {
    sa.state.seed(kGroup, make_gid(kPrefix, 0x200001), join::full);
    sa.fate = [&](const SaRequest &r) {
        if (r.method == SaMethod::set && sa.count(SaMethod::set) == 1)
            sa.state.groups.erase(kGroup); // deleted between our probe and our Set
        return Fate::deliver;
    };
    auto j = join(client, request(kGroup, join::full));
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    ASSERT_EQ(sa.count(SaMethod::set), 2);
    EXPECT_EQ(sa.log.back().comp_mask, field::create_mask);
    EXPECT_EQ(sa_bits(kGroup), join::full);
}

TEST_F(EngineTest, RemovingAClientReleasesEverythingAndDropsItsCallbacks) {
    join(client, request(kGroup, join::full));
    join(client, request(kOther, join::full));
    settle();
    auto pending = join(client, request(gid("ff15::3"), join::full));
    engine.remove_client(client);
    settle();
    EXPECT_EQ(pending->calls, 0);
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
    EXPECT_EQ(sa_bits(kOther), std::nullopt);
    EXPECT_EQ(sa_bits(gid("ff15::3")), std::nullopt);
    EXPECT_TRUE(engine.groups().empty());
}

TEST_F(EngineTest, UnknownDeviceOrPortIsNamed) {
    auto d = join(client, request(kGroup, join::full, "mlx9_9"));
    EXPECT_EQ(d->code(), Errc::no_such_device);
    EXPECT_NE(d->message().find("'mlx9_9'"), std::string::npos);
    EXPECT_NE(d->message().find("mlx5_0"), std::string::npos) << "lists what exists";
    auto p = join(client, request(kGroup, join::full, "mlx5_0", 2));
    EXPECT_EQ(p->code(), Errc::no_such_port);
    EXPECT_NE(p->message().find("port 2"), std::string::npos);
    set_usable(port, false);
    auto i = join(client, request(kGroup, join::full));
    EXPECT_EQ(i->code(), Errc::port_not_active);
    EXPECT_EQ(requests(), 0u);
}

TEST_F(EngineTest, InvalidRequestsNameTheField) {
    auto r = request(kGroup, 0);
    EXPECT_NE(join(client, r)->message().find("join_state"), std::string::npos);
    r = request(kGroup, join::full);
    r.params.sl = 16;
    EXPECT_NE(join(client, r)->message().find("/sl: 16 out of range [0, 15]"), std::string::npos);
    r = request(kZeroGid, join::non_member);
    EXPECT_EQ(join(client, r)->code(), Errc::invalid_argument);
    r = request(kGroup, join::full);
    r.scope = 5;
    EXPECT_NE(join(client, r)->message().find("scope"), std::string::npos);
    EXPECT_EQ(requests(), 0u);
}

TEST_F(EngineTest, LeaveOfSomeoneElsesMembershipIsNotFound) {
    MembershipId id;
    join(client, request(kGroup, join::full), &id);
    settle();
    auto err = engine.leave(other, id);
    ASSERT_TRUE(err);
    EXPECT_EQ(err->code, Errc::not_found);
    EXPECT_EQ(sa_bits(kGroup), join::full);
}

TEST_F(EngineTest, WhenIdleRunsOnceTheLastAnswerIsIn) {
    MembershipId id;
    join(client, request(kGroup, join::full), &id);
    settle();
    int called = 0;
    engine.when_idle([&] { ++called; });
    EXPECT_EQ(called, 1) << "already idle: at once";
    engine.leave(client, id); // a Delete is now in flight
    engine.when_idle([&] { ++called; });
    EXPECT_EQ(called, 1);
    sa.run();
    EXPECT_EQ(called, 2);
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
}

TEST_F(EngineTest, AJoinQueuedBehindTheLastDeleteCreatesTheGroupAfresh) {
    MembershipId id;
    join(client, request(kGroup, join::full), &id); // created with the default Q_Key
    settle();
    engine.leave(client, id); // the Delete that ends the group is in flight
    auto r = request(kGroup, join::full);
    r.params.qkey = 0x5;
    auto j = join(other, r);
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    EXPECT_EQ(j->result.record.qkey, 0x5u) << "not checked against the old group's record";
    EXPECT_EQ(sa.state.groups.at(kGroup).rec.qkey, 0x5u);
}

TEST_F(EngineTest, TheRecordCarriesTheMgidsScope) {
    auto a = join(client, request(gid("ff15:1234::7"), join::full));
    auto b = join(client, request(gid("ff12:1234::7"), join::full));
    settle();
    EXPECT_EQ(a->result.record.scope, 0x5);
    EXPECT_EQ(b->result.record.scope, 0x2);
}

TEST_F(EngineTest, GroupsAreKeyedPerPort) {
    const PortIndex p2 = add_port("mlx5_0", 2, 0x100004);
    join(client, request(kGroup, join::full));
    join(client, request(kGroup, join::full, "mlx5_0", 2));
    settle();
    EXPECT_EQ(sa_bits(kGroup, port), join::full);
    EXPECT_EQ(sa_bits(kGroup, p2), join::full);
    EXPECT_EQ(engine.groups().size(), 2u);
}

} // namespace
} // namespace mcastd::test
