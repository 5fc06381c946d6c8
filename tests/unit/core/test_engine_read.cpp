// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Engine::groups_from: reads of the groups in (port, MGID) order from a cursor, a bounded number
// of members at a time, which is what a page of `list` reads.
#include <algorithm>
#include <map>

#include "engine_fixture.hpp"

namespace mcastd::test {
namespace {

class EngineRead : public EngineFixture {
protected:
    // Joins `n` members of `c` into `mgid` on port `p` (0: mlx5_0, 1: mlx5_1) and lets the SA
    // answer.
    void members(ClientId c, const char *mgid, int n, PortIndex p = 0) {
        std::vector<std::shared_ptr<JoinOutcome>> joins;
        for (int i = 0; i < n; ++i)
            joins.push_back(join(c, request(gid(mgid), join::full, p == 0 ? "mlx5_0" : "mlx5_1", 1)));
        settle();
        for (const auto &j : joins)
            ASSERT_TRUE(j->ok()) << j->message();
    }
    std::vector<MembershipId> ids_of(const char *mgid) {
        std::vector<MembershipId> out;
        for (const GroupView &g : engine.groups())
            if (g.mgid == gid(mgid))
                for (const MemberView &m : g.members)
                    out.push_back(m.id);
        return out;
    }

    // Every read from the start, `max` members at a time, put together: (group key) -> ids.
    struct Walk {
        std::vector<GroupKey> order;                       // groups in the order first read
        std::map<GroupKey, std::vector<MembershipId>> ids; // members, in the order read
        std::size_t reads = 0;
    };
    Walk walk(std::size_t max, std::optional<ClientId> only = std::nullopt) {
        Walk w;
        std::optional<GroupCursor> at;
        for (;;) {
            const GroupRead r = engine.groups_from(at, max, only);
            ++w.reads;
            std::size_t n = 0;
            for (const GroupView &g : r.groups) {
                n += g.members.size();
                if (!w.ids.count(key_of(g)))
                    w.order.push_back(key_of(g));
                auto &ids = w.ids[key_of(g)];
                for (const MemberView &m : g.members)
                    ids.push_back(m.id);
            }
            EXPECT_LE(n, max) << "read " << w.reads;
            if (!r.next)
                return w;
            EXPECT_NE(r.next, at) << "a read must get somewhere";
            if (r.next == at || w.reads > 10000)
                return w;
            at = r.next;
        }
    }
    // The same from groups(): the whole view at once.
    Walk whole() {
        Walk w;
        for (const GroupView &g : engine.groups()) {
            w.order.push_back(key_of(g));
            for (const MemberView &m : g.members)
                w.ids[key_of(g)].push_back(m.id);
        }
        return w;
    }
};

TEST_F(EngineRead, ReadsInPortAndMgidOrderAFewMembersAtATime) {
    add_port("mlx5_1", 1, 0x100004);
    members(client, "ff15::3", 5);
    members(other, "ff15::1", 3);
    members(client, "ff15::2", 1);
    members(other, "ff15::9", 4, 1);
    const Walk all = whole();
    ASSERT_EQ(all.order.size(), 4u);
    EXPECT_EQ(all.order[0].mgid, gid("ff15::1"));
    EXPECT_EQ(all.order[1].mgid, gid("ff15::2"));
    EXPECT_EQ(all.order[2].mgid, gid("ff15::3"));
    EXPECT_EQ(all.order[3].port, 1u);
    for (const auto &[key, ids] : all.ids)
        EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << format_gid(key.mgid);
    for (std::size_t max : {1u, 2u, 4u, 100u}) {
        const Walk w = walk(max);
        EXPECT_EQ(w.order, all.order) << max;
        EXPECT_EQ(w.ids, all.ids) << max;
    }
    EXPECT_EQ(walk(100).reads, 1u);
    EXPECT_EQ(walk(4).reads, 4u) << "13 members, 4 a read";
}

TEST_F(EngineRead, ACursorInsideAGroupGoesOnWithItsLaterMembers) {
    members(client, "ff15::1", 5);
    members(client, "ff15::2", 2);
    const GroupRead first = engine.groups_from(std::nullopt, 3);
    ASSERT_EQ(first.groups.size(), 1u);
    ASSERT_EQ(first.groups[0].members.size(), 3u);
    ASSERT_TRUE(first.next);
    EXPECT_EQ(first.next->member, first.groups[0].members[2].id) << "stopped inside ff15::1";
    const GroupRead second = engine.groups_from(first.next, 3);
    ASSERT_EQ(second.groups.size(), 2u);
    EXPECT_EQ(second.groups[0].mgid, gid("ff15::1")) << "its header again";
    EXPECT_EQ(second.groups[0].counts, first.groups[0].counts);
    EXPECT_EQ(second.groups[0].members.size(), 2u);
    EXPECT_EQ(second.groups[1].members.size(), 1u);
}

// One group, with its members or its header alone, and one membership.
TEST_F(EngineRead, OneGroupAndOneMembership) {
    members(client, "ff15::1", 3);
    members(client, "ff15::2", 2);
    const auto g = engine.group(0, gid("ff15::2"));
    ASSERT_TRUE(g);
    EXPECT_EQ(g->members.size(), 2u);
    const auto head = engine.group(0, gid("ff15::2"), false);
    ASSERT_TRUE(head);
    EXPECT_TRUE(head->members.empty());
    EXPECT_EQ(head->counts, g->counts);
    EXPECT_FALSE(engine.group(0, gid("ff15::3")));
    EXPECT_FALSE(engine.group(0, Gid{}));
    const auto m = engine.member(g->members[1].id);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->id, g->members[1].id);
    EXPECT_EQ(m->client, client);
    EXPECT_FALSE(engine.member(999999));
}

TEST_F(EngineRead, AGroupThatWentAwayIsSkippedAndThePastEndIsEmpty) {
    members(client, "ff15::1", 2);
    members(other, "ff15::2", 2);
    members(client, "ff15::3", 1);
    const GroupRead first = engine.groups_from(std::nullopt, 3);
    ASSERT_TRUE(first.next);
    ASSERT_EQ(first.next->group.mgid, gid("ff15::2"));
    // Every member of ff15::2 leaves: the group is deleted before the next read.
    for (MembershipId id : ids_of("ff15::2"))
        ASSERT_FALSE(engine.leave(other, id));
    settle();
    const GroupRead next = engine.groups_from(first.next, 3);
    ASSERT_EQ(next.groups.size(), 1u);
    EXPECT_EQ(next.groups[0].mgid, gid("ff15::3"));
    EXPECT_FALSE(next.next);

    // A member made since the cursor, after it, is read; one left since is not.
    const GroupRead cut = engine.groups_from(std::nullopt, 1);
    ASSERT_TRUE(cut.next && cut.next->member);
    const std::vector<MembershipId> before = ids_of("ff15::1"); // [cut's member, another]
    ASSERT_EQ(before.size(), 2u);
    MembershipId later = 0;
    join(other, request(gid("ff15::1"), join::full), &later);
    settle();
    ASSERT_FALSE(engine.leave(client, before[1]));
    settle();
    const GroupRead after = engine.groups_from(cut.next, 10);
    ASSERT_FALSE(after.groups.empty());
    EXPECT_EQ(after.groups[0].mgid, gid("ff15::1"));
    ASSERT_EQ(after.groups[0].members.size(), 1u);
    EXPECT_EQ(after.groups[0].members[0].id, later);
    // The group is still there, with nothing after the cursor: the read goes on past it.
    ASSERT_FALSE(engine.leave(other, later));
    settle();
    const GroupRead skipped = engine.groups_from(cut.next, 10);
    ASSERT_FALSE(skipped.groups.empty());
    EXPECT_EQ(skipped.groups[0].mgid, gid("ff15::3"));

    GroupCursor past{GroupKey{0, gid("ff1f:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), 0}, std::nullopt};
    const GroupRead end = engine.groups_from(past, 10);
    EXPECT_TRUE(end.groups.empty());
    EXPECT_FALSE(end.next);
    EXPECT_TRUE(engine.groups_from(GroupCursor{GroupKey{7, {}, 0}, std::nullopt}, 10).groups.empty())
        << "no port 7";
}

TEST_F(EngineRead, CreatesWaitingForTheirMgidComeFirstEachOnce) {
    members(client, "ff15::1", 1);
    // Two creates and a join of a new group, all waiting for the SA.
    JoinRequest create = request(kZeroGid, join::full);
    join(client, create);
    join(other, create);
    join(client, request(gid("ff15::5"), join::full));
    const Walk all = whole();
    ASSERT_EQ(all.order.size(), 4u);
    EXPECT_TRUE(is_zero(all.order[0].mgid) && all.order[0].unassigned);
    EXPECT_TRUE(is_zero(all.order[1].mgid) && all.order[1].unassigned);
    EXPECT_LT(all.order[0], all.order[1]);
    EXPECT_EQ(all.order[2].mgid, gid("ff15::1"));
    const Walk w = walk(1);
    EXPECT_EQ(w.order, all.order);
    EXPECT_EQ(w.ids, all.ids);
    EXPECT_EQ(w.reads, 4u);

    settle(); // the SA names them
    for (const GroupView &g : engine.groups()) {
        EXPECT_FALSE(is_zero(g.mgid));
        EXPECT_EQ(g.unassigned, 0u);
    }
    EXPECT_EQ(engine.groups().size(), 4u);
}

TEST_F(EngineRead, PendingJoinsAreReadInIdOrderWithTheSettledOnes) {
    members(client, "ff15::1", 2);
    join(other, request(gid("ff15::1"), join::send_only_non_member)); // needs a Set: waits
    join(client, request(gid("ff15::1"), join::full));               // queued behind it
    const Walk all = whole();
    ASSERT_EQ(all.ids.begin()->second.size(), 4u);
    EXPECT_TRUE(std::is_sorted(all.ids.begin()->second.begin(), all.ids.begin()->second.end()));
    EXPECT_EQ(walk(1).ids, all.ids);
    const auto g = engine.groups().at(0);
    EXPECT_EQ(g.members[2].state, MemberView::State::pending);
}

TEST_F(EngineRead, OnlyAClientsOwnMembershipsWithTheWholeGroupsHeaders) {
    members(client, "ff15::1", 3);
    members(other, "ff15::1", 1);
    members(client, "ff15::2", 2);
    members(other, "ff15::3", 2);
    members(client, "ff15::1", 2);
    const Walk own = walk(2, other);
    ASSERT_EQ(own.order.size(), 2u);
    EXPECT_EQ(own.order[0].mgid, gid("ff15::1"));
    EXPECT_EQ(own.order[1].mgid, gid("ff15::3"));
    EXPECT_EQ(own.ids.at(own.order[0]).size(), 1u);
    EXPECT_EQ(own.ids.at(own.order[1]).size(), 2u);
    const GroupRead r = engine.groups_from(std::nullopt, 10, other);
    EXPECT_EQ(r.groups[0].counts[0], 6u) << "the group's counts, not the client's";
    for (const GroupView &g : r.groups)
        for (const MemberView &m : g.members)
            EXPECT_EQ(m.client, other);

    const Walk mine = walk(3, client);
    std::size_t n = 0;
    for (const auto &[key, ids] : mine.ids) {
        n += ids.size();
        EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
    }
    EXPECT_EQ(n, 7u);
    EXPECT_EQ(mine.order.size(), 2u);
    EXPECT_TRUE(engine.groups_from(std::nullopt, 10, ClientId{999}).groups.empty()) << "no such client";
}

// What `status` shows per port: active memberships per JoinState bit, pending and lost ones
// not counted, a membership of two bits under both.
TEST_F(EngineRead, APortsMembershipsPerJoinStateCountTheActiveOnesPerBit) {
    const PortIndex second = add_port("mlx5_1", 1, 0x100004);
    join(client, request(gid("ff15::1"), join::full));
    join(other, request(gid("ff15::1"), join::full));
    join(client, request(gid("ff15::2"), join::send_only_full));
    join(client, request(gid("ff15::3"), join::full | join::non_member));
    join(other, request(gid("ff15::4"), join::full, "mlx5_1", 1)); // creates it: a full member must
    settle();
    join(client, request(gid("ff15::4"), join::send_only_non_member, "mlx5_1", 1));
    settle();
    EXPECT_EQ(engine.memberships(port), (PortMemberships{3, 1, 0, 1}));
    EXPECT_EQ(engine.memberships(second), (PortMemberships{1, 0, 1, 0}));
    join(client, request(gid("ff15::5"), join::full)); // pending: the SA has not answered
    EXPECT_EQ(engine.memberships(port), (PortMemberships{3, 1, 0, 1}));
    set_usable(port, false, "port down"); // told lost, kept: not active
    settle();
    EXPECT_EQ(engine.memberships(port), (PortMemberships{3, 1, 0, 1}))
        << "a port that is down keeps its memberships for the re-join";
}

} // namespace
} // namespace mcastd::test
