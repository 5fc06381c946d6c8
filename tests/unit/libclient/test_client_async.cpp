// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdmamcast_join_start / rdmamcast_join_cancel: completions as events, exactly once, with their
// own context, in the daemon's order; the window of joins in flight; the blocking join on the
// same path; a reconnect with joins in flight. The fake daemon here holds joins the way the
// real one does while the SA works, and answers them when the test says, in any order.
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include <rdmamcast/client.hpp>

#include "client_testing.hpp"

namespace {

using namespace fake;
namespace proto = mcastd::proto;

// What a daemon holding joins knows. Touched on the daemon's thread only (its handler and
// with_sessions()), so it needs no lock.
struct Held {
    std::map<std::uint64_t, mcastd::JoinRequest> pending; // request id -> join
    std::vector<std::uint64_t> arrival;                   // request ids, in arrival order
    std::size_t max_pending = 0;
    std::uint64_t next_membership = 100;
    std::size_t cancels = 0;
    // A membership id the daemon gives each request id (once it answered it).
    std::map<std::uint64_t, std::uint64_t> membership_of;
};

// The join's MGID's last two bytes: the tests number their joins that way.
unsigned index_of(const mcastd::Gid &g) { return (unsigned{g[14]} << 8) | g[15]; }

mcastd::Gid mgid_of(unsigned i) {
    mcastd::Gid g = gid("ff15::1:0");
    g[14] = static_cast<std::uint8_t>(i >> 8);
    g[15] = static_cast<std::uint8_t>(i);
    return g;
}

unsigned index_of(const std::uint8_t *mgid) {
    mcastd::Gid g;
    std::memcpy(g.data(), mgid, 16);
    return index_of(g);
}

rdmamcast_join_params params_for(unsigned i) {
    rdmamcast_join_params p = join_params();
    std::memcpy(p.mgid, mgid_of(i).data(), 16);
    return p;
}

// A handler that holds joins as the daemon does (refusing more than 64 waiting, as
// limits.max_requests_in_flight does) and withdraws them on leave {"join": id}.
FakeDaemon::Handler holding(std::shared_ptr<Held> h) {
    return [h](Session &s, const proto::RequestEnvelope &env) {
        if (const auto *j = std::get_if<proto::Join>(&env.request)) {
            if (h->pending.size() >= 64) {
                s.fail(env.id, mcastd::Errc::limit,
                       "this connection has 64 joins waiting for the SA, its limit (config "
                       "limits.max_requests_in_flight: 64)");
                return true;
            }
            h->pending.emplace(env.id, j->request);
            h->arrival.push_back(env.id);
            h->max_pending = std::max(h->max_pending, h->pending.size());
            return true;
        }
        if (const auto *l = std::get_if<proto::Leave>(&env.request); l && l->join) {
            auto it = h->pending.find(*l->join);
            if (it == h->pending.end()) {
                s.fail(env.id, mcastd::Errc::not_found, "no pending join with that id");
                return true;
            }
            h->pending.erase(it);
            ++h->cancels;
            s.fail(*l->join, mcastd::Errc::cancelled, "the join was withdrawn");
            s.reply(env.id, proto::Empty{});
            return true;
        }
        return false;
    };
}

std::size_t joins_received(const std::vector<Received> &rs) {
    std::size_t n = 0;
    for (const auto &r : rs)
        n += std::holds_alternative<proto::Join>(r.envelope.request);
    return n;
}

// Answers every held join, newest first. `answer` decides: true = success.
using Answer = std::function<void(Session &, std::uint64_t id, const mcastd::JoinRequest &, Held &)>;

void succeed(Session &s, std::uint64_t id, const mcastd::JoinRequest &r, Held &h) {
    mcastd::McRecord rec = sample_record();
    rec.mgid = r.mgid;
    const std::uint64_t m = h.next_membership++;
    h.membership_of[id] = m;
    s.reply(id, proto::JoinResult{m, rec});
}

std::size_t answer_all(FakeDaemon &d, const std::shared_ptr<Held> &h, const Answer &answer = succeed) {
    std::size_t n = 0;
    d.with_sessions([&](std::vector<Session *> &ss) {
        if (ss.empty())
            return;
        for (auto it = h->pending.rbegin(); it != h->pending.rend(); ++it, ++n)
            answer(*ss.back(), it->first, it->second, *h);
        h->pending.clear();
    });
    return n;
}

std::size_t pending_at_daemon(FakeDaemon &d, const std::shared_ptr<Held> &h) {
    std::size_t n = 0;
    d.with_sessions([&](std::vector<Session *> &) { n = h->pending.size(); });
    return n;
}

// A copy of what a completion said, taken before the next event invalidates its strings.
struct Completion {
    rdmamcast_event_type type{};
    void *context = nullptr;
    std::uint64_t join_id = 0;
    std::uint64_t membership = 0;
    rdmamcast_record record{};
    rdmamcast_errc code{};
    int err = 0;
    std::string message, rule;
    bool has_sa_status = false;
    std::uint16_t sa_status = 0;
};

struct Seen {
    std::vector<Completion> completions;
    std::vector<rdmamcast_event> others; // their pointers are not to be followed
    std::vector<int> order;              // event types in arrival order
    std::vector<std::uint64_t> order_membership;
};

// Takes every event there is now.
void drain(rdmamcast_client *c, Seen &seen) {
    rdmamcast_event ev;
    int rc;
    while ((rc = rdmamcast_next_event(c, &ev)) == 0) {
        seen.order.push_back(ev.type);
        seen.order_membership.push_back(ev.membership);
        if (ev.type == RDMAMCAST_EVENT_JOINED) {
            Completion x{ev.type, ev.joined.context, ev.joined.join_id, ev.membership,
                         ev.joined.record, RDMAMCAST_E_NONE, 0, {}, {}, false, 0};
            seen.completions.push_back(x);
        } else if (ev.type == RDMAMCAST_EVENT_JOIN_ERROR) {
            const auto &e = ev.join_error.error;
            EXPECT_EQ(ev.membership, 0u);
            Completion x{ev.type, ev.join_error.context, ev.join_error.join_id, 0, {}, e.code,
                         e.err, e.message, e.rule, e.has_sa_status, e.sa_status};
            seen.completions.push_back(x);
        } else {
            seen.others.push_back(ev);
        }
    }
    ASSERT_EQ(rc, -EAGAIN) << rdmamcast_last_error(c)->message;
}

// Polls and drains until `n` completions arrived (bounded).
void drain_until(rdmamcast_client *c, Seen &seen, std::size_t n) {
    for (int i = 0; i < 1000 && seen.completions.size() < n; ++i) {
        if (!readable(rdmamcast_event_fd(c), 10000))
            break;
        drain(c, seen);
    }
}

struct Ctx {
    unsigned index = 0;
    std::uint64_t join_id = 0;
    int completions = 0;
};

// Starts joins 0..n-1, each with its own context; the vector must not move afterwards.
std::vector<Ctx> start_all(rdmamcast_client *c, unsigned n) {
    std::vector<Ctx> ctx(n);
    for (unsigned i = 0; i < n; ++i) {
        ctx[i].index = i;
        auto p = params_for(i);
        EXPECT_EQ(rdmamcast_join_start(c, &p, &ctx[i], &ctx[i].join_id), 0)
            << i << ": " << rdmamcast_last_error(c)->message;
    }
    return ctx;
}

// Each completion names a context of ours, its own join id, and (when joined) the record of
// its own group: returns the contexts by index.
void check_own(const Seen &seen, std::vector<Ctx> &ctx) {
    for (const auto &x : seen.completions) {
        auto *k = static_cast<Ctx *>(x.context);
        ASSERT_TRUE(k >= ctx.data() && k < ctx.data() + ctx.size());
        ++k->completions;
        EXPECT_EQ(x.join_id, k->join_id) << "join " << k->index;
        if (x.type == RDMAMCAST_EVENT_JOINED) {
            EXPECT_EQ(index_of(x.record.mgid), k->index);
        }
    }
}

TEST(ClientAsync, FiveHundredStartsCompleteExactlyOnceWithTheirOwnContext) {
    auto h = std::make_shared<Held>();
    FakeDaemon d(holding(h));
    auto c = connect_to(d);
    auto ctx = start_all(c.get(), 500);
    // Start returns at once: nothing has completed, and the daemon got one window's worth.
    ASSERT_TRUE(d.wait_for([](const auto &rs) { return rs.size() >= 1 + 64; }));
    EXPECT_EQ(pending_at_daemon(d, h), std::size_t{RDMAMCAST_JOIN_WINDOW});

    Seen seen;
    for (int round = 0; round < 100 && seen.completions.size() < ctx.size(); ++round) {
        // The library refilled the window: wait until the daemon has all of it.
        const std::size_t sent =
            seen.completions.size() + std::min<std::size_t>(64, ctx.size() - seen.completions.size());
        ASSERT_TRUE(d.wait_for([&](const auto &rs) { return joins_received(rs) >= sent; }));
        answer_all(d, h); // newest first: out of order
        drain_until(c.get(), seen, std::min(ctx.size(), seen.completions.size() + 1));
        drain(c.get(), seen);
    }
    ASSERT_EQ(seen.completions.size(), ctx.size());
    check_own(seen, ctx);
    std::set<std::uint64_t> memberships, ids;
    for (const auto &x : seen.completions) {
        EXPECT_EQ(x.type, RDMAMCAST_EVENT_JOINED);
        memberships.insert(x.membership);
        ids.insert(x.join_id);
    }
    EXPECT_EQ(memberships.size(), ctx.size());
    EXPECT_EQ(ids.size(), ctx.size());
    for (const auto &k : ctx)
        EXPECT_EQ(k.completions, 1) << "join " << k.index;
    // The window held: never more than 64 at the daemon, and it was used.
    d.with_sessions([&](std::vector<Session *> &) {
        EXPECT_EQ(h->max_pending, std::size_t{RDMAMCAST_JOIN_WINDOW});
        EXPECT_EQ(h->arrival.size(), ctx.size());
    });
    // Nothing more comes.
    EXPECT_FALSE(readable(rdmamcast_event_fd(c.get()), 50));
    rdmamcast_event ev;
    EXPECT_EQ(rdmamcast_next_event(c.get(), &ev), -EAGAIN);
}

TEST(ClientAsync, ErrorsGoToTheirOwnContext) {
    auto h = std::make_shared<Held>();
    FakeDaemon d(holding(h));
    auto c = connect_to(d);
    auto ctx = start_all(c.get(), 60);
    ASSERT_TRUE(d.wait_for([](const auto &rs) { return rs.size() >= 1 + 60; }));
    // i % 3 == 0: an SA error with a status of its own; 1: denied by a rule of its own; 2: ok.
    answer_all(d, h, [](Session &s, std::uint64_t id, const mcastd::JoinRequest &r, Held &hh) {
        const unsigned i = index_of(r.mgid);
        if (i % 3 == 0)
            s.fail(id, mcastd::Errc::sa_error, "join " + std::to_string(i) + " refused by the SA",
                   static_cast<std::uint16_t>(0x0200 + i));
        else if (i % 3 == 1)
            s.fail(id, policy_failure(mcastd::Errc::denied, "join " + std::to_string(i) + " denied",
                                      mcastd::PolicyRef{"rule-" + std::to_string(i), "", 0}));
        else
            succeed(s, id, r, hh);
    });
    Seen seen;
    drain_until(c.get(), seen, ctx.size());
    ASSERT_EQ(seen.completions.size(), ctx.size());
    check_own(seen, ctx);
    for (const auto &x : seen.completions) {
        const unsigned i = static_cast<Ctx *>(x.context)->index;
        const std::string tag = "join " + std::to_string(i) + " ";
        switch (i % 3) {
        case 0:
            EXPECT_EQ(x.type, RDMAMCAST_EVENT_JOIN_ERROR);
            EXPECT_EQ(x.code, RDMAMCAST_E_SA_ERROR);
            EXPECT_EQ(x.err, -EREMOTEIO);
            EXPECT_TRUE(x.has_sa_status);
            EXPECT_EQ(x.sa_status, 0x0200 + i);
            EXPECT_EQ(x.message.rfind(tag, 0), 0u) << x.message;
            break;
        case 1:
            EXPECT_EQ(x.type, RDMAMCAST_EVENT_JOIN_ERROR);
            EXPECT_EQ(x.code, RDMAMCAST_E_DENIED);
            EXPECT_EQ(x.err, -EACCES);
            EXPECT_EQ(x.rule, "rule-" + std::to_string(i));
            EXPECT_EQ(x.message.rfind(tag, 0), 0u) << x.message;
            break;
        default: EXPECT_EQ(x.type, RDMAMCAST_EVENT_JOINED); break;
        }
    }
    for (const auto &k : ctx)
        EXPECT_EQ(k.completions, 1);
}

TEST(ClientAsync, BadParametersStartNothing) {
    auto h = std::make_shared<Held>();
    FakeDaemon d(holding(h));
    auto c = connect_to(d);
    auto p = params_for(1);
    p.port = 0;
    std::uint64_t id = 77;
    EXPECT_EQ(rdmamcast_join_start(c.get(), &p, nullptr, &id), -EINVAL);
    EXPECT_STREQ(rdmamcast_last_error(c.get())->field, "/port");
    EXPECT_EQ(id, 77u);
    EXPECT_EQ(rdmamcast_join_start(nullptr, &p, nullptr, &id), -EINVAL);
    EXPECT_EQ(rdmamcast_join_cancel(nullptr, 1), -EINVAL);
    EXPECT_FALSE(readable(rdmamcast_event_fd(c.get()), 50));
    EXPECT_TRUE(d.requests_of<proto::Join>().empty());
}

// A join the daemon holds and one still in the local queue: each cancel yields exactly one
// cancelled completion and nothing after; a second cancel, or one after completion, is -ENOENT.
TEST(ClientAsync, CancelYieldsExactlyOneCancelledCompletion) {
    auto h = std::make_shared<Held>();
    FakeDaemon d(holding(h));
    auto c = connect_to(d);
    auto ctx = start_all(c.get(), 100);
    ASSERT_TRUE(d.wait_for([](const auto &rs) { return rs.size() >= 1 + 64; }));
    // 3 queued ones, then 3 sent ones (whose cancelled answers free slots for queued ones).
    const std::vector<unsigned> order = {64, 90, 99, 3, 10, 63};
    const std::set<unsigned> cancelled(order.begin(), order.end());
    for (unsigned i : order)
        ASSERT_EQ(rdmamcast_join_cancel(c.get(), ctx[i].join_id), 0)
            << i << ": " << rdmamcast_last_error(c.get())->message;
    for (unsigned i : cancelled) {
        EXPECT_EQ(rdmamcast_join_cancel(c.get(), ctx[i].join_id), -ENOENT);
        EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_NOT_FOUND);
    }
    EXPECT_EQ(rdmamcast_join_cancel(c.get(), 123456), -ENOENT);

