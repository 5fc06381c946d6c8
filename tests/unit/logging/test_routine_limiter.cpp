// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The per-uid rate limit of routine membership lines (logging/routine_limiter.hpp) on a fake
// clock: a burst passes, the rest is folded and summed up by kind, each uid on its own; and
// through the membership log, what is never folded (notes without a client, the policy's
// refusals).
#include <gtest/gtest.h>

#include "fakes/fake_sa.hpp"
#include "fakes/fake_timers.hpp"
#include "log_recorder.hpp"
#include "logging/membership_log.hpp"
#include "logging/message_ids.hpp"
#include "logging/policy_log.hpp"
#include "logging/routine_limiter.hpp"
#include "service/service.hpp"

namespace mcastd::logging {
namespace {

JoinRequest join_of(const char *mgid) {
    JoinRequest r;
    r.device = "mlx5_0";
    r.port = 1;
    r.mgid = *parse_gid(mgid);
    return r;
}

using namespace std::chrono_literals;
using K = EngineNote::Kind;

constexpr uid_t kBob = 1001, kAlice = 1002;

std::uint64_t of(const FoldSummary &s, K kind) { return s.by_kind[static_cast<std::size_t>(kind)]; }

class Limiter : public ::testing::Test {
protected:
    // `burst` lines at once, `per_minute` after.
    void make(std::size_t burst = 50, std::size_t per_minute = 120) {
        limiter = std::make_unique<RoutineLimiter>(timers, RoutineLimits{burst, per_minute},
                                                   [this](const FoldSummary &s) { summaries.push_back(s); });
    }
    // Admits `n` lines of `uid`, alternating joined and left; returns how many passed.
    std::size_t loop(uid_t uid, std::size_t n) {
        std::size_t passed = 0;
        for (std::size_t i = 0; i < n; ++i)
            passed += limiter->admit(uid, i % 2 ? K::left : K::joined);
        return passed;
    }

