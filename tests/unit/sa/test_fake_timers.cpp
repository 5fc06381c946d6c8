// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fake clock that the SA and core tests rely on.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "unit/fakes/fake_timers.hpp"

namespace mcastd::test {
namespace {

using namespace std::chrono_literals;

TEST(FakeTimers, NothingRunsUntilTimeMoves) {
    FakeTimers t;
    const TimePoint start = t.now();
    int fired = 0;
    t.start(0us, [&] { ++fired; });
    t.start(10ms, [&] { ++fired; });
    EXPECT_EQ(fired, 0);
    EXPECT_EQ(t.run_due(), 1u);
    EXPECT_EQ(t.now(), start);
    EXPECT_EQ(t.advance(10ms - 1us), 0u);
    EXPECT_EQ(t.advance(1us), 1u);
    EXPECT_EQ(fired, 2);
    EXPECT_EQ(t.now(), start + 10ms);
}

TEST(FakeTimers, FiresInDeadlineOrderThenStartOrderWithNowAtTheDeadline) {
    FakeTimers t;
    const TimePoint start = t.now();
    std::vector<std::string> log;
    t.start(20ms, [&] { log.push_back("b@" + std::to_string((t.now() - start) / 1ms)); });
    t.start(10ms, [&] { log.push_back("a@" + std::to_string((t.now() - start) / 1ms)); });
    t.start(20ms, [&] { log.push_back("c@" + std::to_string((t.now() - start) / 1ms)); });
    t.advance(1s);
    EXPECT_EQ(log, (std::vector<std::string>{"a@10", "b@20", "c@20"}));
    EXPECT_EQ(t.now(), start + 1s);
}

TEST(FakeTimers, TimersStartedByCallbacksFireWithinTheSameAdvance) {
    FakeTimers t;
    int chain = 0;
    std::function<void()> again = [&] {
        if (++chain < 5)
            t.start(10ms, again);
    };
    t.start(10ms, again);
    EXPECT_EQ(t.advance(35ms), 3u);
    EXPECT_EQ(chain, 3);
    EXPECT_EQ(t.run_until_idle(), 2u);
    EXPECT_EQ(chain, 5);
}

TEST(FakeTimers, CancelAndIds) {
    FakeTimers t;
    int fired = 0;
    const auto a = t.start(10ms, [&] { ++fired; });
    const auto b = t.start(10ms, [&] { ++fired; });
    EXPECT_NE(a, 0u);
    EXPECT_NE(a, b);
    t.cancel(a);
    t.cancel(a); // twice is fine
    t.cancel(0);
    EXPECT_FALSE(t.is_pending(a));
    EXPECT_TRUE(t.is_pending(b));
    EXPECT_EQ(t.pending(), 1u);
    t.advance(10ms);
    EXPECT_EQ(fired, 1);
    t.cancel(b); // already fired
    EXPECT_EQ(t.started(), 2u);
}

TEST(FakeTimers, CallbackCanCancelALaterTimer) {
    FakeTimers t;
    bool late_fired = false;
    Timers::Id late = 0;
    t.start(1ms, [&] { t.cancel(late); });
    late = t.start(2ms, [&] { late_fired = true; });
    t.run_until_idle();
    EXPECT_FALSE(late_fired);
}

TEST(FakeTimers, StepAndRunUntilIdleGuard) {
    FakeTimers t;
    EXPECT_FALSE(t.step());
    EXPECT_EQ(t.next_deadline(), std::nullopt);
    std::function<void()> forever = [&] { t.start(1s, forever); };
    t.start(1s, forever);
    EXPECT_TRUE(t.step());
    EXPECT_THROW(t.run_until_idle(100), std::runtime_error);
    EXPECT_THROW(t.advance_to(t.now() - 1us), std::logic_error);
}

} // namespace
} // namespace mcastd::test
