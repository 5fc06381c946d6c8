// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Client sessions behind the Unix-socket transport, over socketpairs and the fake SA: the rules
// every client lives by (hello first, unique pending ids, the in-flight and membership limits,
// max_clients, a slow reader cut off) and that breaking one leaves the other clients and what
// the SA holds untouched.
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "front_door.hpp"
#include "logging/log_recorder.hpp"
#include "scm_rights.hpp"
#include "service/views.hpp"

namespace mcastd::test {
namespace {

using frontend::Limits;

Limits limits(void (*set)(Limits &)) {
    Limits l;
    set(l);
    return l;
}

class Sessions : public FrontDoor {};

TEST_F(Sessions, HelloComesFirst) {
    const int c = connect();
    send(c, 7, join_of("ff15::1"));
    const proto::Reply r = reply(c);
    EXPECT_EQ(r.id, 7u);
    EXPECT_EQ(failure(r).error.code, Errc::invalid_argument);
    EXPECT_EQ(failure(r).error.message, "the first request must be hello");
    EXPECT_EQ(failure(r).field, "/op");
    EXPECT_EQ(sa.log.size(), 0u) << "nothing reached the SA";

    send(c, 8, proto::Hello{{1}, "test"});
    const proto::Reply hello = reply(c);
    ASSERT_TRUE(ok(hello));
    auto result = proto::decode_hello_result(std::get<mcastd::json_check::OwnedValue>(hello.body).get());
    ASSERT_TRUE(std::holds_alternative<proto::HelloResult>(result));
    EXPECT_EQ(std::get<proto::HelloResult>(result).daemon, "rdma-mcastd test");

    send(c, 9, proto::Hello{{1}, "test"});
    EXPECT_EQ(failure(reply(c)).error.message, "hello was already said on this connection");
    send(c, 10, join_of("ff15::1"));
    EXPECT_TRUE(ok(reply(c)));
    EXPECT_EQ(sa_bits("ff15::1"), join::full);
}

TEST_F(Sessions, AnUnservedVersionIsNamedAndTheSessionStillNeedsItsHello) {
    const int c = connect();
    send(c, 1, proto::Hello{{7, 9}, "test"});
    const proto::Failure f = failure(reply(c));
    EXPECT_EQ(f.error.code, Errc::unsupported_version);
    EXPECT_EQ(f.versions, (std::vector<unsigned>{1, 2}));
    send(c, 2, join_of("ff15::1"));
    EXPECT_EQ(failure(reply(c)).error.message, "the first request must be hello");
}

TEST_F(Sessions, APendingJoinsIdCannotBeUsedAgain) {
    const int c = greeted();
    send(c, 5, join_of("ff15::1"));
    send(c, 5, join_of("ff15::2"));
    const proto::Reply dup = reply(c, false);
    EXPECT_EQ(dup.id, 5u);
    EXPECT_EQ(failure(dup).error.code, Errc::invalid_argument);
    EXPECT_EQ(failure(dup).error.message, "request id 5 is already used by a pending join");
    EXPECT_EQ(failure(dup).field, "/id");
    const proto::Reply first = reply(c); // the SA answers now
    EXPECT_EQ(first.id, 5u);
    EXPECT_TRUE(ok(first));
    EXPECT_EQ(sa_bits("ff15::1"), join::full);
    EXPECT_FALSE(sa_bits("ff15::2")) << "the refused join sent nothing";
    send(c, 5, join_of("ff15::2"));
    EXPECT_TRUE(ok(reply(c))) << "the id is free again once answered";
}

class InFlightLimit : public FrontDoor {
protected:
    InFlightLimit() : FrontDoor(limits([](Limits &l) { l.max_requests_in_flight = 2; })) {}
};

TEST_F(InFlightLimit, AThirdJoinWaitingForTheSaIsRefusedAndNothingHeldIsTouched) {
    const int c = greeted();
    const int other = greeted();
    logging::test::LogCapture log(spdlog::level::warn);
    send(c, 1, join_of("ff15::1"));
    send(c, 2, join_of("ff15::2"));
    send(c, 3, join_of("ff15::3"));
    const proto::Reply third = reply(c, false);
    EXPECT_EQ(third.id, 3u);
    ASSERT_EQ(log.entries().size(), 1u) << "journaled as the policy's refusals are";
    EXPECT_NE(log.entries()[0].text.find("join of group ff15::3 by pid"), std::string::npos) << log.entries()[0].text;
    EXPECT_NE(log.entries()[0].text.find("(config limits.max_requests_in_flight: 2)"), std::string::npos);
    EXPECT_EQ(logging::test::field(log.entries()[0], "POLICY_QUOTA"), "max_requests_in_flight");
    EXPECT_EQ(failure(third).error.code, Errc::limit);
    EXPECT_EQ(failure(third).error.message, "this connection has 2 joins waiting for the SA, its limit (config "
                                            "limits.max_requests_in_flight: 2)");
    EXPECT_EQ(failure(third).error.policy, (PolicyRef{"", "max_requests_in_flight", 2}));
    // Another client has its own budget.
    send(other, 1, join_of("ff15::4"));
    EXPECT_TRUE(ok(reply(other)));
    EXPECT_TRUE(ok(reply(c)));
    EXPECT_TRUE(ok(reply(c)));
    EXPECT_EQ(sa_bits("ff15::1"), join::full);
    EXPECT_EQ(sa_bits("ff15::2"), join::full);
    EXPECT_FALSE(sa_bits("ff15::3"));
    send(c, 3, join_of("ff15::3"));
    EXPECT_TRUE(ok(reply(c))) << "answered joins no longer count";
}

class MembershipLimit : public FrontDoor {
protected:
    MembershipLimit() : FrontDoor(limits([](Limits &l) { l.max_memberships_per_client = 2; })) {}

