// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// MadTransactions on a fake transport and a fake clock: TID matching, retries, backoff,
// bounces, windows, pacing, cancel and stats.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sa/mad_codec.hpp"
#include "sa/transactions.hpp"
#include "unit/fakes/fake_mad_transport.hpp"
#include "unit/fakes/fake_timers.hpp"
#include "unit/fakes/sa_routes.hpp"

namespace mcastd::sa {
namespace {

using namespace std::chrono_literals;
using test::FakeMadTransport;
using test::FakeTimers;
using Sent = FakeMadTransport::Sent;
using Id = MadTransactions::Id;

constexpr MadAddress kSa{.dlid = 1, .dqp = 1, .sl = 0, .qkey = 0x80010000, .pkey_index = 0};

// What a callback saw, copied out (the response span dies with the callback).
struct Done {
    Id id = 0;
    TxnOutcome::Kind kind = TxnOutcome::Kind::timeout;
    std::vector<std::uint8_t> response;
    unsigned tries = 0;
    TryFailure failure = TryFailure::none;
    int err = 0;
    std::string detail;
    TimePoint at;
};

std::uint32_t low32(std::uint64_t tid) { return static_cast<std::uint32_t>(tid); }

class Transactions : public ::testing::Test {
protected:
    void make(TransactionConfig cfg = {}) {
        tx.reset(); // before the new one registers its receiver: the old one clears it
        ids.clear();
        if (!cfg.first_tid)
            cfg.first_tid = 0x10000000;
        tx = std::make_unique<MadTransactions>(net, timers, cfg);
        routes = std::make_unique<test::SaRoutes>(*tx);
        routes->set(0, kSa);
        t0 = timers.now();
    }

    // An SA request (a Set, unless told otherwise) with a TID the transactions will replace.
    static MadBuf request(std::uint8_t method = mad::method_set) {
        McRecord r;
        r.join_state = join::full;
        MadBuf m = encode_mcmember_request(SaMethod::set, r, field::join_mask, 0xffffffffffffffffULL);
        m[3] = method;
        return m;
    }

    Id submit(PortIndex port = 0, Route route = Route::sa, MadBuf mad = request(),
              MadTransactions::Validator v = {}, std::optional<TryPolicy> policy = {}) {
        const std::size_t index = ids.size(); // the callback runs later: find the id by index
        const Id id = tx->submit(
            port, mad, route,
            [this, index](const TxnOutcome &o) {
                Done d;
                d.id = ids.at(index);
                d.kind = o.kind;
                d.response.assign(o.response.begin(), o.response.end());
                d.tries = o.tries;
                d.failure = o.last_failure;
                d.err = o.last_errno;
                d.detail = o.detail;
                d.at = timers.now();
                done.push_back(d);
            },
            std::move(v), policy);
        ids.push_back(id);
        return id;
    }

    // The answer an SA would send to `s`: same bytes, response method, given status.
    static MadBuf response_to(const Sent &s, std::uint8_t method = mad::method_get_resp,
                              std::uint16_t status = 0) {
        MadBuf m = s.mad;
        m[3] = method;
        m[4] = static_cast<std::uint8_t>(status >> 8);
        m[5] = static_cast<std::uint8_t>(status);
        return m;
    }
    void answer(const Sent &s) {
        const bool del = s.mad[3] == mad::method_delete;
        net.deliver(s.port, response_to(s, del ? mad::method_delete_resp : mad::method_get_resp));
    }

    Duration since_start(TimePoint t) const {
        return std::chrono::duration_cast<Duration>(t - t0);
    }

    FakeTimers timers;
    FakeMadTransport net;
    std::unique_ptr<MadTransactions> tx;
    std::unique_ptr<test::SaRoutes> routes; // what the port registry would answer
    std::vector<Done> done;
    std::vector<Id> ids;
    TimePoint t0;
};

TEST_F(Transactions, DefaultsAndTheirBound) {
    const TransactionConfig cfg;
    EXPECT_EQ(cfg.first_timeout, 300ms);
    EXPECT_EQ(cfg.max_timeout, 2000ms);
    EXPECT_EQ(cfg.max_tries, 6u);
    EXPECT_EQ(cfg.window, 16u);
    EXPECT_EQ(cfg.pacing_rate, 0.0);
    EXPECT_EQ(timeout_bound(cfg), 8100ms);
}

TEST_F(Transactions, RegistersAndClearsTheReceiver) {
    make();
    EXPECT_TRUE(net.has_receiver());
    submit();
    tx.reset();
    EXPECT_FALSE(net.has_receiver());
    EXPECT_EQ(timers.pending(), 0u) << "destruction must cancel every timer it started";
}

TEST_F(Transactions, FirstTryGoesOutAtOnceToTheSaAddress) {
    make();
    const MadBuf req = request();
    submit(0, Route::sa, req);
    ASSERT_EQ(net.sent().size(), 1u);
    const Sent &s = net.last();
    EXPECT_EQ(s.port, 0u);
    EXPECT_EQ(s.addr, kSa);
    EXPECT_EQ(s.timeout_ms, 300u);
    EXPECT_EQ(s.tid(), 0x10000000u) << "upper 32 bits 0, low 32 from the counter";
    // Everything but the TID is the caller's MAD.
    MadBuf expect = req;
    set_mad_tid(expect, s.tid());
    EXPECT_EQ(s.mad, expect);
    EXPECT_TRUE(done.empty());
}

TEST_F(Transactions, ResponseIsMatchedOnTheLow32TidBits) {
    make();
    submit();
    net.tid_high_pattern = 0xdeadbeef;
    const MadBuf resp = response_to(net.last());
    net.deliver(0, resp);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].kind, TxnOutcome::Kind::response);
    EXPECT_EQ(done[0].tries, 1u);
    ASSERT_EQ(done[0].response.size(), kMadSize);
    EXPECT_EQ(done[0].response[8], 0xde) << "the callback sees the MAD as received";
    EXPECT_EQ(std::memcmp(done[0].response.data() + 12, resp.data() + 12, 4), 0);
    EXPECT_EQ(timers.pending(), 0u) << "the try's timer is cancelled";
    EXPECT_EQ(tx->stats(0).responses, 1u);
}

TEST_F(Transactions, TidsFromOneCounterAcrossTransactionsAndPorts) {
    TransactionConfig cfg;
    cfg.first_tid = 0xfffffffe;
    make(cfg);
    routes->set(1, kSa);
    submit(0);
    submit(1);
    submit(0);
    ASSERT_EQ(net.sent().size(), 3u);
    EXPECT_EQ(net.sent()[0].tid(), 0xfffffffeu);
    EXPECT_EQ(net.sent()[1].tid(), 0xffffffffu);
    EXPECT_EQ(net.sent()[2].tid(), 0x00000000u) << "the counter wraps in 32 bits";
}

TEST_F(Transactions, EveryTryHasAFreshTid) {
    make();
    submit();
    timers.run_until_idle();
    ASSERT_EQ(net.sent().size(), 6u);
    for (std::size_t i = 0; i < net.sent().size(); ++i)
        for (std::size_t j = i + 1; j < net.sent().size(); ++j)
            EXPECT_NE(low32(net.sent()[i].tid()), low32(net.sent()[j].tid()));
}

