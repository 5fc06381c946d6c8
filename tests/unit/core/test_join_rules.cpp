// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The join rules on their own: validation, the conflict check, the next step for the head of a
// group's queue, and the SA requests they build. No engine, no SA.
#include <gtest/gtest.h>

#include "core/join_rules.hpp"

namespace mcastd {
namespace {

const Gid kMgid = *parse_gid("ff15:1234::1");
const Gid kPort = *parse_gid("fe80::10:3");

JoinRequest request(const char *mgid, std::uint8_t bits) {
    JoinRequest r;
    r.device = "mlx5_0";
    r.port = 1;
    r.mgid = *parse_gid(mgid);
    r.join_state = bits;
    return r;
}

SaKnowledge known(std::uint8_t held, std::uint8_t foreign = 0, std::uint64_t epoch = 0) {
    SaKnowledge k;
    k.held = held;
    k.foreign = foreign;
    k.probed = true;
    k.have_record = true;
    k.record_epoch = epoch;
    k.record.mgid = kMgid;
    k.record.qkey = 0x1234;
    k.record.mtu = 4;
    k.record.rate = 3;
    return k;
}

TEST(JoinRules, ValidationNamesTheField) {
    const EngineConfig cfg;
    EXPECT_FALSE(validate_request(request("ff15::1", join::full), cfg));
    auto bad = request("ff15::1", 0);
    EXPECT_EQ(validate_request(bad, cfg)->message, "/join_state: 0x0 is not a non-empty set of the bits 0x1-0x8");
    bad = request("ff15::1", join::full);
    bad.params.sl = 16;
    EXPECT_EQ(validate_request(bad, cfg)->message, "/sl: 16 out of range [0, 15]");
    bad = request("fe80::1", join::full);
    EXPECT_EQ(validate_request(bad, cfg)->code, Errc::invalid_argument);
    bad = request("ff15::1", join::full);
    bad.scope = 5;
    EXPECT_NE(validate_request(bad, cfg)->message.find("scope applies only when creating"), std::string::npos);
    // Creating needs a full-type bit.
    bad = request("::", join::non_member);
    EXPECT_EQ(validate_request(bad, cfg)->message, "creating a group needs the full or sendonly-full join state");
}

TEST(JoinRules, KernelSignaturesAreRefusedUnlessAllowed) {
    EngineConfig cfg;
    const auto ipoib = request("ff12:401b:ffff::1", join::full);
    const auto cm = request("ff12:4001:ffff::1", join::full);
    EXPECT_EQ(validate_request(ipoib, cfg)->code, Errc::denied);
    EXPECT_NE(validate_request(ipoib, cfg)->message.find("allow_ipoib_mgids"), std::string::npos);
    EXPECT_NE(validate_request(cm, cfg)->message.find("allow_rdma_cm_mgids"), std::string::npos);
    cfg.allow_ipoib_mgids = cfg.allow_rdma_cm_mgids = true;
    EXPECT_FALSE(validate_request(ipoib, cfg));
    EXPECT_FALSE(validate_request(cm, cfg));
}

TEST(JoinRules, MismatchNamesTheGroupsValue) {
    McRecord g = known(join::full).record;
    GroupParams p;
    EXPECT_FALSE(mismatch(p, g));
    p.qkey = 0x4321;
    EXPECT_EQ(*mismatch(p, g), "the group has Q_Key 0x00001234, not 0x00004321");
    p = {};
    p.pkey = 0x7fff; // same base as 0xffff: the top bit is the membership type
    g.pkey = 0xffff;
    EXPECT_FALSE(mismatch(p, g));
    p = {};
    p.mtu = Selected{Selector::greater, 4}; // the group has exactly 2048: not greater than 2048
    EXPECT_EQ(*mismatch(p, g), "the group has MTU 2048, not greater than 2048");
}

TEST(JoinRules, HeldBitsWithAFreshRecordAreAnsweredLocally) {
    const SaKnowledge k = known(join::full, 0, 7);
    EXPECT_EQ(next_join_step(k, join::full, {}, true, 7).kind, JoinStep::Kind::answer);
    // A FullMember covers a send-only-full member.
    EXPECT_EQ(next_join_step(k, join::send_only_full, {}, true, 7).kind, JoinStep::Kind::answer);
    // The record predates the port's last invalidation: ask the SA first.
    EXPECT_EQ(next_join_step(k, join::full, {}, true, 8).kind, JoinStep::Kind::refresh);
}

TEST(JoinRules, TheNextStepForAJoin) {
    SaKnowledge k = known(0, 0, 1);
    GroupParams wrong;
    wrong.qkey = 1;
    const JoinStep conflict = next_join_step(k, join::full, wrong, true, 1);
    EXPECT_EQ(conflict.kind, JoinStep::Kind::conflict);
    EXPECT_EQ(conflict.why, "the group has Q_Key 0x00001234, not 0x00000001");
    EXPECT_EQ(next_join_step(k, join::full, {}, false, 1).kind, JoinStep::Kind::port_down);
    const JoinStep set = next_join_step(k, join::full | join::send_only_full, {}, true, 1);
    EXPECT_EQ(set.kind, JoinStep::Kind::set);
    EXPECT_EQ(set.bits, join::full) << "0x9 is normalized to 0x1";
    k.probed = false;
    EXPECT_EQ(next_join_step(k, join::full, {}, true, 1).kind, JoinStep::Kind::probe);
    // Full beside another agent's sendonly-full would leak the MLID when it leaves.
    const SaKnowledge other = known(0, join::send_only_full, 1);
    EXPECT_EQ(next_join_step(other, join::full, {}, true, 1).kind, JoinStep::Kind::leak_hazard);
}

TEST(JoinRules, AJoinSetCreatesOnlyWhenAsked) {
    GroupParams p;
    p.qkey = 0x42;
    const SaRequest join = join_set(3, kMgid, kPort, join::full, p, std::nullopt);
    EXPECT_EQ(join.port, 3u);
    EXPECT_EQ(join.method, SaMethod::set);
    EXPECT_EQ(join.comp_mask, field::join_mask | field::qkey);
    EXPECT_EQ(join.record.qkey, 0x42u);

    const EngineConfig cfg;
    const SaRequest create = join_set(3, kZeroGid, kPort, join::full, p, CreateFields{cfg.create, 0x5});
    EXPECT_EQ(create.comp_mask, field::create_mask | field::scope);
    EXPECT_EQ(create.record.qkey, 0x42u) << "an asserted value beats the default";
    EXPECT_EQ(create.record.pkey, cfg.create.pkey);
    EXPECT_EQ(create.record.scope, 0x5);
}

TEST(JoinRules, ARepairSetRecreatesFromTheCachedRecord) {
    McRecord cached = known(join::full).record;
    cached.mtu_selector = Selector::greater;
    cached.hop_limit = 7;
    const SaRequest r = repair_set(0, cached, kPort, join::full);
    EXPECT_EQ(r.record.port_gid, kPort);
    EXPECT_EQ(r.record.mtu_selector, Selector::exactly);
    EXPECT_EQ(r.record.hop_limit, 7);
    EXPECT_EQ(r.comp_mask & field::create_mask, field::create_mask);
    EXPECT_TRUE(r.comp_mask & field::mtu && r.comp_mask & field::rate && r.comp_mask & field::hop_limit);
}

TEST(JoinRules, ProbeCandidatesTryWhatTheDaemonBelievesFirstAndEveryValueOnce) {
    SaKnowledge k;
    k.held = join::full;
    k.uncertain = join::non_member;
    const auto c = probe_candidates(k, true);
    ASSERT_EQ(c.size(), 15u);
    EXPECT_EQ(c[0], 0x3);
    EXPECT_EQ(c[1], 0x1);
    const auto first = probe_candidates(k, false);
    EXPECT_EQ(first.front(), join::full);
    EXPECT_EQ(first.size(), 15u);
}

} // namespace
} // namespace mcastd
