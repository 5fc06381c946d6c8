// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Closing what a client passed (SCM_RIGHTS) without letting that close stop the daemon.
//
// The last close of a descriptor runs its file's release, which may wait as long as the file
// likes: a TCP socket with SO_LINGER and data its peer never reads waits out the linger time, a
// file on FUSE or NFS waits for its flush (a FUSE server that never answers, a hung NFS
// server). A client can pass any such descriptor with any message, so the event loop never
// closes one itself:
//   - a socket has its linger turned off as it arrives (defuse_passed): its close is then
//     abortive and never waits, wherever it happens (the loop, or a RoCE membership's end);
//   - anything else, which no request uses, is closed on a thread of its own, in arrival order
//     (systemd's asynchronous_close() moves such closes off its loop for the same reason).
// A close that never ends holds up only the descriptors queued behind it: other descriptors
// no request uses.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace mcastd::runtime {

// Makes a received descriptor safe to close on the loop when it is a socket (true); false for
// anything else, which goes to FdCloser.
bool defuse_passed(int fd) noexcept;

class FdCloser {
public:
    // The daemon's one closer. Never destroyed: its thread may be inside a close() that outlives
    // main() (exit and exec end it).
    static FdCloser &background();

    // `close_fn` closes one descriptor (::close; tests give one that waits).
    explicit FdCloser(std::function<void(int)> close_fn);
    ~FdCloser(); // only for a closer whose thread has nothing left that waits (tests)
    FdCloser(const FdCloser &) = delete;
    FdCloser &operator=(const FdCloser &) = delete;

    // Never waits. The thread starts at the first call, with every signal blocked; if it
    // cannot, the descriptor is closed here (and said).
    void close(int fd);

    // Handed to close() and not closed yet.
    std::size_t waiting() const noexcept { return state_->waiting.load(); }

private:
    struct State {
        std::function<void(int)> close_fn;
        std::mutex mu;
        std::condition_variable wake;
        std::deque<int> queue; // guarded by mu
        bool started = false;  // guarded by mu
        bool stop = false;     // guarded by mu
        bool said = false;     // guarded by mu: the line for a long queue is out
        std::atomic<std::size_t> waiting{0};
    };
    static void run(const std::shared_ptr<State> &s);

    std::shared_ptr<State> state_; // shared with the thread
};

} // namespace mcastd::runtime
