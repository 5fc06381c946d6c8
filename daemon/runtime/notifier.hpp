// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's side of Type=notify (sd_notify(3), systemd.service(5)): READY=1, RELOADING=1,
// STOPPING=1, and a STATUS= line that follows the daemon's state without flooding the service
// manager. Without NOTIFY_SOCKET every call is a no-op, so foreground runs need no switch.
//
// The WATCHDOG=1 keep-alives are not sent from here: sd-event sends them from the loop
// (EventLoop::enable_watchdog), so a wedged loop stops them.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/timers.hpp"

namespace mcastd::runtime {

class Notifier {
public:
    using StatusFn = std::function<std::string()>;

    // `status` builds the STATUS= text ("1/1 ports active, 3 groups, 2 clients"). It is called
    // from timers only, never from inside changed(), so the caller's state is consistent.
    Notifier(Timers &timers, StatusFn status, Duration min_interval = std::chrono::seconds(1));
    ~Notifier();
    Notifier(const Notifier &) = delete;
    Notifier &operator=(const Notifier &) = delete;

    // "READY=1" with the current STATUS=: after start, and again after each reload.
    void ready();
    // "RELOADING=1" with MONOTONIC_USEC= (CLOCK_MONOTONIC), before the config is re-read.
    void reloading();
    // "STOPPING=1" with STATUS=`why`. Later changed() calls send nothing.
    void stopping(const std::string &why);
    // Something the status shows may have changed: the status is re-built at once, or as soon
    // as `min_interval` has passed since it was last built, and sent if it differs. Bursts
    // coalesce, and a daemon busy with joins that leave the text alone builds it once per
    // interval, not once per join.
    void changed();

    // The last STATUS= text sent, for tests.
    const std::string &last_status() const { return last_status_; }

private:
    void send(const std::string &message);
    void flush();

    Timers &timers_;
    StatusFn status_;
    Duration min_interval_;
    std::string last_status_;
    std::optional<TimePoint> last_built_;
    Timers::Id pending_ = 0;
    bool stopping_ = false;
    bool warned_ = false;
};

} // namespace mcastd::runtime