TEST_F(Transactions, LateAnswerToAnEarlierTryCompletes) {
    make();
    submit();
    const Sent first = net.last();
    timers.advance(300ms);
    ASSERT_EQ(net.sent().size(), 2u);
    answer(first);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].kind, TxnOutcome::Kind::response);
    EXPECT_EQ(done[0].tries, 2u);
    timers.run_until_idle();
    EXPECT_EQ(net.sent().size(), 2u) << "no retransmit after completion";
    EXPECT_EQ(done.size(), 1u);
}

TEST_F(Transactions, LateAndDuplicateAnswersAfterCompletionAreIgnored) {
    make();
    submit();
    const Sent first = net.last();
    timers.advance(300ms);
    const Sent second = net.last();
    answer(second);
    answer(second); // duplicate
    answer(first);  // late answer to the earlier try
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(tx->stats(0).responses, 1u);
    EXPECT_EQ(tx->stats(0).late, 2u);
}

TEST_F(Transactions, BackoffDoublesUpToTheCapAndTimesOutAtTheBound) {
    make();
    submit();
    timers.run_until_idle();
    const std::vector<unsigned> want_timeouts{300, 600, 1200, 2000, 2000, 2000};
    const std::vector<Duration> want_at{0ms, 300ms, 900ms, 2100ms, 4100ms, 6100ms};
    ASSERT_EQ(net.sent().size(), want_timeouts.size());
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].kind, TxnOutcome::Kind::timeout);
    EXPECT_EQ(done[0].tries, 6u);
    EXPECT_EQ(done[0].failure, TryFailure::no_answer);
    EXPECT_EQ(since_start(done[0].at), 8100ms);
    for (std::size_t i = 0; i < want_timeouts.size(); ++i)
        EXPECT_EQ(net.sent()[i].timeout_ms, want_timeouts[i]) << "try " << i;

    // And the send times, observed step by step.
    make();
    net.clear_sent();
    done.clear();
    submit();
    for (std::size_t i = 1; i < want_at.size(); ++i) {
        timers.advance_to(t0 + want_at[i] - 1us);
        EXPECT_EQ(net.sent().size(), i) << "try " << i << " went out early";
        timers.advance(1us);
        EXPECT_EQ(net.sent().size(), i + 1) << "try " << i << " did not go out on time";
    }
    timers.advance_to(t0 + 8100ms - 1us);
    EXPECT_TRUE(done.empty());
    timers.advance(1us);
    EXPECT_EQ(done.size(), 1u);
    EXPECT_EQ(tx->stats(0).timeouts, 1u);
    EXPECT_EQ(tx->stats(0).retransmits, 5u);
}

TEST_F(Transactions, CustomBackoff) {
    TransactionConfig cfg;
    cfg.first_timeout = 100ms;
    cfg.max_timeout = 1000ms;
    cfg.max_tries = 8;
    make(cfg);
    submit();
    timers.run_until_idle();
    std::vector<unsigned> got;
    for (const Sent &s : net.sent())
        got.push_back(s.timeout_ms);
    EXPECT_EQ(got, (std::vector<unsigned>{100, 200, 400, 800, 1000, 1000, 1000, 1000}));
    EXPECT_EQ(timeout_bound(cfg), 5500ms);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(since_start(done[0].at), 5500ms);

    EXPECT_EQ(try_timeout(cfg, 1000), 1000ms) << "large indices stay at the cap";
}

TEST_F(Transactions, SingleTry) {
    TransactionConfig cfg;
    cfg.max_tries = 1;
    make(cfg);
    submit();
    timers.run_until_idle();
    EXPECT_EQ(net.sent().size(), 1u);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(since_start(done[0].at), 300ms);
}

TEST_F(Transactions, BounceIsAFailedTryRetransmittedAtItsDeadline) {
    make();
    submit();
    net.bounce(net.last());
    EXPECT_EQ(net.sent().size(), 1u) << "no retransmit at once";
    EXPECT_TRUE(done.empty());
    timers.advance(299ms);
    EXPECT_EQ(net.sent().size(), 1u);
    timers.advance(1ms);
    EXPECT_EQ(net.sent().size(), 2u);
    EXPECT_EQ(tx->stats(0).bounces, 1u);
}

TEST_F(Transactions, UnreachableSaTimesOutAtTheSameBoundAsASilentOne) {
    make();
    submit();
    std::size_t bounced = 0;
    while (done.empty()) {
        while (bounced < net.sent().size())
            net.bounce(net.sent()[bounced++]);
        ASSERT_TRUE(timers.step());
    }
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].kind, TxnOutcome::Kind::timeout);
    EXPECT_EQ(done[0].tries, 6u);
    EXPECT_EQ(done[0].failure, TryFailure::bounced);
    EXPECT_NE(done[0].detail.find("undelivered (status 110)"), std::string::npos) << done[0].detail;
    EXPECT_EQ(since_start(done[0].at), 8100ms);
    EXPECT_EQ(tx->stats(0).bounces, 6u);
}

TEST_F(Transactions, OnlyTheLastTryDecidesTheFailure) {
    make();
    submit();
    timers.run_until_idle(); // silent: 6 sends
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].failure, TryFailure::no_answer);

    make();
    done.clear();
    net.clear_sent();
    submit();
    net.bounce(net.last()); // the first try bounced, the rest were silent
    timers.run_until_idle();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].failure, TryFailure::no_answer);
}

TEST_F(Transactions, BounceOfAnEarlierTryDoesNotFailTheCurrentOne) {
    make();
    submit();
    const Sent first = net.last();
    timers.advance(300ms);
    net.bounce(first);
    answer(net.last());
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].kind, TxnOutcome::Kind::response);
}

TEST_F(Transactions, BounceAfterCompletionIsLate) {
    make();
    submit();
    const Sent s = net.last();
    answer(s);
    net.bounce(s);
    EXPECT_EQ(tx->stats(0).late, 1u);
    EXPECT_EQ(tx->stats(0).bounces, 0u);
}

TEST_F(Transactions, SendErrorIsAFailedTry) {
    make();
    net.fail_next_sends({-ENOTCONN, -ENOTCONN, -ENOTCONN, -ENOTCONN, -ENOTCONN, -ENOTCONN});
    submit();
    EXPECT_TRUE(done.empty()) << "never completes inside submit()";
    EXPECT_EQ(net.sent().size(), 1u);
    timers.advance(299ms);
    EXPECT_EQ(net.sent().size(), 1u) << "no immediate retry";
    timers.run_until_idle();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].failure, TryFailure::send_failed);
    EXPECT_EQ(done[0].err, ENOTCONN);
    EXPECT_NE(done[0].detail.find(std::strerror(ENOTCONN)), std::string::npos) << done[0].detail;
    EXPECT_EQ(since_start(done[0].at), 8100ms);
    EXPECT_EQ(tx->stats(0).send_errors, 6u);
    EXPECT_EQ(tx->stats(0).sent, 0u);
}

TEST_F(Transactions, SendErrorThenSuccess) {
    make();
    net.fail_next_sends({-EINVAL});
    submit();
    timers.advance(300ms);
    ASSERT_EQ(net.sent().size(), 2u);
    EXPECT_EQ(net.sent()[1].result, 0);
    answer(net.last());
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].tries, 2u);
    EXPECT_EQ(tx->stats(0).sent, 1u);
    EXPECT_EQ(tx->stats(0).send_errors, 1u);
}

TEST_F(Transactions, NoSaAddressIsAFailedTry) {
    make();
    routes->clear(0);
    submit();
    timers.advance(300ms);
    EXPECT_TRUE(net.sent().empty());
    routes->set(0, kSa); // the SM appears: the next try goes out
    timers.advance(600ms);
    ASSERT_EQ(net.sent().size(), 1u);
    answer(net.last());
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].tries, 3u);
}

