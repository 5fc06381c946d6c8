// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The pure bookkeeping of a port's re-join (RejoinProgress) and the audit's walk over a port's
// groups (next_to_audit).
#include <gtest/gtest.h>

#include "core/rejoin_progress.hpp"

namespace mcastd {
namespace {

const TimePoint t0{std::chrono::seconds(100)};

TEST(RejoinProgress, EndsWhenItsLastGroupIsDone) {
    RejoinProgress r;
    r.group_marked();
    r.group_marked();
    r.start(t0, "SM restart");
    EXPECT_TRUE(r.running());
    EXPECT_EQ(r.groups(), 2u);
    EXPECT_EQ(r.reason(), "SM restart");
    EXPECT_FALSE(r.finish(t0, false)) << "two groups still marked";
    r.group_done();
    EXPECT_FALSE(r.finish(t0, false));
    r.group_done();
    EXPECT_FALSE(r.finish(t0 + std::chrono::milliseconds(5), true)) << "still waiting for its start";
    const auto took = r.finish(t0 + std::chrono::milliseconds(7), false);
    ASSERT_TRUE(took);
    EXPECT_EQ(*took, std::chrono::milliseconds(7));
    EXPECT_FALSE(r.running());
    EXPECT_EQ(r.finished(), t0 + std::chrono::milliseconds(7));
    EXPECT_FALSE(r.finish(t0 + std::chrono::seconds(1), false)) << "ends once";
}

TEST(RejoinProgress, CountsTheRejoinsStartedNotTheStartsThatContinueOne) {
    RejoinProgress r;
    EXPECT_EQ(r.count(), 0u);
    r.group_marked();
    r.start(t0, "SM restart");
    r.start(t0, "SM restart seen again"); // continues the one that runs
    EXPECT_EQ(r.count(), 1u);
    r.group_done();
    ASSERT_TRUE(r.finish(t0, false));
    r.start(t0 + std::chrono::seconds(1), "LID change"); // nothing to redo: still a re-join
    EXPECT_EQ(r.count(), 2u);
}

TEST(RejoinProgress, NothingToRedoIsDoneAsItStarts) {
    RejoinProgress r;
    r.start(t0, "LID change");
    EXPECT_FALSE(r.running());
    EXPECT_EQ(r.started(), t0);
    EXPECT_EQ(r.finished(), t0);
    EXPECT_EQ(r.groups(), 0u);
}

TEST(RejoinProgress, AStartDuringARejoinContinuesIt) {
    RejoinProgress r;
    r.group_marked();
    r.start(t0, "first");
    r.group_marked();
    r.group_marked();
    r.start(t0 + std::chrono::seconds(1), "second");
    EXPECT_EQ(r.started(), t0) << "the re-join that runs keeps its start";
    EXPECT_EQ(r.groups(), 3u);
    EXPECT_EQ(r.reason(), "second");
    r.group_done();
    EXPECT_EQ(r.pending(), 2u);
    r.group_done();
    r.group_done();
    r.group_done(); // never below zero
    EXPECT_EQ(r.pending(), 0u);
}

TEST(NextToAudit, GoesRoundInMgidOrderSkippingWhatIsNotEligible) {
    GidMap<int> groups;
    for (int i = 1; i <= 5; ++i)
        groups[*parse_gid(("ff15::" + std::to_string(i)).c_str())] = i;
    auto any = [](int) { return true; };
    auto odd = [](int h) { return h % 2 == 1; };
    EXPECT_EQ(next_to_audit(groups, kZeroGid, any), 1);
    EXPECT_EQ(next_to_audit(groups, *parse_gid("ff15::2"), any), 3);
    EXPECT_EQ(next_to_audit(groups, *parse_gid("ff15::3"), odd), 5);
    EXPECT_EQ(next_to_audit(groups, *parse_gid("ff15::5"), odd), 1) << "wraps around";
    EXPECT_EQ(next_to_audit(groups, *parse_gid("ff15::5"), [](int h) { return h == 5; }), 5)
        << "the cursor's own group comes last";
    EXPECT_FALSE(next_to_audit(groups, kZeroGid, [](int) { return false; }));
    EXPECT_FALSE(next_to_audit(GidMap<int>{}, kZeroGid, any));
}

} // namespace
} // namespace mcastd
