// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The Unix-socket transport under a hostile client, over socketpairs and the fake SA: a
// connection that says no hello is closed at the deadline and never handed to the service
// manager's fd store; a client that does not read its replies is not read either, and one whose
// uid's connections are owed too much is cut; a monitor that does not read loses events, not
// the daemon's memory, and hears how many once it caught up; a user whose passed descriptors do
// not close is not read until they do; root's evict --disconnect closes.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <condition_variable>
#include <mutex>
#include <set>
#include <vector>

#include "child_process.hpp"
#include "front_door.hpp"
#include "sanitized.hpp"
#include "scm_rights.hpp"
#include "server/passed_fds.hpp"
#include "server/fd_store.hpp"

namespace mcastd::test {
namespace {

using frontend::Limits;

// The service manager's fd store as the server sees it.
class RecordingStore final : public server::FdStore {
public:
    void store(int, const std::string &name) override { stored.insert(name); }
    void remove(const std::string &name) override { stored.erase(name); }
    void adopted(const std::string &name) override { stored.insert(name); }
    std::set<std::string> stored;
};

Limits with(void (*set)(Limits &)) {
    Limits l;
    set(l);
    return l;
}

class Tenancy : public FrontDoor {
protected:
    explicit Tenancy(Limits l = {}) : FrontDoor(l) {}

