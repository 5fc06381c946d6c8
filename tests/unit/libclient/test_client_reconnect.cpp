// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A version 2 daemon restarts under the C API: the handle reconnects, resumes its session and
// says so with one RECONNECTED event; a daemon that stops for good, a disabled reconnect and a
// daemon that never comes back leave the handle disconnected as before.
//
// A "restart" is FakeDaemon::close_all(): the fake keeps listening and takes the next
// connection, as a daemon started again on the same socket would.
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>

#include "client_testing.hpp"

namespace {

using namespace fake;
namespace proto = mcastd::proto;
using Ids = std::vector<std::uint64_t>;
using Clock = std::chrono::steady_clock;

std::uint64_t join(rdmamcast_client *c) {
    auto p = join_params();
    std::uint64_t m = 0;
    EXPECT_EQ(rdmamcast_join(c, &p, nullptr, &m), 0) << rdmamcast_last_error(c)->message;
    return m;
}

Ids ids(const std::uint64_t *p, std::size_t n) { return n ? Ids(p, p + n) : Ids{}; }

// The hellos the daemon received, in order.
std::vector<proto::Hello> hellos(FakeDaemon &d) { return d.requests_of<proto::Hello>(); }

// Requests of type T on the `session`-th connection.
template <class T> std::vector<T> on_session(FakeDaemon &d, std::size_t session) {
    std::vector<T> out;
    for (const auto &r : d.requests())
        if (const auto *t = std::get_if<T>(&r.envelope.request); t && r.session == session)
            out.push_back(*t);
    return out;
}

// What rdmamcast_next_event() returns now; the event itself is dropped.
int next_rc(rdmamcast_client *c) {
    rdmamcast_event ev;
    return rdmamcast_next_event(c, &ev);
}

// A RECONNECTED event, copied out of the C structure (`ok` false when the next event was not
// one).
struct Reconnected {
    bool ok = false;
    int resumed = -1;
    Ids kept, lost;
};
Reconnected reconnected(rdmamcast_client *c) {
    rdmamcast_event ev{};
    const int rc = rdmamcast_next_event(c, &ev);
    EXPECT_EQ(rc, 0) << rdmamcast_last_error(c)->message;
    EXPECT_EQ(ev.type, RDMAMCAST_EVENT_RECONNECTED);
    if (rc != 0 || ev.type != RDMAMCAST_EVENT_RECONNECTED)
        return {};
    const auto &r = ev.reconnected;
    return {true, r.resumed, ids(r.kept, r.num_kept), ids(r.lost, r.num_lost)};
}

// Restarts the daemon: the event descriptor, still the same one, becomes readable.
void restart(FakeDaemon &d, rdmamcast_client *c) {
    const int fd = rdmamcast_event_fd(c);
    d.close_all();
    EXPECT_TRUE(readable(fd, 10000));
    EXPECT_EQ(rdmamcast_event_fd(c), fd);
}

// Restarts the daemon; returns what rdmamcast_next_event() then does.
int restart_and_next(FakeDaemon &d, rdmamcast_client *c) {
    restart(d, c);
    return next_rc(c);
}

// Restarts the daemon and takes the RECONNECTED event.
Reconnected restart_and_reconnect(FakeDaemon &d, rdmamcast_client *c) {
    restart(d, c);
    return reconnected(c);
}

TEST(ClientReconnect, FirstHelloTakesASessionTicket) {
    FakeDaemon d(version2(resume_refused()));
    auto c = connect_to(d);
    EXPECT_EQ(rdmamcast_protocol_version(c.get()), 2u);
    ASSERT_EQ(hellos(d).size(), 1u);
    EXPECT_FALSE(hellos(d)[0].resume);
}

TEST(ClientReconnect, ResumeKeepsTheMembershipsAndQueuesOneEvent) {
    FakeDaemon d(version2(resume_gives({7, 8}), joins_from(7)));
    auto c = connect_to(d);
    EXPECT_EQ(join(c.get()), 7u);
    EXPECT_EQ(join(c.get()), 8u);
    const int fd = rdmamcast_event_fd(c.get());

    // An event sent before the break still comes first.
    proto::RestoredEvent re;
    re.membership = 7;
    re.record = sample_record();
    d.broadcast(re);
    d.close_all();
    ASSERT_TRUE(readable(fd, 10000));
    rdmamcast_event ev;
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
    EXPECT_EQ(ev.type, RDMAMCAST_EVENT_RESTORED);

    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0) << rdmamcast_last_error(c.get())->message;
    ASSERT_EQ(ev.type, RDMAMCAST_EVENT_RECONNECTED);
    EXPECT_EQ(ev.membership, 0u);
    EXPECT_EQ(ev.reconnected.resumed, 1);
    EXPECT_EQ(ids(ev.reconnected.kept, ev.reconnected.num_kept), (Ids{7, 8}));
    EXPECT_EQ(ev.reconnected.num_lost, 0u);
    EXPECT_EQ(ev.reconnected.lost, nullptr);
    EXPECT_LT(ev.reconnected.gap_ms, 10000u);
    EXPECT_EQ(ev.reconnected.reserved0[0], 0u);
    EXPECT_EQ(ev.reconnected.reserved1[1], 0u);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_NONE);

    // Exactly one event, on the same descriptor, which is quiet again.
    EXPECT_EQ(rdmamcast_event_fd(c.get()), fd);
    EXPECT_EQ(next_rc(c.get()), -EAGAIN);
    EXPECT_FALSE(readable(fd, 0));

    // The second hello resumed session 1 with its token; nothing was joined again or left.
    auto h = hellos(d);
    ASSERT_EQ(h.size(), 2u);
    ASSERT_TRUE(h[1].resume);
    EXPECT_EQ(*h[1].resume, ticket(1));
    EXPECT_EQ(d.requests_of<proto::Join>().size(), 2u);
    EXPECT_TRUE(d.requests_of<proto::Leave>().empty());

    // The new connection serves the handle, and its events reach the same descriptor.
    EXPECT_EQ(rdmamcast_leave(c.get(), 8), 0);
    EXPECT_EQ(on_session<proto::Leave>(d, 1).size(), 1u);
    d.broadcast(re);
    ASSERT_TRUE(readable(fd, 10000));
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
    EXPECT_EQ(ev.type, RDMAMCAST_EVENT_RESTORED);
}

