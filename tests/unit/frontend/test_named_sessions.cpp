// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Named groups as the client sessions resolve them, over the fake SA: a name reaches the MGID
// its mapping gives with the configured P_Key asserted, `list` shows the name, the access rules
// judge the resulting MGID, and a second name on one MGID (a collision) is refused naming both.
#include <unistd.h>

#include "front_door.hpp"

namespace mcastd::test {
namespace {

using frontend::Credentials;
using frontend::Door;
using frontend::JoinAnswer;

// The test vector of PROTOCOL.md: "job-42" under the default prefix.
constexpr const char *kJob42 = "ff15:6e61:6d65:0:6636:89a9:7bcf:99db";

class NoOutlet final : public frontend::SessionOutlet {
public:
    void membership_event(MembershipId, const MembershipEvent &) override {}
    void disconnect(const std::string &) override {}
};

class Named : public FrontDoor {
protected:
    explicit Named(policy::Policy p = {}) : FrontDoor({}, std::move(p)) {
        NamedGroups n;
        n.pkey = 0x8001;
        sessions.names().configure(n);
    }

    std::unique_ptr<frontend::ClientSession> open(uid_t uid = 1001) {
        Credentials c{ClientInfo{::getpid(), uid, 100, "app"}, {}, "/user.slice"};
        auto s = sessions.open(Door::dbus, std::move(c), outlet);
        return std::get<std::unique_ptr<frontend::ClientSession>>(std::move(s));
    }
    JoinAnswer join(frontend::ClientSession &s, const JoinRequest &req) { return join_now(s, req); }
    static JoinRequest by_name(std::string name) {
        JoinRequest r = join_request("::");
        r.mgid = kZeroGid;
        r.name = std::move(name);
        return r;
    }
    // The members of `mgid` in `list` as (membership, name).
    std::vector<std::pair<MembershipId, std::string>> listed(const frontend::ClientSession &s, const char *mgid) {
        std::vector<std::pair<MembershipId, std::string>> out;
        const auto list = std::get<proto::ListResult>(s.list({}));
        for (const auto &p : list.ports)
            for (const auto &g : p.groups)
                if (g.mgid == *parse_gid(mgid))
                    for (const auto &m : g.members)
                        out.emplace_back(m.membership, m.name);
        return out;
    }

