// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// EventLoop: run/exit, exceptions from callbacks, io watches, signals, the watchdog.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

#include "guard.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/signals.hpp"

namespace mcastd::runtime {
namespace {

using namespace std::chrono_literals;
using test::arm_guard;

struct Pipe {
    int r = -1, w = -1;
    Pipe() {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
            throw std::system_error(errno, std::generic_category(), "pipe2");
        r = fds[0];
        w = fds[1];
    }
    ~Pipe() {
        ::close(r);
        ::close(w);
    }
    void put(char c) const { ASSERT_EQ(::write(w, &c, 1), 1); }
};

// ---- run / exit ----

TEST(EventLoopRun, ExitFromACallbackEndsRunWithItsCode) {
    EventLoop loop;
    bool later_ran = false;
    loop.timers().start(0ms, [&] {
        EXPECT_FALSE(loop.exit_requested());
        loop.exit(7);
        EXPECT_TRUE(loop.exit_requested());
    });
    loop.timers().start(0ms, [&] { later_ran = true; }); // due in the same batch
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 7);
    EXPECT_FALSE(later_ran);
}

TEST(EventLoopRun, ExceptionFromATimerIsRethrownByRun) {
    EventLoop loop;
    bool later_ran = false;
    loop.timers().start(0ms, [] { throw std::runtime_error("boom from a timer"); });
    loop.timers().start(0ms, [&] { later_ran = true; });
    arm_guard(loop);

    try {
        loop.run();
        FAIL() << "run() returned normally";
    } catch (const std::runtime_error &e) {
        EXPECT_STREQ(e.what(), "boom from a timer");
    }
    EXPECT_FALSE(later_ran);
}

TEST(EventLoopRun, ExceptionFromAPostedClosureIsRethrownByRun) {
    EventLoop loop;
    loop.post([] { throw std::logic_error("boom from post"); });
    arm_guard(loop);
    EXPECT_THROW(loop.run(), std::logic_error);
}

TEST(EventLoopRun, ExceptionFromAnIoCallbackIsRethrownByRun) {
    EventLoop loop;
    Pipe p;
    p.put('x');
    auto watch = loop.watch_io(p.r, EPOLLIN, [](std::uint32_t) { throw std::out_of_range("boom from io"); });
    arm_guard(loop);
    EXPECT_THROW(loop.run(), std::out_of_range);
}

TEST(EventLoopRun, ThreadDefaultLoopWorks) {
    EventLoop loop(EventLoop::Kind::thread_default);
    loop.timers().start(0ms, [&] { loop.exit(0); });
    arm_guard(loop);
    EXPECT_EQ(loop.run(), 0);
}

// ---- io ----

TEST(EventLoopIo, ReadableFdCallsBackWithRevents) {
    EventLoop loop;
    Pipe p;
    std::string got;
    auto watch = loop.watch_io(p.r, EPOLLIN, [&](std::uint32_t revents) {
        EXPECT_TRUE(revents & EPOLLIN);
        char buf[16];
        const ssize_t n = ::read(p.r, buf, sizeof buf);
        ASSERT_GT(n, 0);
        got.append(buf, static_cast<std::size_t>(n));
        if (got.size() == 2)
            loop.exit(0);
    });
    loop.timers().start(1ms, [&] { p.put('a'); });
    loop.timers().start(2ms, [&] { p.put('b'); });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(got, "ab");
}

TEST(EventLoopIo, DroppingTheHandleInsideItsOwnCallbackStopsTheWatch) {
    EventLoop loop;
    Pipe p;
    p.put('x'); // stays unread: a live level-triggered watch would fire again and again
    int calls = 0;
    EventSource watch;
    watch = loop.watch_io(p.r, EPOLLIN, [&](std::uint32_t) {
        ++calls;
        watch.reset(); // destroys this very callback's source; the closure must survive the call
        EXPECT_EQ(calls, 1);
    });
    loop.timers().start(20ms, [&] { loop.exit(0); });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(calls, 1);
}

TEST(EventLoopIo, BadFdGivesAnErrorNamingTheWatch) {
    EventLoop loop;
    try {
        auto w = loop.watch_io(-1, EPOLLIN, [](std::uint32_t) {}, "client socket");
        FAIL() << "no error";
    } catch (const std::system_error &e) {
        EXPECT_NE(std::string(e.what()).find("client socket"), std::string::npos) << e.what();
    }
}

// ---- signals ----

class SavedSignalMask {
public:
    SavedSignalMask() { pthread_sigmask(SIG_SETMASK, nullptr, &saved_); }
    ~SavedSignalMask() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }

private:
    sigset_t saved_;
};

bool is_blocked(int sig) {
    sigset_t cur;
    pthread_sigmask(SIG_SETMASK, nullptr, &cur);
    return sigismember(&cur, sig) == 1;
}

TEST(EventLoopSignals, BlockedSignalReachesItsCallback) {
    SavedSignalMask restore;
    block_signals({SIGUSR1});
    EventLoop loop;
    int got = 0;
    auto watch = loop.watch_signal(SIGUSR1, [&](const signalfd_siginfo &si) {
        got = static_cast<int>(si.ssi_signo);
        EXPECT_EQ(si.ssi_pid, static_cast<std::uint32_t>(getpid()));
        loop.exit(0);
    });
    loop.timers().start(0ms, [] { ASSERT_EQ(::kill(getpid(), SIGUSR1), 0); });
    arm_guard(loop);

    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(got, SIGUSR1);
}

