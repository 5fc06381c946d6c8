// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The access policy as the client sessions apply it, over the fake SA: the rules (a denied join
// never reaches the SA), the quotas counted per uid across sessions and doors (and given back on
// leave, on disconnect and on a failed join), the host's groups-per-port cap, the checks only
// the SA's answer allows, a reload's review, evict, and what list and status show.
#include <unistd.h>

#include <algorithm>

#include "front_door.hpp"

namespace mcastd::test {
namespace {

using frontend::Credentials;
using frontend::Door;
using frontend::JoinAnswer;

class Recorder final : public frontend::SessionOutlet {
public:
    void membership_event(MembershipId id, const MembershipEvent &ev) override { events.emplace_back(id, ev); }
    void disconnect(const std::string &) override { ++disconnects; }
    int disconnects = 0;
    std::vector<std::pair<MembershipId, MembershipEvent>> events;
};

constexpr uid_t kAlice = 1001, kBob = 1002;
constexpr gid_t kHpc = 3000, kUsers = 100;

policy::Rule rule(std::string name) {
    policy::Rule r;
    r.name = std::move(name);
    return r;
}

class PolicySessions : public FrontDoor {
protected:
    explicit PolicySessions(policy::Policy p, EngineConfig engine = {}) : FrontDoor({}, std::move(p), std::move(engine)) {}

    std::unique_ptr<frontend::ClientSession> open(uid_t uid, gid_t gid, std::vector<gid_t> groups = {},
                                                  std::string cgroup = "/user.slice") {
        Credentials c{ClientInfo{::getpid(), uid, gid, "app"}, std::move(groups), std::move(cgroup)};
        auto s = sessions.open(Door::dbus, std::move(c), outlet);
        EXPECT_TRUE(std::holds_alternative<std::unique_ptr<frontend::ClientSession>>(s));
        return std::get<std::unique_ptr<frontend::ClientSession>>(std::move(s));
    }
    // Joins and lets the SA answer everything.
    JoinAnswer join(frontend::ClientSession &s, const JoinRequest &req) { return join_now(s, req); }
    JoinAnswer join(frontend::ClientSession &s, const char *mgid) { return join(s, join_request(mgid)); }
    static JoinRequest create() {
        JoinRequest r = join_request("::");
        r.mgid = kZeroGid;
        return r;
    }
    const proto::UserUsage *usage(uid_t uid) {
        for (const auto &u : status.users)
            if (u.uid == uid)
                return &u;
        return nullptr;
    }
    void refresh(const frontend::ClientSession &s) { status = s.status(); }

