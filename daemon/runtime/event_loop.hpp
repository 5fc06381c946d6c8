// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's one event loop: a thin C++ owner of an sd_event (doc/architecture.md §4).
//
// Everything the daemon does runs on the thread that calls run(): io watches, signals, timers
// (timers() implements mcastd::Timers) and closures handed over from worker threads with
// post(). Only post() may be called from another thread; every other member belongs to the
// loop thread.
//
// Exceptions never cross into sd-event's C code. If a callback throws, the loop logs one line
// to stderr (which source, what()), stops dispatching (sd_event_exit) and run() rethrows the
// original exception on the loop thread, so main() handles it like any other error and the
// service manager sees the process fail. Swallowing it instead would leave the core in a
// half-updated state; aborting would skip the orderly shutdown main() may still do.
#pragma once

#include <sys/signalfd.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>

#include <systemd/sd-event.h>

#include "core/timers.hpp"
#include "runtime/event_source.hpp"
#include "runtime/loop_timers.hpp"

namespace mcastd::runtime {

class PostQueue;

class EventLoop {
public:
    enum class Kind {
        fresh,          // sd_event_new(): a private loop (tests, tools)
        thread_default, // sd_event_default(): the calling thread's default loop; a second
                        // EventLoop of this kind on the same thread shares that sd_event
    };

    // Throws std::system_error if sd-event cannot be set up.
    explicit EventLoop(Kind kind = Kind::fresh);
    ~EventLoop();
    EventLoop(const EventLoop &) = delete;
    EventLoop &operator=(const EventLoop &) = delete;

    // For sd_bus_attach_event() and friends.
    sd_event *get() const noexcept { return event_.get(); }

    // Runs until exit() and returns its code. Rethrows an exception that escaped a callback.
    // An sd_event can run only once: after it returns, the loop is finished. A negative
    // return is an sd-event failure (-errno).
    int run();
    // One iteration instead of run(), for tests that interleave the loop with their own
    // steps: waits up to `timeout` for something to happen and dispatches it. Rethrows an
    // exception that escaped a callback. Returns false once exit() was requested.
    bool run_once(Duration timeout);
    // Asks run() to return `code` once the current callback returns; no further callbacks
    // are dispatched. Loop thread only (from another thread: post([&]{ loop.exit(c); })).
    void exit(int code) noexcept;
    bool exit_requested() const noexcept;

    // Timers on CLOCK_MONOTONIC (an mcastd::Timers); see loop_timers.hpp.
    LoopTimers &timers() noexcept;

    // Calls `fn(revents)` whenever `fd` has any of `events` (EPOLLIN, ...). The watch lasts as
    // long as the returned handle; the fd stays the caller's. `name` shows in error messages.
    using IoCallback = std::function<void(std::uint32_t revents)>;
    [[nodiscard]] EventSource watch_io(int fd, std::uint32_t events, IoCallback fn,
                                       const char *name = "io");

    // Calls `fn` for each delivery of `sig`, which must already be blocked in every thread
    // (see signals.hpp); otherwise this throws (EBUSY).
    using SignalCallback = std::function<void(const signalfd_siginfo &)>;
    [[nodiscard]] EventSource watch_signal(int sig, SignalCallback fn);

    // Thread-safe. Queues `fn` to run on the loop thread, after everything posted before it
    // from the same thread, and wakes the loop. Closures still queued when the loop is
    // destroyed are destroyed without running. Worker threads that post must be joined
    // before the EventLoop is destroyed.
    void post(std::function<void()> fn);

    // Turns on sd-event's automatic WATCHDOG=1 keep-alives if the service manager asked for
    // them (WATCHDOG_USEC, and WATCHDOG_PID naming this process). Returns whether it did.
    // Throws std::system_error on failure.
    bool enable_watchdog();
    // The keep-alive period the service manager asked for, or nullopt. Reads the environment
    // with sd_watchdog_enabled(0, ...): passing 1 would unset WATCHDOG_USEC, and then neither
    // sd-event nor a later caller could see it.
    static std::optional<Duration> watchdog_period();

    // Used by the callback trampolines: logs, keeps the first exception for run() and exits.
    void fail(const char *where, std::exception_ptr e) noexcept;

private:
    struct Unref {
        void operator()(sd_event *e) const noexcept { sd_event_unref(e); }
    };
    // Declared first so it is destroyed last, after the sources that live on it.
    std::unique_ptr<sd_event, Unref> event_;
    std::exception_ptr failure_;
    std::unique_ptr<LoopTimers> timers_;
    std::unique_ptr<PostQueue> posted_;
};

} // namespace mcastd::runtime
