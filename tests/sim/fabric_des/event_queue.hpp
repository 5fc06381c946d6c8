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
// the run time. Here a timer is a slot in a vector (reused through a free list, with a
// generation so that a stale id never cancels the slot's next tenant) and a 24-byte entry in a
// binary heap; cancel() frees the slot at once and leaves the heap entry to be skipped when it
// comes up. std::function's small buffer holds the callbacks the daemon's code starts (a
// pointer and an id), so starting one allocates nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/timers.hpp"

namespace mcastd::des {

class EventQueue final : public Timers {
public:
    explicit EventQueue(TimePoint start = TimePoint{} + std::chrono::hours(1000)) : now_(start) {}

    TimePoint now() const override { return now_; }

    Id start(Duration delay, std::function<void()> fn) override {
        std::uint32_t slot;
        if (free_.empty()) {
            slot = static_cast<std::uint32_t>(slots_.size());
            slots_.emplace_back();
        } else {
            slot = free_.back();
            free_.pop_back();
        }
        Slot &s = slots_[slot];
        s.fn = std::move(fn);
        s.live = true;
        const TimePoint due = now_ + std::max(delay, Duration::zero());
        heap_.push_back(Entry{due.time_since_epoch().count(), next_seq_++, slot, s.gen});
        std::push_heap(heap_.begin(), heap_.end(), Later{});
        ++live_;
        ++started_;
        return make_id(slot, s.gen);
    }

    void cancel(Id id) override {
        if (id == 0)
            return;
        const std::uint32_t slot = static_cast<std::uint32_t>(id & 0xffffffffU) - 1;
        const auto gen = static_cast<std::uint32_t>(id >> 32);
        if (slot >= slots_.size())
            return;
        Slot &s = slots_[slot];
        if (!s.live || s.gen != gen)
            return;
        release(slot);
    }

    // Fires the earliest timer, moving time to its deadline. False when none is pending.
    bool step() {
        while (!heap_.empty()) {
            std::pop_heap(heap_.begin(), heap_.end(), Later{});
            const Entry e = heap_.back();
            heap_.pop_back();
            Slot &s = slots_[e.slot];
            if (!s.live || s.gen != e.gen)
                continue; // cancelled: its slot may already hold another timer
            now_ = std::max(now_, TimePoint(Clock::duration(e.due)));
            std::function<void()> fn = std::move(s.fn);
            release(e.slot);
            ++fired_;
            fn();
            return true;
        }
        return false;
    }

    // The deadline of the earliest live timer, dropping cancelled entries on the way.
    bool next_deadline(TimePoint &out) {
        while (!heap_.empty()) {
            const Entry &e = heap_.front();
            const Slot &s = slots_[e.slot];
            if (s.live && s.gen == e.gen) {
                out = TimePoint(Clock::duration(e.due));
                return true;
            }
            std::pop_heap(heap_.begin(), heap_.end(), Later{});
            heap_.pop_back();
        }
        return false;
    }

    std::size_t pending() const { return live_; }
    std::uint64_t started() const { return started_; }
    std::uint64_t fired() const { return fired_; }

private:
    struct Slot {
        std::function<void()> fn;
        std::uint32_t gen = 1;
        bool live = false;
    };
    struct Entry {
        Clock::rep due;
        std::uint64_t seq; // start order, for ties
        std::uint32_t slot;
        std::uint32_t gen;
    };
    struct Later { // std::*_heap build a max-heap: "less" means fires later
        bool operator()(const Entry &a, const Entry &b) const {
            return a.due != b.due ? a.due > b.due : a.seq > b.seq;
        }
    };

    static Id make_id(std::uint32_t slot, std::uint32_t gen) {
        return (static_cast<Id>(gen) << 32) | (static_cast<Id>(slot) + 1);
    }

    void release(std::uint32_t slot) {
        Slot &s = slots_[slot];
        s.fn = nullptr;
        s.live = false;
        ++s.gen; // ids of the slot's earlier tenants no longer match it
        free_.push_back(slot);
        --live_;
    }

    TimePoint now_;
    std::uint64_t next_seq_ = 0;
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> free_;
    std::vector<Entry> heap_;
    std::size_t live_ = 0;
    std::uint64_t started_ = 0, fired_ = 0;
};

} // namespace mcastd::des