    // A client of `srv` whose end of the daemon's socket holds little, so that what the daemon
    // owes it queues in the daemon soon.
    // `as_uid`: the peer is a child process running as that uid (the daemon checks that the
    // peer's process runs as the uid the kernel recorded), for tests of a uid's share; needs root.
    int connect_to(server::SocketServer &srv, std::optional<uid_t> as_uid = std::nullopt) {
        int fds[2];
        if (as_uid) {
            frontend::PeerOfUid peer = frontend::socketpair_of_uid(*as_uid);
            fds[0] = peer.daemon_end;
            fds[1] = peer.client_end;
            children_.push_back(std::move(peer.child));
        } else if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0) {
            throw std::system_error(errno, std::generic_category(), "socketpair");
        }
        const int small = 4096;
        ::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
        ::setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        extra_.push_back(fds[1]);
        srv.adopt(fds[0]);
        return fds[1];
    }
    int tight(std::optional<uid_t> as_uid = std::nullopt) { return connect_to(server, as_uid); }
    int tight_greeted(std::optional<uid_t> as_uid = std::nullopt) {
        const int fd = tight(as_uid);
        send(fd, 1, proto::Hello{{2}, "test"});
        EXPECT_TRUE(ok(reply(fd)));
        return fd;
    }
    // Every message waiting for `fd`, without blocking.
    std::vector<std::string> drain(int fd) {
        std::vector<std::string> out;
        for (int quiet = 0; quiet < 50;) {
            serve();
            std::string buf(1 << 20, '\0');
            const ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
            if (n > 0) {
                out.push_back(buf.substr(0, static_cast<std::size_t>(n)));
                quiet = 0;
            } else {
                ++quiet;
            }
        }
        return out;
    }
    ~Tenancy() override {
        for (int fd : extra_)
            ::close(fd);
        // Each child holds copies of the earlier ones' release pipes (fork): release all first.
        for (auto &c : children_)
            c->release();
    }

private:
    std::vector<int> extra_;
    std::vector<std::unique_ptr<frontend::Child>> children_;
};

// ---- hello ----

class HelloDeadline : public Tenancy {
protected:
    HelloDeadline() : Tenancy(with([](Limits &l) { l.hello_timeout = std::chrono::milliseconds(100); })) {}
};

TEST_F(HelloDeadline, AConnectionThatSaysNoHelloIsClosedAndOneThatDidStays) {
    const int silent = connect();
    const int greeted_fd = greeted();
    EXPECT_FALSE(next(silent)) << "closed at the deadline, nothing said";
    EXPECT_EQ(server.connections(), 1u);
    send(greeted_fd, 2, proto::Status{});
    EXPECT_TRUE(ok(reply(greeted_fd))) << "a greeted client is past the deadline for good";
}

TEST_F(Tenancy, OnlyAGreetedConnectionGoesIntoTheFdStore) {
    auto store = std::make_unique<RecordingStore>();
    RecordingStore &seen = *store;
    server::SocketServer stored(loop, sessions, -1, std::move(store));
    const int c = connect_to(stored);
    serve();
    EXPECT_TRUE(seen.stored.empty()) << "an un-greeted connection is never handed on";
    send(c, 1, proto::Join{join_request("ff15::1")});
    EXPECT_FALSE(ok(reply(c)));
    EXPECT_TRUE(seen.stored.empty()) << "nor one whose first request was not hello";
    send(c, 2, proto::Hello{{2}, "test"});
    ASSERT_TRUE(ok(reply(c)));
    EXPECT_EQ(seen.stored.size(), 1u) << "stored once greeted";
}

// ---- what a client that does not read may cost ----

TEST_F(Tenancy, AClientThatDoesNotReadItsRepliesIsNotReadEither) {
    const int c = tight_greeted();
    const uid_t uid = ::getuid();
    int sent = 0;
    for (std::uint64_t id = 10; id < 3000; ++id) {
        const std::string req = proto::encode_request(id, proto::Status{});
        if (::send(c, req.data(), req.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
            break; // the daemon stopped reading: the client's own buffer is full
        ++sent;
        serve();
    }
    ASSERT_LT(sent, 2990) << "the daemon kept reading a client that reads nothing";
    const frontend::Usage *u = sessions.accounts().usage(uid);
    ASSERT_TRUE(u);
    EXPECT_LT(u->queued_bytes, 128u << 10) << "what it owes stays near 64 KiB";
    EXPECT_EQ(server.connections(), 1u) << "and it is not cut for it";
    // It reads: every request is answered.
    std::size_t replies = 0;
    for (const std::string &m : drain(c))
        replies += m.find("\"id\":") != std::string::npos;
    EXPECT_EQ(replies, static_cast<std::size_t>(sent) + 0u);
}

// A client that pipelines is read a turn's worth of requests at a time (one wake-up of the loop
// for them, not one each), and then waits behind the other clients that were ready.
TEST_F(Tenancy, APipeliningClientIsReadATurnsWorthAtATimeBehindTheOthers) {
    constexpr unsigned kTurn = server::SocketServer::kMessagesPerTurn;
    const int pipelining = greeted();
    const int other = greeted();
    for (std::uint64_t id = 10; id < 10 + 3 * kTurn; ++id)
        send(pipelining, id, proto::Status{});
    send(other, 10, proto::Status{});
    auto answered = [](int fd) {
        unsigned n = 0;
        std::string buf(1 << 16, '\0');
        while (::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT) > 0)
            ++n;
        return n;
    };
    unsigned first = 0, other_answers = 0;
    for (int turns = 0; other_answers == 0 && turns < 100; ++turns) {
        loop.run_once(std::chrono::milliseconds(10));
        first += answered(pipelining);
        other_answers += answered(other);
    }
    ASSERT_EQ(other_answers, 1u);
    EXPECT_EQ(first, kTurn) << "one turn's worth, then the other client's turn";
    const std::vector<std::string> rest = drain(pipelining);
    EXPECT_EQ(first + rest.size(), 3 * kTurn) << "and the rest in later turns";
}

class MonitorBacklog : public Tenancy {
protected:
    MonitorBacklog() : Tenancy(with([](Limits &l) { l.max_monitor_queued_bytes = 8192; })) {}
};

TEST_F(MonitorBacklog, AMonitorThatDoesNotReadLosesEventsAndHearsHowManyOnceItCaughtUp) {
    const int mon = tight_greeted();
    send(mon, 2, proto::Monitor{true});
    ASSERT_TRUE(ok(reply(mon)));
    const int worker = greeted();
    for (int i = 0; i < 300; ++i) { // 600 notes: joined and left
        send(worker, static_cast<std::uint64_t>(10 + 2 * i), join_of("ff15::1"));
        const proto::Reply r = reply(worker);
        ASSERT_TRUE(ok(r));
        auto joined = proto::decode_join_result(std::get<mcastd::json_check::OwnedValue>(r.body).get());
        send(worker, static_cast<std::uint64_t>(11 + 2 * i),
             proto::Leave{std::get<proto::JoinResult>(joined).membership, {}});
        ASSERT_TRUE(ok(reply(worker)));
    }
    const frontend::Usage *u = sessions.accounts().usage(::getuid());
    ASSERT_TRUE(u);
    EXPECT_LE(u->queued_bytes, 8192u + 4096u) << "a monitor's backlog is bounded";
    std::size_t monitor_events = 0;
    std::uint64_t dropped = 0;
    bool marker_last_of_gap = false;
    for (const std::string &m : drain(mon)) {
        auto in = proto::decode_incoming(m);
        auto *ev = std::get_if<proto::Event>(&std::get<proto::Incoming>(in));
        if (!ev)
            continue;
        const auto &me = std::get<proto::MonitorEvent>(*ev);
        if (me.kind == "dropped") {
            ASSERT_TRUE(me.dropped);
            dropped += *me.dropped;
            EXPECT_EQ(me.message, "dropped " + std::to_string(*me.dropped) +
                                      " monitor event(s) this client did not read in time (config "
                                      "limits.max_monitor_queued_bytes)");
            marker_last_of_gap = true;
        } else {
            ++monitor_events;
        }
    }
    EXPECT_TRUE(marker_last_of_gap) << "one marker says what was missed";
    EXPECT_GT(dropped, 0u);
    // Three notes a round: joined (its Set), left, deleted (the Delete of the last member's bits).
    EXPECT_EQ(monitor_events + dropped, 900u) << "every note is either delivered or counted";
    EXPECT_EQ(server.connections(), 2u) << "a slow monitor is not cut";
}

class UidQueueShare : public Tenancy {
protected:
    UidQueueShare() : Tenancy(with([](Limits &l) {
        l.max_queued_bytes_per_uid = 96u << 10; // below two connections' 64 KiB each
    })) {}
};

TEST_F(UidQueueShare, AUidsConnectionsTogetherMayBeOwedItsShareAndTheOneThatGoesOverIsCut) {
    if (::geteuid() != 0)
        GTEST_SKIP() << "needs root, to be a peer of another uid";
    constexpr uid_t kAlice = 1001;
    const int a = tight_greeted(kAlice), b = tight_greeted(kAlice);
    const int other = greeted();
    for (std::uint64_t id = 10; id < 3000 && server.connections() == 3; ++id)
        for (int fd : {a, b}) {
            const std::string req = proto::encode_request(id, proto::Status{});
            ::send(fd, req.data(), req.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            serve();
        }
    EXPECT_EQ(server.connections(), 2u) << "one of the uid's connections went over its share";
    const frontend::Usage *u = sessions.accounts().usage(kAlice);
    ASSERT_TRUE(u);
    EXPECT_LE(u->queued_bytes, 96u << 10);
    send(other, 5, proto::Status{});
    EXPECT_TRUE(ok(reply(other))) << "nobody else notices";
}

// ---- descriptors a client passes ----

// Sends request `id` (a status) on `fd` with `count` copies of `passed` (SCM_RIGHTS).
void send_with_descriptors(int fd, std::uint64_t id, int passed, std::size_t count) {
    const std::string req = proto::encode_request(id, proto::Status{});
    ScmRightsMessage<server::PassedFds::kRoom> m(req);
    m.put(std::vector<int>(count, passed));
    ASSERT_EQ(::sendmsg(fd, &m.msg, MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
}

// A user passes descriptors whose close never ends (a FUSE file whose server does not answer
// its flush, modelled by a close function that waits): once kHoldAtWaitingCloses of them wait,
// none of the account's connections is read, so it cannot fill the daemon's descriptor table;
// another user is served throughout, and the held user's requests are answered once the closes
// end.
TEST_F(Tenancy, AnAccountWhosePassedDescriptorsDoNotCloseIsNotReadUntilTheyDo) {
    if (::geteuid() != 0)
        GTEST_SKIP() << "needs root, to be a peer of another uid";
    constexpr uid_t kAlice = 1001, kBob = 1002;
    std::mutex mu;
    std::condition_variable cv;
    bool stuck = true;
    runtime::FdCloser closer([&](int fd) {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return !stuck; });
        ::close(fd);
    });
    server::SocketServer srv(loop, sessions, -1, nullptr, closer);
    auto greeted_on = [&](uid_t uid) {
        const int fd = connect_to(srv, uid);
        send(fd, 1, proto::Hello{{2}, "test"});
        EXPECT_TRUE(ok(reply(fd)));
        return fd;
    };
    const int alice = greeted_on(kAlice), alice2 = greeted_on(kAlice), bob = greeted_on(kBob);
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);

    // One short of the hold: still read.
    send_with_descriptors(alice, 2, pipe_fds[0], server::SocketServer::kHoldAtWaitingCloses - 1);
    EXPECT_FALSE(ok(reply(alice))) << "a request carries at most one descriptor";
    EXPECT_EQ(closer.waiting(kAlice), server::SocketServer::kHoldAtWaitingCloses - 1);
    send_with_descriptors(alice, 3, pipe_fds[1], 1);
    EXPECT_TRUE(ok(reply(alice))) << "a status's descriptor is closed, the status answered";
    ASSERT_EQ(closer.waiting(kAlice), server::SocketServer::kHoldAtWaitingCloses);

    send(alice, 4, proto::Status{});
    send(alice2, 5, proto::Status{});
    const int alice3 = connect_to(srv, kAlice); // a new connection of the account is held too
    send(alice3, 1, proto::Hello{{2}, "test"});
    send(bob, 6, proto::Status{});
    EXPECT_TRUE(ok(reply(bob))) << "another user is served";
    // Several of the server's looks at the held account (kHeldCheck) pass: still nothing read.
    for (const auto end = std::chrono::steady_clock::now() + 3 * server::SocketServer::kHeldCheck;
         std::chrono::steady_clock::now() < end;)
        loop.run_once(std::chrono::milliseconds(10));
    EXPECT_TRUE(drain(alice).empty()) << "the account is held";
    EXPECT_TRUE(drain(alice2).empty()) << "every connection of the account is held";
    EXPECT_TRUE(drain(alice3).empty()) << "a new connection of the account is held";
    EXPECT_EQ(closer.waiting(kAlice), server::SocketServer::kHoldAtWaitingCloses)
        << "and passed no more descriptors";

    {
        std::lock_guard lock(mu);
        stuck = false;
    }
    cv.notify_all();
    const proto::Reply r4 = reply(alice), r5 = reply(alice2);
    EXPECT_TRUE(ok(r4));
    EXPECT_EQ(r4.id.value_or(0), 4u);
    EXPECT_TRUE(ok(r5));
    EXPECT_EQ(r5.id.value_or(0), 5u);
    EXPECT_TRUE(ok(reply(alice3))) << "its hello";
    EXPECT_EQ(closer.waiting(), 0u);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
}

// ---- evict --disconnect over the socket ----

TEST_F(Tenancy, EvictDisconnectClosesTheConnectionsOfTheUid) {
    const int c = greeted();
    send(c, 2, join_of("ff15::1"));
    ASSERT_TRUE(ok(reply(c)));
    const int root = greeted(); // the test runs as root, so the same uid: evict spares its caller
    proto::Evict e;
    e.uid = ::getuid();
    e.disconnect = true;
    send(root, 3, e);
    const proto::Reply r = reply(root);
    ASSERT_TRUE(ok(r)) << failure(r).error.message;
    auto result = proto::decode_evict_result(std::get<mcastd::json_check::OwnedValue>(r.body).get());
    EXPECT_EQ(std::get<proto::EvictResult>(result).disconnected, 1u);
    while (next(c)) // its `lost` event, then the close
        ;
    EXPECT_EQ(server.connections(), 1u);
    sa.run();
    EXPECT_FALSE(sa_bits("ff15::1"));
}


// At the process's descriptor limit accept() fails (EMFILE) while the client waits in the
// backlog, and the listener stays readable. The server rests it (SocketServer::kAcceptRest)
// rather than spin the loop and the log, and takes the client once a descriptor is free.
TEST_F(Tenancy, AtTheDescriptorLimitTheListenerRestsAndTakesTheClientOnceOneIsFree) {
    if (testing_build::kSanitized)
        GTEST_SKIP() << testing_build::kNoDescriptorForUbsan;
    (void)greeted(); // the loop's timer descriptor exists before the table is full
    const int listener = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ASSERT_GE(listener, 0);
    sockaddr_un at{};
    at.sun_family = AF_UNIX;
    const std::string name = "mcastd-test-accept-" + std::to_string(::getpid()); // abstract
    std::memcpy(at.sun_path + 1, name.data(), name.size());
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr *>(&at), len), 0);
    ASSERT_EQ(::listen(listener, 4), 0);
    server::SocketServer door(loop, sessions, listener);
    const int client = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr *>(&at), len), 0); // into the backlog

    rlimit was{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &was), 0);
    rlimit low = was;
    low.rlim_cur = 256;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    std::vector<int> filler;
    for (int fd; (fd = ::dup(client)) >= 0;)
        filler.push_back(fd);
    ASSERT_EQ(errno, EMFILE);

    // A loop that spins returns from each run_once at once: tens of thousands in 300 ms. One
    // that rests wakes for the rest's end and its own timeout: a handful.
    unsigned turns = 0;
    for (const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
         std::chrono::steady_clock::now() < end; ++turns)
        loop.run_once(std::chrono::milliseconds(50));
    EXPECT_LT(turns, 100u) << "the loop spun on the listener";
    EXPECT_EQ(door.connections(), 0u);

    for (int fd : filler)
        ::close(fd);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &was), 0);
    send(client, 1, proto::Hello{{1}, "test"});
    EXPECT_TRUE(ok(reply(client))) << "the waiting client was taken once a descriptor was free";
    EXPECT_EQ(door.connections(), 1u);
    ::close(client);
}

} // namespace
} // namespace mcastd::test