TEST_F(Transactions, LidZeroIsNoAddressAndUnknownPortsHaveNone) {
    make();
    MadAddress no_sm = kSa;
    no_sm.dlid = 0;
    routes->set(0, no_sm);
    submit(0);
    submit(7); // never configured
    timers.run_until_idle();
    EXPECT_TRUE(net.sent().empty());
    ASSERT_EQ(done.size(), 2u);
    for (const Done &d : done) {
        EXPECT_EQ(d.failure, TryFailure::no_address);
        EXPECT_EQ(since_start(d.at), 8100ms);
    }
    EXPECT_EQ(tx->sa_address(7), std::nullopt);
}

TEST_F(Transactions, SaAddressChangeIsFollowedAtTheNextTry) {
    make();
    submit();
    EXPECT_EQ(net.last().addr.dlid, 1);
    MadAddress moved = kSa;
    moved.dlid = 5;
    moved.sl = 3;
    routes->set(0, moved);
    EXPECT_EQ(tx->sa_address(0), moved);
    timers.advance(300ms);
    ASSERT_EQ(net.sent().size(), 2u);
    EXPECT_EQ(net.last().addr, moved);
}

TEST_F(Transactions, LocalSmpRoute) {
    TransactionConfig cfg;
    cfg.window = 1;
    cfg.pacing_rate = 1;
    make(cfg);
    submit(); // takes the only SA slot and the pacing token
    MadBuf smp{};
    smp[0] = 1;
    smp[1] = mad::class_smp_directed;
    smp[2] = 1;
    smp[3] = mad::method_get;
    routes->clear(0); // not needed for a local SMP
    submit(0, Route::local_smp, smp);
    ASSERT_EQ(net.sent().size(), 2u) << "local SMPs bypass the SA window and pacing";
    const Sent s = net.last();
    EXPECT_EQ(s.addr, (MadAddress{.dlid = 0xffff, .dqp = 0, .sl = 0, .qkey = 0, .pkey_index = 0}));
    EXPECT_EQ(tx->in_flight(0), 1u);

    MadBuf resp = s.mad;
    resp[3] = mad::method_get_resp;
    resp[4] = 0x80; // the D bit of a returning directed-route SMP
    net.deliver(0, resp);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].id, ids[1]);
}

// Waiting for a window slot or a pacing token, tenants (the uid a transaction serves) take
// turns: one tenant's burst does not go ahead of another's next transaction.
TEST_F(Transactions, TenantsTakeTurnsForTheWindowAndForPacingTokens) {
    for (const bool paced : {false, true}) {
        SCOPED_TRACE(paced ? "waiting for pacing tokens" : "waiting for a window slot");
        TransactionConfig cfg;
        cfg.window = paced ? 16 : 1;
        cfg.pacing_rate = paced ? 10 : 0; // one per 100 ms, burst 1
        make(cfg);
        std::vector<std::string> completed;
        auto from = [&](std::uint32_t tenant, std::string label) {
            tx->submit(0, request(), Route::sa, [&completed, label](const TxnOutcome &) { completed.push_back(label); },
                       {}, std::nullopt, SaLane::window, tenant);
        };
        for (int i = 0; i < 10; ++i)
            from(7, "a" + std::to_string(i)); // one tenant's burst: the first goes at once
        from(8, "b");                         // another tenant's one transaction
        from(7, "a10");
        const std::size_t before = net.sent().size() - 1; // the loop's first round left its own
        ASSERT_EQ(net.sent().size(), before + 1);
        // Answered one at a time, in the order sent.
        for (std::size_t i = 0; i < 12; ++i) {
            ASSERT_EQ(net.sent().size(), before + i + 1) << i;
            answer(net.sent().back());
            timers.advance(100ms);
        }
        ASSERT_EQ(completed.size(), 12u);
        EXPECT_EQ(completed[0], "a0");
        EXPECT_EQ(completed[1], "a1") << "tenant 7's turn came first";
        EXPECT_EQ(completed[2], "b") << "then tenant 8's, not after all of tenant 7's";
        EXPECT_EQ(completed[11], "a10") << "each tenant's own in order";
    }
}

TEST(TenantQueue, RoundRobinByTenantFifoWithinOnePushFrontAndErase) {
    TenantQueue q;
    q.push_back(1, 10);
    q.push_back(1, 11);
    q.push_back(2, 20);
    q.push_back(1, 12);
    q.push_back(3, 30);
    EXPECT_EQ(q.size(), 5u);
    std::vector<TenantQueue::Id> out;
    q.push_front(3, 31); // gave its place back: first of all
    EXPECT_TRUE(q.erase(1, 11));
    EXPECT_FALSE(q.erase(1, 99));
    EXPECT_FALSE(q.erase(2, 10)); // tenant 1's, not 2's
    EXPECT_FALSE(q.erase(4, 10)); // no such tenant
    EXPECT_EQ(q.size(), 5u);
    while (!q.empty()) {
        out.push_back(q.front());
        q.pop_front();
    }
    EXPECT_EQ(out, (std::vector<TenantQueue::Id>{31, 10, 20, 30, 12}));
    EXPECT_EQ(q.size(), 0u);
}

TEST_F(Transactions, WindowLimitsInFlightAndQueuesFifo) {
    TransactionConfig cfg;
    cfg.window = 2;
    make(cfg);
    routes->set(1, kSa);
    for (int i = 0; i < 5; ++i)
        submit(0);
    submit(1); // another port has its own window
    ASSERT_EQ(net.sent().size(), 3u);
    EXPECT_EQ(net.sent()[2].port, 1u);
    EXPECT_EQ(tx->in_flight(0), 2u);
    EXPECT_EQ(tx->queued(0), 3u);
    EXPECT_EQ(tx->in_flight(1), 1u);

    const Sent a = net.sent()[0], b = net.sent()[1];
    answer(b); // the second finishes first: the third goes out
    ASSERT_EQ(net.sent().size(), 4u);
    tx->cancel(ids[3]); // the fourth, still queued, is withdrawn
    EXPECT_EQ(tx->queued(0), 1u);
    answer(a);
    ASSERT_EQ(net.sent().size(), 5u);
    EXPECT_EQ(tx->in_flight(0), 2u);
    EXPECT_EQ(tx->queued(0), 0u);

    // Completions follow the answers; the queued ones went out in submission order.
    std::vector<Id> order;
    for (const Done &d : done)
        order.push_back(d.id);
    EXPECT_EQ(order, (std::vector<Id>{ids[1], ids[0]}));
    answer(net.sent()[3]);
    answer(net.sent()[4]);
    ASSERT_EQ(done.size(), 4u);
    EXPECT_EQ(done[2].id, ids[2]);
    EXPECT_EQ(done[3].id, ids[4]);
}

TEST_F(Transactions, QueuedTransactionStartsItsTriesWhenAdmitted) {
    TransactionConfig cfg;
    cfg.window = 1;
    make(cfg);
    submit();
    submit();
    timers.advance(1000ms); // the first is on its third try, the second still waits
    EXPECT_EQ(net.sent().size(), 3u);
    answer(net.last());
    ASSERT_EQ(net.sent().size(), 4u);
    EXPECT_EQ(net.last().timeout_ms, 300u) << "a queued transaction's first try is a first try";
    timers.run_until_idle();
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(since_start(done[1].at), 1000ms + 8100ms);
}

