// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd::Timers on an sd-event loop (CLOCK_MONOTONIC).
//
// All timers share ONE sd-event time source armed for the earliest deadline (or for an earlier
// one since cancelled: a cancel does not re-arm, the early wakeup does). Why not one sd-event
// source per timer: sd-event dispatches sources that became pending in the same loop iteration
// in heap order, not deadline order (its pending queue compares priority and iteration only),
// so two timers that are both due when the loop wakes could fire out of order. Here they fire
// strictly by deadline, and timers with equal deadlines in the order they were started.
//
// The timers are a core::TimerHeap: starting and cancelling one allocates nothing once its
// vectors have grown (every SA try starts one and its answer cancels it).
//
// Guarantees:
//   - fn runs exactly once, on the loop thread, no earlier than `delay` after start(), and
//     never from inside start() or cancel();
//   - callbacks may start and cancel timers freely, including cancelling themselves (a
//     no-op: a timer is forgotten before its callback runs) and cancelling timers due in
//     the same batch (they then do not run);
//   - a timer started from a callback runs in a later loop iteration, even with delay 0,
//     so a callback that re-arms itself cannot starve io and posted work;
//   - once exit() has been requested, no further timer callbacks run.
#pragma once

#include <cstdint>
#include <functional>

#include "core/timer_heap.hpp"
#include "core/timers.hpp"
#include "runtime/event_source.hpp"

namespace mcastd::runtime {

class EventLoop;

class LoopTimers final : public Timers {
public:
    // `accuracy`: how late sd-event may wake us to coalesce wakeups (its default is 250 ms,
    // far too coarse for SA timeouts and pacing). Throws std::system_error on setup failure.
    explicit LoopTimers(EventLoop &loop, Duration accuracy = std::chrono::milliseconds(1));
    ~LoopTimers() override;
    LoopTimers(const LoopTimers &) = delete;
    LoopTimers &operator=(const LoopTimers &) = delete;

    TimePoint now() const override;
    Id start(Duration delay, std::function<void()> fn) override;
    void cancel(Id id) override;

    // Timers started and neither fired nor cancelled.
    std::size_t pending() const noexcept { return heap_.size(); }
    // Heap entries, those of cancelled timers included (for tests: they must not pile up).
    std::size_t heap_entries() const noexcept { return heap_.entries(); }

private:
    static int on_time(sd_event_source *s, std::uint64_t usec, void *userdata);
    void dispatch();
    void rearm();

    EventLoop &loop_;
    core::TimerHeap heap_;
    EventSource source_;
};

} // namespace mcastd::runtime
