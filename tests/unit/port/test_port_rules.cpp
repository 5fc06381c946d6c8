// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PortRules: every rule that invalidates a port's memberships, and every non-rule (a stable
// sample, a baseline, ActCount growth, an SL change, a deferred re-registration) that must not.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "port/port_rules.hpp"
#include "unit/port/recording_sink.hpp"

namespace mcastd::port {
namespace {

using Lines = std::vector<std::string>;
using test::RecordingSink;
using test::port_info;
using test::kDown;
using test::kInit;
using test::kArmed;
using test::kActive;



sa::SmInfoRecord sm(std::uint32_t act_count, std::uint64_t guid = 0x0002c90300000001ULL,
                    std::uint16_t lid = 1) {
    sa::SmInfoRecord r;
    r.lid = lid;
    r.guid = guid;
    r.act_count = act_count;
    r.priority = 0;
    r.sm_state = sa::sm_state::master;
    return r;
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != s.npos; }

class Rules : public ::testing::Test {
protected:
    // As in the daemon: the re-join an invalidation starts comes back to the rules.
    Rules() {
        sink.on_invalidated = [this](PortIndex) { w.on_memberships_gone(); };
    }

    // Rules that have seen a usable port (LID 3, SM at LID 1), with the recording cleared.
    void baseline_usable() {
        w.on_portinfo(port_info());
        sink.take();
    }