    Seen seen;
    // Each round answers what has reached the daemon and waits for at least one completion: a
    // loaded machine may need a round per join, so the bound is the number of joins.
    for (std::size_t round = 0; round <= ctx.size() && seen.completions.size() < ctx.size(); ++round) {
        answer_all(d, h);
        drain_until(c.get(), seen, std::min(ctx.size(), seen.completions.size() + 1));
        drain(c.get(), seen);
    }
    ASSERT_EQ(seen.completions.size(), ctx.size());
    check_own(seen, ctx);
    for (const auto &x : seen.completions) {
        const unsigned i = static_cast<Ctx *>(x.context)->index;
        if (cancelled.count(i)) {
            EXPECT_EQ(x.type, RDMAMCAST_EVENT_JOIN_ERROR) << i;
            EXPECT_EQ(x.code, RDMAMCAST_E_CANCELLED) << i;
            EXPECT_EQ(x.err, -ECANCELED) << i;
        } else {
            EXPECT_EQ(x.type, RDMAMCAST_EVENT_JOINED) << i;
        }
    }
    for (const auto &k : ctx)
        EXPECT_EQ(k.completions, 1) << k.index;
    d.with_sessions([&](std::vector<Session *> &) {
        EXPECT_EQ(h->cancels, 3u);             // the daemon withdrew the three it had
        EXPECT_EQ(h->arrival.size(), 100u - 3); // and never saw the three queued ones
    });
    // After completion: -ENOENT, and nothing more comes.
    EXPECT_EQ(rdmamcast_join_cancel(c.get(), ctx[0].join_id), -ENOENT);
    EXPECT_FALSE(readable(rdmamcast_event_fd(c.get()), 50));
}

