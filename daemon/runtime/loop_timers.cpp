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
    const Id id = next_id_++;
    const bool new_head = queue_.empty() || Key{deadline, id} < queue_.begin()->first;
    queue_.emplace(Key{deadline, id}, std::move(fn));
    deadline_of_.emplace(id, deadline);
    if (new_head)
        rearm();
    return id;
}

void LoopTimers::cancel(Id id) {
    const auto d = deadline_of_.find(id);
    if (d == deadline_of_.end())
        return; // 0, fired, cancelled or never issued
    const auto it = queue_.find(Key{d->second, id});
    // Take the callback out before erasing: whatever it captured is destroyed at the end of
    // this function, when the map is consistent again, so a destructor that starts or
    // cancels timers is safe.
    std::function<void()> dropped = std::move(it->second);
    deadline_of_.erase(d);
    queue_.erase(it);
    // The source stays armed, also when this was the earliest timer: it then wakes the loop
    // early, dispatch() finds nothing due and arms it for the new head. Every SA answer
    // cancels its transaction's timeout, usually the earliest, and re-arming there cost an
    // sd-event update and a timerfd_settime(2) per MAD.
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
    const Id batch_end = next_id_;
    std::exception_ptr failure;
    while (!queue_.empty() && !loop_.exit_requested()) {
        auto it = queue_.begin();
        const auto [deadline, id] = it->first;
        if (deadline > now || id >= batch_end)
            break;
        // Forget the timer before running it, so cancel(id) from its own callback is a no-op
        // and a throwing callback cannot run twice.
        std::function<void()> fn = std::move(it->second);
        queue_.erase(it);
        deadline_of_.erase(id);
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
    if (queue_.empty()) {
        sd_check(sd_event_source_set_enabled(s, SD_EVENT_OFF), "sd_event_source_set_enabled(timers, off)");
        return;
    }
    sd_check(sd_event_source_set_time(s, to_usec_ceil(queue_.begin()->first.first)),
             "sd_event_source_set_time(timers)");
    sd_check(sd_event_source_set_enabled(s, SD_EVENT_ONESHOT),
             "sd_event_source_set_enabled(timers, oneshot)");
}

} // namespace mcastd::runtime
