// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Events through event_fd/next_event, and what the library does when the daemon misbehaves
// or goes away.
#include <cerrno>
#include <cstring>

#include "client_testing.hpp"

namespace {

using namespace fake;
namespace proto = mcastd::proto;

proto::RestoredEvent restored(std::uint64_t membership, std::uint16_t mlid) {
    proto::RestoredEvent e;
    e.membership = membership;
    e.record = sample_record();
    e.record.mlid = mlid;
    e.changed = mcastd::field::mlid | mcastd::field::qkey;
    return e;
}

proto::LostEvent lost(std::uint64_t membership) {
    proto::LostEvent e;
    e.membership = membership;
    e.why.error = mcastd::Error{mcastd::Errc::sa_error, "the SA forgot the group", 0x0300};
    return e;
}

proto::MonitorEvent monitor_event() {
    proto::MonitorEvent m = sample_monitor_event();
    m.sa_status = 0x0100;
    return m;
}

TEST(ClientEvents, NothingPendingIsEagain) {
    FakeDaemon d;
    auto c = connect_to(d);
    rdmamcast_event ev;
    EXPECT_FALSE(readable(rdmamcast_event_fd(c.get()), 0));
    EXPECT_EQ(rdmamcast_next_event(c.get(), &ev), -EAGAIN);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_NONE);
}

TEST(ClientEvents, RestoredLostAndMonitorAreDecoded) {
    FakeDaemon d;
    auto c = connect_to(d);
    d.broadcast(restored(7, 0xc002));
    d.broadcast(lost(7));
    d.broadcast(monitor_event());
    const int fd = rdmamcast_event_fd(c.get());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(readable(fd, 10000));

    rdmamcast_event ev;
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
    EXPECT_EQ(ev.type, RDMAMCAST_EVENT_RESTORED);
    EXPECT_EQ(ev.membership, 7u);
    EXPECT_EQ(ev.restored.record.mlid, 0xc002);
    EXPECT_EQ(ev.restored.record.qkey, 0x12345678u);
    EXPECT_EQ(ev.restored.record.mtu, 2048u);
    EXPECT_EQ(ev.restored.changed, unsigned{RDMAMCAST_FIELD_MLID | RDMAMCAST_FIELD_QKEY});

    ASSERT_TRUE(readable(fd, 10000));
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
    EXPECT_EQ(ev.type, RDMAMCAST_EVENT_LOST);
    EXPECT_EQ(ev.membership, 7u);
    EXPECT_EQ(ev.lost.code, RDMAMCAST_E_SA_ERROR);
    EXPECT_STREQ(ev.lost.code_name, "sa-error");
    EXPECT_TRUE(ev.lost.has_sa_status);
    EXPECT_EQ(ev.lost.sa_status, 0x0300);
    EXPECT_NE(std::strstr(ev.lost.message, "the SA forgot the group"), nullptr);

    ASSERT_TRUE(readable(fd, 10000));
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
    EXPECT_EQ(ev.type, RDMAMCAST_EVENT_MONITOR);
    const auto &m = ev.monitor;
    EXPECT_EQ(m.kind, RDMAMCAST_MONITOR_JOINED);
    EXPECT_STREQ(m.kind_name, "joined");
    EXPECT_STREQ(m.device, "mlx5_0");
    EXPECT_EQ(m.port, 1);
    EXPECT_EQ(0, std::memcmp(m.mgid, gid("ff15::1:2").data(), 16));
    EXPECT_EQ(m.mlid, 0xc001);
    EXPECT_EQ(m.join_state, RDMAMCAST_JOIN_STATE_FULL);
    EXPECT_EQ(m.pid, 4242);
    EXPECT_EQ(m.uid, 1000u);
    EXPECT_STREQ(m.comm, "my-app");
    EXPECT_STREQ(m.message, "joined ff15::1:2");
    EXPECT_TRUE(m.has_sa_status);
    EXPECT_EQ(m.sa_status, 0x0100);

    EXPECT_EQ(rdmamcast_next_event(c.get(), &ev), -EAGAIN);
    EXPECT_FALSE(readable(fd, 0));
}