// The daemon answered the join before the cancel reached it: the cancel is -ENOENT and the
// join's own completion (JOINED) comes, once.
TEST(ClientAsync, CancelThatLosesTheRaceIsEnoent) {
    auto h = std::make_shared<Held>();
    FakeDaemon d(holding(h));
    auto c = connect_to(d);
    Ctx k;
    auto p = params_for(5);
    ASSERT_EQ(rdmamcast_join_start(c.get(), &p, &k, &k.join_id), 0);
    ASSERT_TRUE(d.wait_for([](const auto &rs) { return rs.size() >= 2; }));
    answer_all(d, h); // the reply is in the socket; the library has not read it
    EXPECT_EQ(rdmamcast_join_cancel(c.get(), k.join_id), -ENOENT);
    EXPECT_NE(std::strstr(rdmamcast_last_error(c.get())->message, "completed"), nullptr);
    Seen seen;
    drain(c.get(), seen);
    ASSERT_EQ(seen.completions.size(), 1u);
    EXPECT_EQ(seen.completions[0].type, RDMAMCAST_EVENT_JOINED);
    EXPECT_EQ(seen.completions[0].context, &k);
    EXPECT_EQ(rdmamcast_leave(c.get(), seen.completions[0].membership), 0);
}

// The daemon sends a restored (or lost) event for a membership before the reply that names
// it: the completion never overtakes it, and one sent after the reply comes after.
TEST(ClientAsync, CompletionNeverPrecedesAnEarlierEventOfItsMembership) {
    FakeDaemon d([next = std::uint64_t{500}](Session &s, const proto::RequestEnvelope &env) mutable {
        const auto *j = std::get_if<proto::Join>(&env.request);
        if (!j)
            return false;
        const std::uint64_t m = next++;
        proto::RestoredEvent r;
        r.membership = m;
        r.record = sample_record();
        r.changed = mcastd::field::mlid;
        s.event(r);
        proto::LostEvent before;
        before.membership = m;
        before.why.error = mcastd::Error{mcastd::Errc::sa_error, "SM restarted", std::nullopt};
        s.event(before);
        s.reply(env.id, proto::JoinResult{m, sample_record()});
        s.event(r); // after the reply
        return true;
    });
    auto c = connect_to(d);
    auto ctx = start_all(c.get(), 40);
    // A blocking call in between queues whatever arrives meanwhile.
    rdmamcast_daemon_status *st = nullptr;
    ASSERT_EQ(rdmamcast_status(c.get(), &st), 0);
    rdmamcast_status_free(st);
    Seen seen;
    drain_until(c.get(), seen, ctx.size());
    drain(c.get(), seen);
    ASSERT_EQ(seen.completions.size(), ctx.size());
    // Per membership: RESTORED, LOST, JOINED, RESTORED.
    std::map<std::uint64_t, std::vector<int>> per;
    for (std::size_t i = 0; i < seen.order.size(); ++i)
        per[seen.order_membership[i]].push_back(seen.order[i]);
    ASSERT_EQ(per.size(), ctx.size());
    for (const auto &[m, types] : per)
        EXPECT_EQ(types, (std::vector<int>{RDMAMCAST_EVENT_RESTORED, RDMAMCAST_EVENT_LOST,
                                           RDMAMCAST_EVENT_JOINED, RDMAMCAST_EVENT_RESTORED}))
            << "membership " << m;
}