    Recorder outlet;
    proto::StatusResult status;
};

// ---- rules ----

policy::Policy hpc_site() {
    policy::Policy p;
    policy::Rule hpc = rule("hpc");
    hpc.gids = {kHpc};
    hpc.mgids = {std::get<policy::MgidPrefix>(policy::parse_mgid_prefix("ff15:a:1::/48"))};
    hpc.create = policy::Create::any;
    policy::Rule others = rule("everyone");
    others.mgids = hpc.mgids;
    others.join_states = join::full | join::send_only_full;
    p.rules = {hpc, others};
    return p;
}

class Rules : public PolicySessions {
protected:
    Rules() : PolicySessions(hpc_site()) {}
};

TEST_F(Rules, ADeniedJoinNamesTheRuleAndTheFieldAndReachesNoSa) {
    auto bob = open(kBob, kUsers);
    const JoinAnswer a = join(*bob, "ff15:b::1");
    ASSERT_TRUE(a.failure);
    EXPECT_EQ(a.failure->error.code, Errc::denied);
    EXPECT_EQ(a.failure->error.message, "rule \"everyone\" (config access.rules) allows MGIDs in ff15:a:1::/48 only, "
                                        "and ff15:b::1 is not in them");
    EXPECT_EQ(a.failure->field, "/mgid");
    ASSERT_TRUE(a.failure->error.policy);
    EXPECT_EQ(a.failure->error.policy->rule, "everyone");
    EXPECT_TRUE(sa.log.empty()) << "the SA never heard of it";

    JoinRequest nonmember = join_request("ff15:a:1::1");
    nonmember.join_state = join::non_member;
    EXPECT_EQ(join(*bob, nonmember).failure->field, "/join_state");
    EXPECT_TRUE(sa.log.empty());
}

TEST_F(Rules, OnlyTheGroupThatMayCreateCreatesAndASupplementaryGroupCounts) {
    auto bob = open(kBob, kUsers);
    const JoinAnswer refused = join(*bob, "ff15:a:1::7");
    ASSERT_TRUE(refused.failure);
    EXPECT_EQ(refused.failure->error.message, "rule \"everyone\" (config access.rules) does not allow creating "
                                              "groups, and ff15:a:1::7 does not exist");
    EXPECT_EQ(refused.failure->field, "/mgid");
    EXPECT_FALSE(sa_bits("ff15:a:1::7")) << "the probe found no group, and no create followed";

    auto alice = open(kAlice, kUsers, {kHpc}); // hpc only as a supplementary group
    const JoinAnswer made = join(*alice, "ff15:a:1::7");
    ASSERT_FALSE(made.failure) << made.failure->error.message;
    EXPECT_EQ(sa_bits("ff15:a:1::7"), join::full);

    const JoinAnswer joined = join(*bob, "ff15:a:1::7");
    EXPECT_FALSE(joined.failure) << "the group exists now: joining it is no create";

    const proto::ListResult l = std::get<proto::ListResult>(bob->list(proto::List{}));
    ASSERT_EQ(l.ports.at(0).groups.size(), 1u);
    const auto &members = l.ports[0].groups[0].members;
    ASSERT_EQ(members.size(), 2u);
    const auto &m_alice = members[0].uid == kAlice ? members[0] : members[1];
    const auto &m_bob = members[0].uid == kBob ? members[0] : members[1];
    EXPECT_EQ(m_alice.rule, "hpc");
    EXPECT_TRUE(m_alice.created);
    EXPECT_EQ(m_bob.rule, "everyone");
    EXPECT_FALSE(m_bob.created);
}

TEST_F(Rules, AnSaAssignedCreateWithoutTheRightIsRefusedBeforeTheSa) {
    auto bob = open(kBob, kUsers);
    const JoinAnswer a = join(*bob, create());
    ASSERT_TRUE(a.failure);
    EXPECT_EQ(a.failure->field, "/create");
    EXPECT_TRUE(sa.log.empty());
}

TEST_F(Rules, RootIsAlwaysAllowed) {
    auto root = open(0, 0);
    ASSERT_FALSE(join(*root, "ff15:b::9").failure);
    EXPECT_EQ(std::get<proto::ListResult>(root->list({})).ports.at(0).groups.at(0).members.at(0).rule, "root");
}

// ---- P_Keys and Q_Keys ----

class Keys : public PolicySessions {
protected:
    static policy::Policy tenant() {
        policy::Policy p;
        policy::Rule t = rule("tenant-a");
        t.cgroups = {"/machine.slice/tenant-a.slice"};
        t.pkeys = {0x8001};
        t.create = policy::Create::any;
        p.rules = {t};
        return p;
    }
    Keys() : PolicySessions(tenant()) {}
};

TEST_F(Keys, TheRulesOnePKeyIsAssertedSoACreateUsesItAndAForeignGroupIsRefusedByTheSa) {
    auto a = open(kAlice, kUsers, {}, "/machine.slice/tenant-a.slice/c1.scope");
    const JoinAnswer made = join(*a, "ff15::a1");
    ASSERT_FALSE(made.failure) << made.failure->error.message;
    EXPECT_EQ(made.record.pkey, 0x8001);
    EXPECT_EQ(sa.state.groups.at(*parse_gid("ff15::a1")).rec.pkey, 0x8001) << "created with the tenant's P_Key";

    sa.state.seed(*parse_gid("ff15::b1"), make_gid(0xfe80000000000000ULL, 0x99), join::full); // P_Key 0xffff
    const JoinAnswer foreign = join(*a, "ff15::b1");
    ASSERT_TRUE(foreign.failure);
    EXPECT_NE(foreign.failure->error.code, Errc::internal);
    EXPECT_FALSE(sa_bits("ff15::b1")) << "this port never joined the other tenant's group";
}

TEST_F(Keys, ACallerOutsideTheCgroupIsDeniedByDefault) {
    auto other = open(kBob, kUsers, {}, "/machine.slice/tenant-b.slice/c1.scope");
    const JoinAnswer a = join(*other, "ff15::a1");
    ASSERT_TRUE(a.failure);
    EXPECT_EQ(a.failure->error.code, Errc::denied);
    EXPECT_EQ(a.failure->error.policy->rule, "default-deny");
    auto prefix_only = open(kBob, kUsers, {}, "/machine.slice/tenant-a.slicex");
    EXPECT_TRUE(join(*prefix_only, "ff15::a1").failure) << "a prefix matches whole path components only";
}

TEST_F(Keys, AGroupWithAControlledQKeyLearnedFromTheSaIsLeftAndRefused) {
    const Gid other = make_gid(0xfe80000000000000ULL, 0x99);
    sa.state.seed(*parse_gid("ff15::c1"), other, join::full, 0x80010000);
    sa.state.groups.at(*parse_gid("ff15::c1")).rec.pkey = 0x8001;
    auto a = open(kAlice, kUsers, {}, "/machine.slice/tenant-a.slice");
    const JoinAnswer j = join(*a, "ff15::c1");
    ASSERT_TRUE(j.failure);
    EXPECT_EQ(j.failure->error.code, Errc::denied);
    EXPECT_EQ(j.failure->field, "/qkey");
    sa.run();
    EXPECT_FALSE(sa_bits("ff15::c1")) << "the membership the SA granted was left again";
    EXPECT_EQ(sa.state.join_state(*parse_gid("ff15::c1"), other), join::full) << "the other port keeps its own";
    refresh(*a);
    ASSERT_TRUE(usage(kAlice)) << "alice is still connected";
    EXPECT_EQ(usage(kAlice)->memberships, 0u) << "nothing stays charged";
    EXPECT_EQ(usage(kAlice)->creates, 0u);
}

// ---- quotas ----

policy::Policy quotas(std::size_t memberships, std::size_t creates, std::size_t groups) {
    policy::Policy p;
    p.quotas = policy::Quotas{memberships, creates, groups};
    return p;
}

class MembershipQuota : public PolicySessions {
protected:
    MembershipQuota() : PolicySessions(quotas(3, 0, 0)) {}
};
class CreateQuota : public PolicySessions {
protected:
    CreateQuota() : PolicySessions(quotas(0, 2, 0)) {}
};
class OneCreate : public PolicySessions {
protected:
    OneCreate() : PolicySessions(quotas(0, 1, 0)) {}
};
class PortCap : public PolicySessions {
protected:
    PortCap() : PolicySessions(quotas(0, 0, 5)) {}
};
// The same create quota where the engine owns ff15:c::/32 (config groups.owned_prefixes).
EngineConfig owning_ff15_c() {
    EngineConfig e;
    e.owned_prefixes = {*parse_mgid_prefix_bits("ff15:c::/32", 32, 128, "", nullptr)};
    return e;
}
class OwnedCreateQuota : public PolicySessions {
protected:
    OwnedCreateQuota() : PolicySessions(quotas(0, 2, 0), owning_ff15_c()) {}
    // The methods the SA was sent for `mgid`, in order ("get", "set", "del").
    std::vector<std::string> methods(const char *mgid) const {
        std::vector<std::string> out;
        for (const SaRequest &r : sa.log)
            if (r.record.mgid == *parse_gid(mgid))
                out.emplace_back(r.method == SaMethod::get ? "get" : r.method == SaMethod::set ? "set" : "del");
        return out;
    }
};

TEST_F(MembershipQuota, MembershipsCountPerUidAcrossSessionsAndComeBackOnLeaveAndDisconnect) {
    auto s1 = open(kAlice, kUsers);
    auto s2 = open(kAlice, kUsers);
    ASSERT_FALSE(join(*s1, "ff15::1").failure);
    ASSERT_FALSE(join(*s2, "ff15::2").failure);
    const JoinAnswer third = join(*s2, "ff15::3");
    ASSERT_FALSE(third.failure);
    const JoinAnswer over = join(*s1, "ff15::4");
    ASSERT_TRUE(over.failure);
    EXPECT_EQ(over.failure->error.code, Errc::limit);
    EXPECT_EQ(over.failure->error.policy, (PolicyRef{"", "memberships_per_uid", 3}));
    EXPECT_EQ(over.failure->error.message, "uid 1001 holds or waits for 3 memberships, its quota (config "
                                           "access.quotas.memberships_per_uid or the admitting rule's: 3)");
    EXPECT_TRUE(sa_bits("ff15::1") && sa_bits("ff15::2") && sa_bits("ff15::3")) << "nothing held is touched";

    auto bob = open(kBob, kUsers);
    EXPECT_FALSE(join(*bob, "ff15::4").failure) << "another uid has its own quota";

    ASSERT_FALSE(s2->leave(proto::Leave{third.membership, {}}));
    EXPECT_FALSE(join(*s1, "ff15::5").failure) << "a leave gives the place back";
    EXPECT_TRUE(join(*s1, "ff15::6").failure);
    s2.reset(); // disconnects: its one membership (ff15::2) goes
    EXPECT_FALSE(join(*s1, "ff15::6").failure) << "a disconnect gives the place back";
    refresh(*s1);
    ASSERT_TRUE(usage(kAlice));
    EXPECT_EQ(usage(kAlice)->memberships, 3u);
    EXPECT_EQ(usage(kAlice)->memberships_quota, 3u);
}

TEST_F(CreateQuota, CreatesCountOnlyWhenTheGroupIsNewAndAFailedCreateGivesItsPlaceBack) {
    auto a = open(kAlice, kUsers);
    const Gid other = make_gid(0xfe80000000000000ULL, 0x99);
    sa.state.seed(*parse_gid("ff15::e1"), other, join::full);
    ASSERT_FALSE(join(*a, "ff15::e1").failure) << "an existing group";
    refresh(*a);
    EXPECT_EQ(usage(kAlice)->creates, 0u);

    // The SA refuses the first create: nothing is charged for it.
    int sets = 0;
    sa.fate = [&](const SaRequest &r) {
        return r.method == SaMethod::set && sets++ == 0 ? FakeSa::Fate::inject_status : FakeSa::Fate::deliver;
    };
    EXPECT_TRUE(join(*a, "ff15::c1").failure);
    sa.fate = [](const SaRequest &) { return FakeSa::Fate::deliver; };
    const JoinAnswer c1 = join(*a, "ff15::c1");
    ASSERT_FALSE(c1.failure);
    ASSERT_FALSE(join(*a, create()).failure) << "an SA-assigned MGID is a create too";
    const JoinAnswer third = join(*a, "ff15::c3");
    ASSERT_TRUE(third.failure);
    EXPECT_EQ(third.failure->error.policy, (PolicyRef{"", "creates_per_uid", 2}));
    EXPECT_FALSE(sa_bits("ff15::c3"));
    refresh(*a);
    EXPECT_EQ(usage(kAlice)->creates, 2u);
    EXPECT_EQ(usage(kAlice)->creates_quota, 2u);

    ASSERT_FALSE(a->leave(proto::Leave{c1.membership, {}}));
    EXPECT_FALSE(join(*a, "ff15::c3").failure) << "leaving a created group gives the create back";
}

// creates_per_uid counts the groups a uid created and still holds. A second join of a group
// the port holds is answered without a create; leaving the creating membership first hands the
// create on to it (the group is still held), so join, join again, leave the first cannot
// collect groups past the quota.
TEST_F(OneCreate, TheCreateOfAGroupStillHeldGoesOnToTheUidsNextMembershipOfIt) {
    auto a = open(kAlice, kUsers);
    const JoinAnswer made = join(*a, "ff15::c1");
    ASSERT_FALSE(made.failure);
    const JoinAnswer again = join(*a, "ff15::c1");
    ASSERT_FALSE(again.failure);
    ASSERT_FALSE(a->leave(proto::Leave{made.membership, {}}));
    sa.run();
    EXPECT_EQ(sa_bits("ff15::c1"), join::full) << "the group is still held";
    refresh(*a);
    EXPECT_EQ(usage(kAlice)->creates, 1u);
    EXPECT_TRUE(a->grants().at(again.membership).created) << "list and the restart state show who carries it";

    const JoinAnswer next = join(*a, "ff15::c2");
    ASSERT_TRUE(next.failure);
    EXPECT_EQ(next.failure->error.policy, (PolicyRef{"", "creates_per_uid", 1}));
    EXPECT_EQ(next.failure->error.message, "uid 1001 created 1 group it still holds, its quota (config "
                                           "access.quotas.creates_per_uid or the admitting rule's: 1)");
    EXPECT_FALSE(sa_bits("ff15::c2"));

    ASSERT_FALSE(a->leave(proto::Leave{again.membership, {}}));
    sa.run();
    EXPECT_FALSE(sa_bits("ff15::c1"));
    refresh(*a);
    EXPECT_EQ(usage(kAlice)->creates, 0u);
    EXPECT_EQ(usage(kAlice)->memberships, 0u);
    EXPECT_FALSE(join(*a, "ff15::c2").failure) << "the create given back is hers again";
}

// The create goes on within the uid, to its membership in another session, never to another
// uid's; a session that ends holding two memberships of the group gives it back once.
TEST_F(OneCreate, TheCreateGoesOnWithinTheUidAndASessionThatEndsGivesItBackOnce) {
    auto a1 = open(kAlice, kUsers), a2 = open(kAlice, kUsers), bob = open(kBob, kUsers);
    ASSERT_FALSE(join(*a1, "ff15::c1").failure);
    ASSERT_FALSE(join(*bob, "ff15::c1").failure);
    ASSERT_FALSE(join(*a2, "ff15::c1").failure);
    a1.reset(); // disconnects: its create goes on to a2's membership
    refresh(*bob);
    EXPECT_EQ(usage(kAlice)->creates, 1u);
    EXPECT_EQ(usage(kBob)->creates, 0u);
    EXPECT_TRUE(join(*a2, "ff15::c2").failure);
    ASSERT_FALSE(join(*a2, "ff15::c1").failure);
    a2.reset(); // both go: the create is given back, not handed from one to the other
    sa.run();
    const frontend::Usage *left = sessions.accounts().usage(kAlice); // kept while her SA budget refills
    EXPECT_EQ(left ? left->creates : 0u, 0u) << "alice holds nothing, and owes no create";
    auto a3 = open(kAlice, kUsers);
    EXPECT_FALSE(join(*a3, "ff15::c2").failure);
}

// A join of the group still waiting carries the create on just as well: here the creating
// join is withdrawn once its Set went out, and the next join of the group is answered by it.
TEST_F(OneCreate, AJoinOfTheGroupStillWaitingCarriesTheCreateOn) {
    auto a = open(kAlice, kUsers);
    std::optional<JoinAnswer> first, second;
    a->join(1, join_request("ff15::c1"), [&](const JoinAnswer &ans) { first = ans; });
    const MembershipId m2 = a->join(2, join_request("ff15::c1"), [&](const JoinAnswer &ans) { second = ans; });
    ASSERT_TRUE(sa.step()); // the probe: no such group, so the create gate charges it and the Set goes
    ASSERT_EQ(sa.pending(), 1u) << "the creating Set";
    refresh(*a);
    EXPECT_EQ(usage(kAlice)->creates, 1u);
    ASSERT_FALSE(a->leave(proto::Leave{std::nullopt, 1}));
    ASSERT_TRUE(first && first->failure);
    EXPECT_EQ(first->failure->error.code, Errc::cancelled);
    sa.run();
    ASSERT_TRUE(second);
    ASSERT_FALSE(second->failure) << second->failure->error.message;
    EXPECT_EQ(sa_bits("ff15::c1"), join::full);
    EXPECT_TRUE(a->grants().at(m2).created);
    refresh(*a);
    EXPECT_EQ(usage(kAlice)->creates, 1u);
    EXPECT_TRUE(join(*a, "ff15::c2").failure);
}

// In an owned prefix a new group's lone Set may create, so it is charged a create before it,
// whether the group existed or not. A uid whose creates are spent is probed first, as anywhere
// else: it still joins a group that exists, and a new one is refused by the quota.
TEST_F(OwnedCreateQuota, TheLoneSetIsChargedACreateAndASpentQuotaProbesFirst) {
    using V = std::vector<std::string>;
    auto a = open(kAlice, kUsers);
    const Gid other = make_gid(0xfe80000000000000ULL, 0x99);
    const std::uint32_t qkey = EngineConfig{}.create.qkey; // created alike, by another host
    sa.state.seed(*parse_gid("ff15:c::e1"), other, join::full, qkey);
    sa.state.seed(*parse_gid("ff15:c::e2"), other, join::full, qkey);
    const JoinAnswer e1 = join(*a, "ff15:c::e1");
    ASSERT_FALSE(e1.failure) << e1.failure->error.message;
    EXPECT_EQ(methods("ff15:c::e1"), V{"set"});
    ASSERT_FALSE(join(*a, "ff15:c::c1").failure);
    EXPECT_EQ(methods("ff15:c::c1"), V{"set"});
    refresh(*a);
    EXPECT_EQ(usage(kAlice)->creates, 2u);

    EXPECT_FALSE(join(*a, "ff15:c::e2").failure) << "an existing group, probed first";
    EXPECT_EQ(methods("ff15:c::e2"), (V{"get", "get", "set"}));
    const JoinAnswer c2 = join(*a, "ff15:c::c2");
    ASSERT_TRUE(c2.failure);
    EXPECT_EQ(c2.failure->error.policy, (PolicyRef{"", "creates_per_uid", 2}));
    EXPECT_EQ(methods("ff15:c::c2"), V{"get"});

    ASSERT_FALSE(a->leave(proto::Leave{e1.membership, {}}));
    refresh(*a);
    EXPECT_EQ(usage(kAlice)->creates, 1u) << "the leave gives the create back";
}

TEST_F(PortCap, TheHostCapsItsGroupsPerPortForEveryoneButAJoinOfAHeldGroupPasses) {
    auto root = open(0, 0);
    for (int g = 1; g <= 5; ++g) {
        const std::string mgid = "ff15::" + std::to_string(g);
        ASSERT_FALSE(join(*root, mgid.c_str()).failure) << mgid;
    }
    const JoinAnswer sixth = join(*root, "ff15::6");
    ASSERT_TRUE(sixth.failure);
    EXPECT_EQ(sixth.failure->error.policy, (PolicyRef{"", "groups_per_port", 5}));
    EXPECT_EQ(sixth.failure->error.message, "mlx5_0/1 has 5 groups, its quota (config access.quotas.groups_per_port: 5)");
    auto a = open(kAlice, kUsers);
    EXPECT_FALSE(join(*a, "ff15::3").failure) << "a group the host holds costs no MLID more";
    refresh(*a);
    EXPECT_EQ(status.ports.at(0).max_groups, 5u);
}

TEST_F(MembershipQuota, APendingJoinCountsAndAWithdrawnOneGivesItsPlaceBack) {
    auto a = open(kAlice, kUsers);
    std::vector<std::optional<JoinAnswer>> answers(3);
    for (int i = 0; i < 3; ++i) {
        const std::string mgid = "ff15::" + std::to_string(i + 1);
        a->join(static_cast<std::uint64_t>(100 + i), join_request(mgid.c_str()),
                [&answers, i](const JoinAnswer &x) { answers[static_cast<std::size_t>(i)] = x; });
    }
    std::optional<JoinAnswer> fourth;
    a->join(200, join_request("ff15::4"), [&](const JoinAnswer &x) { fourth = x; });
    ASSERT_TRUE(fourth && fourth->failure) << "three pending joins already fill the quota";
    ASSERT_FALSE(a->leave(proto::Leave{{}, 100}));
    ASSERT_TRUE(answers[0] && answers[0]->failure);
    EXPECT_EQ(answers[0]->failure->error.code, Errc::cancelled);
    std::optional<JoinAnswer> again;
    a->join(201, join_request("ff15::4"), [&](const JoinAnswer &x) { again = x; });
    sa.run();
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->failure);
}

TEST_F(MembershipQuota, TheDaemonsOwnGroupsAreChargedToNobody) {
    auto root = open(0, 0);
    ASSERT_FALSE(join(*root, "ff15::1").failure);
    {
        auto own = sessions.open(Door::daemon, Credentials{ClientInfo{::getpid(), 0, 0, "static-groups"}, {}},
                                 outlet); // uid 0, as StaticGroups opens it
        auto &statics = *std::get<std::unique_ptr<frontend::ClientSession>>(own);
        for (const char *m : {"ff15::1", "ff15::2", "ff15::3", "ff15::4"})
            ASSERT_FALSE(join(statics, m).failure) << m << ": static groups have no quota";
        refresh(*root);
        ASSERT_TRUE(usage(0));
        EXPECT_EQ(usage(0)->memberships, 1u);
    } // the static groups go (a reload that drops them)
    refresh(*root);
    ASSERT_TRUE(usage(0)) << "root's own membership is still counted";
    EXPECT_EQ(usage(0)->memberships, 1u);
}

// ---- reload, evict ----

class Reload : public PolicySessions {
protected:
    Reload() : PolicySessions(policy::Policy{}) {}
};

TEST_F(Reload, ATightenedRuleRefusesTheNextJoinAndFlagsWhatIsHeldWithoutCuttingIt) {
    auto a = open(kAlice, kUsers);
    const JoinAnswer held = join(*a, "ff15:b::1");
    ASSERT_FALSE(held.failure);
    EXPECT_EQ(std::get<proto::ListResult>(a->list({})).ports.at(0).groups.at(0).members.at(0).rule, "any");

    sessions.set_policy(hpc_site());
    EXPECT_TRUE(join(*a, "ff15:b::2").failure);
    EXPECT_EQ(sa_bits("ff15:b::1"), join::full) << "kept at the SA";
    const auto m = std::get<proto::ListResult>(a->list({})).ports.at(0).groups.at(0).members.at(0);
    EXPECT_EQ(m.rule, "any") << "the rule that admitted it then";
    EXPECT_EQ(m.flagged, "rule \"everyone\" (config access.rules) allows MGIDs in ff15:a:1::/48 only, and ff15:b::1 "
                         "is not in them");
    refresh(*a);
    EXPECT_EQ(usage(kAlice)->flagged, 1u);

    sessions.set_policy(policy::Policy{});
    EXPECT_EQ(std::get<proto::ListResult>(a->list({})).ports.at(0).groups.at(0).members.at(0).flagged, "")
        << "admitted again";
}

// status's flagged count follows the flags as they come and go: a review, a leave, an eviction.
TEST_F(Reload, StatusCountsFlaggedMembershipsAsTheyComeAndGo) {
    auto a = open(kAlice, kUsers);
    const JoinAnswer one = join(*a, "ff15:b::1"), two = join(*a, "ff15:b::2"), kept = join(*a, "ff15:a:1::1");
    ASSERT_FALSE(one.failure || two.failure || kept.failure);
    const auto flagged = [&] {
        refresh(*a);
        return usage(kAlice) ? usage(kAlice)->flagged : 999;
    };
    EXPECT_EQ(flagged(), 0u);
    sessions.set_policy(hpc_site());
    EXPECT_EQ(flagged(), 2u) << "ff15:a:1::1 is inside the rule";
    sessions.set_policy(hpc_site()); // the same flags again: counted once
    EXPECT_EQ(flagged(), 2u);
    ASSERT_FALSE(a->leave(proto::Leave{one.membership, {}}));
    EXPECT_EQ(flagged(), 1u);
    auto root = open(0, 0);
    ASSERT_TRUE(std::holds_alternative<proto::EvictResult>(root->evict(proto::Evict{{}, two.membership})));
    EXPECT_EQ(flagged(), 0u);
    sessions.set_policy(hpc_site());
    sessions.set_policy(policy::Policy{});
    EXPECT_EQ(flagged(), 0u) << "a flag cleared is uncounted";
}

TEST_F(Reload, EvictIsForRootAndReleasesAUidsMembershipsTellingItsClient) {
    auto a1 = open(kAlice, kUsers);
    auto a2 = open(kAlice, kUsers);
    auto b = open(kBob, kUsers);
    const JoinAnswer x = join(*a1, "ff15::1");
    ASSERT_FALSE(join(*a2, "ff15::2").failure);
    ASSERT_FALSE(join(*b, "ff15::1").failure);

    const auto refused = b->evict(proto::Evict{kAlice, {}});
    ASSERT_TRUE(std::holds_alternative<proto::Failure>(refused));
    EXPECT_EQ(std::get<proto::Failure>(refused).error.code, Errc::denied);

    auto root = open(0, 0);
    const auto done = root->evict(proto::Evict{kAlice, {}});
    ASSERT_TRUE(std::holds_alternative<proto::EvictResult>(done));
    EXPECT_EQ(std::get<proto::EvictResult>(done).released, 2u);
    sa.run();
    EXPECT_EQ(sa_bits("ff15::1"), join::full) << "bob still holds ff15::1";
    EXPECT_FALSE(sa_bits("ff15::2")) << "nobody holds ff15::2: deleted at the SA";
    const auto told = std::find_if(outlet.events.begin(), outlet.events.end(),
                                   [&](const auto &e) { return e.first == x.membership; });
    ASSERT_NE(told, outlet.events.end());
    EXPECT_EQ(told->second.kind, MembershipEvent::Kind::lost);
    EXPECT_EQ(told->second.reason->code, Errc::denied);
    EXPECT_FALSE(a1->leave(proto::Leave{x.membership, {}})) << "the client may still leave what it was told it lost";
    refresh(*root);
    ASSERT_TRUE(usage(kAlice)) << "alice is still connected";
    EXPECT_EQ(usage(kAlice)->memberships, 0u);

    const auto gone = root->evict(proto::Evict{{}, 999});
    ASSERT_TRUE(std::holds_alternative<proto::Failure>(gone));
    EXPECT_EQ(std::get<proto::Failure>(gone).error.code, Errc::not_found);
}

} // namespace
} // namespace mcastd::test
