// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's front door in one process: a Service over the fake SA and a fake clock, the
// client sessions, and the Unix-socket transport serving socketpairs. The test holds the
// client's end and speaks the protocol through proto's own codec; the SA answers only when the
// test lets it (`sa.run()`), so joins can be held pending.
#pragma once

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "fakes/fake_port.hpp"
#include "fakes/fake_sa.hpp"
#include "fakes/fake_timers.hpp"
#include "frontend/sessions.hpp"
#include "proto/protocol.hpp"
#include "runtime/event_loop.hpp"
#include "server/socket_server.hpp"
#include "service/service.hpp"

namespace mcastd::test {

class FrontDoor : public ::testing::Test {
protected:
    // The host's subordinate uid ranges are not the test's: a test that wants ranges names a file.
    static frontend::Limits hermetic(frontend::Limits l) {
        l.subuid_file.clear();
        return l;
    }
    explicit FrontDoor(frontend::Limits limits = {}, policy::Policy policy = {}, EngineConfig engine = {})
        : service(std::move(engine), sa, timers),
          sessions(service, timers, "rdma-mcastd test", hermetic(std::move(limits)), std::move(policy)),
          server(loop, sessions, -1) {
        const PortIndex p = service.add_port(test_port(), true);
        sa.port_gids[p] = test_port().port_gid();
    }
    // A version 2 session of the previous instance, as the restart state gives it back.
    static frontend::RestoredSession saved_session(std::uint64_t id, uid_t uid, std::string token,
                                                   gid_t gid = 100, std::string comm = "old") {
        frontend::RestoredSession rs;
        rs.id = id;
        rs.token = std::move(token);
        rs.who.who = ClientInfo{::getpid(), uid, gid, std::move(comm)};
        rs.version = 2;
        return rs;
    }
    ~FrontDoor() override {
        for (int fd : fds_)
            ::close(fd);
    }

    // A new client: the server serves one end of a socketpair, the test holds the other.
    // `daemon_sndbuf`: the server's end gets that SO_SNDBUF (the kernel doubles it).
    int connect(int daemon_sndbuf = 0) {
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0)
            throw std::system_error(errno, std::generic_category(), "socketpair");
        if (daemon_sndbuf && ::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &daemon_sndbuf, sizeof daemon_sndbuf) < 0)
            throw std::system_error(errno, std::generic_category(), "SO_SNDBUF");
        fds_.push_back(fds[1]);
        server.adopt(fds[0]);
        return fds[1];
    }
    // A client that said hello.
    int greeted(int daemon_sndbuf = 0) {
        const int fd = connect(daemon_sndbuf);
        send(fd, 1, proto::Hello{{1}, "test"});
        EXPECT_TRUE(ok(reply(fd))) << "hello";
        return fd;
    }

    static void send_raw(int fd, const std::string &msg) {
        ASSERT_EQ(::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL), static_cast<ssize_t>(msg.size()));
    }
    static void send(int fd, std::uint64_t id, const proto::Request &r) { send_raw(fd, proto::encode_request(id, r)); }

    static proto::Join join_of(const char *mgid) { return proto::Join{join_request(mgid)}; }

    // The next message for `fd`, running the loop (and the SA, unless `sa_answers` is false)
    // until it arrives; nullopt when the daemon closed the connection.
    std::optional<std::string> next(int fd, bool sa_answers = true) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < deadline) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 0) > 0) {
                std::string buf(1 << 20, '\0');
                const ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
                if (n == 0)
                    return std::nullopt;
                if (n > 0)
                    return buf.substr(0, static_cast<std::size_t>(n));
            }
            loop.run_once(std::chrono::milliseconds(10));
            if (sa_answers)
                sa.run();
        }
        ADD_FAILURE() << "no message within 10 s";
        return std::nullopt;
    }
    // The next reply (events skipped), decoded.
    proto::Reply reply(int fd, bool sa_answers = true) {
        for (;;) {
            auto msg = next(fd, sa_answers);
            if (!msg) {
                ADD_FAILURE() << "the connection closed instead of replying";
                return {};
            }
            auto in = proto::decode_incoming(*msg);
            if (auto *e = std::get_if<Error>(&in)) {
                ADD_FAILURE() << "undecodable reply: " << e->message;
                return {};
            }
            if (auto *r = std::get_if<proto::Reply>(&std::get<proto::Incoming>(in)))
                return *r;
        }
    }
    // Runs the loop and the SA until `done()` holds; false if it never did within 10 s.
    template <class F> bool until(F done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!done()) {
            if (std::chrono::steady_clock::now() >= deadline)
                return false;
            loop.run_once(std::chrono::milliseconds(10));
            sa.run();
        }
        return true;
    }
    // Lets the loop serve what was sent without letting the SA answer.
    void serve() {
        for (int i = 0; i < 20; ++i)
            loop.run_once(std::chrono::milliseconds(0));
    }

    // Joins through `s` directly (no transport) and lets the SA answer everything.
    frontend::JoinAnswer join_now(frontend::ClientSession &s, const JoinRequest &req) {
        std::optional<frontend::JoinAnswer> out;
        s.join(++join_request_id_, req, [&out](const frontend::JoinAnswer &a) { out = a; });
        sa.run();
        EXPECT_TRUE(out) << "no answer";
        return out.value_or(frontend::JoinAnswer{});
    }

    static bool ok(const proto::Reply &r) { return std::holds_alternative<mcastd::json_check::OwnedValue>(r.body); }
    static const proto::Failure &failure(const proto::Reply &r) {
        static const proto::Failure none{Error{Errc::internal, "not a failure", {}}, {}, {}};
        auto *f = std::get_if<proto::Failure>(&r.body);
        return f ? *f : none;
    }
    std::optional<std::uint8_t> sa_bits(const char *mgid) {
        return sa.state.join_state(*parse_gid(mgid), test_port().port_gid());
    }

    runtime::EventLoop loop;
    FakeTimers timers;
    FakeSa sa;
    Service service;
    frontend::Sessions sessions;
    server::SocketServer server;

private:
    std::vector<int> fds_;
    std::uint64_t join_request_id_ = 0;
};

} // namespace mcastd::test