// The daemon sends events before the reply the client waits for: they are queued, the event
// descriptor says so even though the socket is drained, and they come out in order.
TEST(ClientEvents, EventsDuringASynchronousCallAreQueuedNotLost) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.event(restored(3, 0xc005));
        s.event(lost(4));
        s.reply(env.id, proto::JoinResult{7, sample_record()});
        return true;
    });
    auto c = connect_to(d);
    auto p = join_params();
    std::uint64_t membership = 0;
    ASSERT_EQ(rdmamcast_join(c.get(), &p, nullptr, &membership), 0);
    EXPECT_EQ(membership, 7u);

    const int fd = rdmamcast_event_fd(c.get());
    EXPECT_TRUE(readable(fd, 0)) << "queued events must make the event fd readable";
    rdmamcast_event ev;
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
    EXPECT_EQ(ev.type, RDMAMCAST_EVENT_RESTORED);
    EXPECT_EQ(ev.membership, 3u);
    EXPECT_EQ(ev.restored.record.mlid, 0xc005);
    EXPECT_TRUE(readable(fd, 0)) << "one event is still queued";
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
    EXPECT_EQ(ev.type, RDMAMCAST_EVENT_LOST);
    EXPECT_EQ(ev.membership, 4u);
    EXPECT_FALSE(readable(fd, 0));
    EXPECT_EQ(rdmamcast_next_event(c.get(), &ev), -EAGAIN);
}

// Queued events and events still in the socket keep their order.
TEST(ClientEvents, QueuedEventsComeBeforeLaterOnes) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Leave>(env.request))
            return false;
        s.event(restored(1, 0xc001));
        s.reply(env.id, proto::Empty{});
        s.event(restored(2, 0xc002));
        return true;
    });
    auto c = connect_to(d);
    ASSERT_EQ(rdmamcast_leave(c.get(), 5), 0);
    rdmamcast_event ev;
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
    EXPECT_EQ(ev.membership, 1u);
    ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 10000));
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
    EXPECT_EQ(ev.membership, 2u);
}

TEST(ClientEvents, StrayRepliesAreSkipped) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Leave>(env.request))
            return false;
        s.reply(env.id + 1000, proto::Empty{}); // not ours
        s.reply(env.id, proto::Empty{});
        s.reply(env.id + 2000, proto::Empty{}); // arrives when nobody waits
        s.event(restored(1, 0xc001));
        return true;
    });
    auto c = connect_to(d);
    ASSERT_EQ(rdmamcast_leave(c.get(), 5), 0);
    ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 10000));
    rdmamcast_event ev;
    int rc;
    // The stray reply may be alone in the socket for a moment; skip it until the event.
    while ((rc = rdmamcast_next_event(c.get(), &ev)) == -EAGAIN)
        ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 10000));
    ASSERT_EQ(rc, 0);
    EXPECT_EQ(ev.membership, 1u);
}

// A newer daemon's event is skipped, during a call and between calls; the next known event and
// replies still arrive.
TEST(ClientEvents, AnEventThisLibraryDoesNotKnowIsSkipped) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Leave>(env.request))
            return false;
        s.raw(R"({"event":"port-renamed","from":"mlx5_0","to":"ib0"})");
        s.reply(env.id, proto::Empty{});
        return true;
    });
    auto c = connect_to(d);
    ASSERT_EQ(rdmamcast_leave(c.get(), 5), 0);
    d.with_sessions([](std::vector<Session *> &ss) {
        ss.at(0)->raw(R"({"event":"quota-changed","groups":3})");
        ss.at(0)->event(restored(3, 0xc003));
    });
    ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 10000));
    rdmamcast_event ev;
    int rc;
    while ((rc = rdmamcast_next_event(c.get(), &ev)) == -EAGAIN)
        ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 10000));
    ASSERT_EQ(rc, 0);
    EXPECT_EQ(ev.type, RDMAMCAST_EVENT_RESTORED);
    EXPECT_EQ(ev.membership, 3u);
    EXPECT_EQ(rdmamcast_next_event(c.get(), &ev), -EAGAIN);
}

TEST(ClientEvents, ReplyWithNullIdAnswersTheRequestInFlight) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.fail(std::nullopt, mcastd::Errc::too_large, "request of 70000 bytes");
        return true;
    });
    auto c = connect_to(d);
    auto p = join_params();
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), -EMSGSIZE);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_TOO_LARGE);
}

// ---- the connection goes away ----