    RecordingSink sink;
    PortRules w{7, sink};
};

// ---- PortInfo: the baseline ----

TEST_F(Rules, FirstUsableSampleIsTheBaselineAndInvalidatesNothing) {
    const Followup f = w.on_portinfo(port_info());
    EXPECT_EQ(sink.take(), (Lines{"port_info 7 3 4 4", "sa_moved 7 1 0",
                                  "usable 7 true port active, subnet manager at LID 1"}));
    EXPECT_TRUE(f.poll_sminfo_soon) << "the SMInfo baseline is taken soon";
    EXPECT_FALSE(f.poll_portinfo_now);
    EXPECT_FALSE(f.note);
    EXPECT_EQ(w.usable(), true);
    EXPECT_EQ(w.sm_lid(), 1);
}

TEST_F(Rules, FirstUnusableSampleIsTheBaselineToo) {
    w.on_portinfo(port_info(3, 1, kDown));
    EXPECT_EQ(sink.take(), (Lines{"port_info 7 3 1 4", "sa_moved 7 1 0", "usable 7 false port down"}));
    EXPECT_EQ(w.usable(), false);
}

TEST_F(Rules, NamesWhyAPortIsNotUsable) {
    const std::pair<PortInfo, std::string> cases[] = {
        {port_info(3, 1, kDown), "port down"},
        {port_info(3, 1, kInit), "port not active (INIT)"},
        {port_info(3, 1, kArmed), "port not active (ARMED)"},
        {port_info(3, 0, kActive), "no subnet manager"},
    };
    for (const auto &[info, why] : cases) {
        RecordingSink s;
        PortRules fresh(0, s);
        fresh.on_portinfo(info);
        EXPECT_EQ(s.take("usable"), Lines{"usable 0 false " + why});
    }
}

TEST_F(Rules, StableSamplesEmitNothing) {
    baseline_usable();
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(w.on_portinfo(port_info()), Followup{});
    EXPECT_TRUE(sink.take().empty());
}

TEST_F(Rules, NoSmLidMeansNoSaMove) {
    w.on_portinfo(port_info(0, 0, kInit));
    EXPECT_EQ(sink.take(), (Lines{"port_info 7 0 2 4", "usable 7 false port not active (INIT)"}));
}

// ---- PortInfo: state ----

TEST_F(Rules, PortThatComesBackIsInvalidatedBeforeItIsUsable) {
    baseline_usable();
    w.on_portinfo(port_info(3, 1, kDown));
    EXPECT_EQ(sink.take(), (Lines{"port_info 7 3 1 4", "usable 7 false port down"}));
    w.on_portinfo(port_info(3, 1, kInit));
    EXPECT_EQ(sink.take(), (Lines{"port_info 7 3 2 4"})) << "still not usable: no second usable(false)";
    const Followup f = w.on_portinfo(port_info());
    const Lines got = sink.take();
    ASSERT_EQ(got.size(), 3u) << ::testing::PrintToString(got);
    EXPECT_EQ(got[0], "port_info 7 3 4 4");
    EXPECT_TRUE(got[1].starts_with("invalidated 7 port-up ")) << got[1];
    EXPECT_TRUE(contains(got[1], "(it was: port down)")) << got[1];
    EXPECT_EQ(got[2], "usable 7 true port active, subnet manager at LID 1");
    EXPECT_TRUE(f.poll_sminfo_soon);
}

TEST_F(Rules, BaselineNotUsableThenUsableIsInvalidatedToo) {
    // Conservative on purpose: the engine may have joined from a stale sysfs view first.
    w.on_portinfo(port_info(3, 1, kInit));
    sink.take();
    w.on_portinfo(port_info());
    const Lines inv = sink.take("invalidated");
    ASSERT_EQ(inv.size(), 1u);
    EXPECT_TRUE(inv[0].starts_with("invalidated 7 port-up ")) << inv[0];
}

TEST_F(Rules, MtuChangeIsOnlyReported) {
    baseline_usable();
    PortInfo p = port_info();
    p.neighbor_mtu = 5;
    w.on_portinfo(p);
    EXPECT_EQ(sink.take(), Lines{"port_info 7 3 4 5"});
}

// ---- PortInfo: LID ----

TEST_F(Rules, LidChangeWhileUsableInvalidates) {
    baseline_usable();
    w.on_portinfo(port_info(5));
    EXPECT_EQ(sink.take(), (Lines{"port_info 7 5 4 4",
                                  "invalidated 7 lid-change the port's LID changed from 3 to 5"}));
}

TEST_F(Rules, LidChangeWhileDownIsCoveredByTheReturn) {
    baseline_usable();
    w.on_portinfo(port_info(3, 1, kDown));
    w.on_portinfo(port_info(5, 1, kInit));
    sink.take();
    w.on_portinfo(port_info(5));
    const Lines inv = sink.take("invalidated");
    ASSERT_EQ(inv.size(), 1u) << "one invalidation, not one per cause";
    EXPECT_TRUE(inv[0].starts_with("invalidated 7 port-up ")) << inv[0];
}

// ---- PortInfo: the SM ----

TEST_F(Rules, SmLidChangeMovesTheSaAndInvalidates) {
    baseline_usable();
    w.on_sminfo(sm(84));
    sink.take();
    const Followup f = w.on_portinfo(port_info(3, 9));
    EXPECT_EQ(sink.take(), (Lines{"sa_moved 7 9 0",
                                  "invalidated 7 sm-change the master SM moved from LID 1 to LID 9"}));
    EXPECT_TRUE(f.poll_sminfo_soon) << "the new SM needs an SMInfo baseline";
    EXPECT_FALSE(w.sm_baseline()) << "the old SM's baseline is gone";
}

TEST_F(Rules, FirstSmIsNotAChange) {
    w.on_portinfo(port_info(3, 0, kActive));
    sink.take();
    w.on_portinfo(port_info(3, 1));
    const Lines got = sink.take();
    EXPECT_EQ(got, (Lines{"sa_moved 7 1 0", "invalidated 7 port-up the port is usable again (it "
                                            "was: no subnet manager); the SA dropped its "
                                            "memberships when it went down",
                          "usable 7 true port active, subnet manager at LID 1"}));
}

TEST_F(Rules, SlChangeAloneMovesTheSaButKeepsTheMemberships) {
    baseline_usable();
    PortInfo p = port_info();
    p.master_sm_sl = 3;
    w.on_portinfo(p);
    EXPECT_EQ(sink.take(), Lines{"sa_moved 7 1 3"});
}

TEST_F(Rules, SmLidLostAndBackIsNoSmChange) {
    baseline_usable();
    w.on_portinfo(port_info(3, 0));
    EXPECT_EQ(sink.take(), Lines{"usable 7 false no subnet manager"});
    w.on_portinfo(port_info(3, 1));
    const Lines got = sink.take();
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0], "sa_moved 7 1 0");
    EXPECT_TRUE(got[1].starts_with("invalidated 7 port-up")) << got[1];
    EXPECT_FALSE(contains(got[1], "moved")) << got[1];
}

