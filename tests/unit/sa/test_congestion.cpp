// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// CongestionWindow on its own, on made-up times: slow start from one MAD, halving on delay
// and timeouts (once per round trip), the floor and the spacing below one MAD, the hard cap
// (sa.window), and try timeouts from the measured round trip within the try policy's bounds.
#include <gtest/gtest.h>

#include "sa/congestion.hpp"

namespace mcastd::sa {
namespace {

using namespace std::chrono_literals;

const TimePoint t0{};
const CongestionConfig kOn{.enabled = true, .rtt_target = 50ms, .min_window = 1.0 / 64};

// `n` answers, each sent at `at` and answered `rtt` later; returns the time of the last.
TimePoint answers(CongestionWindow &w, int n, TimePoint at, Duration rtt) {
    for (int i = 0; i < n; ++i)
        w.on_answer(at, at + rtt);
    return at + rtt;
}

TEST(CongestionWindow, StartsAtOneAndDoublesPerRoundTripWhileTheSaIsPrompt) {
    CongestionWindow w(kOn, 16);
    EXPECT_EQ(w.window(), 1);
    EXPECT_EQ(w.allowed(), 1u);
    EXPECT_TRUE(w.slow_start());
    // A round trip is every MAD in flight answered: 1, 2, 4, 8, then the cap.
    TimePoint t = t0;
    for (unsigned expect : {2u, 4u, 8u, 16u, 16u}) {
        t = answers(w, static_cast<int>(w.allowed()), t, 1ms);
        EXPECT_EQ(w.allowed(), expect);
    }
    EXPECT_EQ(w.window(), 16) << "sa.window is a hard cap";
}

TEST(CongestionWindow, HalvesOncePerRoundTripOnDelayThenGrowsByOnePerRoundTrip) {
    CongestionWindow w(kOn, 64);
    TimePoint t = answers(w, 15, t0, 1ms); // w = 16
    ASSERT_EQ(w.window(), 16);
    // A whole window of slow answers (one episode of delay) halves it once.
    for (int i = 0; i < 16; ++i)
        w.on_answer(t, t + 80ms);
    EXPECT_EQ(w.window(), 8);
    EXPECT_FALSE(w.slow_start());
    // Prompt again: +1/w per answer, about one MAD more per round trip.
    t += 80ms;
    t = answers(w, 8, t, 2ms);
    EXPECT_NEAR(w.window(), 9, 0.1);
    // Slow again, a round trip after the last decrease: halved again.
    w.on_answer(t + 500ms, t + 600ms);
    EXPECT_NEAR(w.window(), 4.5, 0.1);
}

TEST(CongestionWindow, TimeoutsHalveItToTheFloorAndBelowOneTheNextMadWaits) {
    CongestionWindow w(kOn, 16);
    answers(w, 1, t0, 10ms); // srtt 10 ms, w = 2
    TimePoint t = t0 + 1s;
    for (int i = 0; i < 20; ++i, t += 1s)
        w.on_timeout(t);
    EXPECT_DOUBLE_EQ(w.window(), 1.0 / 64) << "never below min_window";
    EXPECT_EQ(w.allowed(), 1u) << "one MAD in flight at most, never none";
    // Below one: after an answer at `t` the next MAD waits srtt * (1/w - 1).
    w.on_answer(t, t + 10ms); // prompt: w doubles to 1/32
    EXPECT_DOUBLE_EQ(w.window(), 1.0 / 32);
    const Duration srtt = *w.srtt();
    const TimePoint answered = t + 10ms;
    const TimePoint next = w.earliest_send(answered);
    EXPECT_EQ(next - answered,
              std::chrono::duration_cast<Duration>(std::chrono::duration<double, Duration::period>(
                  static_cast<double>(srtt.count()) * 31)));
    EXPECT_EQ(w.earliest_send(next + 1ms), next + 1ms) << "a later time is already allowed";
    // At one or more there is no gap.
    CongestionWindow fresh(kOn, 16);
    EXPECT_EQ(fresh.earliest_send(t0), t0);
}

// One sample per gap is slow news: srtt still says "queue" long after it drained, and at w = 1/64
// a host would wait 63 srtt for its next MAD while the SA idles.
TEST(CongestionWindow, BelowOneTheGapFollowsTheLatestRoundTripWhenItIsShorter) {
    CongestionWindow w(kOn, 16);
    TimePoint t = answers(w, 8, t0, 2s); // a long queue: srtt 2 s, w halved to its floor...
    for (int i = 0; i < 10; ++i, t += 3s)
        w.on_timeout(t);
    ASSERT_DOUBLE_EQ(w.window(), 1.0 / 64);
    w.on_answer(t, t + 5ms); // ...then a prompt answer: w = 1/32, srtt still above 1.7 s
    t += 5ms;
    ASSERT_GT(*w.srtt(), 1700ms);
    EXPECT_EQ(w.earliest_send(t) - t, 5ms * 31) << "31 gaps of the latest round trip, not of srtt";

    w.on_answer(t, t + 3s); // the queue is back: the latest is the longer, srtt the shorter
    t += 3s;
    EXPECT_EQ(w.earliest_send(t) - t,
              std::chrono::duration_cast<Duration>(std::chrono::duration<double, Duration::period>(
                  static_cast<double>(w.srtt()->count()) * (1 / w.window() - 1))));
}

TEST(CongestionWindow, TryTimeoutsComeFromTheRoundTripWithinThePolicysBounds) {
    CongestionWindow w(kOn, 16);
    // Before any sample: the policy's own timeout.
    EXPECT_EQ(w.try_timeout(0, 300ms, 2000ms, 300ms), Duration(300ms));
    EXPECT_FALSE(w.rto());
    // Steady 200 ms answers: srtt 200 ms, rttvar shrinking; RTO = max(2 srtt, srtt + 4 rttvar).
    TimePoint t = t0;
    for (int i = 0; i < 40; ++i, t += 200ms)
        w.on_answer(t, t + 200ms);
    EXPECT_EQ(*w.srtt(), Duration(200ms));
    EXPECT_EQ(*w.rto(), Duration(400ms));
    EXPECT_EQ(w.try_timeout(0, 300ms, 2000ms, 300ms), Duration(400ms));
    EXPECT_EQ(w.try_timeout(1, 300ms, 2000ms, 300ms), Duration(800ms)) << "doubling per try";
    EXPECT_EQ(w.try_timeout(5, 300ms, 2000ms, 300ms), Duration(2000ms)) << "capped at the max";
    // Fast answers: never below the policy's first timeout (sa.timeout_ms).
    CongestionWindow fast(kOn, 16);
    fast.on_answer(t0, t0 + 1ms);
    EXPECT_EQ(fast.try_timeout(0, 300ms, 2000ms, 300ms), Duration(300ms));
    // A restart (a new SM) forgets the estimate and starts from one MAD again.
    w.restart();
    EXPECT_FALSE(w.srtt());
    EXPECT_EQ(w.window(), 1);
    EXPECT_TRUE(w.slow_start());
}

TEST(CongestionWindow, FirstRttSampleSetsTheVarianceToHalfOfIt) {
    CongestionWindow w(kOn, 16);
    w.on_answer(t0, t0 + 100ms);
    EXPECT_EQ(*w.srtt(), Duration(100ms));
    EXPECT_EQ(*w.rto(), Duration(300ms)); // srtt + 4 * 50 ms
}

} // namespace
} // namespace mcastd::sa
