// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "runtime/signals.hpp"

#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

namespace mcastd::runtime {

void block_signals(std::initializer_list<int> sigs) {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : sigs) {
        if (sigaddset(&set, sig) < 0)
            throw std::system_error(errno, std::generic_category(),
                                    "sigaddset(" + std::to_string(sig) + ")");
    }
    // pthread_sigmask returns the error number instead of setting errno.
    if (int r = pthread_sigmask(SIG_BLOCK, &set, nullptr); r != 0)
        throw std::system_error(r, std::generic_category(), "pthread_sigmask(SIG_BLOCK)");
}

BlockAllSignals::BlockAllSignals() {
    sigset_t all;
    sigfillset(&all);
    if (int r = pthread_sigmask(SIG_BLOCK, &all, &saved_); r != 0)
        throw std::system_error(r, std::generic_category(), "pthread_sigmask(SIG_BLOCK, all)");
}

BlockAllSignals::~BlockAllSignals() {
    // Cannot fail with valid arguments; a failure would leave the thread deaf to SIGTERM,
    // which is worse than stopping here.
    if (int r = pthread_sigmask(SIG_SETMASK, &saved_, nullptr); r != 0) {
        std::fprintf(stderr, "rdma-mcastd: pthread_sigmask(SIG_SETMASK) failed: %s\n",
                     std::strerror(r));
        std::abort();
    }
}

} // namespace mcastd::runtime
