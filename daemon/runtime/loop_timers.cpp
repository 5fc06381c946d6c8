// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "runtime/loop_timers.hpp"

#include <time.h>

#include <algorithm>
#include <exception>

#include "runtime/event_loop.hpp"
#include "runtime/sd_error.hpp"

namespace mcastd::runtime {

namespace {

// libstdc++'s steady_clock reads CLOCK_MONOTONIC, the clock the sd-event source is on, so a
// TimePoint converts to sd-event's microseconds directly. Round up: sd-event fires at or after
// the given microsecond, and a deadline truncated down could wake us just before it is due.
std::uint64_t to_usec_ceil(TimePoint t) {
    const auto us = std::chrono::ceil<std::chrono::microseconds>(t.time_since_epoch()).count();
    return us < 0 ? 0 : static_cast<std::uint64_t>(us);
}

} // namespace

LoopTimers::LoopTimers(EventLoop &loop, Duration accuracy) : loop_(loop) {
    sd_event_source *s = nullptr;
    // Created disabled; rearm() enables it (ONESHOT) whenever a timer is pending.
    sd_check(sd_event_add_time(loop.get(), &s, CLOCK_MONOTONIC, 0,
                               static_cast<std::uint64_t>(std::max<Duration::rep>(1, accuracy.count())),
                               &LoopTimers::on_time, this),
             "sd_event_add_time(CLOCK_MONOTONIC)");
    source_ = EventSource(s);
    sd_check(sd_event_source_set_enabled(s, SD_EVENT_OFF), "sd_event_source_set_enabled(timers)");
    (void)sd_event_source_set_description(s, "timers");
}

LoopTimers::~LoopTimers() = default;

TimePoint LoopTimers::now() const { return Clock::now(); }

Timers::Id LoopTimers::start(Duration delay, std::function<void()> fn) {
    const TimePoint deadline = Clock::now() + std::max(delay, Duration::zero());
    std::uint32_t slot;
    if (free_slots_.empty()) {
        slot = static_cast<std::uint32_t>(slots_.size());
        slots_.emplace_back();
    } else {
        slot = free_slots_.back();
        free_slots_.pop_back();
    }
    Slot &sl = slots_[slot];
    sl.fn = std::move(fn);
    sl.seq = next_seq_++;
    ++sl.generation;
    if (sl.generation == 0) // after 2^32 reuses: Id 0 stays invalid
        sl.generation = 1;
    ++live_;
    const Entry e{deadline, sl.seq, slot};
    const bool new_head = heap_.empty() || Later{}(heap_.front(), e);
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), Later{});
    if (new_head)
        rearm();
    return static_cast<Id>(sl.generation) << 32 | slot;
}

std::function<void()> LoopTimers::release(std::uint32_t slot) {
    Slot &sl = slots_[slot];
    std::function<void()> fn = std::move(sl.fn);
    sl.fn = nullptr;
    sl.seq = 0;
    free_slots_.push_back(slot);
    --live_;
    return fn;
}

void LoopTimers::cancel(Id id) {
    const auto slot = static_cast<std::uint32_t>(id);
    const auto generation = static_cast<std::uint32_t>(id >> 32);
    if (generation == 0 || slot >= slots_.size() || slots_[slot].seq == 0 ||
        slots_[slot].generation != generation)
        return; // 0, fired, cancelled or never issued
    // Take the callback out first: whatever it captured is destroyed at the end of this
    // function, with our state consistent again, so a destructor that starts or cancels
    // timers is safe.
    std::function<void()> dropped = release(slot);
    // The heap entry stays (stale) and the source stays armed, also when this was the earliest
    // timer: it then wakes the loop early, dispatch() finds nothing due and arms it for the new
    // head. Every SA answer cancels its try's timeout, usually the earliest, and re-arming there
    // cost an sd-event update and a timerfd_settime(2) per MAD. Once stale entries outnumber
    // the live ones, the heap is rebuilt without them (amortised: it takes as many cancels).
    if (heap_.size() > 64 && heap_.size() > 2 * live_ + 64) {
        std::erase_if(heap_, [this](const Entry &e) { return stale(e); });
        std::make_heap(heap_.begin(), heap_.end(), Later{});
    }
}

void LoopTimers::pop_top() {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
}

void LoopTimers::drop_stale_top() {
    while (!heap_.empty() && stale(heap_.front()))
        pop_top();
}

int LoopTimers::on_time(sd_event_source *, std::uint64_t, void *userdata) {
    auto *self = static_cast<LoopTimers *>(userdata);
    try {
        self->dispatch();
    } catch (...) {
        self->loop_.fail("timer", std::current_exception());
    }
    return 0;
}

void LoopTimers::dispatch() {
    // Fire what is due now and was started before this batch began; timers started by these
    // callbacks wait for the next iteration (see the header).
    const TimePoint now = Clock::now();
    const std::uint64_t batch_end = next_seq_;
    std::exception_ptr failure;
    while (!loop_.exit_requested()) {
        drop_stale_top();
        if (heap_.empty())
            break;
        const Entry top = heap_.front();
        if (top.deadline > now || top.seq >= batch_end)
            break;
        // Forget the timer before running it, so cancel(id) from its own callback is a no-op
        // and a throwing callback cannot run twice.
        pop_top();
        std::function<void()> fn = release(top.slot);
        try {
            fn();
        } catch (...) {
            failure = std::current_exception();
            break;
        }
    }
    rearm();
    if (failure)
        std::rethrow_exception(failure);
}

void LoopTimers::rearm() {
    sd_event_source *s = source_.get();
    // After the loop has finished nothing fires any more, and sd-event refuses (ESTALE) to
    // re-arm; teardown still cancels timers, which must not throw.
    if (sd_event_get_state(sd_event_source_get_event(s)) == SD_EVENT_FINISHED)
        return;
    drop_stale_top();
    if (heap_.empty()) {
        sd_check(sd_event_source_set_enabled(s, SD_EVENT_OFF), "sd_event_source_set_enabled(timers, off)");
        return;
    }
    sd_check(sd_event_source_set_time(s, to_usec_ceil(heap_.front().deadline)),
             "sd_event_source_set_time(timers)");
    sd_check(sd_event_source_set_enabled(s, SD_EVENT_ONESHOT),
             "sd_event_source_set_enabled(timers, oneshot)");
}

} // namespace mcastd::runtime