TEST(EventLoopSignals, UnblockedSignalIsRefusedWithAClearError) {
    SavedSignalMask restore;
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    pthread_sigmask(SIG_UNBLOCK, &usr2, nullptr);
    EventLoop loop;
    try {
        auto w = loop.watch_signal(SIGUSR2, [](const signalfd_siginfo &) {});
        FAIL() << "no error";
    } catch (const std::system_error &e) {
        EXPECT_EQ(e.code().value(), EBUSY);
        EXPECT_NE(std::string(e.what()).find("SIGUSR2"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("block"), std::string::npos) << e.what();
    }
}

TEST(EventLoopSignals, BlockAllSignalsIsScopedAndInheritedByNewThreads) {
    SavedSignalMask restore;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);
    bool blocked_in_thread = false;
    {
        BlockAllSignals all;
        EXPECT_TRUE(is_blocked(SIGUSR1));
        EXPECT_TRUE(is_blocked(SIGTERM));
        std::thread([&] { blocked_in_thread = is_blocked(SIGTERM) && is_blocked(SIGHUP); }).join();
    }
    EXPECT_TRUE(blocked_in_thread);
    EXPECT_FALSE(is_blocked(SIGUSR1));
}

// ---- watchdog ----

class ScopedEnv {
public:
    ScopedEnv(const char *name, const std::string &value) : name_(name) {
        if (const char *old = std::getenv(name))
            old_ = old;
        ::setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (old_)
            ::setenv(name_, old_->c_str(), 1);
        else
            ::unsetenv(name_);
    }

private:
    const char *name_;
    std::optional<std::string> old_;
};

TEST(EventLoopWatchdog, OffWhenTheServiceManagerDidNotAskForIt) {
    ScopedEnv usec("WATCHDOG_USEC", "");
    ::unsetenv("WATCHDOG_USEC");
    EventLoop loop;
    EXPECT_EQ(EventLoop::watchdog_period(), std::nullopt);
    EXPECT_FALSE(loop.enable_watchdog());
}

TEST(EventLoopWatchdog, SendsKeepAlivesToTheNotifySocket) {
    // A private NOTIFY_SOCKET stands in for systemd.
    const auto dir = std::filesystem::temp_directory_path() /
                     ("mcastd-wd-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "notify").string();
    int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ASSERT_GE(sock, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(path.size(), sizeof addr.sun_path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    ASSERT_EQ(::bind(sock, reinterpret_cast<const sockaddr *>(&addr), sizeof addr), 0) << std::strerror(errno);

    ScopedEnv notify("NOTIFY_SOCKET", path);
    ScopedEnv usec("WATCHDOG_USEC", "200000");
    ScopedEnv pid("WATCHDOG_PID", std::to_string(getpid()));

    EXPECT_EQ(EventLoop::watchdog_period(), Duration(200ms));
    // Asking for the period must leave the environment alone for sd-event.
    ASSERT_NE(std::getenv("WATCHDOG_USEC"), nullptr);

    EventLoop loop;
    ASSERT_TRUE(loop.enable_watchdog());
    // sd-event pings once when enabled and then every fraction of the period while the loop
    // turns; the second ping proves the periodic part.
    int pings = 0;
    std::string last;
    auto watch = loop.watch_io(sock, EPOLLIN, [&](std::uint32_t) {
        char buf[256];
        const ssize_t n = ::recv(sock, buf, sizeof buf, 0);
        ASSERT_GT(n, 0);
        last.assign(buf, static_cast<std::size_t>(n));
        if (last.find("WATCHDOG=1") != std::string::npos && ++pings == 2)
            loop.exit(0);
    });
    arm_guard(loop);

    const TimePoint t0 = Clock::now();
    EXPECT_EQ(loop.run(), 0);
    EXPECT_EQ(pings, 2) << last;
    EXPECT_LT(Clock::now() - t0, 200ms); // within one period: the service would not be killed
    watch.reset();
    ::close(sock);
    std::filesystem::remove_all(dir);
}

} // namespace
} // namespace mcastd::runtime

namespace mcastd::runtime {
namespace {

TEST(EventLoop, RunOnceDispatchesWhatIsDueAndSaysWhenTheLoopWasAskedToEnd) {
    EventLoop loop;
    int ran = 0;
    loop.post([&] { ++ran; });
    EXPECT_TRUE(loop.run_once(std::chrono::seconds(5))) << "woken by the post, not the timeout";
    EXPECT_EQ(ran, 1);
    loop.post([&] { loop.exit(3); });
    EXPECT_FALSE(loop.run_once(std::chrono::seconds(5)));
    EventLoop other;
    other.post([] { throw std::runtime_error("from a callback"); });
    EXPECT_THROW(other.run_once(std::chrono::seconds(5)), std::runtime_error);
}

} // namespace
} // namespace mcastd::runtime
