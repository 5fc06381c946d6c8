// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SaKnowledge on its own: each SA answer's effect on held / foreign / uncertain bits and on the
// record, and the level-triggered reconcile decision.
#include <gtest/gtest.h>

#include "core/sa_knowledge.hpp"

namespace mcastd {
namespace {

using Step = SaKnowledge::Step;
using K = Step::Kind;

const Gid kMgid = *parse_gid("ff15:1234::1");
const Gid kPort = *parse_gid("fe80::10:3");

McRecord record(std::uint16_t mlid, std::uint8_t join_state = 0) {
    McRecord r;
    r.mgid = kMgid;
    r.mlid = mlid;
    r.qkey = 0x1234;
    r.join_state = join_state;
    return r;
}

TEST(SaKnowledge, ASetAnswerSettlesEveryUncertainty) {
    SaKnowledge k;
    k.uncertain = join::non_member;
    const auto a = k.set_answered(record(0xc001, join::full), join::full, true, kPort, 3);
    EXPECT_EQ(k.held, join::full);
    EXPECT_EQ(k.uncertain, 0);
    EXPECT_EQ(a.others, 0);
    EXPECT_EQ(a.changed, 0u) << "a first record changes nothing members knew";
    EXPECT_TRUE(k.fresh(3));
    EXPECT_FALSE(k.fresh(4));
    EXPECT_EQ(k.record.port_gid, kPort);
    EXPECT_EQ(k.record.scope, 5) << "the scope comes from the MGID";
}

TEST(SaKnowledge, BitsNobodyAccountsForAreAnotherAgents) {
    SaKnowledge k;
    const auto a = k.set_answered(record(0xc001, join::full | join::non_member), join::full, true, kPort, 0);
    EXPECT_EQ(a.others, join::non_member);
    EXPECT_EQ(k.foreign, join::non_member);
    EXPECT_EQ(k.held, join::full);
}

// A re-sync: of what the port holds, only bits the daemon held or may have set are its own.
TEST(SaKnowledge, AResyncCountsOnlyHeldOrUncertainBitsAsOurs) {
    SaKnowledge k;
    k.held = join::full;
    k.uncertain = join::send_only_non_member;
    k.foreign = join::send_only_full; // gone since: the agent left
    k.resynced(join::full | join::non_member | join::send_only_non_member);
    EXPECT_EQ(k.held, join::full | join::send_only_non_member);
    EXPECT_EQ(k.foreign, join::non_member) << "a bit nobody here set is another agent's";
    EXPECT_EQ(k.uncertain, 0);
    k.resynced(join::non_member);
    EXPECT_EQ(k.held, 0);
    EXPECT_EQ(k.foreign, join::non_member);
}

TEST(SaKnowledge, AnAnswerFromBeforeAnInvalidationGivesARecordButNoBits) {
    SaKnowledge k;
    k.set_answered(record(0xc001, join::full), join::full, true, kPort, 1);
    const auto a = k.set_answered(record(0xc002, join::full), join::full, false, kPort, 2);
    EXPECT_EQ(a.changed, field::mlid);
    EXPECT_EQ(k.record.mlid, 0xc002);
    EXPECT_EQ(k.uncertain, join::full);
    EXPECT_FALSE(k.fresh(2)) << "the record keeps the epoch it was last confirmed in";
}

TEST(SaKnowledge, LosingTheSaMakesHeldBitsUncertain) {
    SaKnowledge k;
    k.held = join::full;
    k.foreign = join::non_member;
    k.sa_may_have_lost();
    EXPECT_EQ(k.held, 0);
    EXPECT_EQ(k.uncertain, join::full);
    EXPECT_EQ(k.foreign, join::non_member) << "another agent's bits are its own business";
}

TEST(SaKnowledge, AnUnansweredSetLeavesDoubtAboutTheRecord) {
    SaKnowledge k;
    k.set_answered(record(0xc001, join::full), join::full, true, kPort, 0);
    k.set_unanswered(join::non_member);
    EXPECT_EQ(k.uncertain, join::non_member);
    EXPECT_FALSE(k.fresh(0));
    // A wanted uncertain bit is simply set again; one nobody wants is probed before a Delete.
    EXPECT_EQ(k.reconcile(join::full | join::non_member, 0), (Step{K::repair, join::non_member, false}));
    EXPECT_EQ(k.reconcile(join::full, 0).kind, K::resync);
}

TEST(SaKnowledge, ADeleteOfTheLastFullBitMakesTheRestUncertain) {
    // OpenSM deletes the group when its last full member leaves, even though the DeleteResp
    // still shows the non-member bit.
    SaKnowledge k;
    k.held = join::full | join::non_member;
    k.deleted(join::full, join::non_member);
    EXPECT_EQ(k.held, 0);
    EXPECT_EQ(k.uncertain, join::non_member);
    // With another agent's full bit the group lives on.
    SaKnowledge f;
    f.held = join::full | join::non_member;
    f.foreign = join::send_only_full;
    f.deleted(join::full, join::non_member | join::send_only_full);
    EXPECT_EQ(f.held, join::non_member);
    EXPECT_EQ(f.uncertain, 0);
    // The DeleteResp drops bits the SA took with the port.
    SaKnowledge d;
    d.held = join::full | join::non_member;
    d.deleted(join::non_member, 0);
    EXPECT_EQ(d.held, 0);
}

TEST(SaKnowledge, ReconcileDeletesOnlyWhatNobodyWants) {
    SaKnowledge k;
    k.held = join::full | join::non_member;
    EXPECT_EQ(k.reconcile(join::full | join::non_member, 0).kind, K::none);
    EXPECT_EQ(k.reconcile(join::full, 0), (Step{K::remove, join::non_member, false}));
    EXPECT_EQ(k.reconcile(0, 0), (Step{K::remove, join::full | join::non_member, false}));
}

TEST(SaKnowledge, ReconcileNeverDeletesFullWhileSendOnlyFullStays) {
    SaKnowledge k;
    k.held = join::full | join::send_only_full;
    // 0x1 must go, 0x8 stays wanted: delete both, the repair re-sets 0x8 afterwards.
    EXPECT_EQ(k.reconcile(join::send_only_full, 0), (Step{K::remove, join::full | join::send_only_full, false}));
    // Another agent's 0x8 beside our 0x1: keep 0x1 and say so.
    SaKnowledge other;
    other.held = join::full;
    other.foreign = join::send_only_full;
    EXPECT_EQ(other.reconcile(0, 0), (Step{K::none, 0, true}));
    // 0x8 may be there (an answer was lost): learn the exact state before deleting 0x1.
    SaKnowledge uncertain;
    uncertain.held = join::full;
    uncertain.uncertain = join::send_only_full;
    EXPECT_EQ(uncertain.reconcile(join::send_only_full, 0), (Step{K::resync, 0, false}));
    // An uncertain bit nobody wants is probed before anything is deleted, too.
    EXPECT_EQ(uncertain.reconcile(join::full, 0), (Step{K::resync, 0, false}));
}

TEST(SaKnowledge, ReconcileRepairsWhatMembersNeedAndRefreshesAStaleRecord) {
    SaKnowledge k;
    k.have_record = true;
    k.record = record(0xc001);
    EXPECT_EQ(k.reconcile(join::full, 0), (Step{K::repair, join::full, false}));
    k.held = join::full;
    k.record_epoch = 1;
    EXPECT_EQ(k.reconcile(join::full, 2).kind, K::refresh) << "the record predates the invalidation";
    EXPECT_EQ(k.reconcile(join::full, 1).kind, K::none);
}

TEST(SaKnowledge, RefreshAndAuditTellWhatChanged) {
    SaKnowledge k;
    k.set_answered(record(0xc001, join::full), join::full, true, kPort, 0);
    McRecord now = record(0xc005);
    now.qkey = 0x99;
    EXPECT_EQ(k.refreshed(now, 1), field::mlid | field::qkey);
    EXPECT_TRUE(k.fresh(1));
    EXPECT_EQ(k.record.port_gid, kPort);
    EXPECT_EQ(k.mlid_seen(0xc005), 0u);
    EXPECT_EQ(k.mlid_seen(0), 0u);
    EXPECT_EQ(k.mlid_seen(0xc006), field::mlid);
    k.group_gone(true);
    EXPECT_TRUE(k.absent);
    EXPECT_TRUE(k.have_record) << "a re-join re-creates the group from the old record";
    k.group_gone(false);
    EXPECT_FALSE(k.have_record);
}

TEST(SaKnowledge, ChangedFieldsIgnoresWhatMembersDoNotReactTo) {
    McRecord a = record(0xc001), b = a;
    b.port_gid = kPort;
    b.join_state = join::full;
    EXPECT_EQ(changed_fields(a, b), 0u);
    b.rate = 7;
    b.sl = 3;
    EXPECT_EQ(changed_fields(a, b), field::rate | field::sl);
}

} // namespace
} // namespace mcastd
