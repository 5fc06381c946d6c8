// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PortPoller on the fake MAD transport and the fake clock: what it sends, when (intervals
// within the jitter bounds, sooner after a failure), that polls never overlap, that the
// SMInfoRecord Get follows the SM's LID, and SM restart detection end to end through encoded
// and decoded MADs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "port/port_poller.hpp"
#include "sa/mad_codec.hpp"
#include "sa/sa_client.hpp"
#include "sa/transactions.hpp"
#include "unit/fakes/fake_mad_transport.hpp"
#include "unit/fakes/fake_timers.hpp"
#include "unit/fakes/sa_routes.hpp"
#include "unit/port/recording_sink.hpp"

namespace mcastd::port {
namespace {

using namespace std::chrono_literals;
using mcastd::test::FakeMadTransport;
using mcastd::test::FakeTimers;
using test::RecordingSink;
using test::port_info;
using test::kDown;
using test::kActive;
using Lines = std::vector<std::string>;
using Sent = FakeMadTransport::Sent;

constexpr std::uint64_t kSmGuid = 0x0002c90300000001ULL;


void put16(sa::MadBuf &m, std::size_t off, std::uint16_t v) {
    m[off] = static_cast<std::uint8_t>(v >> 8);
    m[off + 1] = static_cast<std::uint8_t>(v);
}

// The local port's GetResp to a sent Get(PortInfo): the request with the D bit, GetResp and
// the PortInfo fields the daemon reads (doc/sa-multicast.md §17).
sa::MadBuf portinfo_reply(const Sent &req, const PortInfo &pi) {
    sa::MadBuf m = req.mad;
    m[3] = 0x81;
    m[4] = 0x80, m[5] = 0x00;
    constexpr std::size_t d = 64;
    put16(m, d + 16, pi.lid);
    put16(m, d + 18, pi.master_sm_lid);
    m[d + 20] = 0x00, m[d + 21] = 0x50, m[d + 22] = 0xc0, m[d + 23] = 0x48;
    m[d + 32] = static_cast<std::uint8_t>(0x10 | pi.port_state);
    m[d + 33] = static_cast<std::uint8_t>(pi.phys_state << 4 | 0x2);
    m[d + 36] = static_cast<std::uint8_t>(pi.neighbor_mtu << 4 | pi.master_sm_sl);
    m[d + 51] = static_cast<std::uint8_t>((pi.client_reregister ? 0x80 : 0) | 0x1f);
    return m;
}

// The SMInfoRecord and mask a sent Get asks for (decoded by pretending it is the answer).
sa::SmInfoMad sminfo_request(const Sent &s) {
    sa::MadBuf as_resp = s.mad;
    as_resp[3] = sa::mad::method_get_resp;
    const auto d = sa::decode_sminfo_response(as_resp);
    EXPECT_TRUE(d) << d.error().message();
    return d ? d.value() : sa::SmInfoMad{};
}

bool is_smp(const Sent &s) { return s.mgmt_class() == sa::mad::class_smp_directed; }
bool is_sa(const Sent &s) { return s.mgmt_class() == sa::mad::class_subn_adm; }

enum class Reply { answer, silent, bounce };

class Poller : public ::testing::Test {
protected:
    Poller() {
        sa::TransactionConfig tc;
        tc.first_tid = 0x01000000;
        txns = std::make_unique<sa::MadTransactions>(net, timers, tc);
        client = std::make_unique<sa::SaClient>(*txns);
        routes = std::make_unique<mcastd::test::SaRoutes>(*txns);
        // What Service does with sa_moved: the registry has the SM, the SA MADs follow.
        sink.on_sa_moved = [this](PortIndex port, std::uint16_t lid, std::uint8_t sl) {
            routes->set(port, sa::MadAddress{.dlid = lid, .sl = sl});
        };
        // And with port_invalidated: the re-join comes back to the poller.
        sink.on_invalidated = [this](PortIndex port) { mon->on_memberships_gone(port); };
    }
    ~Poller() override {
        mon.reset(); // before the transactions it uses
    }

