// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// LoopTimers: order, exactly-once, cancellation (also from callbacks), re-entrancy.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "guard.hpp"
#include "runtime/event_loop.hpp"

namespace mcastd::runtime {
namespace {

using namespace std::chrono_literals;
using test::arm_guard;

TEST(EventLoopTimers, FireInDeadlineOrderThenStartOrder) {
    EventLoop loop;
    auto &timers = loop.timers();
    std::vector<std::string> fired;
    const TimePoint t0 = timers.now();
    auto at = [&](Duration d, std::string label) {
        timers.start(d, [&, d, label] {
            EXPECT_GE(timers.now(), t0 + d) << label << " fired early";
            fired.push_back(label);
        });
    };
    at(30ms, "30");
    at(10ms, "10");
    at(50ms, "50");
    at(0ms, "0a");
    at(20ms, "20");
    at(0ms, "0b");
    at(40ms, "40");
    at(0ms, "0c");
    timers.start(60ms, [&] { loop.exit(0); });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(fired, (std::vector<std::string>{"0a", "0b", "0c", "10", "20", "30", "40", "50"}));
}

TEST(EventLoopTimers, ManyRandomTimersEachFireOnceInDeadlineOrder) {
    EventLoop loop;
    auto &timers = loop.timers();
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> delay_us(0, 20000);

    // The exact deadline is start()'s own now() + delay; bracket it by reading the clock
    // just before and just after start().
    struct Seen {
        TimePoint earliest, latest;
        int runs = 0;
    };
    std::map<Timers::Id, Seen> seen;
    std::vector<Timers::Id> fire_order;
    constexpr int kTimers = 2000;
    int remaining = kTimers;
    for (int i = 0; i < kTimers; ++i) {
        const Duration d{delay_us(rng)};
        auto id = std::make_shared<Timers::Id>(0);
        const TimePoint before = timers.now();
        *id = timers.start(d, [&, id] {
            ++seen[*id].runs;
            fire_order.push_back(*id);
            if (--remaining == 0)
                loop.exit(0);
        });
        seen[*id] = Seen{before + d, timers.now() + d};
    }
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    for (const auto &[id, s] : seen)
        EXPECT_EQ(s.runs, 1) << "timer " << id;
    ASSERT_EQ(fire_order.size(), static_cast<std::size_t>(kTimers));
    for (std::size_t i = 1; i < fire_order.size(); ++i) {
        const Seen &prev = seen[fire_order[i - 1]];
        const Seen &next = seen[fire_order[i]];
        // prev fired first, so its deadline cannot be later than next's.
        EXPECT_LE(prev.earliest, next.latest) << "timers " << fire_order[i - 1] << " and "
                                              << fire_order[i] << " fired out of order";
    }
    EXPECT_EQ(timers.pending(), 1u); // only the guard is left
}

TEST(EventLoopTimers, FiredTimerDoesNotFireAgain) {
    EventLoop loop;
    auto &timers = loop.timers();
    int runs = 0;
    const auto id = timers.start(1ms, [&] { ++runs; });
    // Later timers keep the loop turning well past the first one.
    timers.start(20ms, [] {});
    timers.start(40ms, [&] {
        timers.cancel(id); // cancelling a fired timer is a no-op
        loop.exit(0);
    });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(runs, 1);
}

TEST(EventLoopTimers, CancelBeforeFire) {
    EventLoop loop;
    auto &timers = loop.timers();
    bool ran = false;
    const auto id = timers.start(5ms, [&] { ran = true; });
    timers.cancel(id);
    timers.cancel(id);   // twice: no-op
    timers.cancel(0);    // never a valid id
    timers.cancel(id + 1000);
    timers.start(20ms, [&] { loop.exit(0); });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_FALSE(ran);
}

// Teardown after run() returned: objects destroyed then cancel their timers, and starting one
// must not throw either (sd-event refuses to re-arm a finished loop with ESTALE).
TEST(EventLoopTimers, CancelAndStartAfterTheLoopFinished) {
    EventLoop loop;
    auto &timers = loop.timers();
    bool ran = false;
    const auto a = timers.start(1h, [&] { ran = true; });
    const auto b = timers.start(2h, [&] { ran = true; });
    timers.start(0ms, [&] { loop.exit(0); });
    arm_guard(loop);
    EXPECT_EQ(loop.run(), 0);

    EXPECT_NO_THROW(timers.cancel(a));
    EXPECT_NO_THROW(timers.start(1ms, [&] { ran = true; }));
    EXPECT_NO_THROW(timers.cancel(b));
    EXPECT_FALSE(ran);
}

// A cancel leaves the source armed for the cancelled head; the early wakeup must neither run
// anything nor fire the next timer before its deadline.
TEST(EventLoopTimers, CancelHeadStillFiresTheNextOneOnTime) {
    EventLoop loop;
    auto &timers = loop.timers();
    std::vector<int> fired;
    const auto started = Clock::now();
    TimePoint second_at{};
    const auto head = timers.start(1ms, [&] { fired.push_back(1); });
    timers.start(20ms, [&] {
        fired.push_back(2);
        second_at = Clock::now();
        loop.exit(0);
    });
    timers.cancel(head);
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(fired, std::vector<int>{2});
    EXPECT_GE(second_at - started, 20ms);
}

// A timer's slot is reused by a later timer; the old Id (fired or cancelled) must not reach it.
TEST(EventLoopTimers, AnOldIdNeverCancelsTheTimerInItsSlotNow) {
    EventLoop loop;
    auto &timers = loop.timers();
    std::vector<int> fired;
    const auto cancelled = timers.start(1h, [&] { fired.push_back(0); });
    timers.cancel(cancelled);
    const auto b = timers.start(1ms, [&] { fired.push_back(1); });
    timers.cancel(cancelled);
    EXPECT_EQ(timers.pending(), 1u);
    timers.start(5ms, [&] {
        // b has fired; its slot goes to the next timer started.
        timers.start(1ms, [&] {
            fired.push_back(2);
            loop.exit(0);
        });
        timers.cancel(b);
        timers.cancel(cancelled);
    });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(fired, (std::vector<int>{1, 2}));
}

// Cancelled timers leave their heap entries behind; they are dropped once they outnumber the
// live ones, and the live ones still fire in order.
TEST(EventLoopTimers, CancelledTimersDoNotPileUp) {
    EventLoop loop;
    auto &timers = loop.timers();
    std::vector<int> fired;
    for (int i = 0; i < 3; ++i)
        timers.start(std::chrono::milliseconds(10 + i), [&fired, i] { fired.push_back(i); });
    for (int i = 0; i < 100000; ++i)
        timers.cancel(timers.start(1h, [] {}));
    EXPECT_EQ(timers.pending(), 3u);
    EXPECT_LE(timers.heap_entries(), 2 * 3 + 64 + 1u);
    timers.start(20ms, [&] { loop.exit(0); });
    const auto guard = arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(fired, (std::vector<int>{0, 1, 2}));
    timers.cancel(guard);
    EXPECT_EQ(timers.pending(), 0u);
}

TEST(EventLoopTimers, CancelFromAnotherTimersCallback) {
    EventLoop loop;
    auto &timers = loop.timers();
    std::vector<std::string> fired;
    Timers::Id b = 0;
    timers.start(10ms, [&] {
        fired.push_back("a");
        timers.cancel(b);
    });
    b = timers.start(20ms, [&] { fired.push_back("b"); });
    timers.start(40ms, [&] {
        fired.push_back("c");
        loop.exit(0);
    });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(fired, (std::vector<std::string>{"a", "c"}));
}

TEST(EventLoopTimers, CancelATimerDueInTheSameBatch) {
    // Both are due when the loop first wakes; the first must still be able to stop the second.
    EventLoop loop;
    auto &timers = loop.timers();
    std::vector<std::string> fired;
    Timers::Id second = 0;
    timers.start(0ms, [&] {
        fired.push_back("first");
        timers.cancel(second);
    });
    second = timers.start(0ms, [&] { fired.push_back("second"); });
    timers.start(10ms, [&] { loop.exit(0); });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(fired, std::vector<std::string>{"first"});
}

TEST(EventLoopTimers, CallbackMayCancelItselfAndStartNewTimers) {
    EventLoop loop;
    auto &timers = loop.timers();
    std::vector<std::string> fired;
    bool inside_start = false;
    Timers::Id self = 0;
    self = timers.start(1ms, [&] {
        fired.push_back("self");
        timers.cancel(self); // already forgotten: no-op, must not crash or recurse
        inside_start = true;
        timers.start(0ms, [&] {
            EXPECT_FALSE(inside_start) << "ran from inside start()";
            fired.push_back("child");
            loop.exit(0);
        });
        inside_start = false;
    });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(fired, (std::vector<std::string>{"self", "child"}));
}

TEST(EventLoopTimers, SelfRearmingZeroDelayTimerDoesNotStarveOtherSources) {
    EventLoop loop;
    auto &timers = loop.timers();
    int spins = 0;
    std::function<void()> spin = [&] {
        ++spins;
        timers.start(0ms, spin);
    };
    timers.start(0ms, spin);
    bool posted_ran = false;
    loop.post([&] {
        posted_ran = true;
        loop.exit(0);
    });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_TRUE(posted_ran);
}

TEST(EventLoopTimers, CancelledCallbackCanCancelOthersFromItsDestructor) {
    // The captured state of a cancelled timer is destroyed after the timer table is
    // consistent again, so a destructor that cancels timers is fine.
    EventLoop loop;
    auto &timers = loop.timers();
    bool other_ran = false;
    const auto other = timers.start(5ms, [&] { other_ran = true; });
    struct CancelOnDestroy {
        Timers *t;
        Timers::Id id;
        ~CancelOnDestroy() {
            if (t)
                t->cancel(id);
        }
    };
    auto guard = std::make_shared<CancelOnDestroy>(&timers, other);
    const auto victim = timers.start(1s, [guard] {});
    guard.reset(); // now only the victim's callback holds it
    timers.cancel(victim);
    timers.start(20ms, [&] { loop.exit(0); });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_FALSE(other_ran);
}

} // namespace
} // namespace mcastd::runtime