// The daemon hands back 7 but not 8, and also 12, which this handle never heard of (a join
// whose reply the break swallowed): 8 is lost, 12 is left without a word.
TEST(ClientReconnect, ResumedSessionTellsKeptFromLostAndLeavesStrangers) {
    FakeDaemon d(version2(resume_gives({7, 12}), joins_from(7)));
    auto c = connect_to(d);
    join(c.get());
    join(c.get());
    auto r = restart_and_reconnect(d, c.get());
    EXPECT_EQ(r.resumed, 1);
    EXPECT_EQ(r.kept, (Ids{7}));
    EXPECT_EQ(r.lost, (Ids{8}));
    auto leaves = on_session<proto::Leave>(d, 1);
    ASSERT_EQ(leaves.size(), 1u);
    EXPECT_EQ(leaves[0].membership, 12u);
    EXPECT_EQ(next_rc(c.get()), -EAGAIN);
}

TEST(ClientReconnect, RefusedResumeLosesEverythingAndTakesTheNewSession) {
    FakeDaemon d(version2(resume_refused(), joins_from(7)));
    auto c = connect_to(d);
    join(c.get());
    join(c.get());
    auto r = restart_and_reconnect(d, c.get());
    EXPECT_EQ(r.resumed, 0);
    EXPECT_TRUE(r.kept.empty());
    EXPECT_EQ(r.lost, (Ids{7, 8}));

    // The next restart resumes the new session, 2, and loses nothing more: the lost ones are
    // no longer this handle's.
    r = restart_and_reconnect(d, c.get());
    EXPECT_TRUE(r.ok);
    EXPECT_TRUE(r.lost.empty());
    auto h = hellos(d);
    ASSERT_EQ(h.size(), 3u);
    EXPECT_EQ(*h[1].resume, ticket(1));
    EXPECT_EQ(*h[2].resume, ticket(2));
}