    void make(MonitorConfig cfg = {}) {
        if (!cfg.seed)
            cfg.seed = 42;
        mon = std::make_unique<PortPoller>(*txns, *client, timers, registry, sink, cfg);
        mon->set_note_sink([this](PortIndex port, const Note &n) {
            notes.push_back(std::to_string(port) + " " + n.text);
        });
        t0 = timers.now();
    }

    // Watches port `port` of the registry, adding it first (ports are added in index order).
    void start(PortIndex port = 0, std::uint8_t num = 1, std::vector<std::uint16_t> pkeys = {0xffff}) {
        if (!registry.get(port)) {
            ASSERT_EQ(port, registry.size()) << "ports are added in index order";
            PortAttributes a;
            a.device = "mlx5_0";
            a.port_num = num;
            registry.add(a, false);
        }
        ASSERT_EQ(registry.at(port).number(), num);
        registry.set_pkeys(port, std::move(pkeys));
        mon->start(port);
    }

    // Plays the fabric for every send not yet seen: the local port answers PortInfo from
    // `pi`, the SA answers SMInfoRecord Gets from `sm` (or with `sm_status`). Answers are
    // instant, so a send's time in `log` is also its answer's.
    void serve() {
        while (served < net.sent().size()) {
            const Sent s = net.sent()[served++];
            log.push_back({timers.now(), s});
            if (is_smp(s)) {
                if (smp_reply == Reply::answer)
                    net.deliver(s.port, portinfo_reply(s, pi[s.port]));
                else if (smp_reply == Reply::bounce)
                    net.bounce(s);
            } else if (is_sa(s)) {
                if (sa_reply == Reply::bounce) {
                    net.bounce(s);
                } else if (sa_reply == Reply::answer) {
                    answer_sminfo(s);
                }
            }
        }
    }

    // The SA's answer to an SMInfoRecord Get, from `sm` (or with `sm_status`).
    void answer_sminfo(const Sent &s) {
        sa::SmInfoMad r;
        r.method = sa::mad::method_get_resp;
        r.status = sm_status;
        r.tid = s.tid();
        r.comp_mask = sminfo_request(s).comp_mask;
        r.record = sm;
        net.deliver(s.port, sa::encode_sminfo_mad(r));
    }

    // Moves the clock to now + d, serving every send on the way.
    void run_for(Duration d) {
        const TimePoint end = timers.now() + d;
        for (;;) {
            serve();
            const auto next = timers.next_deadline();
            if (!next || *next > end)
                break;
            timers.advance_to(*next);
        }
        serve();
        timers.advance_to(end);
    }

    // Times (since t0) of the sends matching `pred`, in order.
    template <class Pred> std::vector<Duration> times(Pred pred) const {
        std::vector<Duration> out;
        for (const auto &[at, s] : log)
            if (pred(s))
                out.push_back(std::chrono::duration_cast<Duration>(at - t0));
        return out;
    }
    std::vector<Duration> smp_times() const { return times(is_smp); }
    std::vector<Duration> sa_times() const { return times(is_sa); }
    std::vector<const Sent *> sa_sends() const {
        std::vector<const Sent *> out;
        for (const auto &[at, s] : log)
            if (is_sa(s))
                out.push_back(&s);
        return out;
    }

    static std::vector<Duration> gaps(const std::vector<Duration> &t) {
        std::vector<Duration> out;
        for (std::size_t i = 1; i < t.size(); ++i)
            out.push_back(t[i] - t[i - 1]);
        return out;
    }

    FakeTimers timers;
    FakeMadTransport net;
    std::unique_ptr<sa::MadTransactions> txns;
    std::unique_ptr<sa::SaClient> client;
    std::unique_ptr<mcastd::test::SaRoutes> routes;
    PortRegistry registry; // the Service's, in the daemon
    RecordingSink sink;
    std::unique_ptr<PortPoller> mon;
    std::vector<std::string> notes;
    TimePoint t0;

