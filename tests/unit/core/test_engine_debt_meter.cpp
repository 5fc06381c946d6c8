// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The debt meter (Engine::set_debt_meter): every SA MAD that brings a group in line after a
// client changed what it needs (a release's Delete and repair Set, the Delete of bits a join
// made redundant) is reported with that client's uid and goes in its uid's turn at the SA;
// work nobody's change caused is reported to nobody.
#include "engine_fixture.hpp"

namespace mcastd::test {
namespace {

const Gid kGroup = gid("ff15::c1");
constexpr uid_t kClientUid = 1000, kOtherUid = 1001; // EngineFixture's two clients

class EngineDebtMeter : public EngineFixture {
protected:
    EngineDebtMeter() {
        engine.set_debt_meter([this](uid_t uid) {
            metered.push_back(uid);
            deletes_sent_by_then.push_back(sa.count(SaMethod::del));
        });
    }
    std::vector<uid_t> metered;
    // How many Deletes the fake SA had been handed when the meter ran: the report follows its MAD.
    std::vector<int> deletes_sent_by_then;
};

TEST_F(EngineDebtMeter, ALeavesDeleteIsTheLastReleasers) {
    MembershipId a = 0, b = 0;
    join(client, request(kGroup, join::full), &a);
    join(other, request(kGroup, join::full), &b);
    settle();
    ASSERT_FALSE(engine.leave(client, a)); // the group still needs full: no Delete
    ASSERT_FALSE(engine.leave(other, b));
    settle();
    EXPECT_EQ(sa.count(SaMethod::del), 1);
    EXPECT_EQ(metered, std::vector<uid_t>{kOtherUid});
    EXPECT_EQ(deletes_sent_by_then, std::vector<int>{1});
}

// Released while a transaction of the group is in flight: the Delete that follows its answer
// is still that release's.
// A client whose uid is in another's subordinate range (ClientInfo::account): its join's MADs go
// in the owner's turn at the SA and its leave's Delete is charged to the owner, as every other
// share of its is (frontend/subordinate_ids.hpp).
TEST_F(EngineDebtMeter, ASubordinateUidsWorkIsItsOwnersInTurnAndInDebt) {
    const ClientId sub = engine.add_client(ClientInfo{300, 100000, 100000, "container", kOtherUid});
    MembershipId id = 0;
    join(sub, request(kGroup, join::full), &id);
    settle();
    ASSERT_EQ(sa.count(SaMethod::set), 1);
    for (const auto &req : sa.log)
        EXPECT_EQ(req.tenant, kOtherUid + 1) << "the owner's turn, not uid 100000's";
    ASSERT_FALSE(engine.leave(sub, id));
    settle();
    ASSERT_EQ(sa.count(SaMethod::del), 1);
    EXPECT_EQ(sa.log.back().tenant, kOtherUid + 1);
    EXPECT_EQ(metered, std::vector<uid_t>{kOtherUid});
}

TEST_F(EngineDebtMeter, AReleaseWhileTheGroupIsBusyIsChargedWhenItsDeleteGoesOut) {
    MembershipId a = 0;
    join(client, request(kGroup, join::full), &a);
    settle();
    engine.audit_next(port); // its Get is in flight
    ASSERT_EQ(sa.pending(), 1u);
    ASSERT_FALSE(engine.leave(client, a));
    EXPECT_EQ(sa.count(SaMethod::del), 0) << "the Delete waits for the audit's answer";
    settle();
    EXPECT_EQ(sa.count(SaMethod::del), 1);
    EXPECT_EQ(metered, std::vector<uid_t>{kClientUid});
}

TEST_F(EngineDebtMeter, ARemovedClientsDeleteIsItsOwn) {
    join(client, request(kGroup, join::full));
    join(other, request(gid("ff15::c2"), join::full));
    settle();
    engine.remove_client(other);
    settle();
    EXPECT_EQ(sa.count(SaMethod::del), 1);
    EXPECT_EQ(metered, std::vector<uid_t>{kOtherUid});
}

// A join withdrawn while its Set is in flight leaves bits nobody needs: their Delete is the
// withdrawing client's.
TEST_F(EngineDebtMeter, AWithdrawnJoinWhoseSetWentOutPaysItsDelete) {
    MembershipId id = 0;
    join(other, request(kGroup, join::full), &id);
    ASSERT_TRUE(sa.step()); // the probe: absent
    ASSERT_EQ(sa.log.back().method, SaMethod::set);
    ASSERT_FALSE(engine.leave(other, id));
    settle();
    EXPECT_EQ(sa.count(SaMethod::del), 1);
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
    EXPECT_EQ(metered, std::vector<uid_t>{kOtherUid});
}

// A join that moves the port from sendonly-full to full makes 0x8 redundant: its Delete is the
// joiner's doing, and a release the group had already absorbed (no Delete was due) is not
// charged for it.
TEST_F(EngineDebtMeter, AnUpgradesDeleteIsTheJoiners) {
    MembershipId s = 0, s2 = 0, f = 0;
    join(client, request(kGroup, join::send_only_full), &s);
    join(other, request(kGroup, join::send_only_full), &s2);
    settle();
    ASSERT_FALSE(engine.leave(other, s2)); // the group still needs sendonly-full
    settle();
    ASSERT_EQ(sa.count(SaMethod::del), 0);
    join(other, request(kGroup, join::full), &f);
    settle();
    ASSERT_EQ(sa.count(SaMethod::del), 1) << "Set 0x1, then Delete 0x8";
    EXPECT_EQ(metered, std::vector<uid_t>{kOtherUid});
    EXPECT_EQ(sa.log.back().tenant, kOtherUid + 1) << "in the joiner's turn at the SA";
}

// Another's sendonly-full under a full membership that leaves: the Delete of full and the Set
// that puts sendonly-full back are the leaver's doing, every MAD of it; a user who cycles full
// over someone's (or their own) sendonly-full pays for the whole cycle, in their own turn.
TEST_F(EngineDebtMeter, AFullCycleOverSendOnlyFullIsPaidInFullByTheCycler) {
    MembershipId s = 0, f = 0;
    join(client, request(kGroup, join::send_only_full), &s);
    settle();
    join(other, request(kGroup, join::full), &f);
    settle();
    const std::size_t joined = sa.log.size();
    ASSERT_EQ(sa.log.back().method, SaMethod::del) << "Set 0x1, then Delete 0x8";
    ASSERT_FALSE(engine.leave(other, f));
    settle();
    EXPECT_EQ(sa_bits(kGroup), std::optional<std::uint8_t>(join::send_only_full)) << "back as it was";
    std::vector<SaMethod> after_leave;
    for (std::size_t i = joined; i < sa.log.size(); ++i)
        after_leave.push_back(sa.log[i].method);
    EXPECT_EQ(after_leave, (std::vector<SaMethod>{SaMethod::del, SaMethod::set})) << "Delete 0x1, Set 0x8 back";
    for (std::size_t i = joined - 1; i < sa.log.size(); ++i)
        EXPECT_EQ(sa.log[i].tenant, kOtherUid + 1) << "MAD " << i << " in the cycler's turn at the SA";
    EXPECT_EQ(metered, (std::vector<uid_t>{kOtherUid, kOtherUid, kOtherUid}))
        << "the Delete of 0x8 its join made redundant, the Delete of 0x1 and the Set of 0x8 back";
}

TEST_F(EngineDebtMeter, OrphansOfARestartAreReportedToNobody) {
    sa.state.seed(kGroup, port_gid(), join::full);
    engine.adopt_group(port, kGroup, join::full, 0, std::nullopt);
    engine.end_adoption();
    settle();
    EXPECT_EQ(sa.count(SaMethod::del), 1);
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
    EXPECT_TRUE(metered.empty());
}

// A Delete that fails is sent again after the backoff, and each try is the changer's.
TEST_F(EngineDebtMeter, EachTryOfTheDeleteIsReported) {
    MembershipId a = 0;
    join(client, request(kGroup, join::full), &a);
    settle();
    int lost = 1;
    sa.fate = [&lost](const SaRequest &r) {
        return r.method == SaMethod::del && lost-- > 0 ? FakeSa::Fate::lose_request : FakeSa::Fate::deliver;
    };
    ASSERT_FALSE(engine.leave(client, a));
    settle();
    EXPECT_EQ(sa.count(SaMethod::del), 2);
    EXPECT_EQ(metered, (std::vector<uid_t>{kClientUid, kClientUid}));
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
}

} // namespace
} // namespace mcastd::test