TEST_F(Rules, EverythingAtOnceIsOneInvalidationNamingEveryCause) {
    baseline_usable();
    w.on_portinfo(port_info(3, 1, kDown));
    sink.take();
    w.on_portinfo(port_info(5, 9)); // back, with a new LID (ignored while down) and a new SM
    const Lines inv = sink.take("invalidated");
    ASSERT_EQ(inv.size(), 1u);
    EXPECT_TRUE(inv[0].starts_with("invalidated 7 port-up the port is usable again")) << inv[0];
    EXPECT_TRUE(contains(inv[0], "; the master SM moved from LID 1 to LID 9")) << inv[0];
}

// ---- PortInfo: ClientReregister ----

TEST_F(Rules, ClientReregisterBitInvalidatesOncePerEdge) {
    baseline_usable();
    PortInfo p = port_info();
    p.client_reregister = true;
    w.on_portinfo(p);
    EXPECT_EQ(sink.take(), (Lines{"invalidated 7 client-reregister the SM set ClientReregister "
                                  "in PortInfo"}));
    w.on_portinfo(p); // still set: the same request
    EXPECT_TRUE(sink.take().empty());
    w.on_portinfo(port_info());
    w.on_portinfo(p); // set again: a new request
    EXPECT_EQ(sink.take("invalidated").size(), 1u);
}

TEST_F(Rules, ClientReregisterBitOnAnUnusablePortWaitsForIt) {
    baseline_usable();
    PortInfo p = port_info(3, 1, kInit);
    p.client_reregister = true;
    w.on_portinfo(p);
    EXPECT_TRUE(sink.take("invalidated").empty());
    EXPECT_TRUE(w.reregister_pending());
    w.on_portinfo(port_info());
    const Lines inv = sink.take("invalidated");
    ASSERT_EQ(inv.size(), 1u);
    EXPECT_TRUE(inv[0].starts_with("invalidated 7 client-reregister ")) << inv[0];
    EXPECT_FALSE(w.reregister_pending());
}

// ---- PortInfo: failures ----

TEST_F(Rules, FailedPortInfoChangesNothingAndWarnsOncePerRun) {
    baseline_usable();
    Followup f = w.on_portinfo_failed("no answer within 500 ms");
    ASSERT_TRUE(f.note);
    EXPECT_EQ(f.note->level, Note::Level::warning);
    EXPECT_EQ(f.note->text, "PortInfo query failed: no answer within 500 ms; keeping the last known state");
    EXPECT_FALSE(f.poll_portinfo_now || f.poll_sminfo_soon || f.read_pkey_table);
    f = w.on_portinfo_failed("no answer within 500 ms");
    ASSERT_TRUE(f.note);
    EXPECT_EQ(f.note->level, Note::Level::debug);
    EXPECT_TRUE(contains(f.note->text, "(2 in a row)")) << f.note->text;
    EXPECT_TRUE(sink.take().empty());
    EXPECT_EQ(w.usable(), true);

    f = w.on_portinfo(port_info());
    ASSERT_TRUE(f.note);
    EXPECT_EQ(f.note->level, Note::Level::info);
    EXPECT_EQ(f.note->text, "PortInfo answers again after 2 failed queries");
    EXPECT_FALSE(w.on_portinfo(port_info()).note);
}

// ---- SMInfoRecord ----