    std::map<PortIndex, PortInfo> pi{{0, port_info()}, {1, port_info(7)}};
    sa::SmInfoRecord sm{.lid = 1, .guid = kSmGuid, .sm_key = 0, .act_count = 84, .priority = 0,
                        .sm_state = sa::sm_state::master};
    std::uint16_t sm_status = 0;
    Reply smp_reply = Reply::answer;
    Reply sa_reply = Reply::answer;
    std::size_t served = 0;
    std::vector<std::pair<TimePoint, Sent>> log;
};

// ---- PortInfo ----

TEST_F(Poller, StartAsksThePortAtOnceWithOneShortTry) {
    make();
    start(0, 2);
    ASSERT_EQ(net.sent().size(), 1u) << "no waiting for the first interval";
    const Sent &s = net.last();
    EXPECT_TRUE(is_smp(s));
    EXPECT_EQ(s.method(), 0x01);
    EXPECT_EQ(s.mad[23], 2) << "AttributeModifier: the port number";
    EXPECT_EQ(s.addr, (sa::MadAddress{.dlid = 0xffff, .dqp = 0, .sl = 0, .qkey = 0, .pkey_index = 0}));
    EXPECT_EQ(s.timeout_ms, 500u);
    EXPECT_EQ(txns->in_flight(0), 0u) << "a local SMP never takes an SA window slot";
}

TEST_F(Poller, TheFirstAnswerIsTheBaseline) {
    make();
    start();
    serve();
    EXPECT_EQ(sink.take(), (Lines{"port_info 0 3 4 4", "sa_moved 0 1 0",
                                  "usable 0 true port active, subnet manager at LID 1"}));
    ASSERT_NE(mon->rules(0), nullptr);
    EXPECT_EQ(mon->rules(0)->usable(), true);
}

TEST_F(Poller, PortInfoIntervalsStayWithinTheJitter) {
    make();
    start();
    run_for(120s);
    const auto g = gaps(smp_times());
    ASSERT_GE(g.size(), 100u);
    for (Duration d : g) {
        EXPECT_GE(d, 900ms);
        EXPECT_LE(d, 1100ms);
    }
    // Jitter really spreads them (a fixed seed makes this deterministic).
    const auto [lo, hi] = std::minmax_element(g.begin(), g.end());
    EXPECT_LT(*lo, 950ms);
    EXPECT_GT(*hi, 1050ms);
    EXPECT_TRUE(sink.take("invalidated").empty()) << "stable samples";
}

TEST_F(Poller, NoJitterMeansExactIntervals) {
    make(MonitorConfig{.portinfo_interval = 250ms, .jitter_percent = 0});
    start();
    run_for(5s);
    for (Duration d : gaps(smp_times()))
        EXPECT_EQ(d, 250ms);
}

TEST_F(Poller, UnansweredPortInfoFailsAfterOneTryAndTheNextPollWaitsForIt) {
    smp_reply = Reply::silent;
    make();
    start();
    run_for(499ms);
    EXPECT_EQ(smp_times().size(), 1u);
    EXPECT_TRUE(notes.empty());
    run_for(1ms);
    EXPECT_EQ(mon->stats(0).portinfo_failures, 1u);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0], "0 PortInfo query failed: no answer after 1 tries; last try: no answer "
                        "within 500 ms; keeping the last known state");
    run_for(2s);
    const auto t = smp_times();
    ASSERT_GE(t.size(), 2u);
    EXPECT_GE(t[1], 500ms + 900ms) << "the interval runs from the failure, never overlapping";
    EXPECT_LE(t[1], 500ms + 1100ms);
    EXPECT_TRUE(sink.take().empty()) << "a silent port is not a changed one";
    EXPECT_EQ(net.sent().size(), mon->stats(0).portinfo_polls) << "one try per poll";
}

TEST_F(Poller, PollNowDuringAQueryRunsOnceRightAfterIt) {
    smp_reply = Reply::silent;
    make();
    start();
    mon->poll_now(0);
    mon->poll_now(0);
    EXPECT_EQ(net.sent().size(), 1u) << "never two PortInfo queries in flight";
    EXPECT_EQ(mon->stats(0).portinfo_coalesced, 2u);
    run_for(500ms); // the first one fails ...
    EXPECT_EQ(smp_times().size(), 2u) << "... and exactly one more follows at once";
    EXPECT_EQ(smp_times()[1], 500ms);
}

