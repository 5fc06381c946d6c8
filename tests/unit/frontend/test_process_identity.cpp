// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The process identity module with real child processes: a process that runs is read as
// itself; one that exited, runs as another uid or started after the connection it is supposed
// to have made is refused; and a socket peer is its connecting process through SO_PEERPIDFD or,
// on kernels without it, through pidfd_open of its SO_PEERCRED pid. As root, a pid is reused
// on purpose (clone3 with set_tid) to show what each path makes of it.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>

#include "child_process.hpp"
#include "frontend/process_identity.hpp"
#include "server/peer.hpp"

namespace mcastd::frontend {
namespace {

using namespace std::chrono_literals;

std::string own_cgroup() {
    const std::string text = [] {
        std::string s;
        const int fd = ::open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
        char buf[4096];
        for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
            s.append(buf, static_cast<std::size_t>(n));
        ::close(fd);
        return s;
    }();
    return parse_cgroup(text);
}

// The boot clock's next tick after `t`: a process started after this has a start time
// (in ticks) above `t`.
void wait_past_the_tick_of(std::chrono::nanoseconds t) {
    const auto tick = ticks_to_boot_clock(1);
    while (boot_clock() < t + tick) {
    }
}

bool can_reuse_pids() {
    // clone3's set_tid in the initial PID namespace needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN.
    return ::geteuid() == 0;
}

// ---- the parsers ----

TEST(ProcessIdentityParsers, StatNameMayHoldSpacesAndParentheses) {
    const std::string stat =
        "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 10000 200 "
        "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
    const auto f = parse_stat(stat);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->comm, "a) b (c)");
    EXPECT_EQ(f->start_time, 987654u);
    EXPECT_FALSE(parse_stat("4242 (truncated) S 1 2 3"));
    EXPECT_FALSE(parse_stat("no parentheses"));
}

TEST(ProcessIdentityParsers, StatusGivesTheEffectiveUid) {
    EXPECT_EQ(parse_status_euid("Name:\tx\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n"), 1001u);
    EXPECT_FALSE(parse_status_euid("Name:\tx\nGid:\t5\t5\t5\t5\n"));
    EXPECT_FALSE(parse_status_euid("Uid:\t1000\n"));
    EXPECT_FALSE(parse_status_euid("Uid:\t1000\tx\t1\t1\n"));
}

TEST(ProcessIdentityParsers, CgroupV2LineOrSystemdsV1Hierarchy) {
    EXPECT_EQ(parse_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n"),
              "/user.slice/user-1000.slice/session-2.scope");
    EXPECT_EQ(parse_cgroup("12:memory:/x\n1:name=systemd:/system.slice/a.service\n"), "/system.slice/a.service");
    EXPECT_EQ(parse_cgroup("1:name=systemd:/v1\n0::/v2\n"), "/v2");
    EXPECT_EQ(parse_cgroup("12:memory:/x\n"), "");
}

// ---- a process by its pid ----

TEST(ProcessIdentity, ARunningChildIsReadAsItself) {
    Child child;
    const auto id = identify_process(child.pid(), Expected{::geteuid(), boot_clock()});
    ASSERT_TRUE(std::holds_alternative<ProcessIdentity>(id)) << std::get<std::string>(id);
    const auto &p = std::get<ProcessIdentity>(id);
    EXPECT_EQ(p.pid, child.pid());
    EXPECT_EQ(p.uid, ::geteuid());
    EXPECT_EQ(p.start_time, process_start_time(child.pid()));
    EXPECT_NE(p.start_time, 0u);
    EXPECT_EQ(p.cgroup, own_cgroup()) << "a forked child is in its parent's cgroup";
    char comm[64] = {};
    const int fd = ::open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    ASSERT_GT(::read(fd, comm, sizeof comm - 1), 0);
    ::close(fd);
    EXPECT_EQ(p.comm + "\n", comm);
    EXPECT_TRUE(process_alive(child.pid(), p.start_time));
    EXPECT_FALSE(process_alive(child.pid(), p.start_time + 1));
}

TEST(ProcessIdentity, AnExitedChildIsRefusedBeforeAndAfterItIsReaped) {
    Child child;
    const pid_t pid = child.pid();
    auto fd = Pidfd::open(pid);
    ASSERT_TRUE(std::holds_alternative<Pidfd>(fd));
    EXPECT_FALSE(std::get<Pidfd>(fd).exited());
    child.exit_unreaped(); // a zombie: /proc/PID is still there
    EXPECT_TRUE(std::get<Pidfd>(fd).exited());
    const auto zombie = read_identity(pid, std::get<Pidfd>(fd), Expected{::geteuid(), {}});
    ASSERT_TRUE(std::holds_alternative<std::string>(zombie));
    EXPECT_EQ(std::get<std::string>(zombie), "process " + std::to_string(pid) + " has exited");
    child.reap();
    const auto gone = identify_process(pid, Expected{::geteuid(), {}});
    ASSERT_TRUE(std::holds_alternative<std::string>(gone));
    EXPECT_EQ(std::get<std::string>(gone), "process " + std::to_string(pid) + " has exited");
    EXPECT_FALSE(process_alive(pid, 0));
}

TEST(ProcessIdentity, AnotherUidIsRefused) {
    Child child;
    const uid_t other = ::geteuid() + 1;
    const auto id = identify_process(child.pid(), Expected{other, {}});
    ASSERT_TRUE(std::holds_alternative<std::string>(id));
    EXPECT_EQ(std::get<std::string>(id), "process " + std::to_string(child.pid()) + " runs as uid " +
                                             std::to_string(::geteuid()) + ", not uid " + std::to_string(other));
}

TEST(ProcessIdentity, AChildThatDroppedItsUidIsRefusedAsTheOldOne) {
    if (::geteuid() != 0)
        GTEST_SKIP() << "needs root to change a child's uid";
    Child child([] { (void)!::setresuid(65534, 65534, 65534); });
    const auto id = identify_process(child.pid(), Expected{0, {}});
    ASSERT_TRUE(std::holds_alternative<std::string>(id));
    EXPECT_NE(std::get<std::string>(id).find("runs as uid 65534, not uid 0"), std::string::npos);
    EXPECT_TRUE(std::holds_alternative<ProcessIdentity>(identify_process(child.pid(), Expected{65534, {}})));
}

TEST(ProcessIdentity, AProcessThatStartedAfterTheConnectionAppearedIsRefused) {
    const auto appeared = boot_clock();
    wait_past_the_tick_of(appeared);
    Child child;
    const auto id = identify_process(child.pid(), Expected{::geteuid(), appeared});
    ASSERT_TRUE(std::holds_alternative<std::string>(id));
    EXPECT_EQ(std::get<std::string>(id), "process " + std::to_string(child.pid()) +
                                             " started after the connection appeared, so it is not the process "
                                             "that made it (its pid was reused)");
    EXPECT_TRUE(std::holds_alternative<ProcessIdentity>(identify_process(child.pid(), Expected{::geteuid(), boot_clock()})));
}

// The D-Bus attack, for real: the process with the recorded pid is gone and another has its pid.
TEST(ProcessIdentity, AReusedPidIsToldByItsStartTime) {
    if (!can_reuse_pids())
        GTEST_SKIP() << "needs root to choose a child's pid (clone3 set_tid)";
    pid_t pid = 0;
    std::chrono::nanoseconds appeared{};
    {
        Child first;
        pid = first.pid();
        appeared = boot_clock(); // its connection appears while it runs
    }
    wait_past_the_tick_of(appeared);
    Child second({}, pid);
    ASSERT_EQ(second.pid(), pid);
    const auto id = identify_process(pid, Expected{::geteuid(), appeared});
    ASSERT_TRUE(std::holds_alternative<std::string>(id)) << "the second process passed as the first";
    EXPECT_NE(std::get<std::string>(id).find("its pid was reused"), std::string::npos);
}

// ---- a socket's peer ----

class PeerIdentity : public ::testing::Test {
protected:
    PeerIdentity() {
        listener_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        addr_.sun_family = AF_UNIX;
        // Abstract: nothing on disk to clean up.
        const std::string name = "mcastd-peer-test-" + std::to_string(::getpid());
        std::memcpy(addr_.sun_path + 1, name.data(), name.size());
        len_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
        if (::bind(listener_, reinterpret_cast<sockaddr *>(&addr_), len_) < 0 || ::listen(listener_, 4) < 0)
            throw std::system_error(errno, std::generic_category(), "bind/listen");
    }
    ~PeerIdentity() override {
        for (int fd : accepted_)
            ::close(fd);
        ::close(listener_);
    }
    // A child that connects and waits; `fd` is the daemon's end of its connection.
    std::unique_ptr<Child> connected_child(int &fd, pid_t reuse = 0) {
        auto c = std::make_unique<Child>(
            [this] {
                const int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                if (::connect(s, reinterpret_cast<sockaddr *>(&addr_), len_) < 0)
                    ::_exit(3);
            },
            reuse);
        fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        accepted_.push_back(fd);
        return c;
    }
    static bool has_peer_pidfd(int fd) {
        auto p = Pidfd::of_peer(fd);
        return std::holds_alternative<Pidfd>(p) || std::get<int>(p) != ENOPROTOOPT;
    }

