// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Owned MGID prefixes (EngineConfig::owned_prefixes, config groups.owned_prefixes and the named
// groups' prefix): a new group there costs its Set alone, counted MAD by MAD on the fake SA; and
// when the Set's answer shows another agent's bits the join is refused, the daemon's own bits
// deleted again and that agent's never (doc/architecture.md §5, "Owned prefixes").
#include "engine_fixture.hpp"

namespace mcastd::test {
namespace {

const Gid kNamed = gid("ff15:6e61:6d65:0:1:2:3:4"); // in the named groups' default prefix
const Gid kListed = gid("ff15:aa:1::1");            // in a listed prefix
const Gid kOutside = gid("ff15:1234::1");
const Gid kElsewhere = make_gid(0xfe80000000000000ULL, 0x200001); // another host's port

EngineConfig owning() {
    EngineConfig c;
    c.owned_prefixes = {*parse_name_prefix("ff15:6e61:6d65::/64"),
                        *parse_mgid_prefix_bits("ff15:aa::/32", 32, 128, "", nullptr)};
    return c;
}

class OwnedPrefix : public EngineFixture {
protected:
    OwnedPrefix() : EngineFixture(owning()) {}

    static std::string get(std::uint64_t mask) { return sa_line(SaMethod::get, mask); }
    static std::string set(std::uint64_t mask) { return sa_line(SaMethod::set, mask); }
    static std::string del(std::uint64_t mask) { return sa_line(SaMethod::del, mask); }
    static Gid nth(Gid m, int i) {
        m[15] = static_cast<std::uint8_t>(i);
        m[14] = static_cast<std::uint8_t>(i >> 8);
        return m;
    }
};

using V = std::vector<std::string>;

// A new group in an owned prefix: one Set with the create fields, no probe. Both join states
// that can create, in the named groups' prefix and in a listed one.
TEST_F(OwnedPrefix, NewGroupIsOneSet) {
    for (const Gid &base : {kNamed, kListed})
        for (std::uint8_t bits : {join::full, join::send_only_full}) {
            const Gid m = nth(base, bits);
            const std::size_t from = requests();
            auto j = join(client, request(m, bits));
            settle();
            ASSERT_TRUE(j->ok()) << j->message();
            EXPECT_EQ(sent(from), (V{set(field::create_mask)})) << format_gid(m);
            EXPECT_EQ(sa_bits(m), bits);
            EXPECT_EQ(j->result.record.mgid, m);
        }
    EXPECT_EQ(engine.stats().sa_gets, 0u);
    EXPECT_EQ(engine.stats().sa_sets, 4u);
}

// Outside the owned prefixes nothing changed: the probe Get, then the Set.
TEST_F(OwnedPrefix, OutsideThePrefixesANewGroupIsStillOneGetAndOneSet) {
    auto j = join(client, request(kOutside, join::full));
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    EXPECT_EQ(sent(), (V{get(field::mgid), set(field::create_mask)}));
}

// Many at once: one MAD per owned group, two per other group.
TEST_F(OwnedPrefix, ManyNewGroupsCostOneSetEachInsideAndTwoMadsOutside) {
    std::vector<std::shared_ptr<JoinOutcome>> outs;
    for (int i = 1; i <= 200; ++i) {
        outs.push_back(join(client, request(nth(kNamed, i), join::full)));
        outs.push_back(join(client, request(nth(kOutside, i), join::full)));
    }
    settle();
    for (const auto &o : outs)
        ASSERT_TRUE(o->ok()) << o->message();
    EXPECT_EQ(sa.count(SaMethod::get), 200);
    EXPECT_EQ(sa.count(SaMethod::set), 400);
}

// A group of the prefix that another host created with the same create values is joined by the
// same lone Set (the create fields hold as assertions), and the leave deletes the bit again.
TEST_F(OwnedPrefix, AGroupAnotherHostCreatedAlikeIsJoinedByTheSameSet) {
    sa.state.seed(kNamed, kElsewhere, join::full, EngineConfig{}.create.qkey);
    MembershipId id = 0;
    auto j = join(client, request(kNamed, join::full), &id);
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    EXPECT_EQ(sent(), (V{set(field::create_mask)}));
    engine.leave(client, id);
    settle();
    EXPECT_EQ(sent(1), (V{del(field::join_mask)}));
    EXPECT_EQ(sa_bits(kNamed), std::nullopt);
    EXPECT_EQ(sa.state.join_state(kNamed, kElsewhere), join::full);
}

// One created with other values refuses the lone Set's assertions (0x0200): the join then learns
// the group as anywhere else and joins it with its own fields. The member never sees the 0x0200.
TEST_F(OwnedPrefix, AGroupCreatedWithOtherValuesIsProbedAfterTheRefusedSet) {
    sa.state.seed(kNamed, kElsewhere, join::full, 0x1234);
    auto j = join(client, request(kNamed, join::full));
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    EXPECT_EQ(j->result.record.qkey, 0x1234u);
    EXPECT_EQ(sent(), (V{set(field::create_mask), get(field::mgid),
                         get(field::mgid | field::port_gid), set(field::join_mask)}));
    EXPECT_EQ(sa_bits(kNamed), join::full);
}

// A create the SA refuses is refused after the probe too: that answer is the join's.
TEST_F(OwnedPrefix, ACreateTheSaRefusesFailsWithTheSasStatus) {
    JoinRequest r = request(kNamed, join::full);
    r.params.mtu = Selected{Selector::exactly, 5}; // 4096: more than the port's 2048
    auto j = join(client, r);
    settle();
    EXPECT_EQ(j->code(), Errc::sa_error) << j->message();
    EXPECT_EQ(sent(), (V{set(field::create_mask | field::mtu_selector | field::mtu), get(field::mgid),
                         set(field::create_mask | field::mtu_selector | field::mtu)}));
}

// The promise broken: the port already holds NonMember there (another agent). The Set's answer
// shows 0x3 where the daemon asked 0x1: the join is refused naming the MGID and the bits, the
// daemon deletes its 0x1 alone, and the other agent's 0x2 stays.
TEST_F(OwnedPrefix, AnotherAgentsBitsInTheAnswerRefuseTheJoinAndOnlyOursAreDeleted) {
    sa.state.seed(kNamed, kElsewhere, join::full, EngineConfig{}.create.qkey);
    sa.state.seed(kNamed, port_gid(), join::non_member);
    auto j = join(client, request(kNamed, join::full));
    auto queued = join(other, request(kNamed, join::send_only_non_member));
    settle();
    EXPECT_EQ(j->code(), Errc::conflict);
    EXPECT_NE(j->message().find(format_gid(kNamed)), std::string::npos) << j->message();
    EXPECT_NE(j->message().find("another agent on this port holds nonmember"), std::string::npos) << j->message();
    EXPECT_EQ(queued->code(), Errc::conflict) << "a join queued behind it rests on the same promise";
    EXPECT_EQ(sent(), (V{set(field::create_mask), del(field::join_mask)}));
    EXPECT_EQ(sa.log.back().record.join_state, join::full);
    EXPECT_EQ(sa_bits(kNamed), join::non_member);
    EXPECT_TRUE(sa.state.violations.empty());
    EXPECT_EQ(engine.stats().joins_failed, 2u);
}

// Another agent's SendOnlyFull: deleting the daemon's 0x1 beside it would remove the port and pin
// the MLID (doc/sa-multicast.md §13), so the 0x1 stays; the agent's 0x8 is never touched.
TEST_F(OwnedPrefix, BesideAnotherAgentsSendOnlyFullTheFullBitIsKeptNotDeleted) {
    sa.state.seed(kNamed, port_gid(), join::send_only_full, EngineConfig{}.create.qkey);
    auto j = join(client, request(kNamed, join::full));
    settle();
    EXPECT_EQ(j->code(), Errc::conflict);
    EXPECT_NE(j->message().find("sendonly-full"), std::string::npos) << j->message();
    EXPECT_EQ(sent(), (V{set(field::create_mask)}));
    EXPECT_EQ(sa_bits(kNamed), join::full | join::send_only_full);
    EXPECT_EQ(sa.state.mlid_leaks, 0);
}

// A lone Set whose answer was lost: its bit is uncertain and probed before the Delete. What the
// port holds beyond it is another agent's, and stays.
TEST_F(OwnedPrefix, AnUnansweredSetIsProbedAndOnlyItsBitsAreDeleted) {
    sa.state.seed(kNamed, kElsewhere, join::full, EngineConfig{}.create.qkey);
    sa.state.seed(kNamed, port_gid(), join::non_member);
    bool first = true;
    sa.fate = [&](const SaRequest &r) {
        if (r.method == SaMethod::set && std::exchange(first, false))
            return FakeSa::Fate::lose_response;
        return FakeSa::Fate::deliver;
    };
    auto j = join(client, request(kNamed, join::full));
    settle();
    EXPECT_EQ(j->code(), Errc::sa_timeout) << j->message();
    EXPECT_EQ(sa_bits(kNamed), join::non_member) << "the daemon's 0x1 deleted, the agent's 0x2 kept";
}

// Whether the lone Set creates is not known, so it goes only for a member who may create: its
// create gate is asked (and charged) once, before it. One who may not is probed as anywhere
// else, and joins a group that exists.
TEST_F(OwnedPrefix, OnlyAMemberWhoMayCreateSkipsTheProbe) {
    int creates = 0;
    JoinGates may;
    may.create = [&]() -> std::optional<Error> { ++creates; return std::nullopt; };
    may.would_create = []() -> std::optional<Error> { return std::nullopt; };
    auto a = join(client, request(kNamed, join::full), nullptr, may);
    settle();
    ASSERT_TRUE(a->ok()) << a->message();
    EXPECT_EQ(creates, 1);
    EXPECT_EQ(sent(), (V{set(field::create_mask)}));

    const Gid m = nth(kNamed, 7);
    sa.state.seed(m, kElsewhere, join::full, EngineConfig{}.create.qkey);
    JoinGates may_not;
    const Error no{Errc::denied, "may not create", {}};
    may_not.create = [&]() -> std::optional<Error> { return no; };
    may_not.would_create = [&]() -> std::optional<Error> { return no; };
    const std::size_t from = requests();
    auto b = join(client, request(m, join::full), nullptr, may_not);
    settle();
    ASSERT_TRUE(b->ok()) << b->message();
    EXPECT_EQ(sent(from), (V{get(field::mgid), get(field::mgid | field::port_gid),
                             set(field::join_mask)}));

    // ... and where the group does not exist, the probe says so and the create gate refuses.
    auto c = join(client, request(nth(kNamed, 8), join::full), nullptr, may_not);
    settle();
    EXPECT_EQ(c->code(), Errc::denied);
}

} // namespace
} // namespace mcastd::test