TEST_F(Poller, PollNowWhenIdleAsksAtOnceAndRestartsTheInterval) {
    make(MonitorConfig{.jitter_percent = 0});
    start();
    run_for(300ms);
    mon->poll_now(0);
    run_for(1500ms); // to 1800 ms
    EXPECT_EQ(smp_times(), (std::vector<Duration>{0ms, 300ms, 1300ms}));
}

TEST_F(Poller, PortInfoAnswersDriveTheWatch) {
    make();
    start();
    run_for(1ms);
    sink.take();
    pi[0] = port_info(3, 1, kDown);
    run_for(1100ms);
    EXPECT_EQ(sink.take("usable"), Lines{"usable 0 false port down"});
    pi[0] = port_info();
    run_for(1100ms);
    const Lines inv = sink.take("invalidated");
    ASSERT_EQ(inv.size(), 1u);
    EXPECT_TRUE(inv[0].starts_with("invalidated 0 port-up")) << inv[0];
}

// ---- SMInfoRecord ----

TEST_F(Poller, SmInfoBaselineAtOnceAfterTheFirstUsableSampleThenEveryInterval) {
    make();
    start();
    run_for(60s);
    const auto t = sa_times();
    ASSERT_GE(t.size(), 5u);
    EXPECT_EQ(t[0], 0ms) << "a restart before the baseline would go unnoticed";
    for (Duration d : gaps(t)) {
        EXPECT_GE(d, 9000ms);
        EXPECT_LE(d, 11000ms);
    }
    EXPECT_EQ(sink.take("sm_seen").size(), t.size());
}

TEST_F(Poller, SmInfoGetSelectsTheMasterByLidWithOneShortTry) {
    make();
    start();
    run_for(2s);
    const auto sends = sa_sends();
    ASSERT_EQ(sends.size(), 1u);
    const Sent &s = *sends[0];
    EXPECT_EQ(s.method(), sa::mad::method_get);
    const sa::SmInfoMad req = sminfo_request(s);
    EXPECT_EQ(req.comp_mask, sa::sminfo_field::lid) << "a mask-0 Get fails with standby SMs";
    EXPECT_EQ(req.record.lid, 1);
    EXPECT_EQ(s.addr.dlid, 1);
    EXPECT_EQ(s.timeout_ms, 1000u);
}

TEST_F(Poller, SmInfoFollowsTheSmLid) {
    make();
    start();
    run_for(2s);
    pi[0] = port_info(3, 9);
    sm.lid = 9;
    sm.guid = 0x0002c90300000009ULL;
    sm.act_count = 5;
    run_for(1200ms); // the next PortInfo poll sees the new SM
    EXPECT_EQ(sink.take("invalidated"),
              Lines{"invalidated 0 sm-change the master SM moved from LID 1 to LID 9"});
    run_for(2s); // its baseline is taken soon, not at the old SM's next interval
    const auto sends = sa_sends();
    ASSERT_EQ(sends.size(), 2u);
    EXPECT_EQ(sminfo_request(*sends[1]).record.lid, 9);
    EXPECT_EQ(sends[1]->addr.dlid, 9) << "through the new SA address";
    EXPECT_TRUE(sink.take("invalidated").empty()) << "a new SM's first record is its baseline";
}

TEST_F(Poller, SmRestartDetectedEndToEnd) {
    make();
    start();
    run_for(2s);
    ASSERT_EQ(sa_times().size(), 1u);
    sm.act_count = 90; // idle growth
    run_for(11s);
    EXPECT_TRUE(sink.take("invalidated").empty());
    sm.act_count = 59; // OpenSM restarted on the same node (doc/testbed.md §7: 84 -> 59)
    run_for(11s);
    EXPECT_EQ(sink.take("invalidated"),
              Lines{"invalidated 0 sm-restart the SM (GUID 0x0002c90300000001) restarted: its "
                    "ActCount fell from 90 to 59"});
}

