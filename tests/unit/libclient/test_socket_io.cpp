// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// librdmamcast's message I/O: one recv per message, whatever its size up to the limit; a
// descriptor rides on the message it is sent with.
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fake_daemon.hpp"
#include "socket_io.hpp"

namespace rdmamcast::detail {
namespace {

struct Pair {
    int ours = -1, theirs = -1;
    Pair() {
        int fds[2];
        EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
        ours = fds[0];
        theirs = fds[1];
        // Room for the 3 MiB message below in one datagram (the kernel caps this at
        // 2 x net.core.wmem_max, 8 MiB by default).
        const int size = 8 << 20;
        setsockopt(theirs, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    }
    ~Pair() {
        ::close(ours);
        if (theirs >= 0)
            ::close(theirs);
    }
};

std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>('a' + i % 23);
    return s;
}

TEST(SocketIo, MessagesOfEverySizeUpToTheLimitArriveWholeAndInOrder) {
    Pair p;
    std::string out;
    for (std::size_t n : {std::size_t(1), std::size_t(70000), std::size_t(3u << 20), std::size_t(5)}) {
        const std::string m = pattern(n);
        // A big send blocks until we read, so it runs beside us.
        std::thread writer([&] { EXPECT_EQ(send_message(p.theirs, m), 0) << n; });
        ASSERT_EQ(recv_message(p.ours, false, out), 0) << n;
        writer.join();
        EXPECT_EQ(out.size(), n);
        EXPECT_TRUE(out == m) << "a message of " << n << " bytes came back changed";
    }
}

TEST(SocketIo, NothingQueuedIsEagainWithDontwaitAndAClosedPeerIsEconnreset) {
    Pair p;
    std::string out;
    EXPECT_EQ(recv_message(p.ours, true, out), -EAGAIN);
    ::close(p.theirs);
    p.theirs = -1;
    EXPECT_EQ(recv_message(p.ours, false, out), -ECONNRESET);
}

// What arrived: the message and the descriptors on it (owned here).
struct WithFds {
    std::string message = std::string(256, '\0');
    std::vector<int> fds;
    ~WithFds() {
        for (int fd : fds)
            ::close(fd);
    }
};

void receive_with_fds(int sock, WithFds &out) {
    ASSERT_GT(fake::receive_with_fds(sock, out.message, out.fds), 0) << std::strerror(errno);
}

ino_t inode(int fd) {
    struct stat st{};
    EXPECT_EQ(::fstat(fd, &st), 0);
    return st.st_ino;
}

TEST(SocketIo, ADescriptorTravelsOnTheMessageItIsSentWith) {
    Pair p;
    const int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(udp, 0);
    ASSERT_EQ(send_message(p.theirs, "with", udp), 0);
    ASSERT_EQ(send_message(p.theirs, "without"), 0);
    WithFds with, without;
    receive_with_fds(p.ours, with);
    receive_with_fds(p.ours, without);
    EXPECT_EQ(with.message, "with");
    ASSERT_EQ(with.fds.size(), 1u);
    EXPECT_EQ(inode(with.fds[0]), inode(udp)) << "the same socket, not a copy of another";
    EXPECT_EQ(without.message, "without");
    EXPECT_TRUE(without.fds.empty());
    // The sender keeps its own descriptor; closing it is the caller's business.
    EXPECT_EQ(::fcntl(udp, F_GETFD), FD_CLOEXEC);
    ::close(udp);
}

TEST(SocketIo, ABadDescriptorFailsTheSendAndSendsNothing) {
    Pair p;
    EXPECT_EQ(send_message(p.theirs, "x", 1 << 20), -EBADF);
    std::string out;
    EXPECT_EQ(recv_message(p.ours, true, out), -EAGAIN);
}

} // namespace
} // namespace rdmamcast::detail
