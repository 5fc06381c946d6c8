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
// The timers are a binary heap of (deadline, start order) over slots that hold the callbacks;
// a cancelled timer's heap entry stays until it reaches the top (or the heap is rebuilt
// without the stale entries once they outnumber the live ones). Every SA try starts a timer
// and its answer cancels it: that costs no allocation once the vectors have grown, where an
// ordered map and an index cost two nodes per try and a tree rebalance each way.
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
#include <utility>
#include <vector>

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
    std::size_t pending() const noexcept { return live_; }
    // Heap entries, those of cancelled timers included (for tests: they must not pile up).
    std::size_t heap_entries() const noexcept { return heap_.size(); }

private:
    // An Id is a slot's index (low 32 bits) and the slot's generation (high 32 bits, from 1),
    // so a fired or cancelled timer's Id never matches the slot's next timer.
    struct Slot {
        std::function<void()> fn;
        std::uint64_t seq = 0; // start order of the slot's timer; 0 when the slot is free
        std::uint32_t generation = 0;
    };
    struct Entry {
        TimePoint deadline;
        std::uint64_t seq; // start order: ties fire in it; an entry whose slot moved on is stale
        std::uint32_t slot;
    };
    // std::push_heap keeps the largest on top: "later" here makes the earliest the top.
    struct Later {
        bool operator()(const Entry &a, const Entry &b) const {
            return a.deadline != b.deadline ? a.deadline > b.deadline : a.seq > b.seq;
        }
    };

    static int on_time(sd_event_source *s, std::uint64_t usec, void *userdata);
    void dispatch();
    void rearm();
    bool stale(const Entry &e) const { return slots_[e.slot].seq != e.seq; }
    void pop_top();
    void drop_stale_top();
    // Frees the slot of a timer that fired or was cancelled; returns its callback.
    std::function<void()> release(std::uint32_t slot);

    EventLoop &loop_;
    std::vector<Entry> heap_;
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> free_slots_;
    std::size_t live_ = 0;
    std::uint64_t next_seq_ = 1;
    EventSource source_;
};

} // namespace mcastd::runtime
