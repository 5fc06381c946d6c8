// Waiting for daemon events until SIGINT or SIGTERM, for `join --hold` and `monitor`.
#pragma once

#include <signal.h>

#include <functional>

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

// Hands every event to `on_event` until a signal arrives (returns normally then). Library
// errors, such as the daemon closing the connection, propagate as rdmamcast::Error.
void pump_events(rdmamcast::Client &client, const Signals &signals,
                 const std::function<void(const rdmamcast::Event &)> &on_event);

} // namespace ctl