TEST(ClientReconnect, MonitorIsRenewedOnANewSessionOnly) {
    auto resumes = std::make_shared<bool>(true);
    FakeDaemon d(version2([resumes](const proto::SessionTicket &) {
        return *resumes ? std::optional<Ids>(Ids{}) : std::nullopt;
    }));
    auto c = connect_to(d);
    ASSERT_EQ(rdmamcast_monitor(c.get(), true), 0);
    EXPECT_EQ(restart_and_reconnect(d, c.get()).resumed, 1);
    EXPECT_TRUE(on_session<proto::Monitor>(d, 1).empty()) << "a resumed session keeps it";

    *resumes = false; // read on the daemon's thread only after the next close_all()
    EXPECT_EQ(restart_and_reconnect(d, c.get()).resumed, 0);
    auto renewed = on_session<proto::Monitor>(d, 2);
    ASSERT_EQ(renewed.size(), 1u);
    EXPECT_TRUE(renewed[0].enable);
}

TEST(ClientReconnect, StoppingMeansNoReconnect) {
    FakeDaemon d(version2(resume_gives({})));
    auto c = connect_to(d);
    d.broadcast(proto::StoppingEvent{"rdma-mcastd is shutting down (systemctl stop)"});
    EXPECT_EQ(restart_and_next(d, c.get()), -ECONNRESET);
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, RDMAMCAST_E_DISCONNECTED);
    EXPECT_STREQ(e->message, "rdma-mcastd stopped: rdma-mcastd is shutting down (systemctl stop)");
    // Dead: later calls fail the same way, and nothing tried to connect again.
    EXPECT_EQ(rdmamcast_leave(c.get(), 1), -ECONNRESET);
    EXPECT_STREQ(rdmamcast_last_error(c.get())->message,
                 "rdma-mcastd stopped: rdma-mcastd is shutting down (systemctl stop)");
    EXPECT_EQ(hellos(d).size(), 1u);
    EXPECT_TRUE(d.requests_of<proto::Leave>().empty());
}

TEST(ClientReconnect, StoppingDuringACallFailsIt) {
    FakeDaemon d(version2(resume_gives({}), [](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.event(proto::StoppingEvent{"bye"});
        s.close();
        return true;
    }));
    auto c = connect_to(d);
    auto p = join_params();
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), -ECONNRESET);
    EXPECT_STREQ(rdmamcast_last_error(c.get())->message, "rdma-mcastd stopped: bye");
    EXPECT_EQ(hellos(d).size(), 1u);
}

TEST(ClientReconnect, DisabledIsFinalAsBefore) {
    FakeDaemon d(version2(resume_gives({})));
    auto c = connect_to(d);
    ASSERT_EQ(rdmamcast_set_reconnect(c.get(), 0, 0), 0);
    EXPECT_EQ(restart_and_next(d, c.get()), -ECONNRESET);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_DISCONNECTED);
    EXPECT_STREQ(rdmamcast_last_error(c.get())->message, "rdma-mcastd closed the connection");
    EXPECT_EQ(rdmamcast_leave(c.get(), 1), -ECONNRESET);
    EXPECT_EQ(hellos(d).size(), 1u);
}

// The existing ClientDisconnect tests run against the default fake, which speaks version 1:
// there is no session to resume, so a lost connection stays final whatever the setting.
TEST(ClientReconnect, Version1DaemonIsNotReconnected) {
    FakeDaemon d;
    auto c = connect_to(d);
    ASSERT_EQ(rdmamcast_protocol_version(c.get()), 1u);
    EXPECT_EQ(restart_and_next(d, c.get()), -ECONNRESET);
    EXPECT_EQ(rdmamcast_leave(c.get(), 1), -ECONNRESET);
    EXPECT_EQ(hellos(d).size(), 1u);
}