TEST_F(Rules, FirstSmInfoIsTheBaseline) {
    baseline_usable();
    EXPECT_EQ(w.on_sminfo(sm(84)), Followup{});
    EXPECT_EQ(sink.take(), Lines{"sm_seen 7 1 " + std::to_string(0x0002c90300000001ULL) + " 84"});
    ASSERT_TRUE(w.sm_baseline());
    EXPECT_EQ(w.sm_baseline()->act_count, 84u);
}

TEST_F(Rules, ActCountGrowthIsNormal) {
    baseline_usable();
    for (std::uint32_t n : {84u, 85u, 85u, 90u, 1000u})
        w.on_sminfo(sm(n));
    EXPECT_TRUE(sink.take("invalidated").empty());
}

TEST_F(Rules, ActCountGoingBackMeansTheSmRestarted) {
    baseline_usable();
    w.on_sminfo(sm(84));
    sink.take();
    w.on_sminfo(sm(59));
    EXPECT_EQ(sink.take(),
              (Lines{"sm_seen 7 1 " + std::to_string(0x0002c90300000001ULL) + " 59",
                     "invalidated 7 sm-restart the SM (GUID 0x0002c90300000001) restarted: its "
                     "ActCount fell from 84 to 59"}));
    // 59 is the new baseline: growth from there is fine.
    w.on_sminfo(sm(60));
    EXPECT_TRUE(sink.take("invalidated").empty());
}

TEST_F(Rules, GuidChangeMeansAnotherSmTookOver) {
    baseline_usable();
    w.on_sminfo(sm(84));
    sink.take();
    w.on_sminfo(sm(200, 0x0002c90300000002ULL)); // a higher ActCount does not hide it
    EXPECT_EQ(sink.take("invalidated"),
              Lines{"invalidated 7 sm-restart another SM took over at LID 1: GUID "
                    "0x0002c90300000001 -> 0x0002c90300000002, ActCount 84 -> 200"});
}

TEST_F(Rules, OnlySuccessfulSamplesMoveTheBaseline) {
    baseline_usable();
    w.on_sminfo(sm(84));
    w.on_sminfo_failed(false, "no answer");
    w.on_sminfo(sm(90));
    w.on_sminfo_failed(true, "bounced");
    sink.take();
    w.on_sminfo(sm(85)); // below the last success (90), though above the first (84)
    EXPECT_EQ(sink.take("invalidated").size(), 1u);
}

TEST_F(Rules, NewSmLidStartsANewBaseline) {
    baseline_usable();
    w.on_sminfo(sm(84));
    w.on_portinfo(port_info(3, 9));
    sink.take();
    // The new master: another GUID and a low ActCount, which is its baseline, not a restart.
    w.on_sminfo(sm(5, 0x0002c90300000009ULL, 9));
    EXPECT_TRUE(sink.take("invalidated").empty());
    w.on_sminfo(sm(4, 0x0002c90300000009ULL, 9));
    EXPECT_EQ(sink.take("invalidated").size(), 1u);
}

TEST_F(Rules, RecordOfAnotherLidIsABaselineNotARestart) {
    baseline_usable();
    w.on_sminfo(sm(84));
    w.on_sminfo(sm(3, 0x0002c90300000009ULL, 9));
    EXPECT_TRUE(sink.take("invalidated").empty());
}

TEST_F(Rules, FailedSmInfoAsksForASoonerRetryAndInvalidatesNothing) {
    baseline_usable();
    w.on_sminfo(sm(84));
    sink.take();
    Followup f = w.on_sminfo_failed(false, "no answer within 1000 ms");
    EXPECT_TRUE(f.poll_sminfo_soon);
    EXPECT_FALSE(f.poll_portinfo_now) << "a silent SA is not a moved one";
    ASSERT_TRUE(f.note);
    EXPECT_EQ(f.note->level, Note::Level::warning);
    EXPECT_EQ(f.note->text, "SMInfoRecord poll failed: no answer within 1000 ms");
    f = w.on_sminfo_failed(true, "bounced");
    EXPECT_TRUE(f.poll_sminfo_soon);
    EXPECT_TRUE(f.poll_portinfo_now) << "an unreachable SA: has the SM moved?";
    EXPECT_EQ(f.note->level, Note::Level::debug);
    EXPECT_TRUE(sink.take().empty());
    f = w.on_sminfo(sm(85));
    ASSERT_TRUE(f.note);
    EXPECT_EQ(f.note->text, "the SM answers SMInfoRecord again after 2 failed polls");
}