TEST_F(Transactions, CancelInFlightFreesTheSlotAndRunsNoCallback) {
    TransactionConfig cfg;
    cfg.window = 1;
    make(cfg);
    submit();
    submit();
    const Sent a = net.last();
    tx->cancel(ids[0]);
    ASSERT_EQ(net.sent().size(), 2u) << "the slot went to the queued transaction";
    answer(a);
    EXPECT_TRUE(done.empty());
    EXPECT_EQ(tx->stats(0).late, 1u);
    answer(net.last());
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].id, ids[1]);

    tx->cancel(ids[0]); // finished ids and unknown ids are no-ops
    tx->cancel(12345);
    timers.run_until_idle();
    EXPECT_EQ(done.size(), 1u);
}

TEST_F(Transactions, CancelStopsRetransmits) {
    make();
    submit();
    timers.advance(300ms);
    tx->cancel(ids[0]);
    EXPECT_EQ(timers.pending(), 0u);
    timers.run_until_idle();
    EXPECT_EQ(net.sent().size(), 2u);
    EXPECT_TRUE(done.empty());
}

TEST_F(Transactions, AbandonAllSendsNothingMoreAndRunsNoCallback) {
    TransactionConfig cfg;
    cfg.window = 1;
    make(cfg);
    submit();
    submit(); // queued behind the window
    const Sent a = net.last();
    tx->abandon_all();
    EXPECT_EQ(timers.pending(), 0u) << "teardown may not leave or arm timers";
    EXPECT_EQ(net.sent().size(), 1u) << "the queued one is not admitted";
    tx->cancel(ids[1]); // what a caller still holding an id does next: a no-op
    EXPECT_EQ(net.sent().size(), 1u);
    answer(a);
    EXPECT_EQ(tx->stats(0).late, 1u);
    timers.run_until_idle();
    EXPECT_TRUE(done.empty());
}

TEST_F(Transactions, CallbackMaySubmitAndCancel) {
    TransactionConfig cfg;
    cfg.window = 1;
    make(cfg);
    Id second = 0;
    Id third = 0;
    tx->submit(0, request(), Route::sa, [&](const TxnOutcome &) {
        // The finished transaction's slot is already free.
        second = tx->submit(0, request(), Route::sa, [&](const TxnOutcome &) {});
        third = tx->submit(0, request(), Route::sa, [&](const TxnOutcome &) { ADD_FAILURE(); });
        tx->cancel(third);
    });
    answer(net.last());
    EXPECT_NE(second, 0u);
    EXPECT_EQ(net.sent().size(), 2u);
    EXPECT_EQ(tx->in_flight(0), 1u);
    EXPECT_EQ(tx->queued(0), 0u);
}

TEST_F(Transactions, PacingSpacesFirstTries) {
    TransactionConfig cfg;
    cfg.pacing_rate = 10; // one per 100 ms
    make(cfg);
    for (int i = 0; i < 3; ++i)
        submit();
    EXPECT_EQ(net.sent().size(), 1u);
    timers.advance(100ms - 1us);
    EXPECT_EQ(net.sent().size(), 1u);
    timers.advance(1us);
    EXPECT_EQ(net.sent().size(), 2u);
    timers.advance(100ms);
    EXPECT_EQ(net.sent().size(), 3u);
    // A paced try still gets its full timeout from when it was sent.
    EXPECT_EQ(net.last().timeout_ms, 300u);
}

TEST_F(Transactions, PacingBurst) {
    TransactionConfig cfg;
    cfg.pacing_rate = 10;
    cfg.pacing_burst = 3;
    make(cfg);
    for (int i = 0; i < 5; ++i)
        submit();
    EXPECT_EQ(net.sent().size(), 3u);
    timers.advance(100ms);
    EXPECT_EQ(net.sent().size(), 4u);
    timers.advance(100ms);
    EXPECT_EQ(net.sent().size(), 5u);
}

TEST_F(Transactions, PacingAppliesToRetransmits) {
    TransactionConfig cfg;
    cfg.pacing_rate = 2; // one per 500 ms
    make(cfg);
    submit();
    timers.advance(300ms); // the first try's deadline; no token until 500 ms
    EXPECT_EQ(net.sent().size(), 1u);
    timers.advance(200ms - 1us);
    EXPECT_EQ(net.sent().size(), 1u);
    timers.advance(1us);
    EXPECT_EQ(net.sent().size(), 2u);
    EXPECT_EQ(net.last().timeout_ms, 600u);
}

TEST_F(Transactions, LateAnswerWhileWaitingForAPacingToken) {
    TransactionConfig cfg;
    cfg.pacing_rate = 2;
    make(cfg);
    submit();
    const Sent first = net.last();
    timers.advance(300ms); // retransmit waits for a token
    answer(first);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].tries, 1u);
    timers.run_until_idle();
    EXPECT_EQ(net.sent().size(), 1u) << "the waiting retransmit was dropped";
}

TEST_F(Transactions, PacingIsPerPortAndRoundsUpToTheMicrosecond) {
    TransactionConfig cfg;
    cfg.pacing_rate = 3; // 333333333 ns: waits are rounded up to 333334 us
    cfg.first_timeout = 1000ms; // no retransmit competes for the tokens
    make(cfg);
    routes->set(1, kSa);
    submit(0);
    submit(0);
    submit(1);
    EXPECT_EQ(net.sent().size(), 2u) << "port 1 has its own bucket";
    timers.advance(333333us);
    EXPECT_EQ(net.sent().size(), 2u);
    timers.advance(1us);
    EXPECT_EQ(net.sent().size(), 3u);
}

// A fabric budget's share of the SA (fabric_budget.hpp) may be below one MAD per second.
TEST_F(Transactions, PacingBelowOneMadPerSecond) {
    TransactionConfig cfg;
    cfg.pacing_rate = 0.4; // 2000 MAD/s shared by 5000 ports: one per 2.5 s
    cfg.first_timeout = 5000ms;
    cfg.max_timeout = 5000ms;
    make(cfg);
    submit();
    submit();
    EXPECT_EQ(net.sent().size(), 1u);
    timers.advance(2500ms - 1us);
    EXPECT_EQ(net.sent().size(), 1u);
    timers.advance(1us);
    EXPECT_EQ(net.sent().size(), 2u);
}

TEST_F(Transactions, OnlyResponsesAreAccepted) {
    make();
    submit();
    const Sent s = net.last();
    net.deliver(0, s.mad); // our own request method, status 0: a request, not a response
    EXPECT_TRUE(done.empty());
    EXPECT_EQ(tx->stats(0).unsolicited, 1u);

    MadBuf wrong_class = response_to(s);
    wrong_class[1] = mad::class_smp_directed;
    net.deliver(0, wrong_class);
    MadBuf table = response_to(s, 0x92); // GetTableResp does not answer a Set
    net.deliver(0, table);
    EXPECT_TRUE(done.empty());
    EXPECT_EQ(tx->stats(0).rejected, 2u);

    net.deliver(0, response_to(s, 0x82, 0x0200)); // a failed Set as Set|0x80
    ASSERT_EQ(done.size(), 1u);
}