TEST(ClientReconnect, GivesUpAfterTheLimit) {
    FakeDaemon d(version2(resume_gives({})));
    auto c = connect_to(d);
    ASSERT_EQ(rdmamcast_set_reconnect(c.get(), 1, 300), 0);
    d.stop_listening();
    d.close_all();
    ASSERT_TRUE(d.wait_closed(1));
    const auto start = Clock::now();
    EXPECT_EQ(rdmamcast_leave(c.get(), 1), -ECONNRESET);
    const auto took = Clock::now() - start;
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, RDMAMCAST_E_DISCONNECTED);
    EXPECT_NE(std::strstr(e->message, "did not come back within 300 ms"), nullptr) << e->message;
    EXPECT_NE(std::strstr(e->message, "No such file or directory"), nullptr) << e->message;
    EXPECT_GE(took, std::chrono::milliseconds(300));
    EXPECT_LT(took, std::chrono::seconds(5));
    // Dead from then on, at once.
    const auto again = Clock::now();
    EXPECT_EQ(next_rc(c.get()), -ECONNRESET);
    EXPECT_LT(Clock::now() - again, std::chrono::milliseconds(100));
}

// The daemon drops the first two resuming hellos (still starting, say); the third succeeds.
// Between attempts the handle waits 50 ms, then 100 ms, each at least 80 % of that.
TEST(ClientReconnect, BacksOffWhileTheDaemonIsNotReady) {
    auto dropped = std::make_shared<int>(0);
    auto inner = version2(resume_gives({}));
    FakeDaemon d([dropped, inner](Session &s, const proto::RequestEnvelope &env) mutable {
        const auto *h = std::get_if<proto::Hello>(&env.request);
        if (h && h->resume && (*dropped)++ < 2) {
            s.close();
            return true;
        }
        return inner(s, env);
    });
    auto c = connect_to(d);
    d.close_all();
    ASSERT_TRUE(d.wait_closed(1));
    const auto start = Clock::now();
    EXPECT_EQ(rdmamcast_leave(c.get(), 1), 0) << rdmamcast_last_error(c.get())->message;
    EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(120));
    EXPECT_EQ(hellos(d).size(), 4u);
    EXPECT_TRUE(reconnected(c.get()).ok);
}

// A call made after the daemon went away (unnoticed) reconnects first: its request was never
// sent, so it is sent on the new connection and answered normally.
TEST(ClientReconnect, CallWhileDisconnectedReconnectsFirst) {
    FakeDaemon d(version2(resume_gives({7}), joins_from(7)));
    auto c = connect_to(d);
    join(c.get());
    d.close_all();
    ASSERT_TRUE(d.wait_closed(1));
    EXPECT_EQ(rdmamcast_leave(c.get(), 7), 0) << rdmamcast_last_error(c.get())->message;
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_NONE);
    auto leaves = on_session<proto::Leave>(d, 1);
    ASSERT_EQ(leaves.size(), 1u);
    EXPECT_EQ(leaves[0].membership, 7u);
    // The event was queued during the call and wakes the descriptor.
    ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 0));
    EXPECT_EQ(reconnected(c.get()).kept, (Ids{7}));
}

// The daemon goes away with a join in flight, having made the membership (7) but not said so:
// the join fails as disconnected with an unknown outcome, the membership the resumed session
// brings back is left, and the handle goes on working.
TEST(ClientReconnect, CallInFlightIsDisconnectedButTheHandleWorksAfterwards) {
    auto first = std::make_shared<bool>(true);
    FakeDaemon d(version2(resume_gives({7}), [first](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        if (*first) {
            *first = false;
            s.close();
        } else {
            s.reply(env.id, proto::JoinResult{8, sample_record()});
        }
        return true;
    }));
    auto c = connect_to(d);
    auto p = join_params();
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), -ECONNRESET);
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, RDMAMCAST_E_DISCONNECTED);
    EXPECT_NE(std::strstr(e->message, "restarted"), nullptr) << e->message;
    EXPECT_NE(std::strstr(e->message, "outcome is unknown"), nullptr) << e->message;

    auto leaves = on_session<proto::Leave>(d, 1);
    ASSERT_EQ(leaves.size(), 1u);
    EXPECT_EQ(leaves[0].membership, 7u);

    std::uint64_t m = 0;
    ASSERT_EQ(rdmamcast_join(c.get(), &p, nullptr, &m), 0) << rdmamcast_last_error(c.get())->message;
    EXPECT_EQ(m, 8u);
    auto r = reconnected(c.get());
    EXPECT_TRUE(r.ok);
    EXPECT_TRUE(r.kept.empty());
    EXPECT_TRUE(r.lost.empty());
    EXPECT_EQ(next_rc(c.get()), -EAGAIN);
}