TEST_F(Rules, SmInfoAnsweringAgainAfterFailuresAsksForAnAudit) {
    baseline_usable();
    EXPECT_FALSE(w.on_sminfo(sm(84)).audit_now);
    w.on_sminfo_failed(true, "bounced");
    // Same GUID, higher ActCount: a restarted OpenSM that has sent more SMPs than the old one.
    EXPECT_TRUE(w.on_sminfo(sm(90)).audit_now) << "one Get tells whether the SA lost the port";
    EXPECT_TRUE(sink.take("invalidated").empty());
    EXPECT_FALSE(w.on_sminfo(sm(91)).audit_now) << "only after failures";
    w.on_sminfo_failed(false, "no answer");
    EXPECT_FALSE(w.on_sminfo(sm(50)).audit_now) << "a detected restart re-joins everything anyway";
    EXPECT_EQ(sink.take("invalidated").size(), 1u);
}

TEST_F(Rules, SmThatIsNoLongerMasterAsksForPortInfo) {
    baseline_usable();
    sa::SmInfoRecord r = sm(84);
    r.sm_state = sa::sm_state::standby;
    const Followup f = w.on_sminfo(r);
    EXPECT_TRUE(f.poll_portinfo_now);
    ASSERT_TRUE(f.note);
    EXPECT_EQ(f.note->text, "the SM at LID 1 is no longer master (SMState 2)");
    EXPECT_TRUE(sink.take("invalidated").empty());
}

// ---- SMInfo: a new baseline after every re-join ----
//
// A re-join Sets every group at the SM that is master by then, so the SM restart that caused it
// is covered: when the SMInfo poll shows that restart afterwards, it is the new baseline, not a
// second re-join of the port.

// Rules with an SMInfo baseline of ActCount 84, with the recording cleared.
class RulesAfterBaseline : public Rules {
protected:
    RulesAfterBaseline() {
        baseline_usable();
        w.on_sminfo(sm(84));
        sink.take();
    }
};

TEST_F(RulesAfterBaseline, ClientReregisterThenTheRestartedSmIsOneInvalidation) {
    const Followup f = w.on_verbs_event(VerbsEvent::client_reregister);
    EXPECT_EQ(sink.take("invalidated").size(), 1u);
    EXPECT_FALSE(w.sm_baseline());
    // At the poll's normal time: every port of the fabric gets the CLIENT_REREGISTER at once,
    // and their Gets must not reach the SA in step while it serves the re-join.
    EXPECT_FALSE(f.poll_sminfo_soon);
    w.on_sminfo(sm(5)); // the restarted SM: its ActCount starts low again
    EXPECT_TRUE(sink.take("invalidated").empty()) << "the CLIENT_REREGISTER's re-join covers it";
    ASSERT_TRUE(w.sm_baseline());
    EXPECT_EQ(w.sm_baseline()->act_count, 5u);
}

TEST_F(RulesAfterBaseline, AnswerInFlightAcrossClientReregisterIsTheNewBaseline) {
    // The poll went out before the CLIENT_REREGISTER; its answer, from the new SM, comes after.
    // The next poll compares with it.
    w.on_verbs_event(VerbsEvent::client_reregister);
    sink.take();
    w.on_sminfo(sm(5, 0x0002c90300000002ULL)); // another GUID, even
    w.on_sminfo(sm(7, 0x0002c90300000002ULL));
    EXPECT_TRUE(sink.take("invalidated").empty());
}