TEST_F(Poller, FailedSmInfoPollsRetrySoonerBackingOffToTheInterval) {
    make(MonitorConfig{.jitter_percent = 0});
    start();
    run_for(2s); // the baseline, at 0 s
    sa_reply = Reply::silent;
    run_for(93500ms); // to 95.5 s
    // 10 s: the next regular poll; it times out at 11 s, then retries after 1, 2, 4, 8 s and
    // then every 10 s (each after its 1 s timeout).
    EXPECT_EQ(sa_times(), (std::vector<Duration>{0s, 10s, 12s, 15s, 20s, 29s, 40s, 51s, 62s, 73s,
                                                 84s, 95s}));
    EXPECT_TRUE(txns->lane_in_flight(0, SaLane::poll)) << "the one poll sent at 95 s, and never more";
    EXPECT_EQ(txns->in_flight(0), 0u) << "in the poll's own slot, not the window's";
    run_for(1s);
    EXPECT_FALSE(txns->lane_in_flight(0, SaLane::poll)) << "a poll holds its slot for one timeout only";
    EXPECT_EQ(net.sent().size(), log.size());
    EXPECT_EQ(sa_times().size(), mon->stats(0).sminfo_polls) << "one try per poll";
    EXPECT_TRUE(sink.take("invalidated").empty());
    ASSERT_FALSE(notes.empty());
    EXPECT_EQ(notes[0], "0 SMInfoRecord poll failed: the Get of the SM at LID 1 got no answer "
                        "within 1000 ms");
    sa_reply = Reply::answer;
    run_for(11s);
    EXPECT_EQ(notes.back(), "0 the SM answers SMInfoRecord again after 11 failed polls");
}

TEST_F(Poller, BouncedSmInfoAlsoAsksPortInfoAtOnce) {
    make(MonitorConfig{.portinfo_interval = 5000ms, .jitter_percent = 0});
    start();
    run_for(2s); // PortInfo and the SMInfo baseline at 0 s
    sa_reply = Reply::bounce;
    run_for(10500ms); // the regular SMInfo poll at 10 s bounces; its try ends at 11 s
    EXPECT_EQ(smp_times(), (std::vector<Duration>{0s, 5s, 10s, 11s}))
        << "a PortInfo query as soon as the SA proved unreachable";
    EXPECT_EQ(notes.back(),
              "0 SMInfoRecord poll could not reach the SA: the Get of the SM at LID 1 did not "
              "reach the SA (it bounced, could not be sent, or the port has no SA address)");
}

TEST_F(Poller, SmInfoAnsweringAgainAuditsAtOnce) {
    make(MonitorConfig{.audit_per_second = 0, .jitter_percent = 0}); // no periodic audit
    start();
    run_for(2s); // the baseline at 0 s
    std::vector<Duration> audits;
    sink.on_call = [&](const std::string &line) {
        if (line == "audit 0")
            audits.push_back(std::chrono::duration_cast<Duration>(timers.now() - t0));
    };
    sa_reply = Reply::bounce; // the SM is gone: the poll at 10 s bounces, failing at 11 s
    run_for(9500ms);
    EXPECT_TRUE(audits.empty());
    sa_reply = Reply::answer; // back, with an ActCount that did not fall
    sm.act_count = 100;
    run_for(10s);
    EXPECT_EQ(audits, (std::vector<Duration>{12s})) << "right after the first answer (the retry at 12 s), once";
    EXPECT_EQ(mon->stats(0).audits, 1u);
    EXPECT_TRUE(sink.take("invalidated").empty());
}

TEST_F(Poller, SmInfoErrorStatusIsAFailureWithItsName) {
    make(MonitorConfig{.jitter_percent = 0});
    start();
    sm_status = 0x0400;
    run_for(500ms); // the baseline attempt at 0 s, answered with an error
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_TRUE(notes[0].starts_with("0 SMInfoRecord poll failed: the Get of the SM at LID 1 was "
                                     "answered with SA status 0x0400 ERR_TOO_MANY_RECORDS"))
        << notes[0];
    EXPECT_EQ(mon->stats(0).sminfo_failures, 1u);
    EXPECT_FALSE(mon->rules(0)->sm_baseline());
}

