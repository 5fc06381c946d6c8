// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "runtime/event_loop.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include <systemd/sd-daemon.h>

#include "runtime/loop_timers.hpp"
#include "runtime/post_queue.hpp"
#include "runtime/sd_error.hpp"

namespace mcastd::runtime {

namespace {

// The C++ side of a watch: owned by its sd-event source and deleted by the source's destroy
// callback, i.e. only once sd-event has really freed the source (after a running dispatch).
template <class Fn>
struct Holder {
    EventLoop *loop;
    Fn fn;

    static void destroy(void *p) { delete static_cast<Holder *>(p); }
};

const char *description(sd_event_source *s) {
    const char *d = nullptr;
    return sd_event_source_get_description(s, &d) >= 0 && d ? d : "event source";
}

int on_io(sd_event_source *s, int, std::uint32_t revents, void *userdata) {
    auto *h = static_cast<Holder<EventLoop::IoCallback> *>(userdata);
    try {
        h->fn(revents);
    } catch (...) {
        h->loop->fail(description(s), std::current_exception());
    }
    return 0;
}

int on_signal(sd_event_source *s, const signalfd_siginfo *si, void *userdata) {
    auto *h = static_cast<Holder<EventLoop::SignalCallback> *>(userdata);
    try {
        h->fn(*si);
    } catch (...) {
        h->loop->fail(description(s), std::current_exception());
    }
    return 0;
}

// Attaches `holder` to a freshly created source: from here on the source owns it.
template <class H>
EventSource adopt(sd_event_source *s, std::unique_ptr<H> holder, const std::string &name) {
    EventSource src(s);
    sd_check(sd_event_source_set_destroy_callback(s, &H::destroy),
             "sd_event_source_set_destroy_callback(" + name + ")");
    holder.release();
    (void)sd_event_source_set_description(s, name.c_str());
    return src;
}

} // namespace

EventLoop::EventLoop(Kind kind) {
    sd_event *e = nullptr;
    if (kind == Kind::thread_default)
        sd_check(sd_event_default(&e), "sd_event_default");
    else
        sd_check(sd_event_new(&e), "sd_event_new");
    event_.reset(e);
    timers_ = std::make_unique<LoopTimers>(*this);
    posted_ = std::make_unique<PostQueue>(*this);
}

EventLoop::~EventLoop() {
    // Sources first (members would do it too; explicit order documents the dependency).
    posted_.reset();
    timers_.reset();
}

int EventLoop::run() {
    const int r = sd_event_loop(event_.get());
    if (failure_)
        std::rethrow_exception(std::exchange(failure_, nullptr));
    return r;
}

bool EventLoop::run_once(Duration timeout) {
    const int r = sd_event_run(event_.get(), static_cast<std::uint64_t>(timeout.count()));
    if (failure_)
        std::rethrow_exception(std::exchange(failure_, nullptr));
    if (r < 0 && r != -ESTALE)
        throw std::system_error(-r, std::generic_category(), "sd_event_run");
    return !exit_requested();
}

void EventLoop::exit(int code) noexcept {
    // Fails only if the loop has already finished, when there is nothing left to stop.
    (void)sd_event_exit(event_.get(), code);
}

bool EventLoop::exit_requested() const noexcept {
    int code = 0;
    return sd_event_get_exit_code(event_.get(), &code) >= 0;
}

LoopTimers &EventLoop::timers() noexcept { return *timers_; }

EventSource EventLoop::watch_io(int fd, std::uint32_t events, IoCallback fn, const char *name) {
    using H = Holder<IoCallback>;
    auto holder = std::make_unique<H>(H{this, std::move(fn)});
    const std::string what = std::string(name) + " (fd " + std::to_string(fd) + ")";
    sd_event_source *s = nullptr;
    sd_check(sd_event_add_io(event_.get(), &s, fd, events, &on_io, holder.get()),
             "sd_event_add_io(" + what + ")");
    return adopt(s, std::move(holder), what);
}

EventSource EventLoop::watch_signal(int sig, SignalCallback fn) {
    using H = Holder<SignalCallback>;
    auto holder = std::make_unique<H>(H{this, std::move(fn)});
    const char *abbrev = sigabbrev_np(sig);
    const std::string what = std::string("SIG") + (abbrev ? abbrev : std::to_string(sig).c_str());
    sd_event_source *s = nullptr;
    if (int r = sd_event_add_signal(event_.get(), &s, sig, &on_signal, holder.get()); r < 0) {
        // EBUSY is sd-event's way of saying the signal is not blocked.
        sd_check(r, "sd_event_add_signal(" + what +
                        (r == -EBUSY ? "; block it in every thread first)" : ")"));
    }
    return adopt(s, std::move(holder), what);
}

void EventLoop::post(std::function<void()> fn) { posted_->post(std::move(fn)); }

bool EventLoop::enable_watchdog() {
    return sd_check(sd_event_set_watchdog(event_.get(), 1), "sd_event_set_watchdog") > 0;
}

std::optional<Duration> EventLoop::watchdog_period() {
    std::uint64_t usec = 0;
    // 0: keep WATCHDOG_USEC/WATCHDOG_PID in the environment (see the header).
    if (sd_check(sd_watchdog_enabled(0, &usec), "sd_watchdog_enabled (WATCHDOG_USEC/WATCHDOG_PID)") == 0)
        return std::nullopt;
    return Duration(static_cast<Duration::rep>(usec));
}

void EventLoop::fail(const char *where, std::exception_ptr e) noexcept {
    // Log without allocating: this may be reporting std::bad_alloc.
    try {
        std::rethrow_exception(e);
    } catch (const std::exception &x) {
        std::fprintf(stderr, "rdma-mcastd: exception escaped the %s callback: %s; stopping the event loop\n",
                     where, x.what());
    } catch (...) {
        std::fprintf(stderr, "rdma-mcastd: non-standard exception escaped the %s callback; stopping the event loop\n",
                     where);
    }
    if (!failure_)
        failure_ = std::move(e);
    exit(EXIT_FAILURE);
}

} // namespace mcastd::runtime
