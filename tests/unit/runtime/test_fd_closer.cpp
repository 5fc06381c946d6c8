// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// FdCloser: descriptors no request uses are closed on a thread of their own, in arrival order,
// so that a close that waits (a FUSE or NFS file's flush) stops neither the caller nor the
// closes of other kinds. A close that waits is modelled by a close function held on a latch.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/fd_closer.hpp"

using namespace mcastd::runtime;

namespace {

// A close function that records each descriptor and, while `held`, waits before returning.
struct HeldClose {
    std::mutex mu;
    std::condition_variable cv;
    bool held = true;
    std::vector<int> closed;

    void operator()(int fd) {
        std::unique_lock lock(mu);
        cv.wait(lock, [this] { return !held; });
        closed.push_back(fd);
    }
    void release() {
        {
            std::lock_guard lock(mu);
            held = false;
        }
        cv.notify_all();
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

} // namespace

TEST(FdCloser, AWaitingCloseHoldsUpNeitherTheCallerNorTheOrder) {
    HeldClose held;
    {
        FdCloser closer([&held](int fd) { held(fd); });
        EXPECT_EQ(closer.waiting(), 0u);
        // Each close() returns while the first close is still waiting on its "server".
        for (int fd : {101, 102, 103})
            closer.close(fd);
        EXPECT_EQ(closer.waiting(), 3u);
        {
            std::lock_guard lock(held.mu);
            EXPECT_TRUE(held.closed.empty());
        }
        held.release();
        EXPECT_TRUE(eventually([&] { return closer.waiting() == 0; }));
        std::lock_guard lock(held.mu);
        EXPECT_EQ(held.closed, (std::vector<int>{101, 102, 103})) << "in the order they came";
    }
}

TEST(FdCloser, TheDaemonsCloserClosesForReal) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    FdCloser::background().close(pipe_fds[1]);
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
