// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The MGID the SA assigns to a create with MGID 0 is checked before the engine takes it as its
// group: a multicast GID, without a kernel signature, and not one in which another agent on the
// port holds bits (one of the daemon's own is merged with it).
#include "engine_fixture.hpp"

namespace mcastd::test {
namespace {

class EngineAssignedMgid : public EngineFixture {
protected:
    EngineAssignedMgid() {
        engine.set_observer([this](const EngineNote &n) {
            if (n.kind == EngineNote::Kind::warning)
                warnings.push_back(n);
        });
    }

    // A create with MGID 0 that the SA answers with `assigned`.
    std::shared_ptr<JoinOutcome> create_given(const Gid &assigned) {
        sa.state.assign_next = assigned;
        auto j = join(client, request(kZeroGid, join::full));
        settle();
        return j;
    }

    bool engine_counts(const Gid &mgid) const {
        for (const GroupView &g : engine.groups())
            if (g.mgid == mgid && (g.held || g.uncertain || g.foreign))
                return true;
        return false;
    }

    int deletes_of(const Gid &mgid) const {
        int n = 0;
        for (const SaRequest &r : sa.log)
            n += r.method == SaMethod::del && r.record.mgid == mgid;
        return n;
    }

    std::vector<EngineNote> warnings;
};

TEST_F(EngineAssignedMgid, AGoodOneIsJoined) {
    const Gid m = gid("ff15:a01b:fe80::7");
    auto j = create_given(m);
    ASSERT_TRUE(j->ok()) << j->message();
    EXPECT_EQ(j->result.record.mgid, m);
    EXPECT_TRUE(engine.has_group(port, m));
    EXPECT_TRUE(engine_counts(m));
    EXPECT_TRUE(warnings.empty());
}

TEST_F(EngineAssignedMgid, ANonMulticastOneIsDeletedAgain) {
    const Gid m = gid("fe80::1:2");
    auto j = create_given(m);
    EXPECT_EQ(j->code(), Errc::internal);
    EXPECT_EQ(j->message(), "join of new group on mlx5_0/1: the SA assigned fe80::1:2, which is not a multicast GID "
                            "(it must start with ff): its bits are deleted again, since no other agent can hold "
                            "such a group");
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].message, j->message());
    EXPECT_EQ(warnings[0].mgid, m);
    EXPECT_EQ(deletes_of(m), 1);
    EXPECT_EQ(sa_bits(m), std::nullopt) << "nothing of the Set is left at the SA";
    EXPECT_FALSE(engine.has_group(port, m));
    EXPECT_EQ(engine.group_count(port), 0u);
}

TEST_F(EngineAssignedMgid, AnIpoibOneIsLeftAloneAndNotCounted) {
    const Gid m = gid("ff12:401b::ffff:ffff");
    auto j = create_given(m);
    EXPECT_EQ(j->code(), Errc::internal);
    EXPECT_EQ(j->message(), "join of new group on mlx5_0/1: the SA assigned ff12:401b::ffff:ffff, which has the IPoIB "
                            "signature: refused without a Delete, since the bits may be the kernel's");
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].message, j->message());
    EXPECT_EQ(sa.count(SaMethod::del), 0);
    EXPECT_EQ(sa_bits(m), join::full) << "left at the SA";
    EXPECT_FALSE(engine_counts(m)) << "not the daemon's: neither a leave nor the restart state deletes them";
    EXPECT_EQ(engine.group_count(port), 0u);
}

TEST_F(EngineAssignedMgid, AnRdmaCmOneIsLeftAlone) {
    const Gid m = gid("ff15:6001::9");
    auto j = create_given(m);
    EXPECT_EQ(j->code(), Errc::internal);
    EXPECT_NE(j->message().find("which has the rdma_cm signature: refused without a Delete"), std::string::npos)
        << j->message();
    EXPECT_EQ(sa.count(SaMethod::del), 0);
    EXPECT_FALSE(engine_counts(m));
}

// Whatever the config allows clients to name: the kernel shares such groups per port.
TEST_F(EngineAssignedMgid, ASignatureIsRefusedEvenWhenClientsMayNameIt) {
    EngineConfig cfg;
    cfg.allow_ipoib_mgids = true;
    Engine allowing(cfg, ports, sa, timers);
    allowing.add_port(port);
    const ClientId c = allowing.add_client(ClientInfo{100, 1000, 1000, "app"});
    sa.state.assign_next = gid("ff12:601b::1");
    JoinResult res;
    allowing.join(c, request(kZeroGid, join::full), [&res](const JoinResult &r) { res = r; });
    sa.run();
    ASSERT_TRUE(res.error);
    EXPECT_EQ(res.error->code, Errc::internal);
    EXPECT_EQ(sa.count(SaMethod::del), 0);
}