// The blocking join, between asynchronous ones the daemon answers later: it returns its own
// membership and record; theirs arrive as events, none lost, none doubled.
TEST(ClientAsync, BlockingJoinInterleavesWithAsyncOnes) {
    auto h = std::make_shared<Held>();
    // Holds joins 0..59; answers 60..99 at once; the blocking one (1000) makes it answer
    // itself and everything held, newest (itself) first.
    auto hold = holding(h);
    FakeDaemon d([h, hold](Session &s, const proto::RequestEnvelope &env) {
        const auto *j = std::get_if<proto::Join>(&env.request);
        if (!j)
            return hold(s, env);
        hold(s, env);
        const unsigned i = index_of(j->request.mgid);
        if (i >= 60) {
            const bool all = i == 1000;
            for (auto it = h->pending.rbegin(); it != h->pending.rend(); ++it)
                if (all || it->first == env.id)
                    succeed(s, it->first, it->second, *h);
            if (all)
                h->pending.clear();
            else
                h->pending.erase(env.id);
        }
        return true;
    });
    auto c = connect_to(d);
    auto ctx = start_all(c.get(), 100);
    // The blocking join queues behind the 100 and lets them out as answers free slots.
    auto p = params_for(1000);
    rdmamcast_record rec{};
    std::uint64_t m = 0;
    ASSERT_EQ(rdmamcast_join(c.get(), &p, &rec, &m), 0) << rdmamcast_last_error(c.get())->message;
    EXPECT_EQ(index_of(rec.mgid), 1000u);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_NONE);
    Seen seen;
    drain_until(c.get(), seen, ctx.size());
    ASSERT_EQ(seen.completions.size(), ctx.size());
    check_own(seen, ctx);
    for (const auto &x : seen.completions) {
        EXPECT_EQ(x.type, RDMAMCAST_EVENT_JOINED);
        EXPECT_NE(x.membership, m);
    }
    for (const auto &k : ctx)
        EXPECT_EQ(k.completions, 1);
    // The blocking join leaves normally; another blocking join works with nothing in flight.
    EXPECT_EQ(rdmamcast_leave(c.get(), m), 0);
    ASSERT_EQ(rdmamcast_join(c.get(), &p, &rec, &m), 0) << rdmamcast_last_error(c.get())->message;
    EXPECT_FALSE(readable(rdmamcast_event_fd(c.get()), 50));
}