    std::uint64_t membership(const proto::Reply &r) {
        auto j = proto::decode_join_result(std::get<mcastd::json_check::OwnedValue>(r.body).get());
        return std::get<proto::JoinResult>(j).membership;
    }
};

TEST_F(MembershipLimit, AThirdMembershipIsRefusedUntilOneIsLeft) {
    const int c = greeted();
    send(c, 1, join_of("ff15::1"));
    const std::uint64_t m1 = membership(reply(c));
    send(c, 2, join_of("ff15::2"));
    ASSERT_TRUE(ok(reply(c)));
    send(c, 3, join_of("ff15::3"));
    const proto::Failure f = failure(reply(c));
    EXPECT_EQ(f.error.code, Errc::limit);
    EXPECT_EQ(f.error.message,
              "this connection holds or waits for 2 memberships, its limit (config "
              "limits.max_memberships_per_client: 2)");
    EXPECT_EQ(f.error.policy, (PolicyRef{"", "max_memberships_per_client", 2}));
    EXPECT_FALSE(sa_bits("ff15::3"));
    EXPECT_EQ(sa_bits("ff15::1"), join::full) << "what is held stays";

    proto::Leave leave;
    leave.membership = m1;
    send(c, 4, leave);
    EXPECT_TRUE(ok(reply(c)));
    send(c, 5, join_of("ff15::3"));
    EXPECT_TRUE(ok(reply(c)));
    EXPECT_FALSE(sa_bits("ff15::1"));
    EXPECT_EQ(sa_bits("ff15::3"), join::full);
}

// Joins still waiting for the SA count toward the limit, and the error counts them too: it
// names what the connection holds or waits for, with the key, and carries `quota` and `limit`
// as every refusal by a number does.
TEST_F(MembershipLimit, AJoinWaitingForTheSaCountsAndTheErrorSaysSo) {
    const int c = greeted();
    send(c, 1, join_of("ff15::1"));
    ASSERT_TRUE(ok(reply(c)));
    send(c, 2, join_of("ff15::2")); // held at the SA
    send(c, 3, join_of("ff15::3"));
    const proto::Reply third = reply(c, false);
    EXPECT_EQ(third.id, 3u);
    EXPECT_EQ(failure(third).error.message,
              "this connection holds or waits for 2 memberships, its limit (config "
              "limits.max_memberships_per_client: 2)");
    EXPECT_EQ(failure(third).error.policy, (PolicyRef{"", "max_memberships_per_client", 2}));
    EXPECT_EQ(sessions.refusals().of(frontend::refusal::kMembershipsPerClient), 1u);
    EXPECT_TRUE(ok(reply(c))) << "the waiting join completes";
}

TEST_F(MembershipLimit, AWithdrawnPendingJoinFreesItsPlaceExactlyOnce) {
    const int c = greeted();
    send(c, 1, join_of("ff15::1"));
    const std::uint64_t m1 = membership(reply(c));
    send(c, 2, join_of("ff15::2")); // held pending: the SA does not answer yet
    serve();
    // Withdrawn by its membership id (the engine numbers memberships in order): the pending
    // join is answered `cancelled`, and it never counted as held.
    proto::Leave leave;
    leave.membership = m1 + 1;
    send(c, 3, leave);
    const proto::Reply cancelled = reply(c, false);
    EXPECT_EQ(cancelled.id, 2u);
    EXPECT_EQ(failure(cancelled).error.code, Errc::cancelled);
    const proto::Reply left = reply(c, false);
    EXPECT_EQ(left.id, 3u);
    EXPECT_TRUE(ok(left));
    // One membership is held: one more fits, and then the limit holds again.
    send(c, 4, join_of("ff15::3"));
    EXPECT_TRUE(ok(reply(c)));
    send(c, 5, join_of("ff15::4"));
    EXPECT_EQ(failure(reply(c)).error.code, Errc::limit);
    EXPECT_FALSE(sa_bits("ff15::4"));
}

class MaxClients : public FrontDoor {
protected:
    MaxClients() : FrontDoor(limits([](Limits &l) { l.max_clients = 2; })) {}
};

TEST_F(MaxClients, AClientPastTheLimitIsToldAndClosedAndTheOthersGoOn) {
    const int a = greeted();
    const int b = greeted();
    EXPECT_EQ(sessions.clients(), 2u);
    const int c = connect();
    const auto told = next(c);
    ASSERT_TRUE(told);
    auto in = proto::decode_incoming(*told);
    const auto &r = std::get<proto::Reply>(std::get<proto::Incoming>(in));
    EXPECT_FALSE(r.id) << "no request was read";
    EXPECT_EQ(failure(r).error.code, Errc::limit);
    EXPECT_EQ(failure(r).error.message, "the daemon serves 2 clients, its bound (config limits.max_clients: 2)");
    EXPECT_FALSE(next(c)) << "then closed";
    EXPECT_EQ(server.connections(), 2u);

    send(a, 2, join_of("ff15::1"));
    EXPECT_TRUE(ok(reply(a)));
    ::shutdown(b, SHUT_RDWR);
    ASSERT_TRUE(until([&] { return sessions.clients() == 1; }));
    const int d = greeted();
    send(d, 2, join_of("ff15::1"));
    EXPECT_TRUE(ok(reply(d))) << "a place came free";
}

class SlowReader : public FrontDoor {
protected:
    SlowReader() : FrontDoor(limits([](Limits &l) { l.max_queued_bytes = 64 * 1024; })) {}
};

TEST_F(SlowReader, AClientThatDoesNotReadIsCutOffAndReleasesItsMemberships) {
    const int slow = greeted();
    const int other = greeted();
    send(slow, 2, join_of("ff15::1"));
    ASSERT_TRUE(ok(reply(slow)));
    send(other, 2, join_of("ff15::1"));
    ASSERT_TRUE(ok(reply(other)));
    for (int g = 2; g <= 40; ++g) { // a `list` worth queueing: one group per join
        const std::string mgid = "ff15::" + std::to_string(g);
        send(other, static_cast<std::uint64_t>(g + 1), join_of(mgid.c_str()));
        ASSERT_TRUE(ok(reply(other)));
    }
    // The slow client asks for lists and never reads: the kernel's buffers fill, then the
    // daemon's queue, and past max_queued_bytes the daemon lets go of it.
    std::size_t sent = 0;
    for (std::uint64_t id = 100; id < 5000 && server.connections() == 2; ++id) {
        const std::string req = proto::encode_request(id, proto::List{});
        if (::send(slow, req.data(), req.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
            break;
        ++sent;
        serve();
    }
    EXPECT_EQ(server.connections(), 1u) << "still connected after " << sent << " unread lists";
    // Its membership was released; the other client's stays, and so does the SA's state.
    const auto groups = service.group_views();
    const auto shared = std::find_if(groups.begin(), groups.end(),
                                     [](const GroupView &g) { return format_gid(g.mgid) == "ff15::1"; });
    ASSERT_NE(shared, groups.end());
    EXPECT_EQ(shared->counts[0], 1u);
    EXPECT_EQ(sa_bits("ff15::1"), join::full);
    send(other, 1000, proto::Status{});
    const proto::Reply st = reply(other);
    ASSERT_TRUE(ok(st));
    auto status = proto::decode_status_result(std::get<mcastd::json_check::OwnedValue>(st.body).get());
    EXPECT_EQ(std::get<proto::StatusResult>(status).clients, 1u);
}

TEST_F(Sessions, AClosedConnectionReleasesItsMembershipsAtTheSa) {
    const int a = greeted();
    const int b = greeted();
    send(a, 2, join_of("ff15::1"));
    ASSERT_TRUE(ok(reply(a)));
    send(a, 3, join_of("ff15::2"));
    ASSERT_TRUE(ok(reply(a)));
    send(b, 2, join_of("ff15::2"));
    ASSERT_TRUE(ok(reply(b)));
    ::shutdown(a, SHUT_RDWR);
    ASSERT_TRUE(until([&] { return server.connections() == 1 && service.idle() && !sa.pending(); }));
    EXPECT_FALSE(sa_bits("ff15::1")) << "a's own group was left";
    EXPECT_EQ(sa_bits("ff15::2"), join::full) << "b still holds the shared one";
}

// Whatever a process calls itself, its name reaches every later use clean: read once from
// /proc/PID/comm with control characters and bytes that are not UTF-8 replaced.
TEST_F(Sessions, AProcessNameIsCleanedWhenItIsRead) {
    char own[17] = {};
    ASSERT_EQ(::prctl(PR_GET_NAME, own), 0);
    ASSERT_EQ(::prctl(PR_SET_NAME, "a\x1b[2J\xff\xfe"), 0); // this test's peer is this process
    const int c = greeted();
    ::prctl(PR_SET_NAME, own);
    send(c, 2, join_of("ff15::1"));
    ASSERT_TRUE(ok(reply(c)));
    const proto::ListResult list = list_view(service);
    ASSERT_EQ(list.ports.size(), 1u);
    ASSERT_EQ(list.ports[0].groups.size(), 1u);
    ASSERT_EQ(list.ports[0].groups[0].members.size(), 1u);
    EXPECT_EQ(list.ports[0].groups[0].members[0].comm, "a\xEF\xBF\xBD[2J\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_F(Sessions, BadRequestsAreNamedAndTheConnectionGoesOn) {
    const int c = greeted();
    send_raw(c, "{not json");
    const proto::Reply bad = reply(c);
    EXPECT_FALSE(bad.id);
    EXPECT_EQ(failure(bad).error.code, Errc::invalid_argument);
    send_raw(c, R"({"id": 4, "op": "join", "device": "mlx5_0", "port": 1, "mgid": "ff15::1", "qkey": "x"})");
    const proto::Reply typed = reply(c);
    EXPECT_EQ(typed.id, 4u);
    EXPECT_EQ(failure(typed).field, "/qkey");
    send_raw(c, std::string(70000, ' '));
    EXPECT_EQ(failure(reply(c)).error.code, Errc::too_large);
    send(c, 5, join_of("ff15::1"));
    EXPECT_TRUE(ok(reply(c)));
}

// Room for a socket pair, the most a test here passes.
using FdMessage = ScmRightsMessage<2>;

// A request sent with a descriptor on the same message, as librdmamcast sends a join on a port
// it does not know to be InfiniBand (PROTOCOL.md, "RoCE ports").
void send_with_fd(int sock, const std::string &msg, int fd) {
    FdMessage m(msg);
    m.put({&fd, 1});
    ASSERT_EQ(::sendmsg(sock, &m.msg, MSG_NOSIGNAL), static_cast<ssize_t>(msg.size()));
}

// RoCE's join keys name nothing on an InfiniBand port (PROTOCOL.md, "RoCE ports"): `ip`,
// `gid_type` and RoCE v2's ::ffff:a.b.c.d MGID are refused naming the key before anything
// reaches the SA (an `ip` join would otherwise read as a create); the socket such a join carries
// is not kept; and the connection goes on. RoCE joins themselves are tested in
// test_roce_sessions.cpp (a RoCE port beside this one).
TEST_F(Sessions, RoceKeysOnAnInfinibandPortAreRefusedAndTheirSocketIsNotKept) {
    const int c = greeted();
    int pair[2]; // the daemon gets one end: the other reads the end of the stream once it closed it
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    proto::Join by_ip = join_of("ff15::1");
    by_ip.request.mgid = kZeroGid;
    by_ip.ip = parse_ip("239.1.2.3");
    send_with_fd(c, proto::encode_request(4, by_ip), pair[1]);
    ::close(pair[1]);
    const proto::Reply r = reply(c);
    EXPECT_EQ(r.id, 4u);
    EXPECT_EQ(failure(r).error.code, Errc::invalid_argument);
    EXPECT_EQ(failure(r).field, "/ip");
    EXPECT_NE(failure(r).error.message.find("RoCE"), std::string::npos) << failure(r).error.message;
    // The last copy of the end was the one that travelled to the daemon: it is gone.
    char byte;
    EXPECT_EQ(::recv(pair[0], &byte, 1, MSG_DONTWAIT), 0) << "the daemon holds the descriptor it was sent";
    ::close(pair[0]);

    proto::Join typed = join_of("ff15::1");
    typed.gid_type = GidType::roce_v2;
    send(c, 5, typed);
    const proto::Failure typed_no = failure(reply(c));
    EXPECT_EQ(typed_no.field, "/gid_type");
    EXPECT_EQ(typed_no.error.message,
              "mlx5_0/1 is an InfiniBand port: a GID type names a RoCE source GID, on RoCE ports only");
    proto::Join on_interface = join_of("ff15::1");
    on_interface.ifname = "eth0";
    send(c, 8, on_interface);
    const proto::Failure interface_no = failure(reply(c));
    EXPECT_EQ(interface_no.field, "/ifname");
    EXPECT_EQ(interface_no.error.message,
              "mlx5_0/1 is an InfiniBand port: an interface holds a RoCE group's IP membership, on RoCE ports only");
    send(c, 6, join_of("::ffff:239.1.2.3")); // RoCE v2's MGID of an IPv4 group
    const proto::Failure v2_mgid = failure(reply(c));
    EXPECT_EQ(v2_mgid.error.code, Errc::invalid_argument);
    EXPECT_EQ(v2_mgid.field, "/mgid");
    EXPECT_NE(v2_mgid.error.message.find("::ffff:239.1.2.3"), std::string::npos) << v2_mgid.error.message;
    EXPECT_EQ(sa.log.size(), 0u) << "nothing reached the SA";

    send(c, 7, join_of("ff15::1"));
    EXPECT_TRUE(ok(reply(c)));
}

TEST_F(Sessions, OnlyMonitoringClientsHearWhatHappens) {
    const int watcher = greeted();
    const int quiet = greeted();
    send(watcher, 2, proto::Monitor{true});
    ASSERT_TRUE(ok(reply(watcher)));
    const int c = greeted();
    send(c, 2, join_of("ff15::1"));
    ASSERT_TRUE(ok(reply(c)));
    const auto ev = next(watcher);
    ASSERT_TRUE(ev);
    auto in = proto::decode_incoming(*ev);
    const auto &event = std::get<proto::Event>(std::get<proto::Incoming>(in));
    const auto &m = std::get<proto::MonitorEvent>(event);
    EXPECT_EQ(m.kind, "joined");
    EXPECT_EQ(m.device, "mlx5_0");
    EXPECT_EQ(format_gid(m.mgid), "ff15::1");
    send(quiet, 3, proto::Status{});
    const auto first = next(quiet);
    ASSERT_TRUE(first);
    const auto quiet_in = proto::decode_incoming(*first);
    EXPECT_TRUE(std::holds_alternative<proto::Reply>(std::get<proto::Incoming>(quiet_in)))
        << "a client that did not ask gets no events";
}

// A connection whose client process has exited by the time the daemon takes it is refused,
// told why, and closed: it is never judged by whatever process has its pid now.
TEST_F(Sessions, AConnectionWhoseProcessIsGoneIsRefusedAndClosed) {
    // A child makes the pair (the kernel records it as both ends' peer), hands both ends over
    // and exits.
    int ctl[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, ctl), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        int pair[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
            ::_exit(1);
        FdMessage m;
        m.put(pair);
        ::_exit(::sendmsg(ctl[1], &m.msg, 0) == 1 ? 0 : 1);
    }
    FdMessage m;
    ASSERT_EQ(::recvmsg(ctl[0], &m.msg, MSG_CMSG_CLOEXEC), 1);
    const std::vector<int> pair = m.fds();
    ASSERT_EQ(pair.size(), 2u);
    ::close(ctl[0]);
    ::close(ctl[1]);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_EQ(status, 0);

    server.adopt(pair[0]);
    const auto told = next(pair[1]);
    ASSERT_TRUE(told);
    const auto in = proto::decode_incoming(*told);
    const auto &r = std::get<proto::Reply>(std::get<proto::Incoming>(in));
    EXPECT_EQ(failure(r).error.code, Errc::denied);
    EXPECT_EQ(failure(r).error.message.rfind("cannot identify the caller: process " + std::to_string(child), 0), 0u)
        << failure(r).error.message;
    EXPECT_FALSE(next(pair[1])) << "closed";
    EXPECT_EQ(sessions.clients(), 0u);
    ::close(pair[1]);
}

// The same rules for a session of another door, without a transport in between: D-Bus callers
// live by the limits too, and the daemon's own door by none.
class Outlet final : public frontend::SessionOutlet {
public:
    void membership_event(MembershipId, const MembershipEvent &) override {}
    void disconnect(const std::string &) override {}
};

class DoorLimits : public FrontDoor {
protected:
    DoorLimits()
        : FrontDoor(limits([](Limits &l) {
              l.max_memberships_per_client = 1;
              l.max_clients = 1;
          })) {}

    std::unique_ptr<frontend::ClientSession> open(frontend::Door door) {
        // root: with max_clients 1 every slot is in root's reserve.
        auto s = sessions.open(door, frontend::Credentials{ClientInfo{::getpid(), 0, 0, "root-app"}, {}}, outlet);
        if (auto *f = std::get_if<proto::Failure>(&s)) {
            last = *f;
            return nullptr;
        }
        return std::get<std::unique_ptr<frontend::ClientSession>>(std::move(s));
    }
    std::optional<frontend::JoinAnswer> join(frontend::ClientSession &s, std::uint64_t id, const char *mgid) {
        std::optional<frontend::JoinAnswer> out;
        s.join(id, join_of(mgid).request, [&out](const frontend::JoinAnswer &a) { out = a; });
        sa.run();
        return out;
    }

    Outlet outlet;
    proto::Failure last{};
};

TEST_F(DoorLimits, DbusCallersLiveByTheSameLimits) {
    auto bus = open(frontend::Door::dbus);
    ASSERT_TRUE(bus);
    auto first = join(*bus, 1, "ff15::1");
    ASSERT_TRUE(first && !first->failure);
    auto second = join(*bus, 2, "ff15::2");
    ASSERT_TRUE(second && second->failure);
    EXPECT_EQ(second->failure->error.code, Errc::limit);
    EXPECT_EQ(second->failure->error.message,
              "this connection holds or waits for 1 membership, its limit (config "
              "limits.max_memberships_per_client: 1)");
    EXPECT_FALSE(open(frontend::Door::dbus)) << "max_clients counts D-Bus callers";
    EXPECT_EQ(last.error.code, Errc::limit);
    const int c = connect();
    const auto told = next(c);
    ASSERT_TRUE(told);
    const auto in = proto::decode_incoming(*told);
    const auto &r = std::get<proto::Reply>(std::get<proto::Incoming>(in));
    EXPECT_EQ(failure(r).error.code, Errc::limit) << "and socket connections with them";
}

TEST_F(DoorLimits, TheDaemonsOwnDoorHasNoLimitsAndIsNoClient) {
    auto own = open(frontend::Door::daemon);
    ASSERT_TRUE(own);
    EXPECT_EQ(sessions.clients(), 0u);
    for (int g = 1; g <= 3; ++g) {
        const std::string mgid = "ff15::" + std::to_string(g);
        auto a = join(*own, static_cast<std::uint64_t>(g), mgid.c_str());
        ASSERT_TRUE(a && !a->failure) << mgid;
    }
    auto bus = open(frontend::Door::dbus);
    EXPECT_TRUE(bus) << "the daemon's own session takes no client's place";
}

} // namespace
} // namespace mcastd::test