// A leave in flight when the daemon went away took effect: the membership is not reported lost.
TEST(ClientReconnect, LeaveInFlightThatTookEffectIsNotALoss) {
    auto first = std::make_shared<bool>(true);
    FakeDaemon d(version2(resume_gives({}), [first, joins = joins_from(7)](
                                         Session &s, const proto::RequestEnvelope &env) mutable {
        if (std::holds_alternative<proto::Leave>(env.request) && *first) {
            *first = false;
            s.close();
            return true;
        }
        return joins(s, env);
    }));
    auto c = connect_to(d);
    join(c.get());
    join(c.get());
    EXPECT_EQ(rdmamcast_leave(c.get(), 7), -ECONNRESET);
    EXPECT_EQ(reconnected(c.get()).lost, (Ids{8}));
}

// A daemon replaced by one that speaks only version 1 rejects the resume key: the handle says
// a plain hello instead, and from then on a lost connection is final.
TEST(ClientReconnect, DaemonWithoutSessionsGetsAPlainHello) {
    auto v2 = std::make_shared<bool>(true);
    auto inner = version2(resume_gives({7}), joins_from(7));
    FakeDaemon d([v2, inner](Session &s, const proto::RequestEnvelope &env) mutable {
        const auto *h = std::get_if<proto::Hello>(&env.request);
        if (*v2 || !h)
            return inner(s, env);
        if (h->resume)
            s.fail(env.id, mcastd::Errc::invalid_argument, "unknown key", std::nullopt, "/resume");
        else
            s.reply(env.id, hello_result());
        return true;
    });
    auto c = connect_to(d);
    join(c.get());
    *v2 = false; // read on the daemon's thread only after close_all()
    auto r = restart_and_reconnect(d, c.get());
    EXPECT_EQ(r.resumed, 0);
    EXPECT_EQ(r.lost, (Ids{7}));
    EXPECT_EQ(rdmamcast_protocol_version(c.get()), 1u);
    ASSERT_EQ(hellos(d).size(), 3u);
    EXPECT_FALSE(hellos(d)[2].resume);

    EXPECT_EQ(restart_and_next(d, c.get()), -ECONNRESET);
    EXPECT_EQ(hellos(d).size(), 3u);
}

TEST(ClientReconnect, RefusedHelloIsFinal) {
    auto v2 = std::make_shared<bool>(true);
    auto inner = version2(resume_gives({}));
    FakeDaemon d([v2, inner](Session &s, const proto::RequestEnvelope &env) mutable {
        if (*v2)
            return inner(s, env);
        s.fail(env.id, mcastd::Errc::denied, "uid 1000 may no longer use rdma-mcastd");
        return true;
    });
    auto c = connect_to(d);
    *v2 = false; // read on the daemon's thread only after close_all()
    EXPECT_EQ(restart_and_next(d, c.get()), -ECONNRESET);
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, RDMAMCAST_E_DISCONNECTED);
    EXPECT_NE(std::strstr(e->message, "denied: uid 1000 may no longer use rdma-mcastd"), nullptr)
        << e->message;
    EXPECT_EQ(hellos(d).size(), 2u);
}

TEST(ClientReconnect, SetReconnectNeedsAHandle) {
    EXPECT_EQ(rdmamcast_set_reconnect(nullptr, 1, 0), -EINVAL);
}

} // namespace
