// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// EventQueue: the simulation's one clock, an mcastd::Timers on virtual time that every simulated
// host and the simulated SA share.
//
// It keeps the contract of the unit tests' FakeTimers (tests/unit/fakes/fake_timers.hpp), which
// the simulation can also run on (`--fake-timers`) and is checked against: timers fire in
// deadline order, ties in the order they were started; a callback sees now() equal to its own
// deadline; cancel() of a fired, cancelled or unknown id is a no-op.
//
// Why not FakeTimers itself: FakeTimers keeps a std::map of callbacks plus an unordered_map from
// id to deadline, so every start() and cancel() allocates tree and hash nodes and rebalances. A
// re-join of thousands of hosts starts and cancels tens of millions of timers (one per try of
// every SA transaction, and most are cancelled by the answer), and that bookkeeping dominated
// the run time. Here they are a core::TimerHeap, as under the daemon's own event loop.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/timer_heap.hpp"
#include "core/timers.hpp"

namespace mcastd::des {

class EventQueue final : public Timers {
public:
    explicit EventQueue(TimePoint start = TimePoint{} + std::chrono::hours(1000)) : now_(start) {}

    TimePoint now() const override { return now_; }

    Id start(Duration delay, std::function<void()> fn) override {
        ++started_;
        return heap_.add(now_ + std::max(delay, Duration::zero()), std::move(fn));
    }

    void cancel(Id id) override { heap_.cancel(id); }

    // Fires the earliest timer, moving time to its deadline. False when none is pending.
    bool step() {
        const auto due = heap_.earliest();
        if (!due)
            return false;
        now_ = std::max(now_, due->deadline);
        std::function<void()> fn = heap_.take_earliest();
        ++fired_;
        fn();
        return true;
    }

    // The deadline of the earliest live timer.
    bool next_deadline(TimePoint &out) {
        const auto due = heap_.earliest();
        if (due)
            out = due->deadline;
        return due.has_value();
    }

    std::size_t pending() const { return heap_.size(); }
    std::uint64_t started() const { return started_; }
    std::uint64_t fired() const { return fired_; }

private:
    TimePoint now_;
    core::TimerHeap heap_;
    std::uint64_t started_ = 0, fired_ = 0;
};

} // namespace mcastd::des