TEST_F(Transactions, GetIsAnsweredByGetRespAndDeleteByDeleteResp) {
    make();
    submit(0, Route::sa, request(mad::method_get));
    net.deliver(0, response_to(net.last(), mad::method_delete_resp));
    EXPECT_TRUE(done.empty());
    net.deliver(0, response_to(net.last(), mad::method_get_resp));
    EXPECT_EQ(done.size(), 1u);

    submit(0, Route::sa, request(mad::method_delete));
    net.deliver(0, response_to(net.last(), mad::method_get_resp));
    EXPECT_EQ(done.size(), 1u);
    net.deliver(0, response_to(net.last(), mad::method_delete_resp));
    EXPECT_EQ(done.size(), 2u);
}

TEST_F(Transactions, ValidatorRefusalIsNotAnAnswer) {
    make();
    int calls = 0;
    submit(0, Route::sa, request(), [&](std::span<const std::uint8_t> m) -> std::optional<std::string> {
        ++calls;
        if (m[5] == 0x42)
            return std::string("garbage");
        return std::nullopt;
    });
    net.deliver(0, response_to(net.last(), mad::method_get_resp, 0x0042));
    EXPECT_TRUE(done.empty());
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(tx->stats(0).rejected, 1u);
    EXPECT_EQ(net.sent().size(), 1u) << "no immediate retransmit";
    // A good answer to the same try still completes it.
    net.deliver(0, response_to(net.last()));
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].kind, TxnOutcome::Kind::response);
}

TEST_F(Transactions, OnlyGarbageAnswersEndInATimeout) {
    make();
    submit(0, Route::sa, request(), [](std::span<const std::uint8_t>) {
        return std::optional<std::string>("attribute 0x0011, expected 0x0038");
    });
    std::size_t answered = 0;
    while (done.empty()) {
        while (answered < net.sent().size())
            answer(net.sent()[answered++]);
        ASSERT_TRUE(timers.step());
    }
    EXPECT_EQ(tx->stats(0).rejected, 6u);
    EXPECT_EQ(done[0].kind, TxnOutcome::Kind::timeout);
    EXPECT_EQ(done[0].failure, TryFailure::rejected);
    EXPECT_NE(done[0].detail.find("attribute 0x0011"), std::string::npos) << done[0].detail;
    EXPECT_EQ(since_start(done[0].at), 8100ms);
}

TEST_F(Transactions, AnswerOnTheWrongPortIsRejected) {
    make();
    routes->set(1, kSa);
    submit(0);
    net.deliver(1, response_to(net.last()));
    EXPECT_TRUE(done.empty());
    EXPECT_EQ(tx->stats(1).rejected, 1u);
}

TEST_F(Transactions, MalformedAndForeignMadsAreCounted) {
    make();
    std::vector<std::string> log;
    tx->set_drop_log([&](PortIndex, const std::string &why) { log.push_back(why); });
    const std::uint8_t tiny[10] = {1, 3, 2, 0x81};
    net.deliver(0, tiny);
    MadBuf foreign = request(mad::method_get_resp);
    set_mad_tid(foreign, 0x99999999);
    net.deliver(0, foreign);
    EXPECT_EQ(tx->stats(0).rejected, 1u);
    EXPECT_EQ(tx->stats(0).late, 1u);
    ASSERT_EQ(log.size(), 2u);
    EXPECT_NE(log[0].find("MAD of 10 bytes"), std::string::npos) << log[0];
    EXPECT_NE(log[1].find("late or duplicate"), std::string::npos) << log[1];
}

TEST_F(Transactions, StatsPerPortAndTotal) {
    make();
    routes->set(1, kSa);
    submit(0);
    submit(1);
    answer(net.sent()[0]);
    timers.advance(300ms); // port 1 retransmits
    net.bounce(net.last());
    timers.run_until_idle();

    const TxnStats p0 = tx->stats(0), p1 = tx->stats(1);
    EXPECT_EQ(p0, (TxnStats{.sent = 1, .responses = 1}));
    EXPECT_EQ(p1, (TxnStats{.sent = 6, .retransmits = 5, .timeouts = 1, .bounces = 1}));
    TxnStats sum = p0;
    sum += p1;
    EXPECT_EQ(tx->total_stats(), sum);
    EXPECT_EQ(tx->stats(42), TxnStats{});
}

TEST_F(Transactions, InvalidConfigIsRefusedWithTheField) {
    auto refused = [&](TransactionConfig cfg, const char *field) {
        try {
            MadTransactions t(net, timers, cfg);
            ADD_FAILURE() << "accepted a config with a bad " << field;
        } catch (const std::invalid_argument &e) {
            EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
        }
    };
    TransactionConfig c;
    c.max_tries = 0;
    refused(c, "max_tries");
    c = {};
    c.window = 0;
    refused(c, "window");
    c = {};
    c.first_timeout = 0ms;
    refused(c, "first_timeout");
    c = {};
    c.max_timeout = 100ms;
    refused(c, "max_timeout");
    c = {};
    c.pacing_burst = 0;
    refused(c, "pacing_burst");
    c = {};
    c.pacing_rate = -1;
    refused(c, "pacing_rate");
}

// --- per-transaction try policy ---------------------------------------------------------------

TEST_F(Transactions, TryPolicyOfTheConfigAndItsBound) {
    const TransactionConfig cfg;
    EXPECT_EQ(try_policy(cfg), (TryPolicy{300ms, 2000ms, 6}));
    EXPECT_EQ(timeout_bound(try_policy(cfg)), timeout_bound(cfg));
    EXPECT_EQ(TryPolicy::single(500ms), (TryPolicy{500ms, 500ms, 1}));
    EXPECT_EQ(timeout_bound(TryPolicy::single(500ms)), 500ms);
    const TryPolicy p{100ms, 400ms, 4};
    EXPECT_EQ(try_timeout(p, 0), 100ms);
    EXPECT_EQ(try_timeout(p, 2), 400ms);
    EXPECT_EQ(try_timeout(p, 9), 400ms);
    EXPECT_EQ(timeout_bound(p), 1100ms);
    EXPECT_EQ(check_try_policy(p), std::nullopt);
}

TEST_F(Transactions, TryPolicyOverridesTheConfigForOneTransactionOnly) {
    make();
    submit(0, Route::sa, request(), {}, TryPolicy{100ms, 400ms, 4});
    submit(); // the config's policy
    timers.run_until_idle();
    // The two policies share no timeout value, so the value tells whose try a send was.
    std::vector<unsigned> overridden, configured;
    for (const Sent &s : net.sent()) {
        const unsigned t = s.timeout_ms;
        (t == 100 || t == 200 || t == 400 ? overridden : configured).push_back(t);
    }
    EXPECT_EQ(overridden, (std::vector<unsigned>{100, 200, 400, 400}));
    EXPECT_EQ(configured, (std::vector<unsigned>{300, 600, 1200, 2000, 2000, 2000}));
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].id, ids[0]);
    EXPECT_EQ(done[0].tries, 4u);
    EXPECT_EQ(since_start(done[0].at), 1100ms);
    EXPECT_EQ(done[0].detail, "no answer after 4 tries; last try: no answer within 400 ms");
    EXPECT_EQ(done[1].tries, 6u);
    EXPECT_EQ(since_start(done[1].at), 8100ms);
}

TEST_F(Transactions, SingleTryPolicyHoldsTheWindowSlotForOneTimeout) {
    TransactionConfig cfg;
    cfg.window = 1;
    make(cfg);
    submit(0, Route::sa, request(), {}, TryPolicy::single(1000ms)); // a poll of a silent SA
    submit();                                                       // a join behind it
    ASSERT_EQ(net.sent().size(), 1u);
    EXPECT_EQ(tx->queued(0), 1u);
    timers.advance(999ms);
    EXPECT_EQ(net.sent().size(), 1u);
    timers.advance(1ms);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].kind, TxnOutcome::Kind::timeout);
    EXPECT_EQ(done[0].tries, 1u);
    ASSERT_EQ(net.sent().size(), 2u) << "the join goes out when the poll gives up, not 8.1 s later";
    EXPECT_EQ(net.last().timeout_ms, 300u);
}

