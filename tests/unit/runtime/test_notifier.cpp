// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// runtime::Notifier against a NOTIFY_SOCKET the test binds, on a fake clock: what each call
// sends, and that STATUS= follows changes at most once per interval, coalescing bursts.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "fakes/fake_timers.hpp"
#include "runtime/notifier.hpp"

namespace mcastd::runtime {
namespace {

using namespace std::chrono_literals;

class NotifierTest : public ::testing::Test {
protected:
    void SetUp() override {
        path_ = std::filesystem::temp_directory_path() / ("notifier-" + std::to_string(getpid()) + ".sock");
        std::filesystem::remove(path_);
        fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
        ASSERT_EQ(::bind(fd_, reinterpret_cast<const sockaddr *>(&a), sizeof a), 0) << std::strerror(errno);
        ::setenv("NOTIFY_SOCKET", path_.c_str(), 1);
    }
    void TearDown() override {
        ::unsetenv("NOTIFY_SOCKET");
        ::close(fd_);
        std::filesystem::remove(path_);
    }
    // The next datagram, or nullopt when none is queued (sd_notify has sent it before returning).
    std::optional<std::string> next() {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0)
            return std::nullopt;
        char buf[1024];
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        return std::string(buf, static_cast<std::size_t>(n));
    }

    test::FakeTimers timers;
    std::string status = "0/1 ports active";
    int builds = 0;
    Notifier notifier{timers, [this] {
                          ++builds;
                          return status;
                      }};

private:
    std::filesystem::path path_;
    int fd_ = -1;
};

TEST_F(NotifierTest, ReadyCarriesTheStatus) {
    notifier.ready();
    EXPECT_EQ(next(), "READY=1\nSTATUS=0/1 ports active");
}

TEST_F(NotifierTest, ReloadingCarriesMonotonicUsecThenReadyAgain) {
    notifier.reloading();
    const auto m = next();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->rfind("RELOADING=1\nMONOTONIC_USEC=", 0), 0u) << *m;
    notifier.ready();
    EXPECT_EQ(next(), "READY=1\nSTATUS=0/1 ports active");
}

TEST_F(NotifierTest, StatusIsSentFromTheLoopAndOnlyWhenItChanged) {
    notifier.ready();
    next();
    timers.advance(5s);
    notifier.changed();
    EXPECT_EQ(next(), std::nullopt) << "never from inside changed()";
    timers.advance(0s);
    EXPECT_EQ(next(), std::nullopt) << "the same text is not sent again";
    status = "1/1 ports active";
    notifier.changed();
    timers.advance(1s);
    EXPECT_EQ(next(), "STATUS=1/1 ports active");
}

TEST_F(NotifierTest, AStatusThatDoesNotChangeIsBuiltOncePerSecond) {
    // Every join and leave calls changed(); building the text walks the engine, so a busy
    // daemon must not build it per request just because the text stays the same.
    notifier.ready();
    next();
    builds = 0;
    for (int i = 0; i < 3000; ++i) {
        notifier.changed();
        timers.advance(1ms);
    }
    EXPECT_EQ(builds, 3) << "one build per second over 3 s";
    EXPECT_EQ(next(), std::nullopt);
}

TEST_F(NotifierTest, ABurstOfChangesSendsAtMostOneStatusPerSecond) {
    notifier.ready();
    next();
    for (int i = 1; i <= 50; ++i) {
        status = std::to_string(i) + " groups";
        notifier.changed();
        timers.advance(10ms);
    }
    // 500 ms after READY: nothing yet; at 1 s, the latest text once.
    EXPECT_EQ(next(), std::nullopt);
    timers.advance(500ms);
    EXPECT_EQ(next(), "STATUS=50 groups");
    EXPECT_EQ(next(), std::nullopt);
    status = "51 groups";
    notifier.changed();
    timers.advance(999ms);
    EXPECT_EQ(next(), std::nullopt);
    timers.advance(1ms);
    EXPECT_EQ(next(), "STATUS=51 groups");
}

TEST_F(NotifierTest, StoppingEndsStatusUpdates) {
    notifier.ready();
    next();
    status = "changed";
    notifier.changed();
    notifier.stopping("leaving every group");
    EXPECT_EQ(next(), "STOPPING=1\nSTATUS=leaving every group");
    notifier.changed();
    timers.run_until_idle();
    EXPECT_EQ(next(), std::nullopt);
}

} // namespace
} // namespace mcastd::runtime
