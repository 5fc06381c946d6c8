// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Waiting for daemon events until SIGINT or SIGTERM, for `join --hold` and `monitor`.
#pragma once

#include <signal.h>

#include <functional>
#include <string_view>

#include <rdmamcast/client.hpp>

namespace ctl {

// Blocks SIGINT and SIGTERM and receives them through a signalfd instead. Created before the
// work starts, so a signal that arrives at any point (even during the join, or between
// printing the record and waiting) is held until the loop reads it, and the process always
// gets to leave cleanly.
class Signals {
public:
    Signals();
    ~Signals();
    Signals(const Signals &) = delete;
    Signals &operator=(const Signals &) = delete;

    int fd() const { return fd_; }

private:
    int fd_ = -1;
    sigset_t old_{};
};

// Hands every event of the daemon to `on_event`, and the library's reconnects (the daemon
// restarted) to `on_reconnected`, until a signal arrives (returns normally then). Library
// errors, such as the daemon closing the connection for good, propagate as rdmamcast::Error.
void pump_events(rdmamcast::Client &client, const Signals &signals,
                 const std::function<void(const rdmamcast::Event &)> &on_event,
                 const std::function<void(const rdmamcast::ReconnectedEvent &)> &on_reconnected);

// The one line on stderr that says the daemon restarted and the connection is back:
// "rdma-mcastctl: COMMAND: rdma-mcastd restarted; reconnected after 120 ms, session resumed;
// 1 membership kept", then `more` ("; joined again as ...") if given.
void report_reconnect(std::string_view command, const rdmamcast::ReconnectedEvent &r,
                      std::string_view more = {});

} // namespace ctl