    NoOutlet outlet;
};

TEST_F(Named, TwoClientsOfOneNameShareTheMappedGroupWithTheConfiguredPKeyAndListShowsTheName) {
    auto a = open(), b = open(1002);
    const JoinAnswer first = join(*a, by_name("job-42"));
    ASSERT_FALSE(first.failure) << first.failure->error.message;
    EXPECT_EQ(format_gid(first.record.mgid), kJob42);
    EXPECT_EQ(first.record.pkey, 0x8001);
    EXPECT_EQ(sa.state.groups.at(*parse_gid(kJob42)).rec.pkey, 0x8001) << "created with groups.names.pkey";

    const JoinAnswer second = join(*b, by_name("job-42"));
    ASSERT_FALSE(second.failure) << second.failure->error.message;
    EXPECT_EQ(second.record.mgid, first.record.mgid);
    EXPECT_EQ(sa.state.groups.size(), 1u);

    // A join of the same MGID by its number could squat a name's group (create it first with
    // other parameters): refused unless a rule lists the prefix (NamesPrefixByMgid below).
    const JoinAnswer plain = join(*b, join_request(kJob42));
    ASSERT_TRUE(plain.failure);
    EXPECT_EQ(plain.failure->error.code, Errc::denied);
    EXPECT_EQ(plain.failure->field, "/mgid");
    EXPECT_EQ(listed(*a, kJob42), (std::vector<std::pair<MembershipId, std::string>>{{first.membership, "job-42"},
                                                                                   {second.membership, "job-42"}}));
}

// A rule that lists the names' prefix in `mgids` lets its callers join (and create) those MGIDs
// by number; one that lists none does not, and neither does a policy without rules. root may.
class NamesPrefixByMgid : public Named {
protected:
    static policy::Policy rules() {
        policy::Rule by_mgid;
        by_mgid.name = "by-mgid";
        by_mgid.uids = {1001};
        by_mgid.mgids = {std::get<policy::MgidPrefix>(policy::parse_mgid_prefix("ff15:6e61:6d65::/64"))};
        by_mgid.create = policy::Create::any;
        policy::Rule others;
        others.name = "others";
        others.create = policy::Create::any;
        policy::Policy p;
        p.rules = {by_mgid, others};
        return p;
    }
    NamesPrefixByMgid() : Named(rules()) {}
};

TEST_F(NamesPrefixByMgid, OnlyARuleListingThePrefixOpensItToMgids) {
    auto listed_caller = open(1001), other = open(1002), root = open(0);
    EXPECT_FALSE(join(*other, by_name("job-42")).failure) << "by its name anyone may";
    EXPECT_FALSE(join(*listed_caller, join_request(kJob42)).failure) << "its rule lists the prefix";
    const JoinAnswer no = join(*other, join_request(kJob42));
    ASSERT_TRUE(no.failure);
    EXPECT_EQ(no.failure->error.code, Errc::denied);
    EXPECT_EQ(no.failure->error.message,
              std::string(kJob42) + " is in the named groups' prefix (config groups.names.prefix): join it by its name, "
                                    "or list the prefix in an access rule's \"mgids\" to allow it by MGID");
    EXPECT_EQ(no.failure->error.policy->rule, "others");
    EXPECT_FALSE(join(*root, join_request(kJob42)).failure) << "root may";
    EXPECT_FALSE(join(*other, join_request("ff15:6e61:6d66::1")).failure) << "outside the prefix nothing changes";
}

TEST_F(Named, AnotherPKeyIsRefusedAndSoIsANameWhenNamesAreOff) {
    auto a = open();
    JoinRequest r = by_name("job-42");
    r.params.pkey = 0xffff;
    JoinAnswer no = join(*a, r);
    ASSERT_TRUE(no.failure);
    EXPECT_EQ(no.failure->error.code, Errc::invalid_argument);
    EXPECT_EQ(no.failure->field, "/pkey");
    EXPECT_EQ(no.failure->error.message, "named groups have P_Key 0x8001 (config groups.names.pkey), not 0xffff");
    r.params.pkey = 0x8001; // the same one: fine
    EXPECT_FALSE(join(*a, r).failure);

    NamedGroups off;
    off.enabled = false;
    sessions.names().configure(off);
    no = join(*a, by_name("job-43"));
    ASSERT_TRUE(no.failure);
    EXPECT_EQ(no.failure->error.code, Errc::invalid_argument);
    EXPECT_EQ(no.failure->field, "/name");
    EXPECT_EQ(sa.state.groups.size(), 1u) << "the SA never heard of job-43";
}

TEST_F(Named, ASecondNameOnTheSameMgidIsAConflictNamingBoth) {
    // A collision cannot be found by search (64 bits); a membership of the previous instance,
    // restored under another name on job-42's MGID, stands in for one.
    auto a = open();
    ASSERT_FALSE(join(*a, by_name("job-42")).failure);
    frontend::RestoredSession rs = saved_session(77, 1001, std::string(32, 'c'));
    std::string why;
    frontend::ClientSession &old = *sessions.restore(rs, why);
    frontend::Grant g;
    g.rule = "any";
    g.name = "impostor";
    g.mgid = *parse_gid(kJob42);
    ASSERT_TRUE(old.adopt_member(500, 0, g.mgid, join::full, {}, g));
    EXPECT_EQ(listed(*a, kJob42).back(), (std::pair<MembershipId, std::string>{500, "impostor"}));

    const JoinAnswer no = join(*a, by_name("job-42"));
    ASSERT_TRUE(no.failure);
    EXPECT_EQ(no.failure->error.code, Errc::conflict);
    EXPECT_EQ(no.failure->field, "/name");
    EXPECT_EQ(no.failure->error.message,
              std::string("the group names \"job-42\" and \"impostor\" both map to ") + kJob42 +
                  ", which this host holds for \"impostor\" (a hash collision: rename one of them)");
}

policy::Policy names_only() {
    policy::Policy p;
    policy::Rule r;
    r.name = "named";
    r.mgids = {std::get<policy::MgidPrefix>(policy::parse_mgid_prefix("ff15:6e61:6d65::/64"))};
    r.create = policy::Create::mgid;
    p.rules = {r};
    return p;
}

class NamedPolicy : public Named {
protected:
    NamedPolicy() : Named(names_only()) {}
};

TEST_F(NamedPolicy, TheRulesJudgeTheMgidTheNameMapsTo) {
    auto a = open();
    const JoinAnswer yes = join(*a, by_name("job-42"));
    ASSERT_FALSE(yes.failure) << yes.failure->error.message;
    EXPECT_EQ(listed(*a, kJob42).at(0).second, "job-42");

    NamedGroups elsewhere;
    elsewhere.prefix = *parse_name_prefix("ff15:6e61:6d66::/64");
    sessions.names().configure(elsewhere);
    const JoinAnswer no = join(*a, by_name("job-42"));
    ASSERT_TRUE(no.failure);
    EXPECT_EQ(no.failure->error.code, Errc::denied);
    EXPECT_NE(no.failure->error.message.find("ff15:6e61:6d66:0:6636:89a9:7bcf:99db is not in them"), std::string::npos)
        << no.failure->error.message;
}

} // namespace
} // namespace mcastd::test