    mcastd::test::FakeTimers timers;
    std::vector<FoldSummary> summaries;
    std::unique_ptr<RoutineLimiter> limiter;
};

TEST_F(Limiter, TheBurstPassesThenLinesAreFolded) {
    make(5, 60);
    EXPECT_EQ(loop(kBob, 5), 5u);
    EXPECT_EQ(timers.pending(), 0u) << "no timer while nothing is folded";
    EXPECT_FALSE(limiter->admit(kBob, K::joined));
    EXPECT_EQ(limiter->folding(), 1u);
    EXPECT_EQ(timers.pending(), 1u);
    EXPECT_TRUE(summaries.empty());
    // One token a second at 60 a minute.
    timers.advance(999ms);
    EXPECT_FALSE(limiter->admit(kBob, K::joined));
    timers.advance(1ms);
    EXPECT_TRUE(limiter->admit(kBob, K::joined));
}

TEST_F(Limiter, TheSummaryCountsByKindAtTheLatestTenSecondsAfterTheFirstFold) {
    make();
    EXPECT_EQ(loop(kBob, 5000), 50u); // all at once: the burst, and 4,950 folded
    timers.advance(kMaxFoldedFor - 1ms);
    EXPECT_TRUE(summaries.empty());
    timers.advance(1ms);
    ASSERT_EQ(summaries.size(), 1u);
    const FoldSummary &s = summaries[0];
    EXPECT_EQ(s.uid, kBob);
    EXPECT_EQ(s.folded, 4950u);
    EXPECT_EQ(of(s, K::joined), 2475u);
    EXPECT_EQ(of(s, K::left), 2475u);
    EXPECT_EQ(of(s, K::lost), 0u);
    EXPECT_EQ(s.over, kMaxFoldedFor);
    EXPECT_EQ(describe(s, "bob"),
              "uid 1001 (bob): 4,950 routine membership lines folded in the last 10 s (joined 2,475, left 2,475)");
    EXPECT_EQ(limiter->folding(), 0u);
    EXPECT_EQ(timers.pending(), 0u) << "the timer runs only while something is folded";
}

TEST_F(Limiter, DescribeNamesOnlyTheKindsFoldedAndAUidWithoutAName) {
    FoldSummary s{0, 1, {}, 2500ms};
    s.by_kind[static_cast<std::size_t>(K::join_failed)] = 1;
    EXPECT_EQ(describe(s, ""), "uid 0: 1 routine membership line folded in the last 2.5 s (join failed 1)");
    s.folded = 1234567;
    s.by_kind = {};
    s.by_kind[static_cast<std::size_t>(K::deleted)] = 1234567;
    EXPECT_NE(describe(s, "root").find("1,234,567 routine membership lines"), std::string::npos);
    EXPECT_NE(describe(s, "root").find("(deleted 1,234,567)"), std::string::npos);
}

// A loop that never pauses: 2 lines/s pass and the timer writes one summary per 10 s.
TEST_F(Limiter, ASustainedLoopIsCutToTheRateWithASummaryEveryTenSeconds) {
    make();
    std::size_t passed = 0;
    for (int ms = 0; ms < 30'000; ms += 5) { // 200 lines/s for 30 s
        passed += limiter->admit(kBob, ms % 10 ? K::left : K::joined);
        timers.advance(5ms);
    }
    EXPECT_GE(passed, 50u + 59u);
    EXPECT_LE(passed, 50u + 61u);
    // The first fold came after the burst (0.25 s): summaries at 10.25 s and 20.25 s, then stop.
    ASSERT_EQ(summaries.size(), 2u);
    EXPECT_EQ(summaries[0].over, kMaxFoldedFor);
    EXPECT_EQ(summaries[1].over, kMaxFoldedFor);
    limiter->flush();
    ASSERT_EQ(summaries.size(), 3u);
    std::uint64_t folded = 0;
    for (const FoldSummary &s : summaries)
        folded += s.folded;
    EXPECT_EQ(folded + passed, 6000u) << "every line is either written or counted";
}

// After a pause the next line that passes brings its summary along, first.
TEST_F(Limiter, TheSummaryComesBeforeTheFirstLineAfterTheFloodEnds) {
    make(2, 120);
    EXPECT_EQ(loop(kBob, 6), 2u); // 4 folded
    timers.advance(600ms);       // a token, and nothing folded for longer than its interval
    EXPECT_TRUE(summaries.empty());
    EXPECT_TRUE(limiter->admit(kBob, K::lost));
    ASSERT_EQ(summaries.size(), 1u);
    EXPECT_EQ(summaries[0].folded, 4u);
    EXPECT_EQ(summaries[0].over, 600ms);
    EXPECT_EQ(timers.pending(), 0u);
}

TEST_F(Limiter, EachUidHasItsOwnBucketRootsIncluded) {
    make(3, 60);
    EXPECT_EQ(loop(kBob, 10), 3u);
    EXPECT_EQ(loop(kAlice, 3), 3u) << "bob's loop takes nothing from alice";
    EXPECT_EQ(loop(0, 10), 3u) << "root is limited like anyone";
    EXPECT_EQ(limiter->folding(), 2u);
    timers.advance(kMaxFoldedFor);
    ASSERT_EQ(summaries.size(), 2u);
    std::map<uid_t, std::uint64_t> by_uid;
    for (const FoldSummary &s : summaries)
        by_uid[s.uid] = s.folded;
    EXPECT_EQ(by_uid, (std::map<uid_t, std::uint64_t>{{0, 7}, {kBob, 7}}));
}

TEST_F(Limiter, EveryUidStillFoldingIsSummedUpAtStop) {
    make(1, 60);
    loop(kBob, 4);
    loop(kAlice, 2);
    limiter->flush();
    ASSERT_EQ(summaries.size(), 2u);
    EXPECT_EQ(summaries[0].folded + summaries[1].folded, 4u);
    EXPECT_EQ(timers.pending(), 0u);
    limiter->flush();
    EXPECT_EQ(summaries.size(), 2u) << "nothing twice";
}

TEST_F(Limiter, AReloadKeepsTheLevelUpToTheNewBurst) {
    make(50, 120);
    EXPECT_EQ(loop(kBob, 10), 10u); // 40 left
    limiter->set_limits({5, 120});
    EXPECT_EQ(loop(kBob, 10), 5u);
    limiter->set_limits({100, 120});
    EXPECT_EQ(loop(kBob, 10), 0u) << "a bigger burst is earned, not given";
}

// ---- through the membership log ----

using test::Entry;
using test::field;

class MembershipLogLimit : public Limiter {
protected:
    MembershipLogLimit() : service(EngineConfig{}, sa, timers) {
        limiter = std::make_unique<RoutineLimiter>(timers, RoutineLimits{3, 60},
                                                   [](const FoldSummary &s) { log_folded(s, "bob"); });
        observer = membership_log(service, *limiter);
    }
    ~MembershipLogLimit() override { limiter.reset(); } // before the capture ends