    int listener_ = -1;
    sockaddr_un addr_{};
    socklen_t len_ = 0;
    std::vector<int> accepted_;
};

TEST_F(PeerIdentity, AConnectedChildIsItselfThroughEitherPath) {
    int fd = -1;
    auto child = connected_child(fd);
    for (auto how : {server::PeerPidfd::when_available, server::PeerPidfd::never}) {
        const server::Peer p = server::identify_peer(fd, how);
        EXPECT_EQ(p.unidentified, "");
        EXPECT_EQ(p.who.who.pid, child->pid());
        EXPECT_EQ(p.who.who.uid, ::geteuid());
        EXPECT_EQ(p.who.who.unix_gid, ::getegid());
        EXPECT_EQ(p.who.cgroup, own_cgroup());
        EXPECT_EQ(p.who.cgroup_unattested, "");
        EXPECT_EQ(p.who.start_time, process_start_time(child->pid()));
        EXPECT_NE(p.who.who.comm, "?");
    }
}

TEST_F(PeerIdentity, APeerThatExitedIsUnidentifiedThroughEitherPath) {
    int fd = -1;
    auto child = connected_child(fd);
    const pid_t pid = child->pid();
    child->exit_unreaped();
    for (auto how : {server::PeerPidfd::when_available, server::PeerPidfd::never})
        EXPECT_EQ(server::identify_peer(fd, how).unidentified, "process " + std::to_string(pid) + " has exited");
    child->reap();
    for (auto how : {server::PeerPidfd::when_available, server::PeerPidfd::never}) {
        const std::string why = server::identify_peer(fd, how).unidentified;
        EXPECT_TRUE(why == "process " + std::to_string(pid) + " has exited" ||
                    why == "process " + std::to_string(pid) + " that connected has exited")
            << why;
    }
}

TEST_F(PeerIdentity, ThePeerPidfdIsTheConnectingProcessEvenWhenItsPidIsReused) {
    if (!can_reuse_pids())
        GTEST_SKIP() << "needs root to choose a child's pid (clone3 set_tid)";
    int fd = -1;
    auto first = connected_child(fd);
    if (!has_peer_pidfd(fd))
        GTEST_SKIP() << "this kernel has no SO_PEERPIDFD (Linux 6.5)";
    const pid_t pid = first->pid();
    auto pidfd = Pidfd::of_peer(fd); // the daemon accepted while the client ran
    ASSERT_TRUE(std::holds_alternative<Pidfd>(pidfd));
    first->reap();
    Child second({}, pid);
    ASSERT_EQ(second.pid(), pid);
    // The pidfd still holds the first process: the second is never read as the client.
    EXPECT_EQ(server::identify_peer(fd).unidentified.find("process " + std::to_string(pid)), 0u);
    const auto id = read_identity(pid, std::get<Pidfd>(pidfd), Expected{::geteuid(), {}});
    ASSERT_TRUE(std::holds_alternative<std::string>(id));
    EXPECT_EQ(std::get<std::string>(id), "process " + std::to_string(pid) + " has exited");
    // The fallback cannot tell (documented): it reads whoever has the pid, of the same uid.
    EXPECT_EQ(server::identify_peer(fd, server::PeerPidfd::never).unidentified, "");
}

} // namespace
} // namespace mcastd::frontend
