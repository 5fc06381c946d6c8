// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Closing what a client passed (SCM_RIGHTS) without letting that close stop the daemon.
//
// The last close of a descriptor runs its file's release, and every close its flush, which may
// wait as long as the file likes: a TCP socket with SO_LINGER and data its peer never reads
// waits out the linger time, a file on FUSE or NFS waits for its flush (a FUSE server that
// never answers, a hung NFS server). A client can pass any such descriptor with any message,
// so the event loop never closes one itself:
//   - a socket has its linger turned off as it arrives (defuse_passed): its close is then
//     abortive and never waits, wherever it happens (the loop, or a RoCE membership's end);
//   - anything else, which no request uses, is closed off the loop, in arrival order per owner
//     (the account whose client passed it). A close that never ends holds up only its owner's
//     other descriptors: each owner with descriptors waiting has a thread of its own, up to
//     kMaxThreads at once;
//   - the daemon's closer closes each in a child process that shares the descriptor table
//     (close_apart in the .cpp, as systemd's asynchronous_close()): a FUSE flush waits
//     uninterruptibly, and a process ends only when all its threads have, so a close on a
//     thread of the daemon's could keep a stop or a restart from ending.
// The caller bounds what one owner may leave waiting (the socket server stops reading an
// account's connections while waiting(owner) is high), so a close that never ends costs the
// daemon one thread, one child process and a bounded number of descriptors per owner.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace mcastd::runtime {

// Makes a received descriptor safe to close on the loop when it is a socket (true); false for
// anything else, which goes to FdCloser.
bool defuse_passed(int fd) noexcept;

class FdCloser {
public:
    // Owners served at once. Past it, an owner's descriptors wait for a thread another owner's
    // closes give back: only this many owners whose closes never end hold up anyone else's.
    static constexpr std::size_t kMaxThreads = 16;

    // The daemon's one closer, closing in child processes. Never destroyed: its threads may be
    // waiting for a close that outlives main() (the process's end ends them).
    static FdCloser &background();

    // `close_fn` closes one descriptor (tests give one that waits).
    explicit FdCloser(std::function<void(int)> close_fn, std::size_t max_threads = kMaxThreads);
    ~FdCloser(); // only for a closer whose threads have nothing left that waits (tests)
    FdCloser(const FdCloser &) = delete;
    FdCloser &operator=(const FdCloser &) = delete;

    // Never waits. A thread starts when `owner`'s descriptors have none and none is idle, with
    // every signal blocked; if none runs and none can start, the descriptor is closed here
    // (and said).
    void close(int fd, uid_t owner);

    // Handed to close() and not closed yet: in all, and `owner`'s.
    std::size_t waiting() const noexcept { return state_->waiting.load(); }
    std::size_t waiting(uid_t owner) const;

private:
    struct Owner {
        std::deque<int> fds; // not yet taken by a thread
        std::size_t waiting = 0; // fds, and the one a thread is closing
        bool queued = false; // in State::ready
        bool served = false; // a thread is closing its descriptors
    };
    struct State {
        std::function<void(int)> close_fn;
        std::size_t max_threads = kMaxThreads;
        mutable std::mutex mu;
        std::condition_variable wake;
        std::unordered_map<uid_t, Owner> owners; // guarded by mu: those with descriptors waiting
        std::deque<uid_t> ready;                 // guarded by mu: owners with no thread yet
        std::size_t threads = 0;                 // guarded by mu
        std::size_t idle = 0;                    // guarded by mu
        bool stop = false;                       // guarded by mu
        bool said = false;                       // guarded by mu: the line for a long queue is out
        std::atomic<std::size_t> waiting{0};
    };
    static void run(const std::shared_ptr<State> &s);

    std::shared_ptr<State> state_; // shared with the threads
};

} // namespace mcastd::runtime