// The daemon goes away with joins in flight and more queued: the sent ones complete as
// disconnected before the RECONNECTED event, the queued ones go out on the new connection.
TEST(ClientAsync, ReconnectFailsSentJoinsAndSendsQueuedOnes) {
    auto h = std::make_shared<Held>();
    FakeDaemon d(version2(resume_gives({}), holding(h)));
    auto c = connect_to(d);
    auto ctx = start_all(c.get(), 80);
    ASSERT_TRUE(d.wait_for([](const auto &rs) { return rs.size() >= 1 + 64; }));
    d.with_sessions([&](std::vector<Session *> &) { h->pending.clear(); });
    d.close_all();
    Seen seen;
    drain_until(c.get(), seen, 64);
    ASSERT_EQ(seen.completions.size(), 64u);
    for (const auto &x : seen.completions) {
        EXPECT_EQ(x.type, RDMAMCAST_EVENT_JOIN_ERROR);
        EXPECT_EQ(x.code, RDMAMCAST_E_DISCONNECTED);
        EXPECT_EQ(x.err, -ECONNRESET);
        EXPECT_LT(static_cast<Ctx *>(x.context)->index, 64u);
    }
    drain(c.get(), seen);
    ASSERT_FALSE(seen.order.empty());
    // The failures come first, then RECONNECTED.
    auto reconnected_at =
        std::find(seen.order.begin(), seen.order.end(), RDMAMCAST_EVENT_RECONNECTED);
    ASSERT_NE(reconnected_at, seen.order.end());
    EXPECT_EQ(reconnected_at - seen.order.begin(), 64);
    // The 16 queued ones went out on the new connection.
    ASSERT_TRUE(d.wait_for([](const auto &rs) {
        std::size_t joins = 0;
        for (const auto &r : rs)
            joins += r.session == 1 && std::holds_alternative<proto::Join>(r.envelope.request);
        return joins == 16;
    }));
    answer_all(d, h);
    drain_until(c.get(), seen, ctx.size());
    ASSERT_EQ(seen.completions.size(), ctx.size());
    check_own(seen, ctx);
    for (const auto &k : ctx)
        EXPECT_EQ(k.completions, 1);
    for (std::size_t i = 64; i < ctx.size(); ++i)
        EXPECT_EQ(seen.completions[i].type, RDMAMCAST_EVENT_JOINED);
}