TEST_F(Poller, NoSecondSmInfoWhileOneIsInFlight) {
    make(MonitorConfig{.sminfo_timeout = 5000ms, .jitter_percent = 0});
    start();
    sa_reply = Reply::silent;
    run_for(1500ms); // the baseline Get went out at 0 s and waits until 5 s
    ASSERT_EQ(sa_times().size(), 1u);
    pi[0] = port_info(3, 9); // a new SM asks for a Get soon, but one is in flight
    run_for(3s);
    EXPECT_EQ(sa_times().size(), 1u);
    sa_reply = Reply::answer;
    sm.lid = 9;
    run_for(5s); // the first fails at 5 s; the one for the new SM follows sminfo_retry after
    const auto t = sa_times();
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[1], 6s);
    EXPECT_EQ(sminfo_request(*sa_sends()[1]).record.lid, 9);
}

TEST_F(Poller, SmInfoAnswerInFlightAcrossClientReregisterIsTheNewBaseline) {
    // The SM restarts; the SMInfo poll sent meanwhile is answered by the new SM only after its
    // sweep's CLIENT_REREGISTER: the port re-joins once, not again for that answer.
    make(MonitorConfig{.sminfo_timeout = 5000ms, .jitter_percent = 0});
    start();
    run_for(2s); // the baseline at 0 s: ActCount 84
    sa_reply = Reply::silent;
    run_for(8500ms); // the poll at 10 s waits for its answer
    ASSERT_EQ(sa_times().size(), 2u);
    const Sent in_flight = *sa_sends().back();
    mon->on_verbs_event(0, VerbsEvent::client_reregister);
    EXPECT_EQ(sink.take("invalidated").size(), 1u);
    sm.act_count = 5; // the new SM's
    answer_sminfo(in_flight);
    EXPECT_TRUE(sink.take("invalidated").empty()) << "the answer in flight is the new baseline";
    EXPECT_EQ(mon->rules(0)->sm_baseline()->act_count, 5u);
    sa_reply = Reply::answer;
    sm.act_count = 6;
    run_for(10s); // the next poll, an interval after the answer
    EXPECT_EQ(sa_times().size(), 3u);
    EXPECT_TRUE(sink.take("invalidated").empty());
    sm.act_count = 2; // a genuine later restart
    run_for(10s);
    EXPECT_EQ(sink.take("invalidated"),
              Lines{"invalidated 0 sm-restart the SM (GUID 0x0002c90300000001) restarted: its "
                    "ActCount fell from 6 to 2"});
}

TEST_F(Poller, StateLostMakesTheNextSmInfoSampleTheBaseline) {
    make(MonitorConfig{.jitter_percent = 0});
    start();
    run_for(2s); // the baseline at 0 s
    mon->on_memberships_gone(0); // an audit found the port's state gone; the engine re-joins it
    EXPECT_TRUE(sink.take("invalidated").empty());
    sm.act_count = 5; // the restarted SM the audit found
    run_for(9s);
    EXPECT_EQ(sa_times(), (std::vector<Duration>{0s, 10s})) << "at the poll's normal time";
    EXPECT_TRUE(sink.take("invalidated").empty()) << "the new baseline, not a second re-join";
    EXPECT_EQ(mon->rules(0)->sm_baseline()->act_count, 5u);
    mon->on_memberships_gone(7); // not watched: ignored
}

TEST_F(Poller, NoSmInfoWhileThePortIsNotUsable) {
    pi[0] = port_info(3, 1, kDown);
    make();
    start();
    run_for(60s);
    EXPECT_TRUE(sa_times().empty());
    EXPECT_GT(mon->stats(0).sminfo_skipped, 0u);
    pi[0] = port_info();
    const Duration up = std::chrono::duration_cast<Duration>(timers.now() - t0);
    run_for(3s);
    const auto t = sa_times();
    ASSERT_EQ(t.size(), 1u) << "the baseline soon after the port is usable";
    EXPECT_LE(t[0], up + 1100ms + 1100ms);
}

// ---- audit ----