TEST_F(Transactions, TryPolicyAppliesToLocalSmpsAndBouncesToo) {
    make();
    MadBuf smp = request(mad::method_get);
    smp[1] = mad::class_smp_directed;
    smp[2] = 1;
    submit(0, Route::local_smp, smp, {}, TryPolicy::single(500ms));
    EXPECT_EQ(net.last().timeout_ms, 500u);
    net.bounce(net.last());
    timers.run_until_idle();
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].tries, 1u);
    EXPECT_EQ(done[0].failure, TryFailure::bounced);
    EXPECT_EQ(since_start(done[0].at), 500ms);
}

TEST_F(Transactions, InvalidTryPolicyIsRefusedAndStartsNothing) {
    make();
    const std::pair<TryPolicy, std::string> bad[] = {
        {TryPolicy{0ms, 100ms, 1}, "first_timeout must be positive"},
        {TryPolicy{200ms, 100ms, 1}, "max_timeout must be >= first_timeout"},
        {TryPolicy{100ms, 100ms, 0}, "max_tries must be at least 1"},
    };
    for (const auto &[policy, why] : bad) {
        EXPECT_EQ(check_try_policy(policy), why);
        try {
            tx->submit(0, request(), Route::sa, [](const TxnOutcome &) {}, {}, policy);
            ADD_FAILURE() << why << ": accepted";
        } catch (const std::invalid_argument &e) {
            EXPECT_EQ(std::string(e.what()), "MAD transaction try policy: " + why);
        }
    }
    EXPECT_TRUE(net.sent().empty());
    EXPECT_EQ(tx->in_flight(0), 0u);
    EXPECT_EQ(timers.pending(), 0u);
}

TEST_F(Transactions, TryFailureNames) {
    EXPECT_EQ(try_failure_name(TryFailure::bounced), "bounced");
    EXPECT_EQ(try_failure_name(TryFailure::no_answer), "no-answer");
    EXPECT_EQ(try_failure_name(TryFailure::send_failed), "send-failed");
    EXPECT_EQ(try_failure_name(TryFailure::no_address), "no-address");
    EXPECT_EQ(try_failure_name(TryFailure::rejected), "rejected");
}


// ---- congestion control (congestion.hpp): the window and the timeouts in the real flow ----

TransactionConfig with_congestion(unsigned window = 16, unsigned pacing_rate = 0) {
    TransactionConfig cfg;
    cfg.window = window;
    cfg.pacing_rate = pacing_rate;
    cfg.congestion.enabled = true;
    return cfg;
}

TEST_F(Transactions, CongestionControlStartsWithOneMadAndGrowsWithPromptAnswers) {
    make(with_congestion());
    for (int i = 0; i < 40; ++i)
        submit();
    EXPECT_EQ(net.sent().size(), 1u) << "one MAD before the SA has answered anything";
    // Answered 1 ms later, each round trip: 1, 2, 4, 8, 16 in flight, and never more.
    for (std::size_t expect : {2u, 4u, 8u, 16u, 16u}) {
        const std::size_t before = net.sent().size();
        const std::size_t flying = tx->in_flight(0);
        timers.advance(1ms);
        for (std::size_t i = before - flying; i < before; ++i)
            answer(net.sent()[i]);
        EXPECT_EQ(tx->in_flight(0), std::min<std::size_t>(expect, 40 - done.size()));
    }
    EXPECT_LE(tx->congestion(0)->window(), 16.0) << "sa.window caps it";
    EXPECT_EQ(tx->stats(0).retransmits, 0u);
}

// OpenSM answers Gets from another queue than Sets: a poll's or audit's round trip says nothing
// of the queue the window's Sets wait in, and neither does its silence.
TEST_F(Transactions, PollsAndAuditsNeitherGrowNorShrinkTheWindow) {
    TransactionConfig cfg = with_congestion();
    cfg.first_timeout = 100ms;
    make(cfg);
    const CongestionWindow *cc = tx->congestion(0);
    ASSERT_NE(cc, nullptr);
    const double w0 = cc->window();
    for (SaLane lane : {SaLane::poll, SaLane::audit}) {
        tx->submit(0, request(mad::method_get), Route::sa, {}, {}, TryPolicy::single(1s), lane);
        timers.advance(1ms);
        answer(net.last()); // prompt
        tx->submit(0, request(mad::method_get), Route::sa, {}, {}, TryPolicy::single(1s), lane);
        timers.advance(1s); // silent
    }
    EXPECT_EQ(cc->window(), w0);
    EXPECT_FALSE(cc->srtt()) << "no round trip sampled";

    submit(); // a join's Set does
    timers.advance(1ms);
    answer(net.last());
    EXPECT_GT(cc->window(), w0);
    EXPECT_TRUE(cc->srtt());
}

TEST_F(Transactions, CongestionControlBacksOffWhenTheSaQueuesAndSpacesMadsBelowOne) {
    TransactionConfig cfg = with_congestion();
    cfg.first_timeout = 10s; // no timeouts here: only the slow answers speak
    cfg.max_timeout = 10s;
    make(cfg);
    for (int i = 0; i < 10; ++i)
        submit();
    const CongestionWindow *cc = tx->congestion(0);
    ASSERT_NE(cc, nullptr);
    // The SA answers each MAD 1 s after it went, far over the 50 ms target; one MAD flies at
    // a time, and each waits for the spacing below w = 1 before it goes.
    std::vector<Duration> gaps;
    for (int round = 0; round < 6; ++round) {
        ASSERT_EQ(tx->in_flight(0), 1u) << round;
        timers.advance(1s);
        const std::size_t sent = net.sent().size();
        answer(net.last());
        EXPECT_LT(cc->window(), 1.0) << round;
        if (net.sent().size() == sent) {
            const TimePoint next = cc->earliest_send(timers.now());
            ASSERT_GT(next, timers.now()) << "below w = 1 the next MAD waits srtt * (1/w - 1)";
            gaps.push_back(std::chrono::duration_cast<Duration>(next - timers.now()));
            timers.advance_to(next);
        }
        EXPECT_EQ(net.sent().size(), sent + 1) << "the next MAD goes when the gap is over";
    }
    // Halved once per answer (each is a round trip apart): the gaps grow.
    ASSERT_GE(gaps.size(), 3u);
    EXPECT_GT(gaps.back(), gaps.front());
    EXPECT_EQ(tx->stats(0).retransmits, 0u);
}

TEST_F(Transactions, CongestionControlTimesTriesFromTheRoundTrip) {
    TransactionConfig cfg = with_congestion();
    cfg.congestion.rtt_target = 1s; // 250 ms answers count as prompt: only the timeouts matter
    make(cfg);
    for (int i = 0; i < 30; ++i) {
        submit();
        timers.advance(250ms);
        answer(net.last());
    }
    ASSERT_EQ(tx->stats(0).retransmits, 0u);
    submit();
    EXPECT_EQ(net.last().timeout_ms, 500u) << "2 srtt, within [sa.timeout_ms, sa.max_timeout_ms]";
    timers.advance(500ms);
    EXPECT_EQ(net.last().timeout_ms, 1000u) << "doubled for the retransmit";
    timers.advance(1000ms);
    EXPECT_EQ(net.last().timeout_ms, 2000u) << "capped at max_timeout";
}

