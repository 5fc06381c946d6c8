// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// FdCloser: descriptors no request uses are closed on threads, in arrival order per owner, so
// that a close that waits (a FUSE or NFS file's flush) stops neither the caller nor the closes
// of other owners. A close that waits is modelled by a close function held on a latch.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "runtime/fd_closer.hpp"

using namespace mcastd::runtime;

namespace {

// A close function that records each descriptor and, while it is held (every descriptor, or
// those named), waits before returning.
struct HeldClose {
    std::mutex mu;
    std::condition_variable cv;
    bool all = true;
    std::set<int> held_fds;
    std::vector<int> begun, closed;

    HeldClose() = default;
    explicit HeldClose(std::set<int> only) : all(false), held_fds(std::move(only)) {}

    void operator()(int fd) {
        std::unique_lock lock(mu);
        begun.push_back(fd);
        cv.wait(lock, [&] { return !all && !held_fds.contains(fd); });
        closed.push_back(fd);
    }
    void release() {
        {
            std::lock_guard lock(mu);
            all = false;
            held_fds.clear();
        }
        cv.notify_all();
    }
    void release(int fd) {
        {
            std::lock_guard lock(mu);
            held_fds.erase(fd);
        }
        cv.notify_all();
    }
    std::vector<int> closed_now() {
        std::lock_guard lock(mu);
        return closed;
    }
    std::size_t begun_now() {
        std::lock_guard lock(mu);
        return begun.size();
    }
};

bool eventually(const std::function<bool()> &done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1)); // polls a thread with no signal of its own
    }
    return true;
}

constexpr uid_t kAlice = 1001, kBob = 1002, kCarol = 1003;

} // namespace

TEST(FdCloser, AWaitingCloseHoldsUpNeitherTheCallerNorTheOrder) {
    HeldClose held;
    {
        FdCloser closer([&held](int fd) { held(fd); });
        EXPECT_EQ(closer.waiting(), 0u);
        // Each close() returns while the first close is still waiting on its "server".
        for (int fd : {101, 102, 103})
            closer.close(fd, kAlice);
        EXPECT_EQ(closer.waiting(), 3u);
        EXPECT_EQ(closer.waiting(kAlice), 3u);
        EXPECT_TRUE(held.closed_now().empty());
        held.release();
        EXPECT_TRUE(eventually([&] { return closer.waiting() == 0; }));
        EXPECT_EQ(closer.waiting(kAlice), 0u);
        EXPECT_EQ(held.closed_now(), (std::vector<int>{101, 102, 103})) << "in the order they came";
    }
}

TEST(FdCloser, AnOwnersCloseThatNeverEndsHoldsUpThatOwnerOnly) {
    HeldClose held({101});
    {
        FdCloser closer([&held](int fd) { held(fd); });
        closer.close(101, kAlice);
        closer.close(102, kAlice);
        closer.close(201, kBob);
        closer.close(202, kBob);
        EXPECT_TRUE(eventually([&] { return closer.waiting(kBob) == 0; })) << "Bob's closes wait behind Alice's";
        EXPECT_EQ(held.closed_now(), (std::vector<int>{201, 202}));
        EXPECT_EQ(closer.waiting(kAlice), 2u) << "Alice's second waits behind her first";
        EXPECT_EQ(closer.waiting(), 2u);
        held.release(101);
        EXPECT_TRUE(eventually([&] { return closer.waiting() == 0; }));
        EXPECT_EQ(held.closed_now(), (std::vector<int>{201, 202, 101, 102}));
    }
}

TEST(FdCloser, PastItsThreadsAnOwnerWaitsForOneAnotherOwnerGivesBack) {
    HeldClose held({101, 201});
    {
        FdCloser closer([&held](int fd) { held(fd); }, 2);
        closer.close(101, kAlice);
        closer.close(201, kBob);
        ASSERT_TRUE(eventually([&] { return held.begun_now() == 2; }));
        closer.close(301, kCarol);
        // Both threads are inside a close that does not end: nothing can take Carol's.
        std::this_thread::sleep_for(std::chrono::milliseconds(50)); // a chance to go wrong, not a signal
        EXPECT_EQ(closer.waiting(kCarol), 1u);
        held.release(101);
        EXPECT_TRUE(eventually([&] { return closer.waiting(kCarol) == 0; })) << "Alice's thread serves Carol next";
        EXPECT_EQ(closer.waiting(kBob), 1u);
        held.release(201);
        EXPECT_TRUE(eventually([&] { return closer.waiting() == 0; }));
    }
}

TEST(FdCloser, TheDaemonsCloserClosesForReal) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    FdCloser::background().close(pipe_fds[1], ::getuid());
    pollfd p{pipe_fds[0], POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10'000), 1) << "the write end was never closed";
    char byte;
    EXPECT_EQ(::read(pipe_fds[0], &byte, 1), 0);
    ::close(pipe_fds[0]);
    EXPECT_TRUE(eventually([] { return FdCloser::background().waiting() == 0; }));
}

TEST(PassedDescriptors, ASocketsLingerIsTurnedOffAndAnythingElseIsNamedNotASocket) {
    const int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(udp, 0);
    const linger on{1, 30};
    ASSERT_EQ(::setsockopt(udp, SOL_SOCKET, SO_LINGER, &on, sizeof on), 0);
    EXPECT_TRUE(defuse_passed(udp));
    linger now{};
    socklen_t len = sizeof now;
    ASSERT_EQ(::getsockopt(udp, SOL_SOCKET, SO_LINGER, &now, &len), 0);
    EXPECT_EQ(now.l_onoff, 1);
    EXPECT_EQ(now.l_linger, 0) << "an abortive close, which waits for nothing";
    ::close(udp);

    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    EXPECT_FALSE(defuse_passed(pipe_fds[0]));
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    EXPECT_FALSE(defuse_passed(-1));
}
