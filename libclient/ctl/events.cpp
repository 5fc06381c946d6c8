#include "events.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

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
                 const std::function<void(const rdmamcast::Event &)> &on_event) {
    for (;;) {
        // Drain first: events may have been queued while a synchronous call waited, and then
        // the descriptor is already readable anyway.
        while (auto ev = client.next_event())
            on_event(*ev);
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

} // namespace ctl