TEST_F(Poller, AuditTicksAtTheConfiguredRateWithJitter) {
    make(); // 0.2 per second: every 5 s
    start();
    std::vector<Duration> ticks;
    sink.on_call = [&](const std::string &line) {
        if (line == "audit 0")
            ticks.push_back(std::chrono::duration_cast<Duration>(timers.now() - t0));
    };
    run_for(200s);
    ASSERT_GE(ticks.size(), 36u);
    EXPECT_LE(ticks[0], 5s) << "the first tick falls somewhere in the first interval";
    for (Duration d : gaps(ticks)) {
        EXPECT_GE(d, 4500ms);
        EXPECT_LE(d, 5500ms);
    }
    EXPECT_EQ(mon->stats(0).audits, ticks.size());
}

TEST_F(Poller, AuditOffAtRateZeroAndSilentWhileUnusable) {
    make(MonitorConfig{.audit_per_second = 0});
    EXPECT_EQ(mon->audit_interval(), Duration::zero());
    start();
    run_for(100s);
    EXPECT_TRUE(sink.take("audit").empty());

    mon.reset();
    pi[0] = port_info(3, 1, kDown);
    make(MonitorConfig{.audit_per_second = 10});
    start();
    run_for(10s);
    EXPECT_TRUE(sink.take("audit").empty());
    EXPECT_EQ(mon->stats(0).audits, 0u);
}

TEST_F(Poller, AuditIntervalIsCappedAtADay) {
    make(MonitorConfig{.audit_per_second = 1e-9});
    EXPECT_EQ(mon->audit_interval(), std::chrono::duration_cast<Duration>(kMaxAuditInterval));
    mon.reset();
    make(MonitorConfig{.audit_per_second = 100});
    EXPECT_EQ(mon->audit_interval(), 10ms);
}

// ---- verbs events and the P_Key table ----

TEST_F(Poller, VerbsEventsReachTheWatch) {
    make();
    start();
    run_for(2s);
    sink.take();
    const std::size_t smps = smp_times().size();
    mon->on_verbs_event(0, VerbsEvent::lid_change);
    serve();
    EXPECT_EQ(smp_times().size(), smps + 1) << "a PortInfo query at once";
    mon->on_verbs_event(0, VerbsEvent::client_reregister);
    EXPECT_EQ(sink.take("invalidated"), Lines{"invalidated 0 client-reregister the SM asked for "
                                              "re-registration (CLIENT_REREGISTER)"});
    EXPECT_EQ(mon->stats(0).verbs_events, 2u);
    mon->on_verbs_event(5, VerbsEvent::port_err); // not watched: ignored
}

TEST_F(Poller, PkeyChangeRereadsTheTableAndInvalidatesOnlyWhenTheIndexMoved) {
    make();
    std::vector<std::uint16_t> table{0xffff, 0x8001};
    std::vector<std::string> read_for;
    mon->set_pkey_reader([&](const RegisteredPort &p) -> std::variant<std::vector<std::uint16_t>, Error> {
        read_for.push_back(p.name);
        return table;
    });
    start(0, 1, {0xffff, 0x8001});
    run_for(2s);
    sink.take();

    mon->on_verbs_event(0, VerbsEvent::pkey_change); // same index
    EXPECT_EQ(read_for, Lines{"mlx5_0/1"});
    EXPECT_EQ(sink.take(), Lines{"pkeys 0 ffff 8001"}) << "the sink hears the table, nothing else";
    table = {0x8001, 0xffff};
    mon->on_verbs_event(0, VerbsEvent::pkey_change);
    EXPECT_EQ(sink.take(), (Lines{"pkeys 0 8001 ffff", "invalidated 0 pkey-change the default P_Key 0xffff "
                                                       "moved from index 0 to 1"}))
        << "the new table (for the SA address) before the invalidation";
    EXPECT_EQ(mon->stats(0).pkey_reads, 2u);
}

TEST_F(Poller, FailedPkeyReadIsNotedAndChangesNothing) {
    make();
    mon->set_pkey_reader([](const RegisteredPort &) -> std::variant<std::vector<std::uint16_t>, Error> {
        return Error{Errc::no_such_port, "mlx5_0 has no port 1", std::nullopt};
    });
    start();
    run_for(2s);
    sink.take();
    mon->on_verbs_event(0, VerbsEvent::pkey_change);
    EXPECT_TRUE(sink.take().empty());
    EXPECT_EQ(notes.back(), "0 PKEY_CHANGE: re-reading the P_Key table failed: mlx5_0 has no port 1");
}