    static EngineNote about(uid_t uid, K kind = K::joined) {
        EngineNote n{kind, 0, *parse_gid("ff15::1"), 0xc001, join::full, 7, {}, {}};
        n.client_info = ClientInfo{4242, uid, uid, "app"};
        return n;
    }
    std::size_t count(std::string_view message_id) const {
        return static_cast<std::size_t>(std::count_if(capture.entries().begin(), capture.entries().end(),
                                                      [&](const Entry &e) { return field(e, "MESSAGE_ID") == message_id; }));
    }

    test::LogCapture capture;
    mcastd::test::FakeSa sa;
    Service service;
    EngineObserver observer;
};

TEST_F(MembershipLogLimit, NotesWithoutAClientAndRefusalsAreNeverFolded) {
    for (int i = 0; i < 10; ++i)
        observer(about(kBob));
    EXPECT_EQ(count(kJoined.id), 3u);
    // bob's bucket is dry; what matters still gets through, as often as it happens.
    for (int i = 0; i < 20; ++i) {
        observer(EngineNote{K::warning, 0, {}, 0, 0, 0, {}, "the SA may have lost the memberships of mlx5_0/1"});
        log_refused(ClientInfo{4242, kBob, kBob, "app"}, join_of("ff15::2"),
                    Error{Errc::denied, "no rule allows it", std::nullopt});
    }
    EXPECT_EQ(count(kWarning.id), 20u);
    EXPECT_EQ(count(kPolicyRefused.id), 20u);
    EXPECT_EQ(limiter->folding(), 1u);
}

TEST_F(MembershipLogLimit, TheSummaryIsAWarningWithTheUidAndItsOwnMessageId) {
    for (int i = 0; i < 10; ++i)
        observer(about(kBob, i < 7 ? K::joined : K::lost)); // 3 pass; 4 joined and 3 lost folded
    timers.advance(kMaxFoldedFor);
    ASSERT_EQ(count(kRoutineFolded.id), 1u);
    const Entry &e = capture.entries().back();
    EXPECT_EQ(e.level, spdlog::level::warn);
    EXPECT_EQ(e.text, "uid 1001 (bob): 7 routine membership lines folded in the last 10 s (joined 4, lost 3)");
    EXPECT_EQ(field(e, "CLIENT_UID"), "1001");
    EXPECT_EQ(field(e, "FOLDED_LINES"), "7");
}

// A log level that drops routine lines does not spend the bucket on them.
TEST_F(MembershipLogLimit, LinesTheLevelDropsAreNotCounted) {
    spdlog::set_level(spdlog::level::warn);
    for (int i = 0; i < 10; ++i)
        observer(about(kBob, K::joined));
    EXPECT_EQ(limiter->folding(), 0u);
    spdlog::set_level(spdlog::level::info);
    observer(about(kBob, K::joined));
    EXPECT_EQ(count(kJoined.id), 1u);
}

} // namespace
} // namespace mcastd::logging