TEST_F(Transactions, CongestionControlRestartsWithANewSmAndKeepsPacingAsAHardCap) {
    make(with_congestion(16, 100)); // 100 MADs/s at most
    for (int i = 0; i < 100; ++i)
        submit();
    // Every MAD answered 1 ms after it went: the window grows, the pacing does not give.
    for (int i = 1; i <= 300; ++i) {
        const std::size_t sent = net.sent().size();
        timers.advance(1ms);
        for (std::size_t k = sent - tx->in_flight(0); k < sent; ++k)
            answer(net.sent()[k]);
        EXPECT_LE(net.sent().size(), 1u + static_cast<unsigned>(i) / 10) << "more than 100 MADs/s after " << i << " ms";
    }
    EXPECT_GT(tx->congestion(0)->window(), 1.0);
    // Another SM: start again from one MAD.
    routes->set(0, MadAddress{.dlid = 7, .dqp = 1, .sl = 0, .qkey = 0x80010000, .pkey_index = 0});
    EXPECT_EQ(tx->congestion(0)->window(), 1.0);
    EXPECT_FALSE(tx->congestion(0)->srtt());
    // The same SM again changes nothing.
    timers.advance(20ms);
    answer(net.sent()[net.sent().size() - tx->in_flight(0)]);
    const double w = tx->congestion(0)->window();
    routes->set(0, MadAddress{.dlid = 7, .dqp = 1, .sl = 0, .qkey = 0x80010000, .pkey_index = 0});
    EXPECT_EQ(tx->congestion(0)->window(), w);
}

TEST_F(Transactions, CongestionControlRestartsWhenThePortReJoins) {
    make(with_congestion());
    for (int i = 0; i < 8; ++i) {
        submit();
        timers.advance(1ms);
        answer(net.last());
    }
    ASSERT_GT(tx->congestion(0)->window(), 1.0);
    // An SM restarted in place (same LID, same address): HostPorts restarts the window when
    // the port's re-join begins, since every host is about to send at once.
    tx->restart_congestion(0);
    EXPECT_EQ(tx->congestion(0)->window(), 1.0);
    EXPECT_FALSE(tx->congestion(0)->srtt());
}

TEST_F(Transactions, ATryThatFindsAnotherSmRestartsTheWindowUntold) {
    // The route is the registry's answer at every try: an SM that moved before anyone said
    // so is still another SM, whose round trips nothing learned says anything about.
    make(with_congestion());
    std::uint16_t sm = 1;
    tx->set_sa_route([&sm](PortIndex) { return std::optional(MadAddress{.dlid = sm, .dqp = 1}); });
    for (int i = 0; i < 8; ++i) {
        submit();
        timers.advance(1ms);
        answer(net.last());
    }
    ASSERT_GT(tx->congestion(0)->window(), 1.0);
    sm = 9;
    EXPECT_EQ(tx->sa_address(0)->dlid, 9) << "asked, not kept";
    ASSERT_GT(tx->congestion(0)->window(), 1.0) << "nothing sent to it yet";
    submit();
    EXPECT_EQ(net.last().addr.dlid, 9);
    EXPECT_EQ(tx->congestion(0)->window(), 1.0);
}

TEST_F(Transactions, APollHasASlotOfItsOwnBesideTheWindowAndNeverMoreThanOne) {
    TransactionConfig cfg;
    cfg.window = 1;
    make(cfg);
    const Id p1 = tx->submit(0, request(mad::method_get), Route::sa, {}, {}, TryPolicy::single(1000ms), SaLane::poll);
    const Id p2 = tx->submit(0, request(mad::method_get), Route::sa, {}, {}, TryPolicy::single(1000ms), SaLane::poll);
    EXPECT_EQ(net.sent().size(), 1u) << "one poll in flight per port";
    submit(0, Route::sa, request(), {}, TryPolicy::single(5s)); // a join: the window's slot is free
    EXPECT_EQ(net.sent().size(), 2u) << "a poll never keeps a join waiting";
    EXPECT_EQ(tx->in_flight(0), 1u) << "the join's: the poll holds no window slot";
    EXPECT_TRUE(tx->lane_in_flight(0, SaLane::poll));
    timers.advance(1000ms); // the first poll times out; the second goes
    EXPECT_EQ(net.sent().size(), 3u);
    EXPECT_NE(p1, p2);
}

TEST_F(Transactions, AuditsHaveASlotOfTheirOwnSoAPollNeverWaitsBehindOne) {
    TransactionConfig cfg;
    cfg.window = 1;
    make(cfg);
    const auto lane = [this](SaLane l) {
        tx->submit(0, request(mad::method_get), Route::sa, {}, {}, std::nullopt, l);
    };
    lane(SaLane::audit);
    lane(SaLane::audit);
    EXPECT_EQ(net.sent().size(), 1u) << "one audit in flight per port";
    lane(SaLane::poll);
    EXPECT_EQ(net.sent().size(), 2u) << "a poll does not wait behind the audit's tries";
    submit(0, Route::sa, request(), {}, TryPolicy::single(5s));
    EXPECT_EQ(net.sent().size(), 3u) << "nor does a join";
    EXPECT_TRUE(tx->lane_in_flight(0, SaLane::audit));
    EXPECT_EQ(tx->in_flight(0), 1u);
    answer(net.sent()[0]); // the first audit answered: the second goes
    EXPECT_EQ(net.sent().size(), 4u);
}

// Client transactions here are Gets, background ones Sets, so the MADs tell which went.
TEST_F(Transactions, AClientTransactionGoesAheadOfBackgroundOnesForTheWindow) {
    TransactionConfig cfg;
    cfg.window = 1;
    make(cfg);
    const auto background = [this] {
        return tx->submit(0, request(mad::method_set), Route::sa, {}, {}, std::nullopt, SaLane::background);
    };
    const Id first = background();
    EXPECT_EQ(net.sent().size(), 1u) << "a free window slot takes a background transaction at once";
    background();
    const Id withdrawn = background();
    background();
    submit(0, Route::sa, request(mad::method_get)); // a client's, submitted last
    EXPECT_EQ(tx->queued(0), 4u);
    tx->cancel(withdrawn);
    EXPECT_EQ(tx->queued(0), 3u);
    EXPECT_NE(first, withdrawn);

    std::vector<std::uint8_t> methods;
    for (int i = 0; i < 4; ++i) {
        methods.push_back(net.last().mad[3]);
        answer(net.last());
    }
    EXPECT_EQ(methods, (std::vector<std::uint8_t>{mad::method_set, mad::method_get, mad::method_set,
                                                  mad::method_set}))
        << "the client's went second, as soon as the slot was free";
    EXPECT_EQ(tx->queued(0), 0u);
    EXPECT_EQ(tx->in_flight(0), 0u);
}

TEST_F(Transactions, AClientTryGoesAheadOfBackgroundOnesForAPacingToken) {
    TransactionConfig cfg;
    cfg.pacing_rate = 10; // one per 100 ms
    make(cfg);
    for (int i = 0; i < 3; ++i)
        tx->submit(0, request(mad::method_set), Route::sa, {}, {}, std::nullopt, SaLane::background);
    EXPECT_EQ(net.sent().size(), 1u) << "two background tries wait for tokens";
    submit(0, Route::sa, request(mad::method_get));
    EXPECT_EQ(net.sent().size(), 1u) << "the client's waits for the next token too";
    timers.advance(100ms);
    ASSERT_EQ(net.sent().size(), 2u);
    EXPECT_EQ(net.last().mad[3], mad::method_get) << "and takes it first";
    timers.advance(200ms);
    ASSERT_EQ(net.sent().size(), 4u);
    EXPECT_EQ(net.last().mad[3], mad::method_set);
}