// ---- lifetime ----

TEST_F(Poller, PortsAreIndependent) {
    make();
    start(0, 1);
    start(1, 2);
    run_for(3s);
    std::size_t port0 = 0, port1 = 0;
    for (const auto &[at, s] : log) {
        if (!is_smp(s))
            continue;
        (s.port == 0 ? port0 : port1)++;
        EXPECT_EQ(s.mad[23], s.port == 0 ? 1 : 2);
    }
    EXPECT_GE(port0, 3u);
    EXPECT_GE(port1, 3u);
    EXPECT_EQ(sink.take("port_info"), (Lines{"port_info 0 3 4 4", "port_info 1 7 4 4"}));
    mon->stop(0);
    EXPECT_FALSE(mon->watching(0));
    EXPECT_TRUE(mon->watching(1));
}

TEST_F(Poller, StopCancelsEverything) {
    smp_reply = Reply::silent;
    sa_reply = Reply::silent;
    make();
    start();
    mon->stop(0);
    EXPECT_EQ(timers.pending(), 0u) << "no timer, no transaction deadline left";
    const std::size_t sent = net.sent().size();
    run_for(100s);
    EXPECT_EQ(net.sent().size(), sent);
    EXPECT_EQ(mon->rules(0), nullptr);
    mon->poll_now(0); // no-op
    EXPECT_EQ(net.sent().size(), sent);
}

TEST_F(Poller, DestructorCancelsEverything) {
    sa_reply = Reply::silent;
    make();
    start(0);
    start(1, 2);
    run_for(1500ms); // SMInfo Gets in flight
    mon.reset();
    EXPECT_EQ(timers.pending(), 0u);
    EXPECT_EQ(txns->in_flight(0), 0u);
}

TEST_F(Poller, TheSinkMayStopThePortFromInsideACallback) {
    make();
    start();
    sink.on_call = [&](const std::string &line) {
        if (line.starts_with("usable 0 false"))
            mon->stop(0);
    };
    run_for(2s);
    pi[0] = port_info(3, 1, kDown);
    run_for(2s);
    EXPECT_FALSE(mon->watching(0));
    EXPECT_EQ(timers.pending(), 0u);
}

TEST_F(Poller, StartingAWatchedPortAgainStartsItAfresh) {
    make();
    start();
    run_for(2s);
    start();
    EXPECT_EQ(mon->stats(0), PollStats{.portinfo_polls = 1});
    EXPECT_FALSE(mon->rules(0)->usable()) << "new rules: the next answer is a baseline";
}

TEST_F(Poller, InvalidConfigIsRefusedNamingTheField) {
    const std::pair<MonitorConfig, std::string> bad[] = {
        {MonitorConfig{.portinfo_interval = 0ms}, "portinfo_interval must be positive"},
        {MonitorConfig{.sminfo_interval = 0ms}, "sminfo_interval must be positive"},
        {MonitorConfig{.sminfo_timeout = 0ms}, "sminfo_timeout must be positive"},
        {MonitorConfig{.audit_per_second = -1}, "audit_per_second must be a finite number >= 0"},
        {MonitorConfig{.jitter_percent = 51}, "jitter_percent must be at most 50"},
    };
    for (const auto &[cfg, why] : bad) {
        try {
            PortPoller m(*txns, *client, timers, registry, sink, cfg);
            ADD_FAILURE() << why << ": accepted";
        } catch (const std::invalid_argument &e) {
            EXPECT_EQ(std::string(e.what()), "config monitor: " + why);
        }
    }
    EXPECT_EQ(check_monitor_config(MonitorConfig{}), std::nullopt);
}

TEST_F(Poller, JitterStaysInItsBounds) {
    make(MonitorConfig{.jitter_percent = 50});
    for (int i = 0; i < 1000; ++i) {
        const Duration d = mon->jittered(10s);
        EXPECT_GE(d, 5s);
        EXPECT_LE(d, 15s);
    }
}

} // namespace
} // namespace mcastd::port
