// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// IoGroup: many fds behind one sd-event source, level-triggered, one turn per ready fd per batch.
#include <gtest/gtest.h>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "guard.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/io_group.hpp"

namespace mcastd::runtime {
namespace {

using test::arm_guard;

// A connected SOCK_SEQPACKET pair: the test writes to `peer`, the group watches `fd`.
struct Conn {
    int fd = -1, peer = -1;
    Conn() {
        int fds[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) < 0)
            throw std::system_error(errno, std::generic_category(), "socketpair");
        fd = fds[0];
        peer = fds[1];
    }
    ~Conn() {
        ::close(fd);
        ::close(peer);
    }
    void put(const std::string &m) const { ASSERT_EQ(::send(peer, m.data(), m.size(), 0), ssize_t(m.size())); }
    std::optional<std::string> take() const {
        char buf[64];
        const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n <= 0)
            return std::nullopt;
        return std::string(buf, static_cast<std::size_t>(n));
    }
};

TEST(IoGroup, EachReadyFdGetsOneTurnPerBatchSoAPipelinerCannotStarveTheOthers) {
    EventLoop loop;
    IoGroup group(loop, "test group");
    Conn a, b;
    for (const char *m : {"a1", "a2", "a3"})
        a.put(m);
    b.put("b1");
    std::vector<std::string> order;
    auto one_message = [&](const Conn &c) {
        return [&](std::uint32_t revents) {
            EXPECT_TRUE(revents & EPOLLIN);
            if (auto m = c.take())
                order.push_back(*m);
            if (order.size() == 4)
                loop.exit(0);
        };
    };
    auto wa = group.watch(a.fd, EPOLLIN, one_message(a));
    auto wb = group.watch(b.fd, EPOLLIN, one_message(b));
    arm_guard(loop);
    // Level-triggered: a callback that reads one message is called again for the rest.
    ASSERT_EQ(loop.run(), 0);
    ASSERT_EQ(order.size(), 4u);
    EXPECT_EQ(order[0], "a1");
    EXPECT_EQ(order[1], "b1") << "b waited behind all of a's messages";
    EXPECT_EQ(order[2], "a2");
    EXPECT_EQ(order[3], "a3");
}

TEST(IoGroup, ACallbackMayDropItsOwnWatchAndAnotherThatIsReadyInTheSameBatch) {
    EventLoop loop;
    IoGroup group(loop, "test group");
    Conn a, b;
    a.put("x");
    b.put("y");
    IoGroup::Watch wa, wb;
    int calls = 0;
    auto drop_both = [&](std::uint32_t) {
        ++calls;
        wa.reset();
        wb.reset();
        loop.post([&] { loop.exit(0); });
    };
    wa = group.watch(a.fd, EPOLLIN, drop_both);
    wb = group.watch(b.fd, EPOLLIN, drop_both);
    arm_guard(loop);
    ASSERT_EQ(loop.run(), 0);
    EXPECT_EQ(calls, 1) << "a dropped watch was called back";
    EXPECT_FALSE(wa);
    EXPECT_FALSE(wb);
}

TEST(IoGroup, SetEventsChangesWhatIsWatched) {
    EventLoop loop;
    IoGroup group(loop, "test group");
    Conn a; // nothing to read, room to write
    std::uint32_t seen = 0;
    auto w = group.watch(a.fd, EPOLLIN, [&](std::uint32_t revents) {
        seen = revents;
        loop.exit(0);
    });
    w.set_events(EPOLLIN | EPOLLOUT);
    arm_guard(loop);
    ASSERT_EQ(loop.run(), 0);
    EXPECT_EQ(seen, std::uint32_t(EPOLLOUT));
}

TEST(IoGroup, ExceptionFromACallbackIsRethrownByRun) {
    EventLoop loop;
    IoGroup group(loop, "test group");
    Conn a;
    a.put("x");
    auto w = group.watch(a.fd, EPOLLIN, [](std::uint32_t) { throw std::runtime_error("boom"); });
    arm_guard(loop);
    EXPECT_THROW(
        {
            try {
                loop.run();
            } catch (const std::runtime_error &e) {
                EXPECT_STREQ(e.what(), "boom");
                throw;
            }
        },
        std::runtime_error);
}

TEST(IoGroup, BadFdGivesAnErrorNamingTheGroupAndTheFd) {
    EventLoop loop;
    IoGroup group(loop, "test group");
    try {
        (void)group.watch(12345, EPOLLIN, [](std::uint32_t) {});
        FAIL() << "watching a closed fd succeeded";
    } catch (const std::system_error &e) {
        EXPECT_EQ(e.code().value(), EBADF);
        EXPECT_NE(std::string(e.what()).find("fd 12345"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("test group"), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace mcastd::runtime
