// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// TimerHeap: pending callbacks ordered by deadline, then by the order they were added. The store
// under the daemon's timers on its event loop (runtime/loop_timers.hpp) and the fabric
// simulation's virtual clock (tests/sim/fabric_des/event_queue.hpp); it knows no clock.
//
// Every SA try starts a timer and most are cancelled by the answer, so both operations must be
// cheap: a timer is a slot in a vector (reused through a free list, with a generation so that an
// old Id never reaches the slot's next timer) and an entry in a binary heap. cancel() frees the
// slot at once and leaves the entry to be dropped when it reaches the top, or when stale entries
// outnumber the live ones and the heap is rebuilt without them (as many cancels pay for it).
// std::function's small buffer holds the callbacks the daemon starts (a pointer and an id), so
// once the vectors have grown, adding a timer allocates nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "core/timers.hpp"

namespace mcastd::core {

class TimerHeap {
public:
    using Id = Timers::Id;

    struct Due {
        TimePoint deadline;
        std::uint64_t seq; // the order it was added in: ties fire in it
    };

    // Never returns 0.
    Id add(TimePoint deadline, std::function<void()> fn) {
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
        s.seq = next_seq_++;
        heap_.push_back(Entry{deadline, s.seq, slot});
        std::push_heap(heap_.begin(), heap_.end(), Later{});
        ++live_;
        return static_cast<Id>(s.generation) << 32 | slot;
    }

    // False for an Id that fired, was cancelled, is 0 or was never issued.
    bool cancel(Id id) {
        const auto slot = static_cast<std::uint32_t>(id);
        if (slot >= slots_.size() || !live(slot) || slots_[slot].generation != static_cast<std::uint32_t>(id >> 32))
            return false;
        // The callback is destroyed when this returns, with the heap consistent: its
        // destructor may add and cancel timers.
        std::function<void()> dropped = release(slot);
        if (heap_.size() > 64 && heap_.size() > 2 * live_ + 64) {
            std::erase_if(heap_, [this](const Entry &e) { return stale(e); });
            std::make_heap(heap_.begin(), heap_.end(), Later{});
        }
        return true;
    }

    // The earliest live timer, dropping the stale entries above it.
    std::optional<Due> earliest() {
        while (!heap_.empty() && stale(heap_.front()))
            pop();
        if (heap_.empty())
            return std::nullopt;
        return Due{heap_.front().deadline, heap_.front().seq};
    }

    // Removes the earliest live timer and returns its callback; earliest() must have found one.
    std::function<void()> take_earliest() {
        const std::uint32_t slot = heap_.front().slot;
        pop();
        return release(slot);
    }

    // Timers added and neither taken nor cancelled.
    std::size_t size() const noexcept { return live_; }
    // Heap entries, those of cancelled timers included.
    std::size_t entries() const noexcept { return heap_.size(); }
    // The seq the next timer added gets.
    std::uint64_t next_seq() const noexcept { return next_seq_; }

private:
    struct Slot {
        std::function<void()> fn;
        std::uint64_t seq = 0;        // its timer's; 0 while the slot is free
        std::uint32_t generation = 1; // the high half of its timer's Id
    };
    struct Entry {
        TimePoint deadline;
        std::uint64_t seq; // an entry whose slot moved on to another seq is stale
        std::uint32_t slot;
    };
    // The std::*_heap functions keep the largest on top: "later" makes the earliest the top.
    struct Later {
        bool operator()(const Entry &a, const Entry &b) const {
            return a.deadline != b.deadline ? a.deadline > b.deadline : a.seq > b.seq;
        }
    };

    bool live(std::uint32_t slot) const { return slots_[slot].seq != 0; }
    bool stale(const Entry &e) const { return slots_[e.slot].seq != e.seq; }
    void pop() {
        std::pop_heap(heap_.begin(), heap_.end(), Later{});
        heap_.pop_back();
    }
    std::function<void()> release(std::uint32_t slot) {
        Slot &s = slots_[slot];
        std::function<void()> fn = std::move(s.fn);
        s.fn = nullptr;
        s.seq = 0;
        if (++s.generation == 0) // Id 0 stays invalid
            s.generation = 1;
        free_.push_back(slot);
        --live_;
        return fn;
    }

    std::vector<Slot> slots_;
    std::vector<std::uint32_t> free_;
    std::vector<Entry> heap_;
    std::size_t live_ = 0;
    std::uint64_t next_seq_ = 1;
};

} // namespace mcastd::core
