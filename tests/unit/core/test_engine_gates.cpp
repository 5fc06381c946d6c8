// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The join's gates (engine.hpp, JoinGates): what the client's session lets one join cost at the
// SA. The sa gate before every transaction sent for the join at the head of its group's queue,
// and would_create before the first probe of an MGID the port's SA recently said was absent.
#include "engine_fixture.hpp"

namespace mcastd::test {
namespace {

using namespace std::chrono_literals;

const Gid kGroup = gid("ff15::b1");

Error gate_error() { return Error{Errc::limit, "the uid's SA budget is spent", {}}; }

// A gate that records what it was asked and answers `refuse ? error : yes`.
struct SaGate {
    std::vector<SaMethod> asked;
    bool refuse = false;
    std::function<std::optional<Error>(SaMethod)> fn() {
        return [this](SaMethod m) -> std::optional<Error> {
            asked.push_back(m);
            return refuse ? std::optional(gate_error()) : std::nullopt;
        };
    }
};

struct CountingGate {
    int asked = 0;
    bool refuse = false;
    CreateGate fn() {
        return [this]() -> std::optional<Error> {
            ++asked;
            return refuse ? std::optional(gate_error()) : std::nullopt;
        };
    }
};

class EngineGates : public EngineFixture {
protected:
    std::vector<SaMethod> logged_methods(std::size_t from = 0) const {
        std::vector<SaMethod> out;
        for (std::size_t i = from; i < sa.log.size(); ++i)
            out.push_back(sa.log[i].method);
        return out;
    }
    // A join the SA finds absent and whose create the session refuses: the port's SA said the
    // MGID is absent, now, and nothing of it stays.
    void seen_absent(const Gid &mgid) {
        CountingGate no_create{0, true};
        auto j = join(client, request(mgid, join::full), nullptr, JoinGates{no_create.fn(), {}, {}});
        settle();
        ASSERT_EQ(j->code(), Errc::limit) << j->message();
        ASSERT_FALSE(engine.has_group(port, mgid));
    }
};

// A join's own SA work is its client's (SaRequest::tenant: uid + 1, so that tenants take turns
// at the port's SA), and so is the Delete its leave makes due (one user's churn of Deletes waits
// in its own turn, not in the daemon's, which every user's would share); re-joins are the
// daemon's own (0).
TEST_F(EngineGates, AJoinsProbeAndSetAndItsLeavesDeleteCarryItsClientsUidAsTenant) {
    MembershipId id = 0;
    auto j = join(client, request(kGroup, join::full), &id);
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    ASSERT_EQ(logged_methods(), (std::vector<SaMethod>{SaMethod::get, SaMethod::set}));
    EXPECT_EQ(sa.log[0].tenant, 1001u) << "uid 1000 + 1";
    EXPECT_EQ(sa.log[1].tenant, 1001u);
    ASSERT_FALSE(engine.leave(client, id));
    settle();
    ASSERT_EQ(sa.log.back().method, SaMethod::del);
    EXPECT_EQ(sa.log.back().tenant, 1001u);
}

TEST_F(EngineGates, ARefusedFirstProbeSendsNothing) {
    SaGate gate{{}, true};
    auto j = join(client, request(kGroup, join::full), nullptr, JoinGates{{}, {}, gate.fn()});
    settle();
    EXPECT_EQ(j->code(), Errc::limit);
    EXPECT_EQ(j->message(), gate_error().message) << "the join fails with the gate's own error";
    EXPECT_EQ(gate.asked, std::vector<SaMethod>{SaMethod::get});
    EXPECT_TRUE(sa.log.empty()) << "no MAD for a refused join";
    EXPECT_EQ(engine.group_count(port), 0u);
    EXPECT_TRUE(engine.idle());
}

// Queued behind the last Delete, the group is seen afresh: the refused join's probe is not
// sent, and the join behind it probes and creates the group as if it came first.
TEST_F(EngineGates, TheJoinBehindARefusedOneGoesOn) {
    MembershipId held = 0;
    join(other, request(kGroup, join::full), &held);
    settle();
    ASSERT_FALSE(engine.leave(other, held)); // the Delete goes out
    SaGate refusing{{}, true};
    auto refused = join(client, request(kGroup, join::full), nullptr, JoinGates{{}, {}, refusing.fn()});
    auto next = join(other, request(kGroup, join::full));
    const std::size_t before = requests();
    ASSERT_EQ(before, 3u); // Get, Set, Delete
    settle();
    EXPECT_EQ(refused->code(), Errc::limit);
    EXPECT_EQ(refusing.asked, std::vector<SaMethod>{SaMethod::get});
    ASSERT_TRUE(next->ok()) << next->message();
    EXPECT_EQ(logged_methods(before), (std::vector<SaMethod>{SaMethod::get, SaMethod::set}))
        << "the next join's probe and create, nothing for the refused one";
    EXPECT_EQ(sa_bits(kGroup), join::full);
}

TEST_F(EngineGates, ARefusedSetIsNotSentAndTheNextJoinSetsItsOwn) {
    join(other, request(kGroup, join::full));
    settle();
    // The port holds full; a non-member needs a Set of its own, which the gate refuses.
    SaGate refusing{{}, true};
    auto a = join(client, request(kGroup, join::non_member), nullptr, JoinGates{{}, {}, refusing.fn()});
    EXPECT_EQ(a->code(), Errc::limit) << "refused at once: nothing was in flight";
    EXPECT_EQ(refusing.asked, std::vector<SaMethod>{SaMethod::set});
    const std::size_t before = requests();
    auto b = join(other, request(kGroup, join::non_member));
    settle();
    ASSERT_TRUE(b->ok()) << b->message();
    EXPECT_EQ(logged_methods(before), std::vector<SaMethod>{SaMethod::set});
    EXPECT_EQ(sa_bits(kGroup), join::full | join::non_member);
}

// Each transaction sent for the head join is asked once, with its method; the joins that share
// them are never asked.
TEST_F(EngineGates, TheHeadJoinIsAskedOncePerTransactionAndCoalescedJoinsNever) {
    // Another agent on this port holds non-member: the join probes the group, the port, and
    // exact JoinStates until one matches, then sends its Set.
    sa.state.seed(kGroup, make_gid(kPrefix, 0x200001), join::full);
    sa.state.seed(kGroup, port_gid(), join::non_member);
    SaGate head;
    auto first = join(client, request(kGroup, join::full), nullptr, JoinGates{{}, {}, head.fn()});
    std::vector<SaGate> behind(5);
    std::vector<std::shared_ptr<JoinOutcome>> outs;
    for (SaGate &g : behind)
        outs.push_back(join(other, request(kGroup, join::full), nullptr, JoinGates{{}, {}, g.fn()}));
    settle();
    ASSERT_TRUE(first->ok()) << first->message();
    EXPECT_EQ(head.asked, logged_methods()) << "one question per MAD, with its method";
    EXPECT_GE(std::count(head.asked.begin(), head.asked.end(), SaMethod::get), 3);
    EXPECT_EQ(head.asked.back(), SaMethod::set);
    EXPECT_EQ(sa.count(SaMethod::set), 1);
    for (std::size_t i = 0; i < behind.size(); ++i) {
        EXPECT_TRUE(outs[i]->ok()) << outs[i]->message();
        EXPECT_TRUE(behind[i].asked.empty()) << "join " << i << " shared the head's transactions";
    }
}

// A join whose bits the port holds but whose record is old asks before the refresh.
TEST_F(EngineGates, TheRefreshOfAnOldRecordIsAsked) {
    sa.state.seed(kGroup, port_gid(), join::full);
    engine.adopt_group(port, kGroup, join::full, 0, std::nullopt); // held, no record known
    ASSERT_TRUE(engine.adopt_member(other, 77, port, kGroup, join::full, {}));
    SaGate refusing{{}, true};
    auto a = join(client, request(kGroup, join::full), nullptr, JoinGates{{}, {}, refusing.fn()});
    settle();
    EXPECT_EQ(a->code(), Errc::limit);
    EXPECT_EQ(refusing.asked, std::vector<SaMethod>{SaMethod::get});
    EXPECT_EQ(requests(), 0u);
    SaGate allowing;
    auto b = join(client, request(kGroup, join::full), nullptr, JoinGates{{}, {}, allowing.fn()});
    settle();
    ASSERT_TRUE(b->ok()) << b->message();
    EXPECT_EQ(allowing.asked, std::vector<SaMethod>{SaMethod::get});
    EXPECT_EQ(logged_methods(), std::vector<SaMethod>{SaMethod::get}) << "the refresh, then a local answer";
}

// Background work is never asked: a join queued behind its group's re-join is asked for its
// own Set only.
TEST_F(EngineGates, BackgroundWorkIsNeverAsked) {
    join(other, request(kGroup, join::full));
    settle();
    sa.state = FakeSaState{};
    engine.invalidate_port(port, "SM restarted");
    SaGate gate;
    auto j = join(client, request(kGroup, join::non_member), nullptr, JoinGates{{}, {}, gate.fn()});
    const std::size_t before = requests();
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    EXPECT_EQ(logged_methods(before), (std::vector<SaMethod>{SaMethod::set, SaMethod::set}))
        << "the re-join's Set, then the join's";
    EXPECT_EQ(gate.asked, std::vector<SaMethod>{SaMethod::set});
    EXPECT_EQ(sa_bits(kGroup), join::full | join::non_member);
}

// ---- would_create ----

TEST_F(EngineGates, AnMgidSeenAbsentAsksWouldCreateBeforeAnyMad) {
    ASSERT_NO_FATAL_FAILURE(seen_absent(kGroup));
    timers.advance(1s);
    const std::size_t before = requests();
    CountingGate would{0, true};
    SaGate sa_gate;
    auto j = join(client, request(kGroup, join::full), nullptr, JoinGates{{}, would.fn(), sa_gate.fn()});
    settle();
    EXPECT_EQ(would.asked, 1);
    EXPECT_EQ(j->code(), Errc::limit);
    EXPECT_EQ(j->message(), gate_error().message);
    EXPECT_EQ(requests(), before) << "the refusal sends nothing";
    EXPECT_TRUE(sa_gate.asked.empty()) << "refused before the sa gate was asked";
    EXPECT_EQ(engine.group_count(port), 0u);

    // A yes probes as usual, and the create asks the create gate.
    CountingGate yes;
    CountingGate create{0, true};
    auto k = join(client, request(kGroup, join::full), nullptr, JoinGates{create.fn(), yes.fn(), {}});
    settle();
    EXPECT_EQ(yes.asked, 1);
    EXPECT_EQ(create.asked, 1);
    EXPECT_EQ(k->code(), Errc::limit);
    EXPECT_EQ(requests(), before + 1) << "its probe";
}

TEST_F(EngineGates, TheAbsentMemoryLastsTwoSeconds) {
    ASSERT_NO_FATAL_FAILURE(seen_absent(kGroup));
    timers.advance(kAbsentMemory - 1us);
    CountingGate would{0, true};
    join(client, request(kGroup, join::full), nullptr, JoinGates{{}, would.fn(), {}});
    settle();
    EXPECT_EQ(would.asked, 1) << "still remembered";
    timers.advance(1us);
    const std::size_t before = requests();
    auto j = join(client, request(kGroup, join::full), nullptr, JoinGates{{}, would.fn(), {}});
    settle();
    EXPECT_EQ(would.asked, 1) << "forgotten: not asked";
    EXPECT_TRUE(j->ok()) << j->message();
    EXPECT_EQ(requests(), before + 2) << "it probed again, and created the group";
}

TEST_F(EngineGates, WouldCreateIsNotAskedOfAnMgidNeverSeenAbsent) {
    CountingGate would{0, true};
    auto j = join(client, request(kGroup, join::full), nullptr, JoinGates{{}, would.fn(), {}});
    settle();
    EXPECT_TRUE(j->ok()) << j->message();
    EXPECT_EQ(would.asked, 0);
}

TEST_F(EngineGates, AGroupTheEngineLearnsOfIsForgottenAtOnce) {
    ASSERT_NO_FATAL_FAILURE(seen_absent(kGroup));
    // Another host creates it; a join with no gates (root) finds it, then leaves it again.
    sa.state.seed(kGroup, make_gid(kPrefix, 0x200001), join::full);
    MembershipId id = 0;
    auto found = join(other, request(kGroup, join::full), &id);
    settle();
    ASSERT_TRUE(found->ok()) << found->message();
    ASSERT_FALSE(engine.leave(other, id));
    settle();
    ASSERT_FALSE(engine.has_group(port, kGroup));
    CountingGate would{0, true};
    auto j = join(client, request(kGroup, join::full), nullptr, JoinGates{{}, would.fn(), {}});
    settle();
    EXPECT_EQ(would.asked, 0);
    EXPECT_TRUE(j->ok()) << j->message();
}

TEST_F(EngineGates, AGroupTheEngineCreatesIsForgottenAtOnce) {
    ASSERT_NO_FATAL_FAILURE(seen_absent(kGroup));
    MembershipId id = 0;
    auto created = join(other, request(kGroup, join::full), &id);
    settle();
    ASSERT_TRUE(created->ok());
    ASSERT_FALSE(engine.leave(other, id)); // deleted, and the SA frees the group
    settle();
    ASSERT_EQ(sa_bits(kGroup), std::nullopt);
    CountingGate would{0, true};
    join(client, request(kGroup, join::full), nullptr, JoinGates{{}, would.fn(), {}});
    settle();
    EXPECT_EQ(would.asked, 0);
}

TEST_F(EngineGates, AnInvalidationForgetsEverything) {
    ASSERT_NO_FATAL_FAILURE(seen_absent(kGroup));
    engine.invalidate_port(port, "SM restarted");
    settle();
    CountingGate would{0, true};
    join(client, request(kGroup, join::full), nullptr, JoinGates{{}, would.fn(), {}});
    settle();
    EXPECT_EQ(would.asked, 0);
}

// An attacker can name 2^112 MGIDs: the memory keeps the last kAbsentMemoryEntries.
TEST_F(EngineGates, TheAbsentMemoryIsBounded) {
    auto nth = [](std::size_t i) {
        Gid g = gid("ff15:b::");
        g[12] = static_cast<std::uint8_t>(i >> 24);
        g[13] = static_cast<std::uint8_t>(i >> 16);
        g[14] = static_cast<std::uint8_t>(i >> 8);
        g[15] = static_cast<std::uint8_t>(i);
        return g;
    };
    const TimePoint start = timers.now();
    CountingGate no_create{0, true};
    for (std::size_t i = 0; i <= kAbsentMemoryEntries; ++i) // one more than it keeps
        join(client, request(nth(i), join::full), nullptr, JoinGates{no_create.fn(), {}, {}});
    settle();
    ASSERT_EQ(no_create.asked, static_cast<int>(kAbsentMemoryEntries + 1));
    ASSERT_LT(timers.now() - start, kAbsentMemory) << "forgotten for the bound, not for age";
    CountingGate oldest{0, true}, second{0, true}, newest{0, true};
    join(client, request(nth(0), join::full), nullptr, JoinGates{{}, oldest.fn(), {}});
    join(client, request(nth(1), join::full), nullptr, JoinGates{{}, second.fn(), {}});
    join(client, request(nth(kAbsentMemoryEntries), join::full), nullptr, JoinGates{{}, newest.fn(), {}});
    settle();
    EXPECT_EQ(oldest.asked, 0) << "the oldest was forgotten";
    EXPECT_EQ(second.asked, 1);
    EXPECT_EQ(newest.asked, 1);
}

} // namespace
} // namespace mcastd::test