TEST_F(RulesAfterBaseline, ALaterRestartStillInvalidatesAfterTheNewBaseline) {
    w.on_verbs_event(VerbsEvent::client_reregister);
    w.on_sminfo(sm(5));
    w.on_sminfo(sm(9));
    sink.take();
    w.on_sminfo(sm(3)); // restarted again
    EXPECT_EQ(sink.take("invalidated"),
              Lines{"invalidated 7 sm-restart the SM (GUID 0x0002c90300000001) restarted: its "
                    "ActCount fell from 9 to 3"});
    w.on_sminfo(sm(400, 0x0002c90300000002ULL)); // and a failover
    EXPECT_EQ(sink.take("invalidated"),
              Lines{"invalidated 7 sm-restart another SM took over at LID 1: GUID "
                    "0x0002c90300000001 -> 0x0002c90300000002, ActCount 3 -> 400"});
}

TEST_F(RulesAfterBaseline, SmRestartsOwnSampleIsItsBaseline) {
    const Followup f = w.on_sminfo(sm(59));
    EXPECT_EQ(sink.take("invalidated").size(), 1u);
    EXPECT_FALSE(f.poll_sminfo_soon) << "nothing more to sample";
    ASSERT_TRUE(w.sm_baseline());
    EXPECT_EQ(w.sm_baseline()->act_count, 59u);
}

TEST_F(RulesAfterBaseline, ClientReregisterBitTakesANewBaselineToo) {
    PortInfo p = port_info();
    p.client_reregister = true;
    w.on_portinfo(p);
    EXPECT_EQ(sink.take("invalidated").size(), 1u);
    EXPECT_FALSE(w.sm_baseline());
    w.on_sminfo(sm(5));
    EXPECT_TRUE(sink.take("invalidated").empty());
}

TEST_F(RulesAfterBaseline, DeferredClientReregisterTakesANewBaselineAndIsOneInvalidation) {
    w.on_portinfo(port_info(3, 1, kInit));
    w.on_verbs_event(VerbsEvent::client_reregister); // deferred
    EXPECT_FALSE(w.sm_baseline());
    w.on_sminfo(sm(5)); // a poll that was in flight, answered by the new SM
    EXPECT_TRUE(sink.take("invalidated").empty()) << "nothing to re-join before the port is usable";
    w.on_portinfo(port_info());
    EXPECT_EQ(sink.take("invalidated").size(), 1u) << "the deferred CLIENT_REREGISTER";
    w.on_sminfo(sm(6));
    EXPECT_TRUE(sink.take("invalidated").empty());
}

TEST_F(RulesAfterBaseline, EveryOtherInvalidationTakesANewBaseline) {
    // Each with the SM restart found afterwards, and then a genuine later one.
    const std::vector<std::pair<std::string, std::function<void()>>> causes{
        {"port-up", [&] {
             w.on_portinfo(port_info(3, 1, kDown));
             w.on_portinfo(port_info());
         }},
        {"lid-change", [&] { w.on_portinfo(port_info(4)); }},
        {"pkey-change", [&] {
             w.on_pkey_table(std::vector<std::uint16_t>{0xffff});
             w.on_pkey_table(std::vector<std::uint16_t>{0x7fff, 0xffff});
         }},
    };
    std::uint32_t act = 100;
    for (const auto &[name, cause] : causes) {
        SCOPED_TRACE(name);
        w.on_sminfo(sm(act));
        sink.take();
        cause();
        const Lines inv = sink.take("invalidated");
        ASSERT_EQ(inv.size(), 1u);
        EXPECT_TRUE(inv[0].starts_with("invalidated 7 " + name + " ")) << inv[0];
        EXPECT_FALSE(w.sm_baseline());
        w.on_sminfo(sm(act - 90));
        EXPECT_TRUE(sink.take("invalidated").empty());
        w.on_sminfo(sm(act - 95));
        EXPECT_EQ(sink.take("invalidated").size(), 1u) << "a restart after the new baseline";
        act += 100;
    }
}