// Paced, a full window may hold background transactions that have sent nothing yet: a client's
// takes the slot of one of them instead of waiting behind them all.
TEST_F(Transactions, AClientTransactionTakesTheSlotOfABackgroundOneThatSentNothingYet) {
    TransactionConfig cfg;
    cfg.window = 2;
    cfg.pacing_rate = 10; // one per 100 ms
    cfg.first_timeout = cfg.max_timeout = 10s;
    make(cfg);
    for (int i = 0; i < 3; ++i)
        tx->submit(0, request(mad::method_set), Route::sa, {}, {}, std::nullopt, SaLane::background);
    ASSERT_EQ(net.sent().size(), 1u);
    ASSERT_EQ(tx->in_flight(0), 2u) << "the second holds a slot, waiting for a token";
    ASSERT_EQ(tx->queued(0), 1u);
    submit(0, Route::sa, request(mad::method_get));
    EXPECT_EQ(tx->in_flight(0), 2u) << "the window stays at its size";
    EXPECT_EQ(tx->queued(0), 2u) << "the second went back to the queue";
    timers.advance(100ms);
    ASSERT_EQ(net.sent().size(), 2u);
    EXPECT_EQ(net.last().mad[3], mad::method_get) << "the client's went with the next token";
    answer(net.sent()[0]);
    timers.advance(100ms);
    ASSERT_EQ(net.sent().size(), 3u);
    EXPECT_EQ(net.last().mad[3], mad::method_set);
    answer(net.sent()[1]);
    answer(net.sent()[2]);
    timers.advance(100ms);
    EXPECT_EQ(net.sent().size(), 4u) << "the third";
    answer(net.last());
    EXPECT_EQ(tx->in_flight(0), 0u);
    EXPECT_EQ(tx->queued(0), 0u);
}

// A client comes to wait for a queued background transaction (a join of the group whose
// re-join it is): hasten() queues it with the clients'. Deletes mark it here.
TEST_F(Transactions, AHastenedBackgroundTransactionQueuesWithTheClients) {
    TransactionConfig cfg;
    cfg.window = 1;
    make(cfg);
    const auto background = [this](std::uint8_t method) {
        return tx->submit(0, request(method), Route::sa, {}, {}, std::nullopt, SaLane::background);
    };
    const Id sent = background(mad::method_set);
    background(mad::method_set);
    const Id hastened = background(mad::method_delete);
    submit(0, Route::sa, request(mad::method_get));
    tx->hasten(hastened);
    tx->hasten(sent);   // in flight: nothing to overtake
    tx->hasten(0);      // unknown
    tx->hasten(999999); // unknown
    EXPECT_EQ(tx->queued(0), 3u);

    std::vector<std::uint8_t> methods;
    for (int i = 0; i < 4; ++i) {
        methods.push_back(net.last().mad[3]);
        answer(net.last());
    }
    EXPECT_EQ(methods, (std::vector<std::uint8_t>{mad::method_set, mad::method_get, mad::method_delete,
                                                  mad::method_set}))
        << "the hastened one went behind the client's, ahead of the background one before it";
    EXPECT_EQ(tx->queued(0), 0u);
    EXPECT_EQ(tx->in_flight(0), 0u);
}

// Paced, a hastened transaction takes a slot a background one holds unsent, as a client's
// would, and the next token.
TEST_F(Transactions, AHastenedBackgroundTransactionGoesWithTheNextToken) {
    TransactionConfig cfg;
    cfg.window = 2;
    cfg.pacing_rate = 10; // one per 100 ms
    cfg.first_timeout = cfg.max_timeout = 10s;
    make(cfg);
    tx->submit(0, request(mad::method_set), Route::sa, {}, {}, std::nullopt, SaLane::background);
    tx->submit(0, request(mad::method_set), Route::sa, {}, {}, std::nullopt, SaLane::background);
    const Id hastened =
        tx->submit(0, request(mad::method_delete), Route::sa, {}, {}, std::nullopt, SaLane::background);
    ASSERT_EQ(net.sent().size(), 1u);
    ASSERT_EQ(tx->in_flight(0), 2u) << "the second holds a slot, waiting for a token";
    ASSERT_EQ(tx->queued(0), 1u);
    tx->hasten(hastened);
    EXPECT_EQ(tx->in_flight(0), 2u) << "the window stays at its size";
    EXPECT_EQ(tx->queued(0), 1u) << "the second went back to the queue";
    timers.advance(100ms);
    ASSERT_EQ(net.sent().size(), 2u);
    EXPECT_EQ(net.last().mad[3], mad::method_delete) << "the hastened one went with the next token";
    answer(net.sent()[0]);
    timers.advance(100ms);
    ASSERT_EQ(net.sent().size(), 3u);
    EXPECT_EQ(net.last().mad[3], mad::method_set);
}

TEST_F(Transactions, AHastenedTryWaitingForATokenGoesFirst) {
    TransactionConfig cfg;
    cfg.pacing_rate = 10; // one per 100 ms
    make(cfg);
    tx->submit(0, request(mad::method_set), Route::sa, {}, {}, std::nullopt, SaLane::background);
    tx->submit(0, request(mad::method_set), Route::sa, {}, {}, std::nullopt, SaLane::background);
    const Id hastened =
        tx->submit(0, request(mad::method_delete), Route::sa, {}, {}, std::nullopt, SaLane::background);
    ASSERT_EQ(net.sent().size(), 1u) << "two background tries wait for tokens";
    tx->hasten(hastened);
    timers.advance(100ms);
    ASSERT_EQ(net.sent().size(), 2u);
    EXPECT_EQ(net.last().mad[3], mad::method_delete);
    timers.advance(100ms);
    ASSERT_EQ(net.sent().size(), 3u);
    EXPECT_EQ(net.last().mad[3], mad::method_set);
}

TEST_F(Transactions, PollsAndAuditsAreNotPaced) {
    TransactionConfig cfg;
    cfg.pacing_rate = 0.5; // one token per 2 s
    cfg.first_timeout = cfg.max_timeout = 10s; // no retransmit competes for the tokens
    make(cfg);
    submit(); // takes the token
    submit(); // waits 2 s for the next
    EXPECT_EQ(net.sent().size(), 1u);
    tx->submit(0, request(mad::method_get), Route::sa, {}, {}, TryPolicy::single(10s), SaLane::poll);
    tx->submit(0, request(mad::method_get), Route::sa, {}, {}, TryPolicy::single(10s), SaLane::audit);
    EXPECT_EQ(net.sent().size(), 3u) << "the poll and the audit go at once, at their own schedule's rate";
    timers.advance(2s - 1us);
    EXPECT_EQ(net.sent().size(), 3u) << "and took no token from the joins";
    timers.advance(1us);
    EXPECT_EQ(net.sent().size(), 4u);
}

TEST_F(Transactions, WithoutCongestionControlThereIsNoWindowToSee) {
    make();
    submit();
    EXPECT_EQ(tx->congestion(0), nullptr);
}

} // namespace
} // namespace mcastd::sa
