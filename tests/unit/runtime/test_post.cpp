// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// EventLoop::post(): cross-thread hand-off through the queue + eventfd.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "guard.hpp"
#include "runtime/event_loop.hpp"

namespace mcastd::runtime {
namespace {

using namespace std::chrono_literals;
using test::arm_guard;

TEST(EventLoopPost, ManyThreadsDeliverEverythingInPerThreadOrder) {
    EventLoop loop;
    constexpr int kThreads = 4;
    constexpr int kItems = 20000;
    const std::thread::id loop_thread = std::this_thread::get_id();

    std::vector<int> next_expected(kThreads, 0); // touched only on the loop thread
    int delivered = 0;
    bool wrong_thread = false;

    std::promise<void> go;
    std::shared_future<void> started = go.get_future().share();
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t) {
        workers.emplace_back([&, t] {
            started.wait(); // all producers hit the queue at once, while the loop runs
            for (int i = 0; i < kItems; ++i) {
                loop.post([&, t, i] {
                    if (std::this_thread::get_id() != loop_thread)
                        wrong_thread = true;
                    EXPECT_EQ(i, next_expected[t]) << "thread " << t << " out of order";
                    next_expected[t] = i + 1;
                    if (++delivered == kThreads * kItems)
                        loop.exit(0);
                });
            }
        });
    }
    loop.timers().start(0ms, [&] { go.set_value(); });
    arm_guard(loop, 30s);

    const int code = loop.run();
    for (auto &w : workers)
        w.join();
    EXPECT_EQ(code, 0);
    EXPECT_EQ(delivered, kThreads * kItems);
    EXPECT_FALSE(wrong_thread);
    for (int t = 0; t < kThreads; ++t)
        EXPECT_EQ(next_expected[t], kItems);
}

TEST(EventLoopPost, WakesAnIdleLoop) {
    // The loop has nothing to do but the 10 s guard, so it sleeps in epoll_wait; only the
    // eventfd can wake it in time.
    EventLoop loop;
    std::promise<void> loop_running;
    std::thread worker([&, running = loop_running.get_future()]() mutable {
        running.wait();
        loop.post([&] { loop.exit(0); });
    });
    loop.timers().start(0ms, [&] { loop_running.set_value(); });
    arm_guard(loop);

    const TimePoint t0 = Clock::now();
    const int code = loop.run();
    worker.join();
    EXPECT_EQ(code, 0);
    EXPECT_LT(Clock::now() - t0, 5s);
}

TEST(EventLoopPost, PostBeforeRunIsDeliveredWhenTheLoopStarts) {
    EventLoop loop;
    std::vector<int> seen;
    std::thread([&] { loop.post([&] { seen.push_back(1); }); }).join();
    loop.post([&] {
        seen.push_back(2);
        loop.exit(0);
    });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(seen, (std::vector<int>{1, 2}));
}

TEST(EventLoopPost, PostFromTheLoopThreadRunsLaterNotInline) {
    EventLoop loop;
    bool outer_done = false;
    bool inner_ran = false;
    loop.post([&] {
        loop.post([&] {
            EXPECT_TRUE(outer_done);
            inner_ran = true;
            loop.exit(0);
        });
        EXPECT_FALSE(inner_ran);
        outer_done = true;
    });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_TRUE(inner_ran);
}

TEST(EventLoopPost, ExitStopsTheRestOfTheBatch) {
    EventLoop loop;
    std::vector<int> seen;
    loop.post([&] {
        seen.push_back(1);
        loop.exit(3);
    });
    loop.post([&] { seen.push_back(2); }); // same batch, after exit: must not run
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 3);
    EXPECT_EQ(seen, std::vector<int>{1});
}

TEST(EventLoopPost, ClosuresLeftQueuedAreDestroyedWithTheLoop) {
    auto token = std::make_shared<int>(0);
    std::weak_ptr<int> watch = token;
    {
        EventLoop loop;
        loop.post([token = std::move(token)] {});
    }
    EXPECT_TRUE(watch.expired());
}

} // namespace
} // namespace mcastd::runtime
