// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A fake clock for unit tests: mcastd::Timers whose time moves only when the test says so.
//
//   FakeTimers timers;
//   timers.start(300ms, fn);      // nothing runs yet, not even a 0 delay
//   timers.advance(299ms);        // fires nothing
//   timers.advance(1ms);          // fires fn, with now() == its deadline
//   timers.run_until_idle();      // jumps from deadline to deadline until no timer is left
//
// Timers fire in deadline order, ties in the order they were started. A callback sees now()
// equal to its own deadline, and a timer it starts that falls due within the same advance()
// fires in that advance() too. Header-only so that every test directory can use it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "core/timers.hpp"

namespace mcastd::test {

class FakeTimers final : public Timers {
public:
    // Starts at an arbitrary non-zero time, so that code cannot get away with assuming 0.
    explicit FakeTimers(TimePoint start = TimePoint{} + std::chrono::hours(1000)) : now_(start) {}

    TimePoint now() const override { return now_; }

    Id start(Duration delay, std::function<void()> fn) override {
        const Id id = next_id_++;
        const TimePoint due = now_ + std::max(delay, Duration::zero());
        queue_.emplace(Key{due, id}, std::move(fn));
        due_of_.emplace(id, due);
        ++started_;
        return id;
    }

    void cancel(Id id) override {
        auto it = due_of_.find(id);
        if (it == due_of_.end())
            return;
        queue_.erase(Key{it->second, id});
        due_of_.erase(it);
    }

    // Moves time forward by `d`, firing every timer due on the way. Returns how many fired.
    std::size_t advance(Duration d) { return advance_to(now_ + d); }

    // Moves time to `t` (never backwards), firing every timer due by then.
    std::size_t advance_to(TimePoint t) {
        if (t < now_)
            throw std::logic_error("FakeTimers: time cannot go backwards");
        std::size_t fired = 0;
        while (!queue_.empty() && queue_.begin()->first.due <= t) {
            fire_first();
            ++fired;
        }
        now_ = t;
        return fired;
    }

    // Fires the timers already due (0 delays) without moving time.
    std::size_t run_due() { return advance_to(now_); }

    // Jumps to the next deadline and fires what is due there; false when no timer is pending.
    bool step() {
        if (queue_.empty())
            return false;
        advance_to(queue_.begin()->first.due);
        return true;
    }

    // Steps until no timer is pending. Throws after `max_fires` firings, which catches a
    // periodic timer (or a retry loop) that would otherwise never let the test finish.
    std::size_t run_until_idle(std::size_t max_fires = 100000) {
        std::size_t fired = 0;
        while (!queue_.empty()) {
            if (fired >= max_fires)
                throw std::runtime_error("FakeTimers: still busy after max_fires timers");
            fire_first();
            ++fired;
        }
        return fired;
    }

    std::optional<TimePoint> next_deadline() const {
        if (queue_.empty())
            return std::nullopt;
        return queue_.begin()->first.due;
    }
    std::size_t pending() const { return queue_.size(); }
    bool is_pending(Id id) const { return due_of_.contains(id); }
    std::size_t started() const { return started_; } // timers ever started

private:
    struct Key {
        TimePoint due;
        Id id; // ids grow, so equal deadlines fire in start order
        bool operator<(const Key &o) const { return due != o.due ? due < o.due : id < o.id; }
    };

    void fire_first() {
        auto it = queue_.begin();
        now_ = std::max(now_, it->first.due);
        auto fn = std::move(it->second);
        due_of_.erase(it->first.id);
        queue_.erase(it);
        fn(); // may start or cancel timers: the queue is consistent here
    }

    TimePoint now_;
    Id next_id_ = 1;
    std::size_t started_ = 0;
    std::map<Key, std::function<void()>> queue_;
    std::unordered_map<Id, TimePoint> due_of_;
};

} // namespace mcastd::test
