// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The delete meter (Engine::set_delete_meter): every Delete a release caused is reported with
// the uid of the client whose release last lowered what the group needs; Deletes nobody's
// release caused are reported to nobody.
#include "engine_fixture.hpp"

namespace mcastd::test {
namespace {

const Gid kGroup = gid("ff15::c1");
constexpr uid_t kClientUid = 1000, kOtherUid = 1001; // EngineFixture's two clients

class EngineDeleteMeter : public EngineFixture {
protected:
    EngineDeleteMeter() {
        engine.set_delete_meter([this](uid_t uid) {
            metered.push_back(uid);
            deletes_sent_by_then.push_back(sa.count(SaMethod::del));
        });
    }
    std::vector<uid_t> metered;
    // How many Deletes the fake SA had been handed when the meter ran: the report follows its MAD.
    std::vector<int> deletes_sent_by_then;
};

TEST_F(EngineDeleteMeter, ALeavesDeleteIsTheLastReleasers) {
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
TEST_F(EngineDeleteMeter, AReleaseWhileTheGroupIsBusyIsChargedWhenItsDeleteGoesOut) {
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

TEST_F(EngineDeleteMeter, ARemovedClientsDeleteIsItsOwn) {
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
TEST_F(EngineDeleteMeter, AWithdrawnJoinWhoseSetWentOutPaysItsDelete) {
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

// Nobody's release: a join that only moves the port from sendonly-full to full deletes 0x8,
// and a release the group had already absorbed (no Delete was due) is not charged for it.
TEST_F(EngineDeleteMeter, AnUpgradesDeleteIsNobodys) {
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
    EXPECT_TRUE(metered.empty());
}

TEST_F(EngineDeleteMeter, OrphansOfARestartAreReportedToNobody) {
    sa.state.seed(kGroup, port_gid(), join::full);
    engine.adopt_group(port, kGroup, join::full, 0, std::nullopt);
    engine.end_adoption();
    settle();
    EXPECT_EQ(sa.count(SaMethod::del), 1);
    EXPECT_EQ(sa_bits(kGroup), std::nullopt);
    EXPECT_TRUE(metered.empty());
}

// A Delete that fails is sent again after the backoff, and each try is the releaser's.
TEST_F(EngineDeleteMeter, EachTryOfTheDeleteIsReported) {
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