TEST_F(RulesAfterBaseline, MembershipsGoneTakesANewBaselineAndInvalidatesNothing) {
    // The engine re-joins the port itself (an audit found a full membership gone).
    w.on_memberships_gone();
    EXPECT_TRUE(sink.take().empty()) << "the engine re-joins it already";
    EXPECT_FALSE(w.sm_baseline());
    w.on_sminfo(sm(5));
    EXPECT_TRUE(sink.take("invalidated").empty()) << "the restart the audit found";
    w.on_sminfo(sm(8));
    w.on_sminfo(sm(2));
    EXPECT_EQ(sink.take("invalidated").size(), 1u) << "a restart after the new baseline";
}

TEST_F(RulesAfterBaseline, TheBaselineGoesWithTheReJoinNotWithTheInvalidation) {
    // The rules only report; the re-join the daemon starts is what drops the baseline, once,
    // whichever found the loss. A sink that starts none leaves it.
    sink.on_invalidated = nullptr;
    w.on_verbs_event(VerbsEvent::client_reregister);
    EXPECT_EQ(sink.take("invalidated").size(), 1u);
    ASSERT_TRUE(w.sm_baseline());
    EXPECT_EQ(w.sm_baseline()->act_count, 84u);
}

// ---- verbs events ----

TEST_F(Rules, ClientReregisterOnAUsablePortInvalidatesNow) {
    baseline_usable();
    const Followup f = w.on_verbs_event(VerbsEvent::client_reregister);
    EXPECT_EQ(sink.take(), Lines{"invalidated 7 client-reregister the SM asked for "
                                 "re-registration (CLIENT_REREGISTER)"});
    EXPECT_FALSE(f.poll_portinfo_now);
    EXPECT_FALSE(w.reregister_pending());
}

TEST_F(Rules, ClientReregisterOnAnUnusablePortIsDeferredUntilItIsUsable) {
    baseline_usable();
    w.on_portinfo(port_info(3, 1, kInit));
    sink.take();
    const Followup f = w.on_verbs_event(VerbsEvent::client_reregister);
    EXPECT_TRUE(sink.take().empty()) << "nothing can be re-joined now";
    EXPECT_TRUE(w.reregister_pending());
    EXPECT_TRUE(f.poll_portinfo_now);
    ASSERT_TRUE(f.note);
    EXPECT_EQ(f.note->level, Note::Level::info);
    w.on_portinfo(port_info(3, 1, kInit)); // still INIT: still waiting
    EXPECT_TRUE(sink.take("invalidated").empty());
    w.on_verbs_event(VerbsEvent::port_active); // asks for a poll; the sample decides
    EXPECT_TRUE(sink.take().empty());
    w.on_portinfo(port_info());
    const Lines inv = sink.take("invalidated");
    ASSERT_EQ(inv.size(), 1u);
    EXPECT_TRUE(inv[0].starts_with("invalidated 7 client-reregister ")) << inv[0];
    EXPECT_TRUE(contains(inv[0], "CLIENT_REREGISTER arrived while the port was not usable")) << inv[0];
    EXPECT_FALSE(w.reregister_pending());
    w.on_portinfo(port_info());
    EXPECT_TRUE(sink.take().empty()) << "applied once";
}

TEST_F(Rules, ClientReregisterBeforeAnySampleWaitsForTheFirstUsableOne) {
    w.on_verbs_event(VerbsEvent::client_reregister);
    EXPECT_TRUE(sink.take().empty());
    w.on_portinfo(port_info());
    EXPECT_EQ(sink.take("invalidated").size(), 1u);
}

TEST_F(Rules, LidSmAndActiveEventsOnlyAskForAPoll) {
    baseline_usable();
    for (VerbsEvent e : {VerbsEvent::lid_change, VerbsEvent::sm_change, VerbsEvent::port_active}) {
        const Followup f = w.on_verbs_event(e);
        EXPECT_TRUE(f.poll_portinfo_now) << verbs_event_name(e);
        EXPECT_FALSE(f.poll_sminfo_soon || f.read_pkey_table) << verbs_event_name(e);
    }
    EXPECT_TRUE(sink.take().empty());
}

