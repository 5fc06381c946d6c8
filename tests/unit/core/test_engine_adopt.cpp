// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Adoption after a restart: a second engine takes over what the first one set at the SA, with
// no SA Set, and releases what nobody re-claims the usual way.
#include "engine_fixture.hpp"

namespace mcastd::test {
namespace {

class EngineAdopt : public EngineFixture {
protected:
    // What a first engine leaves at the SA: client `client` holds `mgid` as full.
    MembershipId held_by_predecessor(const Gid &mgid, std::uint8_t bits = join::full) {
        MembershipId id = 0;
        auto out = join(client, request(mgid, bits), &id);
        settle();
        EXPECT_TRUE(out->ok()) << out->message();
        return id;
    }

    // The successor: a fresh engine over the same SA, with the predecessor's port.
    std::unique_ptr<Engine> successor() {
        auto e = std::make_unique<Engine>(EngineConfig{}, ports, sa, timers);
        e->set_event_sink(&sink);
        e->add_port(port);
        return e;
    }

    GroupView view_of(const Engine &e, const Gid &mgid) {
        for (const auto &g : e.groups())
            if (g.mgid == mgid)
                return g;
        ADD_FAILURE() << "no group " << format_gid(mgid);
        return {};
    }
};

TEST_F(EngineAdopt, AdoptedMembershipsCostNoMadAndTheLastLeaveDeletesThem) {
    const Gid m = gid("ff15::a1");
    const MembershipId id = held_by_predecessor(m);
    const McRecord rec = view_of(engine, m).record;

    auto next = successor();
    const ClientId c = next->add_client(ClientInfo{100, 1000, 1000, "app"});
    const std::size_t before = requests();
    next->adopt_group(0, m, join::full, 0, rec);
    ASSERT_TRUE(next->adopt_member(c, id, 0, m, join::full, {}));
    next->end_adoption();
    settle();
    EXPECT_EQ(requests(), before); // no Set, no Get, no Delete
    const GroupView g = view_of(*next, m);
    EXPECT_EQ(g.held, join::full);
    EXPECT_EQ(g.foreign, 0); // the daemon's own bits, never another agent's
    EXPECT_EQ(g.counts[0], 1u);
    EXPECT_EQ(g.record.mlid, rec.mlid);

    EXPECT_FALSE(next->leave(c, id));
    sa.run();
    EXPECT_EQ(sa.count(SaMethod::del), 1);
    EXPECT_FALSE(sa_bits(m)); // nothing of the port left at the SA
}

TEST_F(EngineAdopt, AGroupNobodyReclaimsIsDeletedWhenAdoptionEnds) {
    const Gid m = gid("ff15::a2");
    held_by_predecessor(m, join::full | join::non_member);
    const McRecord rec = view_of(engine, m).record;

    auto next = successor();
    next->adopt_group(0, m, join::full | join::non_member, 0, rec);
    const int sets = sa.count(SaMethod::set);
    next->end_adoption();
    sa.run();
    EXPECT_EQ(sa.count(SaMethod::set), sets);
    EXPECT_EQ(sa.count(SaMethod::del), 1); // both bits in one Delete
    EXPECT_FALSE(sa_bits(m));
    EXPECT_TRUE(next->groups().empty());
}

TEST_F(EngineAdopt, UnsureBitsAreProbedBeforeAnythingIsDeleted) {
    const Gid m = gid("ff15::a3");
    held_by_predecessor(m);
    auto next = successor();
    next->adopt_group(0, m, 0, join::full, std::nullopt); // a Set was in flight at the crash
    const std::size_t before = requests();
    next->end_adoption();
    ASSERT_EQ(sa.pending(), 1u);
    EXPECT_EQ(sa.log[before].method, SaMethod::get);
    sa.run();
    EXPECT_EQ(sa.count(SaMethod::set), 1); // only the predecessor's
    EXPECT_FALSE(sa_bits(m)); // found held, nobody wants it: deleted
}

TEST_F(EngineAdopt, AMemberNeedsItsGroupAndItsBitsAndAFreeId) {
    const Gid m = gid("ff15::a4");
    held_by_predecessor(m);
    auto next = successor();
    const ClientId c = next->add_client(ClientInfo{100, 1000, 1000, "app"});
    EXPECT_FALSE(next->adopt_member(c, 5, 0, m, join::full, {})); // group not adopted
    next->adopt_group(0, m, join::full, 0, view_of(engine, m).record);
    EXPECT_FALSE(next->adopt_member(c, 5, 0, m, join::non_member, {})); // never set
    EXPECT_TRUE(next->adopt_member(c, 5, 0, m, join::send_only_full, {})); // full covers it
    EXPECT_FALSE(next->adopt_member(c, 5, 0, m, join::full, {}));          // id taken
    EXPECT_FALSE(next->adopt_member(c + 99, 6, 0, m, join::full, {}));     // no such client
}

TEST_F(EngineAdopt, NewJoinsGetFreshIdsAndAnswerLocally) {
    const Gid m = gid("ff15::a5");
    const MembershipId id = held_by_predecessor(m);
    auto next = successor();
    const ClientId c = next->add_client(ClientInfo{100, 1000, 1000, "app"});
    next->adopt_group(0, m, join::full, 0, view_of(engine, m).record);
    ASSERT_TRUE(next->adopt_member(c, id + 40, 0, m, join::full, {}));
    next->end_adoption();
    const std::size_t before = requests();
    JoinResult got;
    const MembershipId fresh = next->join(c, request(m, join::full), [&](const JoinResult &r) { got = r; });
    EXPECT_GT(fresh, id + 40);
    EXPECT_FALSE(got.error);
    EXPECT_EQ(got.id, fresh);
    EXPECT_EQ(requests(), before);
    EXPECT_EQ(next->stats().joins_local, 1u);
}

} // namespace
} // namespace mcastd::test
