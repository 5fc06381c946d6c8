// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "events.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <system_error>
#include <vector>

namespace ctl {

Signals::Signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    if (int rc = pthread_sigmask(SIG_BLOCK, &set, &old_); rc != 0)
        throw std::system_error(rc, std::generic_category(), "block SIGINT and SIGTERM");
    fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd_ < 0) {
        int err = errno;
        pthread_sigmask(SIG_SETMASK, &old_, nullptr);
        throw std::system_error(err, std::generic_category(), "signalfd");
    }
}

Signals::~Signals() {
    close(fd_);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

void pump_events(rdmamcast::Client &client, const Signals &signals,
                 const std::function<void(const rdmamcast::Event &)> &on_event,
                 const std::function<void(const rdmamcast::ReconnectedEvent &)> &on_reconnected) {
    for (;;) {
        // Drain first: events may have been queued while a synchronous call waited, and then
        // the descriptor is already readable anyway.
        while (auto ev = client.next_event()) {
            if (const auto *r = std::get_if<rdmamcast::ReconnectedEvent>(&*ev))
                on_reconnected(*r);
            else
                on_event(*ev);
        }
        pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {client.event_fd(), POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            throw std::system_error(errno, std::generic_category(), "poll");
        }
        if (fds[0].revents & POLLIN) {
            signalfd_siginfo info;
            if (read(signals.fd(), &info, sizeof info) == static_cast<ssize_t>(sizeof info))
                return;
        }
    }
}

namespace {

std::string ids_text(const std::vector<std::uint64_t> &ids) {
    std::string out;
    for (std::uint64_t id : ids)
        out += (out.empty() ? "" : ", ") + std::to_string(id);
    return out;
}

} // namespace

void report_reconnect(std::string_view command, const rdmamcast::ReconnectedEvent &r,
                      std::string_view more) {
    std::string line = "rdma-mcastctl: " + std::string(command) +
                       ": rdma-mcastd restarted; reconnected after " +
                       std::to_string(r.gap.count()) + " ms, " +
                       (r.resumed ? "session resumed" : "new session");
    if (!r.kept.empty() || !r.lost.empty()) {
        const std::size_t n = r.kept.size();
        line += "; " + std::to_string(n) + (n == 1 ? " membership" : " memberships") + " kept";
        if (!r.lost.empty())
            line += ", lost: " + ids_text(r.lost);
    }
    line += more;
    std::fprintf(stderr, "%s\n", line.c_str());
}

} // namespace ctl