TEST_F(Rules, PortErrMakesThePortUnusableAndItsReturnInvalidates) {
    baseline_usable();
    Followup f = w.on_verbs_event(VerbsEvent::port_err);
    EXPECT_EQ(sink.take(), Lines{"usable 7 false port error"});
    EXPECT_TRUE(f.poll_portinfo_now);
    w.on_verbs_event(VerbsEvent::port_err);
    EXPECT_TRUE(sink.take().empty()) << "transitions only";
    w.on_portinfo(port_info()); // ACTIVE again (or still): the link went down meanwhile
    const Lines got = sink.take();
    ASSERT_EQ(got.size(), 2u) << ::testing::PrintToString(got);
    EXPECT_TRUE(got[0].starts_with("invalidated 7 port-up ")) << got[0];
    EXPECT_TRUE(contains(got[0], "(it was: port error)")) << got[0];
    EXPECT_EQ(got[1], "usable 7 true port active, subnet manager at LID 1");
}

TEST_F(Rules, PkeyChangeAsksForTheTableAndOnlyAMovedIndexInvalidates) {
    EXPECT_EQ(w.on_pkey_table(std::vector<std::uint16_t>{0xffff, 0x8001}), Followup{});
    EXPECT_EQ(w.sa_pkey_index(), 0);
    baseline_usable();
    const Followup f = w.on_verbs_event(VerbsEvent::pkey_change);
    EXPECT_TRUE(f.read_pkey_table);
    EXPECT_FALSE(f.poll_portinfo_now);
    EXPECT_TRUE(sink.take().empty());

    w.on_pkey_table(std::vector<std::uint16_t>{0xffff, 0x8002, 0x8003}); // others changed
    EXPECT_TRUE(sink.take().empty());
    w.on_pkey_table(std::vector<std::uint16_t>{0x7fff, 0xffff}); // limited at 0, full at 1
    EXPECT_EQ(sink.take(), Lines{"invalidated 7 pkey-change the default P_Key 0xffff moved from "
                                 "index 0 to 1"});
    EXPECT_EQ(w.sa_pkey_index(), 1);
    w.on_pkey_table(std::vector<std::uint16_t>{0x8001}); // gone: index 0, as the kernel uses
    EXPECT_EQ(sink.take("invalidated").size(), 1u);
    EXPECT_EQ(w.sa_pkey_index(), 0);
}

TEST_F(Rules, FirstPkeyTableIsTheBaseline) {
    w.on_pkey_table(std::vector<std::uint16_t>{0x8001, 0xffff});
    EXPECT_TRUE(sink.take().empty());
    EXPECT_EQ(w.sa_pkey_index(), 1);
}

TEST(RulesNames, TriggersAndEventsHaveNames) {
    EXPECT_STREQ(trigger_name(Trigger::client_reregister), "client-reregister");
    EXPECT_STREQ(trigger_name(Trigger::lid_change), "lid-change");
    EXPECT_STREQ(trigger_name(Trigger::pkey_change), "pkey-change");
    EXPECT_STREQ(trigger_name(Trigger::sm_change), "sm-change");
    EXPECT_STREQ(trigger_name(Trigger::sm_restart), "sm-restart");
    EXPECT_STREQ(trigger_name(Trigger::port_up), "port-up");
    EXPECT_STREQ(verbs_event_name(VerbsEvent::client_reregister), "CLIENT_REREGISTER");
    EXPECT_STREQ(verbs_event_name(VerbsEvent::port_active), "PORT_ACTIVE");
    EXPECT_STREQ(verbs_event_name(VerbsEvent::pkey_change), "PKEY_CHANGE");
}

} // namespace
} // namespace mcastd::port