// A handle that fails for good completes every join it still has, queued ones too.
TEST(ClientAsync, DeadHandleCompletesEverything) {
    auto h = std::make_shared<Held>();
    FakeDaemon d(holding(h)); // version 1: no reconnect
    auto c = connect_to(d);
    auto ctx = start_all(c.get(), 70);
    ASSERT_TRUE(d.wait_for([](const auto &rs) { return rs.size() >= 1 + 64; }));
    d.close_all();
    Seen seen;
    ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 10000));
    rdmamcast_event ev;
    int rc;
    while ((rc = rdmamcast_next_event(c.get(), &ev)) == 0) {
        ASSERT_EQ(ev.type, RDMAMCAST_EVENT_JOIN_ERROR);
        EXPECT_EQ(ev.join_error.error.code, RDMAMCAST_E_DISCONNECTED);
        ++static_cast<Ctx *>(ev.join_error.context)->completions;
    }
    EXPECT_EQ(rc, -ECONNRESET);
    for (const auto &k : ctx)
        EXPECT_EQ(k.completions, 1) << k.index;
    auto p = params_for(1);
    EXPECT_EQ(rdmamcast_join_start(c.get(), &p, nullptr, nullptr), -ECONNRESET);
}

// The C++ form: a callback per join, run from next_event(), exactly once, with a Membership that
// leaves when dropped, or the Error; cancel() withdraws; other events still come out.
TEST(ClientAsyncCpp, CallbacksRunOnceEachWithTheirOutcome) {
    auto h = std::make_shared<Held>();
    FakeDaemon d(holding(h));
    rdmamcast::Client client(d.path());
    std::map<unsigned, int> calls;
    std::vector<rdmamcast::Membership> kept;
    std::map<unsigned, rdmamcast::Error> errors;
    std::map<unsigned, std::uint64_t> ids;
    for (unsigned i = 0; i < 100; ++i) {
        const auto gid = mgid_of(i);
        rdmamcast::Gid g;
        std::copy(gid.begin(), gid.end(), g.begin());
        ids[i] = client.join_async(rdmamcast::JoinParams("mlx5_0", 1).mgid(g),
                                   [&, i](rdmamcast::JoinOutcome r) {
                                       ++calls[i];
                                       if (auto *m = std::get_if<rdmamcast::Membership>(&r)) {
                                           EXPECT_EQ(index_of(m->record().mgid), i);
                                           if (i % 2 == 0)
                                               kept.push_back(std::move(*m));
                                           // odd ones drop theirs: it leaves at once
                                       } else {
                                           errors.emplace(i, std::get<rdmamcast::Error>(r));
                                       }
                                   });
    }
    EXPECT_EQ(client.joins_pending(), 100u);
    EXPECT_TRUE(client.cancel(ids[7]));  // at the daemon
    EXPECT_TRUE(client.cancel(ids[80])); // still queued in the library
    EXPECT_FALSE(client.cancel(ids[80]));
    EXPECT_THROW(client.join_async(rdmamcast::JoinParams("", 1).mgid("ff15::1"), [](auto) {}),
                 rdmamcast::Error);

    d.broadcast(proto::RestoredEvent{4242, sample_record(), mcastd::field::mlid});
    std::size_t others = 0;
    for (int round = 0; round < 50 && client.joins_pending() > 0; ++round) {
        // The library refilled its window: wait until the daemon has it (80 never goes out).
        const std::size_t sent = std::min<std::size_t>(99, calls.size() - calls.count(80) + 64);
        ASSERT_TRUE(d.wait_for([&](const auto &rs) { return joins_received(rs) >= sent; }));
        answer_all(d, h, [](Session &s, std::uint64_t id, const mcastd::JoinRequest &r, Held &hh) {
            if (index_of(r.mgid) == 13)
                s.fail(id, mcastd::Errc::sa_error, "join 13 refused", std::uint16_t{0x0600});
            else
                succeed(s, id, r, hh);
        });
        if (!readable(client.event_fd(), 2000))
            continue;
        while (auto ev = client.next_event())
            others += std::holds_alternative<rdmamcast::RestoredEvent>(*ev);
    }
    EXPECT_EQ(client.joins_pending(), 0u);
    EXPECT_EQ(others, 1u);
    ASSERT_EQ(calls.size(), 100u);
    for (const auto &[i, n] : calls)
        EXPECT_EQ(n, 1) << i;
    ASSERT_EQ(errors.size(), 3u);
    EXPECT_EQ(errors.at(7).code(), RDMAMCAST_E_CANCELLED);
    EXPECT_EQ(errors.at(80).code(), RDMAMCAST_E_CANCELLED);
    EXPECT_EQ(errors.at(13).code(), RDMAMCAST_E_SA_ERROR);
    EXPECT_EQ(errors.at(13).sa_status(), std::optional<std::uint16_t>(0x0600));
    EXPECT_EQ(errors.at(13).result(), -EREMOTEIO);
    EXPECT_EQ(kept.size(), 49u); // even ones but 80
    // The odd successful ones (all but 7 and 13) left when their callbacks dropped them.
    std::size_t leaves = 0;
    for (const auto &l : d.requests_of<proto::Leave>())
        leaves += l.membership.has_value();
    EXPECT_EQ(leaves, 48u);
}

} // namespace