TEST(ClientDisconnect, DaemonClosingDuringACallIsEconnreset) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.close();
        return true;
    });
    auto c = connect_to(d);
    auto p = join_params();
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), -ECONNRESET);
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, RDMAMCAST_E_DISCONNECTED);
    EXPECT_STREQ(e->code_name, "disconnected");
    EXPECT_NE(std::strstr(e->message, "closed the connection"), nullptr) << e->message;
    // Sticky: later calls fail the same way without touching the socket.
    EXPECT_EQ(rdmamcast_leave(c.get(), 1), -ECONNRESET);
    rdmamcast_event ev;
    EXPECT_EQ(rdmamcast_next_event(c.get(), &ev), -ECONNRESET);
}

TEST(ClientDisconnect, DaemonClosingWhileIdleWakesTheEventFd) {
    FakeDaemon d;
    auto c = connect_to(d);
    d.broadcast(restored(1, 0xc001));
    d.close_all();
    const int fd = rdmamcast_event_fd(c.get());
    ASSERT_TRUE(readable(fd, 10000));
    rdmamcast_event ev;
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0) << "events sent before the close arrive";
    EXPECT_EQ(rdmamcast_next_event(c.get(), &ev), -ECONNRESET);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_DISCONNECTED);
}

TEST(ClientDisconnect, CallAfterTheDaemonLeftFailsAsDisconnected) {
    FakeDaemon d;
    auto c = connect_to(d);
    d.close_all();
    ASSERT_TRUE(d.wait_closed(1));
    const int rc = rdmamcast_leave(c.get(), 1);
    EXPECT_TRUE(rc == -EPIPE || rc == -ECONNRESET) << rc;
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_DISCONNECTED);
}

TEST(ClientDisconnect, ClosingTheHandleClosesTheConnection) {
    FakeDaemon d;
    auto c = connect_to(d);
    c.reset();
    EXPECT_TRUE(d.wait_closed(1));
}

// ---- garbage ----

struct Garbage {
    const char *name;
    const char *message;
};
// Names the case in test listings instead of dumping its bytes.
void PrintTo(const Garbage &c, std::ostream *os) { *os << c.name; }


class ClientGarbage : public ::testing::TestWithParam<Garbage> {};

TEST_P(ClientGarbage, IsAProtocolErrorThatPoisonsTheHandle) {
    const std::string message = GetParam().message;
    FakeDaemon d([&](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.raw(message);
        return true;
    });
    auto c = connect_to(d);
    auto p = join_params();
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), -EPROTO);
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, RDMAMCAST_E_PROTOCOL);
    EXPECT_NE(e->message[0], '\0');
    // The reply may have been the garbage: nothing on this connection can be trusted now.
    EXPECT_EQ(rdmamcast_leave(c.get(), 1), -EPROTO);
    EXPECT_EQ(d.requests_of<proto::Leave>().size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Messages, ClientGarbage,
    ::testing::Values(Garbage{"not_json", "this is not JSON"},
                      Garbage{"array", "[1, 2, 3]"},
                      Garbage{"truncated", "{\"id\": 2, \"ok\": tr"},
                      Garbage{"binary", "\x01\xff\xfe\x00garbage"},
                      Garbage{"ok_not_bool", "{\"id\": 2, \"ok\": 1, \"result\": {}}"}),
    [](const auto &p) { return std::string(p.param.name); });

// A reply that decodes but whose result does not: the call fails, the connection lives on.
TEST(ClientGarbageResult, BadJoinResultIsEprotoButNotFatal) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.raw("{\"id\": " + std::to_string(env.id) +
              ", \"ok\": true, \"result\": {\"membership\": \"seven\"}}");
        return true;
    });
    auto c = connect_to(d);
    auto p = join_params();
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), -EPROTO);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_PROTOCOL);
    EXPECT_EQ(rdmamcast_leave(c.get(), 1), 0);
}

TEST(ClientGarbageEvent, IsEprotoFromNextEvent) {
    FakeDaemon d;
    auto c = connect_to(d);
    d.with_sessions([](std::vector<Session *> &ss) { ss.at(0)->raw("{{{"); });
    ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 10000));
    rdmamcast_event ev;
    EXPECT_EQ(rdmamcast_next_event(c.get(), &ev), -EPROTO);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_PROTOCOL);
}

} // namespace
