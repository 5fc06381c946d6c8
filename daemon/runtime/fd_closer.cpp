// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "runtime/fd_closer.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <system_error>
#include <thread>
#include <utility>

#include "runtime/signals.hpp"

namespace mcastd::runtime {

namespace {

// Past this many waiting, the log says so once (until the queue is empty again): a close
// that does not end is worth a line.
constexpr std::size_t kWaitingWorthALine = 64;

} // namespace

bool defuse_passed(int fd) noexcept {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
        return false;
    // An abortive close: a TCP socket sends RST and waits for nothing; the other kinds of
    // socket do not wait on close at all without a linger time.
    const linger off{1, 0};
    (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof off);
    return true;
}

FdCloser &FdCloser::background() {
    static FdCloser *c = new FdCloser([](int fd) { ::close(fd); });
    return *c;
}

FdCloser::FdCloser(std::function<void(int)> close_fn) : state_(std::make_shared<State>()) {
    state_->close_fn = std::move(close_fn);
}

FdCloser::~FdCloser() {
    {
        std::lock_guard lock(state_->mu);
        state_->stop = true;
    }
    state_->wake.notify_one();
}

void FdCloser::run(const std::shared_ptr<State> &s) {
    for (;;) {
        int fd;
        {
            std::unique_lock lock(s->mu);
            s->wake.wait(lock, [&] { return s->stop || !s->queue.empty(); });
            if (s->queue.empty())
                return; // stopped
            fd = s->queue.front();
            s->queue.pop_front();
        }
        s->close_fn(fd);
        std::lock_guard lock(s->mu);
        if (s->waiting.fetch_sub(1) == 1)
            s->said = false;
    }
}

void FdCloser::close(int fd) {
    State &s = *state_;
    std::unique_lock lock(s.mu);
    if (!s.started) {
        try {
            runtime::BlockAllSignals quiet;
            std::thread([st = state_] { run(st); }).detach();
            s.started = true;
        } catch (const std::system_error &e) {
            lock.unlock();
            spdlog::warn("cannot start the thread that closes descriptors clients pass ({}); closing one here",
                         e.what());
            s.close_fn(fd);
            return;
        }
    }
    s.queue.push_back(fd);
    const std::size_t n = s.waiting.fetch_add(1) + 1;
    if (n >= kWaitingWorthALine && !s.said) {
        s.said = true;
        spdlog::warn("{} descriptors that clients passed are waiting to be closed: the close of one of them does "
                     "not end (a FUSE or NFS file whose server does not answer?)",
                     n);
    }
    lock.unlock();
    s.wake.notify_one();
}

} // namespace mcastd::runtime
