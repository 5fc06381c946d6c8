// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Real child processes for tests of who a client is: a child that runs some setup and stays
// until released, and a socket whose peer is such a child running as another uid.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <system_error>
#include <vector>

#include "scm_rights.hpp"

namespace mcastd::frontend {

// A child process that runs `setup` (e.g. connect), says so, and waits until release() before
// exiting. With `reuse_pid`, it is made with that pid (clone3 set_tid: root only).
class Child {
public:
    explicit Child(const std::function<void()> &setup = {}, pid_t reuse_pid = 0) {
        int ready[2], go[2];
        if (::pipe2(ready, O_CLOEXEC) < 0 || ::pipe2(go, O_CLOEXEC) < 0)
            throw std::system_error(errno, std::generic_category(), "pipe2");
        if (reuse_pid) {
            clone_args args{};
            pid_t tid = reuse_pid;
            args.exit_signal = SIGCHLD;
            args.set_tid = reinterpret_cast<std::uintptr_t>(&tid);
            args.set_tid_size = 1;
            pid_ = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
        } else {
            pid_ = ::fork();
        }
        if (pid_ < 0)
            throw std::system_error(errno, std::generic_category(), "fork");
        if (pid_ == 0) {
            ::close(ready[0]);
            ::close(go[1]);
            if (setup)
                setup();
            char c = 'r';
            (void)!::write(ready[1], &c, 1);
            (void)!::read(go[0], &c, 1); // until the parent closes its end
            ::_exit(0);
        }
        ::close(ready[1]);
        ::close(go[0]);
        go_ = go[1];
        char c;
        EXPECT_EQ(::read(ready[0], &c, 1), 1) << "the child did not get ready";
        ::close(ready[0]);
    }
    ~Child() {
        release();
        reap();
    }
    pid_t pid() const { return pid_; }
    // Lets it exit.
    void release() {
        if (go_ >= 0)
            ::close(go_);
        go_ = -1;
    }
    // Lets it exit and waits until it has, without reaping it (a zombie keeps its pid).
    void exit_unreaped() {
        release();
        siginfo_t info{};
        ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT), 0);
    }
    // Lets it exit and reaps it: its pid is free.
    void reap() {
        release();
        if (pid_ > 0)
            ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

private:
    pid_t pid_ = -1;
    int go_ = -1;
};


// Both ends of a SOCK_SEQPACKET socketpair made by a child running as `uid` (setresuid): the
// kernel records that child as the peer of each end (SO_PEERCRED, SO_PEERPIDFD), so the daemon
// identifies it as a process of `uid`. The child stays until `child` is destroyed. Needs root.
struct PeerOfUid {
    std::unique_ptr<Child> child;
    int daemon_end = -1;
    int client_end = -1;
};

inline PeerOfUid socketpair_of_uid(uid_t uid) {
    int channel[2];
    if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, channel) < 0)
        throw std::system_error(errno, std::generic_category(), "socketpair");
    PeerOfUid out;
    out.child = std::make_unique<Child>([&] {
        int fds[2];
        if (::setresuid(uid, uid, uid) < 0 || ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0)
            ::_exit(1);
        test::ScmRightsMessage<2> m;
        m.put(fds);
        if (::sendmsg(channel[1], &m.msg, 0) != 1)
            ::_exit(1);
        // Only the parent holds the ends now: a close by either side is seen by the other.
        ::close(fds[0]);
        ::close(fds[1]);
    });
    ::close(channel[1]);
    test::ScmRightsMessage<2> m;
    const ssize_t n = ::recvmsg(channel[0], &m.msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    ::close(channel[0]);
    const std::vector<int> fds = n == 1 ? m.fds() : std::vector<int>{};
    if (fds.size() != 2)
        throw std::runtime_error("the child running as another uid sent no socket");
    out.daemon_end = fds[0];
    out.client_end = fds[1];
    return out;
}

} // namespace mcastd::frontend
