// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-raw-lines: a raw protocol client driven by lines, so a test can act as another user
// (run it through setpriv) and still say exactly what it sends:
//
//   mcastd-raw-lines SOCKET
//
// connects and prints "connected", or "connect-failed ERRNO NAME MESSAGE" (e.g.
// "connect-failed 13 EACCES Permission denied") and exits 1. Then each line read on stdin is
// sent as one message, and each message the daemon sends (replies and events) is printed as one
// line; "eof" when the daemon closes the connection. EOF on stdin exits 0 (closing the
// connection, so the daemon drops what it held).
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <system_error>

#include "sim/daemon_harness.hpp"

using mcastd::sim::RawClient;

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s SOCKET\n", argv[0]);
        return 2;
    }
    std::unique_ptr<RawClient> c;
    try {
        c = std::make_unique<RawClient>(argv[1]);
    } catch (const std::system_error &e) {
        const int err = e.code().value();
        const char *name = ::strerrorname_np(err);
        std::cout << "connect-failed " << err << " " << (name ? name : "?") << " " << std::strerror(err) << std::endl;
        return 1;
    }
    std::cout << "connected" << std::endl;

    std::string pending;
    for (;;) {
        pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {c->fd(), POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            std::perror("poll");
            return 1;
        }
        if (fds[1].revents) {
            auto m = c->receive(std::chrono::milliseconds(0));
            if (!m) {
                std::cout << "eof" << std::endl;
                return 0;
            }
            std::cout << *m << std::endl;
        }
        if (fds[0].revents) {
            char buf[4096];
            const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
            if (n <= 0)
                return 0;
            pending.append(buf, static_cast<std::size_t>(n));
            for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
                c->send(pending.substr(0, nl));
                pending.erase(0, nl + 1);
            }
        }
    }
}
