// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What a join costs at the SA, counted MAD by MAD on the fake SA (issue 16, item 4), and the
// rule those MADs exist for: the daemon never deletes bits another agent on the port set.
// doc/architecture.md §5 ("SA cost of a join") gives the figures these tests hold.
#include <cstdio>
#include <set>

#include "engine_fixture.hpp"

namespace mcastd::test {
namespace {

const Gid kGroup = gid("ff15:1234::1");
const Gid kElsewhere = make_gid(0xfe80000000000000ULL, 0x200001); // another host's port

class SaCost : public EngineFixture {
protected:
    static std::string get(std::uint64_t mask) { return sa_line(SaMethod::get, mask); }
    static std::string set(std::uint64_t mask) { return sa_line(SaMethod::set, mask); }
};

using V = std::vector<std::string>;

// An explicit MGID nobody has created: one Get, whose "no such group" answer is all the
// probing there is, then the Set that creates the group. Both join states that can create.
TEST_F(SaCost, NewGroupWithAnExplicitMgidIsOneGetAndOneSet) {
    for (std::uint8_t bits : {join::full, join::send_only_full}) {
        const Gid m = bits == join::full ? kGroup : gid("ff15:1234::8");
        const std::size_t from = requests();
        auto j = join(client, request(m, bits));
        settle();
        ASSERT_TRUE(j->ok()) << j->message();
        EXPECT_EQ(sent(from), (V{get(field::mgid), set(field::create_mask)})) << int(bits);
        EXPECT_EQ(sa_bits(m), bits);
    }
}

// MGID 0: the group the SA creates for the Set is new, so nobody can hold bits in it: the Set
// alone.
TEST_F(SaCost, NewGroupWithMgid0IsOneSet) {
    auto j = join(client, request(Gid{}, join::full));
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    EXPECT_EQ(sent(), (V{set(field::create_mask | field::scope)}));
}

// Many new groups at once: still one Get and one Set each, whatever order the answers come in.
TEST_F(SaCost, ManyNewGroupsCostOneGetAndOneSetEach) {
    std::vector<std::shared_ptr<JoinOutcome>> outs;
    for (int i = 1; i <= 200; ++i) {
        Gid m = kGroup;
        m[15] = static_cast<std::uint8_t>(i);
        m[14] = static_cast<std::uint8_t>(i >> 8);
        outs.push_back(join(client, request(m, join::full)));
        outs.push_back(join(client, request(Gid{}, join::full)));
    }
    settle();
    for (const auto &o : outs)
        ASSERT_TRUE(o->ok()) << o->message();
    EXPECT_EQ(sa.count(SaMethod::get), 200) << "one probe per explicit MGID, none for MGID 0";
    EXPECT_EQ(sa.count(SaMethod::set), 400);
    EXPECT_EQ(engine.stats().sa_gets, 200u);
    EXPECT_EQ(engine.stats().sa_sets, 400u);
}

// Members queued on one new group while its probe is out share that probe: a burst of the same
// bits is one Set, and other bits need their own Set but no second probe.
TEST_F(SaCost, MembersQueuedBehindTheProbeShareIt) {
    std::vector<std::shared_ptr<JoinOutcome>> outs;
    for (int i = 0; i < 20; ++i)
        outs.push_back(join(i % 2 ? client : other, request(kGroup, join::full)));
    outs.push_back(join(other, request(kGroup, join::non_member)));
    settle();
    for (const auto &o : outs)
        EXPECT_TRUE(o->ok()) << o->message();
    EXPECT_EQ(sent(), (V{get(field::mgid), set(field::create_mask), set(field::join_mask)}));
    EXPECT_EQ(sa_bits(kGroup), 0x3);
}

// For comparison: a group that exists but this port is not in costs a second Get (is this
// port a member?) before the Set, and asserts nothing the member did not ask for.
TEST_F(SaCost, ExistingGroupThePortIsNotInIsTwoGetsAndOneSet) {
    sa.state.seed(kGroup, kElsewhere, join::full);
    auto j = join(client, request(kGroup, join::full));
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    EXPECT_EQ(sent(), (V{get(field::mgid), get(field::mgid | field::port_gid), set(field::join_mask)}));
}

// Every explicit MGID is probed before the daemon's first Set of it: a Set sent first would
// answer with the port's JoinState after it, in which bits another agent held that the Set
// carries too look like the daemon's own.
TEST_F(SaCost, NoSetOfAnExplicitMgidGoesOutBeforeItsProbeIsAnswered) {
    sa.state.seed(gid("ff15:1234::2"), kElsewhere, join::full);
    sa.state.seed(gid("ff15:1234::3"), port_gid(), join::non_member);
    sa.state.seed(gid("ff15:1234::3"), kElsewhere, join::full);
    for (const char *m : {"ff15:1234::1", "ff15:1234::2", "ff15:1234::3"})
        for (std::uint8_t bits : {join::full, join::non_member, join::send_only_non_member})
            join(client, request(gid(m), bits));
    std::set<Gid> probed;
    sa.fate = [&](const SaRequest &r) {
        if (r.method == SaMethod::get)
            probed.insert(r.record.mgid);
        else
            EXPECT_TRUE(probed.count(r.record.mgid)) << "a Set or Delete before any probe of " << format_gid(r.record.mgid);
        return FakeSa::Fate::deliver;
    };
    settle();
    EXPECT_EQ(probed.size(), 3u);
}

// The rule the probe is for: the port alone holds FullMember in an existing group (the kernel
// joined it, say). A member of the daemon wanting FullMember is served by that bit with no Set,
// and its leave deletes nothing: the other agent's membership stays as it was.
TEST_F(SaCost, AnotherAgentsIdenticalBitIsNeverDeletedByTheLeave) {
    for (std::uint8_t bits : {join::full, join::send_only_full, join::non_member}) {
        const Gid m = gid(bits == join::full ? "ff15:77::1" : bits == join::send_only_full ? "ff15:77::8" : "ff15:77::2");
        sa.state.seed(m, port_gid(), bits);
        if (!(bits & (join::full | join::send_only_full)))
            sa.state.seed(m, kElsewhere, join::full); // a NonMember needs a full member somewhere
        const std::size_t from = requests();
        MembershipId id;
        auto j = join(client, request(m, bits), &id);
        settle();
        ASSERT_TRUE(j->ok()) << j->message();
        ASSERT_EQ(engine.groups().size(), 1u);
        EXPECT_EQ(engine.groups()[0].foreign, bits);
        EXPECT_EQ(engine.groups()[0].held, 0);
        ASSERT_EQ(engine.leave(client, id), std::nullopt);
        settle();
        for (std::size_t i = from; i < sa.log.size(); ++i)
            EXPECT_NE(sa.log[i].method, SaMethod::del) << "deleted what another agent holds";
        EXPECT_EQ(sa_bits(m), bits) << int(bits);
        EXPECT_EQ(sa.count(SaMethod::set), 0) << "the other agent's bit serves the member";
    }
}

// Another agent holds FullMember; the daemon's members want FullMember and NonMember. Only
// NonMember is set, and only NonMember is deleted when they leave.
TEST_F(SaCost, ALeaveDeletesOnlyWhatTheDaemonSetBesideAnotherAgentsBit) {
    sa.state.seed(kGroup, port_gid(), join::full);
    MembershipId f, n;
    join(client, request(kGroup, join::full), &f);
    join(other, request(kGroup, join::non_member), &n);
    settle();
    EXPECT_EQ(sa_bits(kGroup), 0x3);
    engine.leave(client, f);
    engine.leave(other, n);
    settle();
    ASSERT_EQ(sa.count(SaMethod::del), 1);
    for (const auto &r : sa.log) {
        if (r.method == SaMethod::del) {
            EXPECT_EQ(r.record.join_state, join::non_member);
        }
    }
    EXPECT_EQ(sa_bits(kGroup), join::full);
}

// Another agent joins the group between the daemon's probe and its Set with a bit the Set does
// not carry: the Set's answer names it, it becomes foreign, and the leave leaves it alone.
// (A bit the Set also carries could not be told apart: that is why the probe comes first.)
TEST_F(SaCost, ABitAnotherAgentSetsBetweenProbeAndSetIsLearntFromTheSetsAnswer) {
    sa.fate = [&](const SaRequest &r) {
        if (r.method == SaMethod::set && sa.count(SaMethod::set) == 1) {
            // Meanwhile another host created the group (with our create defaults) and another
            // agent on our port joined it as NonMember.
            sa.state.seed(kGroup, kElsewhere, join::full, 0x01234567);
            sa.state.seed(kGroup, port_gid(), join::non_member);
        }
        return FakeSa::Fate::deliver;
    };
    MembershipId id;
    auto j = join(client, request(kGroup, join::full), &id);
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    ASSERT_EQ(engine.groups().size(), 1u);
    EXPECT_EQ(engine.groups()[0].foreign, join::non_member);
    EXPECT_EQ(engine.groups()[0].held, join::full);
    sa.fate = [](const SaRequest &) { return FakeSa::Fate::deliver; };
    engine.leave(client, id);
    settle();
    EXPECT_EQ(sa.log.back().method, SaMethod::del);
    EXPECT_EQ(sa.log.back().record.join_state, join::full);
}

} // namespace
} // namespace mcastd::test
