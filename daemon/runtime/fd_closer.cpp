// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "runtime/fd_closer.hpp"

#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

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

namespace {

// The child's whole life: one system call. It shares the daemon's memory and runs on the
// closing thread's thread-local storage, so it calls nothing of the C library's that keeps
// state (syscall() may set that thread's errno, which waits in waitpid meanwhile).
[[gnu::no_sanitize_address]] int close_in_child(void *fd) {
    ::syscall(SYS_close, static_cast<int>(reinterpret_cast<std::intptr_t>(fd)));
    return 0;
}

// Closes `fd` in a child process that shares the daemon's descriptor table and memory but is
// none of its threads, as systemd's asynchronous_close() does. The flush of a FUSE file waits
// for its server uninterruptibly, and a process ends only once every one of its threads has:
// a thread waiting so would keep the daemon from ending, at a stop or a restart, for as long
// as the file's server liked. The thread here waits for the child interruptibly, so the daemon
// ends when it must. Should the daemon end first, the child keeps the descriptor table (less
// what the daemon closed itself) until its close ends; it is then the service manager's child,
// and reaped by it.
void close_apart(int fd) {
    constexpr std::size_t kStack = 64 * 1024;
    thread_local std::vector<char> stack(kStack);
    const pid_t child = ::clone(close_in_child, stack.data() + stack.size(), CLONE_VM | CLONE_FILES,
                                reinterpret_cast<void *>(static_cast<std::intptr_t>(fd)));
    if (child < 0) {
        static std::atomic<bool> said{false};
        if (!said.exchange(true))
            spdlog::warn("cannot start a process to close a descriptor a client passed ({}); closing on a thread, "
                         "which a close that never ends keeps the daemon from ending",
                         std::strerror(errno));
        ::close(fd);
        return;
    }
    int status = 0;
    while (::waitpid(child, &status, __WALL) < 0 && errno == EINTR) {
    }
}

} // namespace

FdCloser &FdCloser::background() {
    static FdCloser *c = new FdCloser(close_apart);
    return *c;
}

FdCloser::FdCloser(std::function<void(int)> close_fn, std::size_t max_threads) : state_(std::make_shared<State>()) {
    state_->close_fn = std::move(close_fn);
    state_->max_threads = std::max<std::size_t>(max_threads, 1);
}

FdCloser::~FdCloser() {
    {
        std::lock_guard lock(state_->mu);
        state_->stop = true;
    }
    state_->wake.notify_all();
}

std::size_t FdCloser::waiting(uid_t owner) const {
    std::lock_guard lock(state_->mu);
    const auto it = state_->owners.find(owner);
    return it == state_->owners.end() ? 0 : it->second.waiting;
}

// A thread serves one owner at a time, until that owner has nothing left, then the next owner
// that has no thread; it waits idle while there is none.
void FdCloser::run(const std::shared_ptr<State> &s) {
    std::unique_lock lock(s->mu);
    for (;;) {
        ++s->idle;
        s->wake.wait(lock, [&] { return s->stop || !s->ready.empty(); });
        --s->idle;
        if (s->ready.empty()) { // stopped
            --s->threads;
            return;
        }
        const uid_t id = s->ready.front();
        s->ready.pop_front();
        Owner &o = s->owners.at(id); // a node: stays put while others come and go
        o.queued = false;
        o.served = true;
        while (!o.fds.empty()) {
            const int fd = o.fds.front();
            o.fds.pop_front();
            lock.unlock();
            s->close_fn(fd);
            lock.lock();
            --o.waiting;
            if (s->waiting.fetch_sub(1) == 1)
                s->said = false;
        }
        s->owners.erase(id);
    }
}

void FdCloser::close(int fd, uid_t owner) {
    State &s = *state_;
    std::unique_lock lock(s.mu);
    Owner &o = s.owners[owner];
    o.fds.push_back(fd);
    ++o.waiting;
    const std::size_t n = s.waiting.fetch_add(1) + 1;
    if (!o.served && !o.queued) {
        o.queued = true;
        s.ready.push_back(owner);
        if (s.idle < s.ready.size() && s.threads < s.max_threads) {
            try {
                runtime::BlockAllSignals quiet;
                std::thread([st = state_] { run(st); }).detach();
                ++s.threads;
            } catch (const std::system_error &e) {
                if (s.threads == 0) {
                    // Nothing would ever close it: close it here, and say so.
                    s.ready.pop_back();
                    o.fds.pop_back();
                    s.waiting.fetch_sub(1);
                    if (--o.waiting == 0)
                        s.owners.erase(owner);
                    lock.unlock();
                    spdlog::warn("cannot start a thread that closes descriptors clients pass ({}); closing one here",
                                 e.what());
                    s.close_fn(fd);
                    return;
                }
                // The threads that run serve it in turn.
            }
        }
    }
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