// OpenSM hands SA-assigned MGIDs out again after an SM restart: one the daemon already has a
// group of is one SA membership, so the two groups become one and the last leave deletes what
// either set.
TEST_F(EngineAssignedMgid, OneOfTheDaemonsOwnGroupsIsMergedWithIt) {
    const Gid m = gid("ff15:a01b:fe80::1");
    MembershipId held = 0, created = 0;
    auto first = join(other, request(m, join::send_only_full), &held);
    settle();
    ASSERT_TRUE(first->ok()) << first->message();

    sa.state.assign_next = m;
    auto j = join(client, request(kZeroGid, join::full), &created);
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    EXPECT_EQ(j->result.record.mgid, m);
    ASSERT_EQ(engine.groups().size(), 1u) << "one group, as at the SA";
    EXPECT_EQ(engine.groups().at(0).members.size(), 2u);
    // Full covers the send-only member: the port moves from 0x8 to 0x1 (never both).
    for (const SaRequest &del : sa.log) {
        if (del.method == SaMethod::del) {
            EXPECT_EQ(del.record.join_state, join::send_only_full);
        }
    }

    ASSERT_FALSE(engine.leave(other, held));
    settle();
    EXPECT_EQ(sa_bits(m), join::full) << "the create's member still needs full";
    ASSERT_FALSE(engine.leave(client, created));
    settle();
    EXPECT_FALSE(sa_bits(m)) << "the last leave deletes everything the daemon set: nothing leaks";
    EXPECT_TRUE(engine.groups().empty());
}

// One in which another agent on the port holds bits: the answer mixes that agent's bits with
// the Set's, so the join is refused and nothing is deleted.
TEST_F(EngineAssignedMgid, OneWhereAnotherAgentHoldsBitsIsLeftAlone) {
    const Gid m = gid("ff15:a01b:fe80::1");
    sa.state.seed(m, port_gid(), join::non_member, 0x1234); // the other agent, before the daemon
    MembershipId held = 0;
    auto first = join(other, request(m, join::send_only_full), &held);
    settle();
    ASSERT_TRUE(first->ok()) << first->message();
    ASSERT_EQ(engine.groups().at(0).foreign, join::non_member);
    const GroupView before = engine.groups().at(0);

    auto j = create_given(m);
    EXPECT_EQ(j->code(), Errc::internal);
    EXPECT_NE(j->message().find("the SA assigned ff15:a01b:fe80::1, which is a group in which another agent on this "
                                "port holds bits: refused without a Delete"),
              std::string::npos)
        << j->message();
    EXPECT_EQ(sa.count(SaMethod::del), 0);
    ASSERT_EQ(engine.groups().size(), 1u);
    const GroupView after = engine.groups().at(0);
    EXPECT_EQ(after.held, before.held) << "the port's group does not take the refused Set's bits";
    EXPECT_EQ(after.counts, before.counts);
    EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const EngineNote &n) {
        return n.message.find("refused without a Delete") != std::string::npos;
    })) << "the journal names it";
}

// The restart state saves what the engine counts: a refused MGID is not in it, and a Delete
// in flight for a non-multicast one is (as uncertain bits), so that a successor finishes it.
TEST_F(EngineAssignedMgid, WhatTheRestartStateSeesMatches) {
    const Gid bad = gid("fe80::1:3");
    sa.state.assign_next = bad;
    join(client, request(kZeroGid, join::full));
    ASSERT_TRUE(sa.step()); // the Set; its Delete is now in flight
    ASSERT_EQ(sa.log.back().method, SaMethod::del);
    ASSERT_EQ(engine.groups().size(), 1u);
    EXPECT_EQ(engine.groups().at(0).mgid, bad);
    EXPECT_EQ(engine.groups().at(0).uncertain, join::full);
    settle();
    EXPECT_TRUE(engine.groups().empty());

    sa.state.assign_next = gid("ff12:401b::5");
    join(client, request(kZeroGid, join::full));
    ASSERT_TRUE(sa.step());
    EXPECT_TRUE(engine.groups().empty()) << "nothing of a kernel MGID's Set is the daemon's";
}

} // namespace
} // namespace mcastd::test
