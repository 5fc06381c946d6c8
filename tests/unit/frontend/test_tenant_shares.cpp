// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Tenant isolation at the front door (doc/architecture.md §12), over the fake SA: each uid's
// share of the client slots (root keeps a reserve), of monitors, of the groups on a port and of
// the SA's MADs; the allow lists asked for the whole life of a session; root's evict with
// disconnect; and what a restart takes back. A uid over a share gets `limit` naming the key and
// the figure, and the others notice nothing.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "front_door.hpp"

namespace mcastd::test {
namespace {

using frontend::Credentials;
using frontend::Door;
using frontend::JoinAnswer;
using frontend::Limits;

class Recorder final : public frontend::SessionOutlet {
public:
    void membership_event(MembershipId id, const MembershipEvent &ev) override { events.emplace_back(id, ev); }
    void monitor_event(const proto::MonitorEvent &ev) override { monitored.push_back(ev); }
    void disconnect(const std::string &why) override { disconnects.push_back(why); }
    std::vector<std::pair<MembershipId, MembershipEvent>> events;
    std::vector<proto::MonitorEvent> monitored;
    std::vector<std::string> disconnects;
};

constexpr uid_t kAlice = 1001, kBob = 1002;

Limits small_limits() {
    Limits l;
    l.max_clients = 10;
    l.root_reserved_clients = 2;
    l.max_clients_per_uid = 3;
    l.max_monitors_per_uid = 2;
    return l;
}

policy::Policy small_quotas() {
    policy::Policy p;
    p.quotas.groups_per_port_per_uid = 3;
    p.quotas.sa_mads_per_second = 1;
    p.quotas.sa_mads_burst = 3;
    return p;
}

class Shares : public FrontDoor {
protected:
    explicit Shares(Limits l = small_limits(), policy::Policy p = small_quotas()) : FrontDoor(l, std::move(p)) {}

    std::variant<std::unique_ptr<frontend::ClientSession>, proto::Failure> try_open(uid_t uid, Recorder &out) {
        Credentials c{ClientInfo{::getpid(), uid, 100, "app"}, {}, "/user.slice"};
        return sessions.open(Door::dbus, std::move(c), out);
    }
    std::unique_ptr<frontend::ClientSession> open(uid_t uid, Recorder *out = nullptr) {
        auto s = try_open(uid, out ? *out : outlet);
        if (auto *f = std::get_if<proto::Failure>(&s)) {
            ADD_FAILURE() << f->error.message;
            return nullptr;
        }
        return std::get<std::unique_ptr<frontend::ClientSession>>(std::move(s));
    }
    JoinAnswer join(frontend::ClientSession &s, const char *mgid) { return join_now(s, join_request(mgid)); }
    std::size_t mads() const { return sa.log.size(); }
    // Uids 100000-165535 are alice's subordinate range (config limits.subuid_file).
    void alices_range() {
        char tmpl[] = "/tmp/mcastd-shares-XXXXXX";
        subuid_dir_ = ::mkdtemp(tmpl);
        std::ofstream(subuid_dir_ / "subuid") << "1001:100000:65536\n";
        Limits l = small_limits();
        l.subuid_file = subuid_dir_ / "subuid";
        sessions.set_limits(l);
    }
    ~Shares() override {
        if (!subuid_dir_.empty())
            std::filesystem::remove_all(subuid_dir_);
    }

    Recorder outlet;
    std::filesystem::path subuid_dir_;
};

// ---- client slots ----

TEST_F(Shares, AUidTakesItsShareOfClientSlotsAndNoMore) {
    std::vector<std::unique_ptr<frontend::ClientSession>> alice;
    for (int i = 0; i < 3; ++i)
        alice.push_back(open(kAlice));
    auto fourth = try_open(kAlice, outlet);
    ASSERT_TRUE(std::holds_alternative<proto::Failure>(fourth));
    const proto::Failure &f = std::get<proto::Failure>(fourth);
    EXPECT_EQ(f.error.code, Errc::limit);
    EXPECT_EQ(f.error.message, "uid 1001 has 3 clients, its share (config limits.max_clients_per_uid: 3)");
    EXPECT_EQ(f.error.policy, (PolicyRef{"", "max_clients_per_uid", 3}));
    EXPECT_TRUE(open(kBob)) << "another uid notices nothing";
    alice.pop_back();
    EXPECT_TRUE(open(kAlice)) << "a slot given back is a slot again";
}

// A user's subordinate uids (a rootless container's, mapped by newuidmap) take the user's
// shares, not shares of their own: a range of 65,536 uids is not 65,536 users.
TEST_F(Shares, ASubordinateUidTakesItsOwnersShare) {
    alices_range();

    auto a1 = open(kAlice), a2 = open(kAlice), sub = open(100000);
    ASSERT_TRUE(a1 && a2 && sub);
    auto refused = try_open(100001, outlet);
    ASSERT_TRUE(std::holds_alternative<proto::Failure>(refused));
    EXPECT_EQ(std::get<proto::Failure>(refused).error.message,
              "uid 1001 has 3 clients, its share (config limits.max_clients_per_uid: 3); uid 100001 is charged to "
              "uid 1001, whose subordinate range holds it (config limits.subuid_file)");
    EXPECT_TRUE(std::holds_alternative<proto::Failure>(try_open(kAlice, outlet))) << "nor alice herself";
    EXPECT_TRUE(open(kBob)) << "another uid notices nothing";
    sub.reset();
    EXPECT_TRUE(open(100002)) << "the slot is the owner's again";
}

TEST_F(Shares, RootKeepsItsReservedSlotsWhenEveryoneElseIsFull) {
    std::vector<std::unique_ptr<frontend::ClientSession>> held;
    for (uid_t uid = 2000; held.size() < 8; ++uid) // 8 of 10 slots: the rest are root's
        for (int i = 0; i < 2 && held.size() < 8; ++i)
            held.push_back(open(uid));
    auto refused = try_open(3000, outlet);
    ASSERT_TRUE(std::holds_alternative<proto::Failure>(refused));
    EXPECT_EQ(std::get<proto::Failure>(refused).error.message,
              "the daemon serves 8 clients and the rest of its 10 slots are root's, its reserve (config "
              "limits.root_reserved_clients: 2)");
    auto root1 = open(0), root2 = open(0);
    EXPECT_TRUE(root1 && root2) << "root takes the reserve";
    auto full = try_open(0, outlet);
    ASSERT_TRUE(std::holds_alternative<proto::Failure>(full));
    EXPECT_EQ(std::get<proto::Failure>(full).error.message,
              "the daemon serves 10 clients, its bound (config limits.max_clients: 10)");
}

// ---- monitors ----

TEST_F(Shares, AUidMonitorsOnAsManyConnectionsAsItsShareRootOnAny) {
    auto a1 = open(kAlice), a2 = open(kAlice), a3 = open(kAlice);
    EXPECT_FALSE(a1->set_monitor(true));
    EXPECT_FALSE(a2->set_monitor(true));
    const auto no = a3->set_monitor(true);
    ASSERT_TRUE(no);
    EXPECT_EQ(no->error.code, Errc::limit);
    EXPECT_EQ(no->error.message, "uid 1001 monitors on 2 connections, its share (config limits.max_monitors_per_uid: 2)");
    EXPECT_FALSE(a3->monitoring());
    EXPECT_FALSE(a1->set_monitor(false));
    EXPECT_FALSE(a3->set_monitor(true)) << "one stopped: its place is free";
    std::vector<std::unique_ptr<frontend::ClientSession>> root;
    for (int i = 0; i < 3; ++i) {
        root.push_back(open(0));
        EXPECT_FALSE(root.back()->set_monitor(true)) << "root has no share";
    }
}

// ---- groups per port ----

TEST_F(Shares, AUidsMembershipsSpanAtMostItsShareOfGroupsOnAPort) {
    policy::Policy p = small_quotas();
    p.quotas.sa_mads_per_second = 0; // no SA budget: only the share speaks here
    sessions.set_policy(p);
    auto alice = open(kAlice), bob = open(kBob);
    EXPECT_FALSE(join(*alice, "ff15::1").failure);
    EXPECT_FALSE(join(*alice, "ff15::2").failure);
    EXPECT_FALSE(join(*alice, "ff15::3").failure);
    EXPECT_FALSE(join(*alice, "ff15::3").failure) << "a group it already holds takes no more of its share";
    const JoinAnswer fourth = join(*alice, "ff15::4");
    ASSERT_TRUE(fourth.failure);
    EXPECT_EQ(fourth.failure->error.code, Errc::limit);
    EXPECT_EQ(fourth.failure->error.message, "uid 1001's memberships on mlx5_0/1 are in 3 groups, its share (config "
                                             "access.quotas.groups_per_port_per_uid: 3)");
    EXPECT_FALSE(sa_bits("ff15::4")) << "refused before the SA";
    EXPECT_FALSE(join(*bob, "ff15::4").failure) << "bob has his own share";
}

// ---- the SA budget ----

class SaBudget : public Shares {};

TEST_F(SaBudget, ANewGroupCostsAProbeAndASetAndAnEmptyBudgetRefusesBeforeTheMad) {
    auto alice = open(kAlice);
    EXPECT_FALSE(join(*alice, "ff15::1").failure); // Get + Set: 2 of 3
    const std::size_t before = mads();
    const JoinAnswer second = join(*alice, "ff15::2"); // its Get takes the last; its Set finds none
    ASSERT_TRUE(second.failure);
    EXPECT_EQ(second.failure->error.code, Errc::limit);
    EXPECT_EQ(second.failure->error.policy, (PolicyRef{"", "sa_mads_per_second", 1}));
    EXPECT_NE(second.failure->error.message.find("uid 1001 has spent its SA MADs (burst 3): this join's Set could go "
                                                 "in"),
              std::string::npos)
        << second.failure->error.message;
    EXPECT_EQ(mads() - before, 1u) << "its probe went out, its Set did not";
    EXPECT_FALSE(sa_bits("ff15::2"));

    auto bob = open(kBob);
    EXPECT_FALSE(join(*bob, "ff15::3").failure) << "bob's budget is his own";
    auto root = open(0);
    for (const char *m : {"ff15::4", "ff15::5", "ff15::6"})
        EXPECT_FALSE(join(*root, m).failure) << "root has no budget";

    timers.advance(std::chrono::seconds(2)); // two MADs again
    EXPECT_FALSE(join(*alice, "ff15::2").failure);
}

TEST_F(SaBudget, AJoinAnsweredLocallyCostsNothingAndADeleteIsPaidInDebt) {
    auto root = open(0), alice = open(kAlice);
    EXPECT_FALSE(join(*root, "ff15::1").failure);
    for (int i = 0; i < 10; ++i)
        EXPECT_FALSE(join(*alice, "ff15::1").failure) << "the port holds the bits: no MAD, no cost";

    // A group of her own: Get + Set; her leave's Delete goes into debt.
    const JoinAnswer own = join(*alice, "ff15::2");
    ASSERT_FALSE(own.failure);
    ASSERT_FALSE(alice->leave(proto::Leave{own.membership, {}}));
    sa.run();
    EXPECT_FALSE(sa_bits("ff15::2")) << "a Delete is never refused";
    EXPECT_EQ(sessions.accounts().sa_tokens(kAlice), 0.0);
    const JoinAnswer next = join(*alice, "ff15::3");
    ASSERT_TRUE(next.failure) << "the debt is paid before her next MAD";
    EXPECT_EQ(next.failure->error.code, Errc::limit);
}

// Root's evict of a uid takes what status counts as the uid's: its subordinate uids' too.
TEST_F(Shares, EvictOfAUidTakesItsSubordinatesAndDisconnectsThem) {
    alices_range();
    Recorder sub_out, bob_out;
    auto alice = open(kAlice), sub = open(100000, &sub_out), bob = open(kBob, &bob_out), root = open(0);
    ASSERT_FALSE(join(*alice, "ff15::1").failure);
    const JoinAnswer in_container = join(*sub, "ff15::1"); // answered locally: alice's SA budget is 3
    ASSERT_FALSE(in_container.failure);
    ASSERT_FALSE(join(*bob, "ff15::3").failure);
    const auto done = root->evict(proto::Evict{kAlice, {}, true});
    ASSERT_TRUE(std::holds_alternative<proto::EvictResult>(done));
    EXPECT_EQ(std::get<proto::EvictResult>(done).released, 2u);
    EXPECT_EQ(std::get<proto::EvictResult>(done).disconnected, 2u);
    ASSERT_EQ(sub_out.events.size(), 1u);
    EXPECT_EQ(sub_out.events[0].first, in_container.membership);
    EXPECT_EQ(sub_out.disconnects.size(), 1u);
    EXPECT_TRUE(bob_out.events.empty() && bob_out.disconnects.empty()) << "bob is not alice";
}

TEST_F(SaBudget, ASubordinateUidSpendsItsOwnersBudget) {
    alices_range();
    auto sub = open(100000), alice = open(kAlice);
    EXPECT_FALSE(join(*sub, "ff15::2").failure) << "a Get and a Set: 2 of the burst of 3";
    EXPECT_EQ(sessions.accounts().sa_tokens(kAlice), 1.0);
    const JoinAnswer next = join(*alice, "ff15::3");
    ASSERT_TRUE(next.failure) << "her budget is what her container spent";
    EXPECT_EQ(next.failure->error.code, Errc::limit);
}

TEST_F(SaBudget, AnMgidJustSeenAbsentAsksTheCreateQuotaBeforeAnyMad) {
    policy::Policy p = small_quotas();
    p.quotas.sa_mads_per_second = 0; // no budget: only the create quota speaks here
    p.quotas.creates_per_uid = 1;
    sessions.set_policy(p);
    auto alice = open(kAlice);
    EXPECT_FALSE(join(*alice, "ff15::1").failure); // her one create
    const JoinAnswer absent = join(*alice, "ff15::2");
    ASSERT_TRUE(absent.failure);
    EXPECT_EQ(absent.failure->error.policy->quota, "creates_per_uid");
    const std::size_t before = mads();
    const JoinAnswer again = join(*alice, "ff15::2");
    ASSERT_TRUE(again.failure);
    EXPECT_EQ(again.failure->error.policy->quota, "creates_per_uid");
    EXPECT_EQ(mads(), before) << "the port saw ff15::2 absent a moment ago: no probe for it";
}

// ---- the allow lists, for the whole life of a session ----

TEST_F(Shares, ACallerAReloadRemovesMayOnlyLeave) {
    auto alice = open(kAlice), bob = open(kBob);
    const JoinAnswer held = join(*alice, "ff15::1");
    ASSERT_FALSE(held.failure);
    ASSERT_FALSE(alice->set_monitor(true));
    policy::Policy p = small_quotas();
    p.allow_uids = {kBob};
    sessions.set_policy(p);

    EXPECT_FALSE(alice->monitoring()) << "its monitor stops at the reload";
    const JoinAnswer no = join(*alice, "ff15::2");
    ASSERT_TRUE(no.failure);
    EXPECT_EQ(no.failure->error.code, Errc::denied);
    EXPECT_EQ(no.failure->error.message, "uid 1001 is not allowed to use rdma-mcastd (config access.allow_uids, "
                                         "access.allow_gids); it may leave the memberships it holds, and nothing else");
    EXPECT_TRUE(alice->set_monitor(true)) << "nor monitor";
    EXPECT_EQ(sa_bits("ff15::1"), join::full) << "what it holds, it keeps";
    EXPECT_FALSE(alice->leave(proto::Leave{held.membership, {}}));
    EXPECT_FALSE(join(*bob, "ff15::3").failure);
}

// ---- evict --disconnect ----

TEST_F(Shares, EvictWithDisconnectEndsEveryClientOfTheUid) {
    Recorder a_out, b_out;
    auto a1 = open(kAlice, &a_out), a2 = open(kAlice, &a_out), bob = open(kBob, &b_out), root = open(0);
    ASSERT_FALSE(join(*a1, "ff15::1").failure);
    proto::Evict e;
    e.uid = kAlice;
    e.disconnect = true;
    const auto out = root->evict(e);
    ASSERT_TRUE(std::holds_alternative<proto::EvictResult>(out));
    EXPECT_EQ(std::get<proto::EvictResult>(out).released, 1u);
    EXPECT_EQ(std::get<proto::EvictResult>(out).disconnected, 2u);
    EXPECT_EQ(a_out.disconnects.size(), 2u);
    EXPECT_TRUE(b_out.disconnects.empty());
    sa.run();
    EXPECT_FALSE(sa_bits("ff15::1"));
    EXPECT_TRUE(std::holds_alternative<proto::Failure>(bob->evict(e))) << "for root only";
}

// ---- what a restart takes back ----

TEST_F(Shares, ARestoredSessionTakesAClientSlotAndOneOverTheShareIsNotTakenBack) {
    std::vector<frontend::ClientSession *> restored;
    for (std::uint64_t id = 1; id <= 4; ++id) {
        frontend::RestoredSession rs = saved_session(id, kAlice, std::string(32, 'a'));
        std::string why;
        frontend::ClientSession *s = sessions.restore(rs, why);
        if (id <= 3) {
            EXPECT_TRUE(s) << why;
        } else {
            EXPECT_FALSE(s);
            EXPECT_EQ(why, "uid 1001 has 3 clients, its share (config limits.max_clients_per_uid: 3)");
        }
    }
    EXPECT_EQ(sessions.clients(), 3u);
    EXPECT_FALSE(std::holds_alternative<std::unique_ptr<frontend::ClientSession>>(try_open(kAlice, outlet)));
}

// The account is not in the state: a session taken back is charged to whom the ranges say now.
TEST_F(Shares, ARestoredSessionOfASubordinateUidTakesItsOwnersSlot) {
    alices_range();
    auto a1 = open(kAlice), a2 = open(kAlice);
    frontend::RestoredSession rs = saved_session(1, 100000, std::string(32, 'a'));
    std::string why;
    ASSERT_TRUE(sessions.restore(rs, why)) << why;
    ASSERT_TRUE(sessions.accounts().usage(kAlice));
    EXPECT_EQ(sessions.accounts().usage(kAlice)->clients, 3u);
    EXPECT_FALSE(sessions.accounts().usage(100000));
    rs.id = 2;
    EXPECT_FALSE(sessions.restore(rs, why)) << "over alice's share of 3";
}

// A group the previous instance's join created is charged to its uid again when its membership
// is taken back: the quota does not start over with a restart, and the leave gives the create
// back once (a count that wrapped would refuse every later create of the uid).
TEST_F(Shares, ACreateTakenBackAfterARestartIsChargedAgainAndGivenBackOnce) {
    policy::Policy p = small_quotas();
    p.quotas.sa_mads_per_second = 0; // no SA budget: only the create quota speaks here
    p.quotas.creates_per_uid = 1;
    sessions.set_policy(p);
    // What the previous instance left: ff15::1 at the SA, created by alice's membership 500.
    const Gid g1 = *parse_gid("ff15::1");
    sa.state.seed(g1, test_port().port_gid(), join::full);
    service.adopt_group(0, g1, join::full, 0, std::nullopt);
    frontend::RestoredSession rs = saved_session(40, kAlice, std::string(32, 'a'));
    std::string why;
    frontend::ClientSession *old = sessions.restore(rs, why);
    ASSERT_TRUE(old) << why;
    frontend::Grant grant;
    grant.rule = "kept-rule";
    grant.created = true;
    ASSERT_TRUE(old->adopt_member(500, 0, g1, join::full, {}, grant));
    service.end_adoption();
    const frontend::Accounts &acc = sessions.accounts();
    ASSERT_TRUE(acc.usage(kAlice));
    EXPECT_EQ(acc.usage(kAlice)->creates, 1u);

    auto alice = open(kAlice);
    const JoinAnswer over = join(*alice, "ff15::2");
    ASSERT_TRUE(over.failure) << "her one create is the group taken back";
    EXPECT_EQ(over.failure->error.message, "uid 1001 created 1 group it still holds, its quota (config "
                                           "access.quotas.creates_per_uid or the admitting rule's: 1)");
    EXPECT_FALSE(sa_bits("ff15::2"));

    ASSERT_FALSE(old->leave(proto::Leave{500, {}}));
    sa.run();
    EXPECT_EQ(acc.usage(kAlice)->creates, 0u);
    EXPECT_FALSE(join(*alice, "ff15::2").failure) << "the create given back is hers again";
    const JoinAnswer second = join(*alice, "ff15::3");
    ASSERT_TRUE(second.failure);
    EXPECT_EQ(second.failure->error.policy, (PolicyRef{"", "creates_per_uid", 1}));
    EXPECT_EQ(acc.usage(kAlice)->creates, 1u);
}

// The account is not in the restart state: ranges changed across a restart give a resumed
// session another account than the one its memberships were charged to. The resume takes the
// old account over, so that leaving gives back where they were charged.
TEST_F(Shares, AResumeAfterTheRangesChangedGivesBackWhereItWasCharged) {
    alices_range();
    const Gid g1 = *parse_gid("ff15::1");
    sa.state.seed(g1, test_port().port_gid(), join::full);
    service.adopt_group(0, g1, join::full, 0, std::nullopt);
    const std::string token(32, 'a');
    std::string why;
    frontend::ClientSession *old = sessions.restore(saved_session(40, 100000, token), why);
    ASSERT_TRUE(old) << why;
    ASSERT_TRUE(old->adopt_member(500, 0, g1, join::full, {}, frontend::Grant{}));
    service.end_adoption();
    const frontend::Accounts &acc = sessions.accounts();
    ASSERT_TRUE(acc.usage(kAlice));
    EXPECT_EQ(acc.usage(kAlice)->memberships, 1u);

    // The range is bob's now (a file of another size: its change is seen).
    std::ofstream(subuid_dir_ / "subuid") << "1002:100000:65537\n";
    Credentials c{ClientInfo{::getpid(), 100000, 100, "app"}, {}, "/user.slice"};
    auto opened = sessions.open(Door::socket, std::move(c), outlet);
    ASSERT_TRUE(std::holds_alternative<std::unique_ptr<frontend::ClientSession>>(opened));
    auto s = std::get<std::unique_ptr<frontend::ClientSession>>(std::move(opened));
    ASSERT_TRUE(acc.usage(kBob)) << "a new connection of uid 100000 is bob's";
    const auto hello = s->hello(proto::Hello{{2}, "app", proto::SessionTicket{40, token}});
    ASSERT_TRUE(std::holds_alternative<proto::HelloResult>(hello));
    ASSERT_TRUE(std::get<proto::HelloResult>(hello).resumed.value_or(false));
    EXPECT_FALSE(acc.usage(kBob)) << "the resumed session is alice's, as its memberships are";
    EXPECT_EQ(acc.usage(kAlice)->clients, 1u);
    ASSERT_FALSE(s->leave(proto::Leave{500, {}}));
    sa.run();
    EXPECT_EQ(acc.usage(kAlice)->memberships, 0u) << "given back where it was charged";
    s.reset();
    ASSERT_TRUE(acc.usage(kAlice)) << "kept for the SA debt its Delete left";
    EXPECT_EQ(acc.usage(kAlice)->clients, 0u);
    EXPECT_EQ(acc.usage(kAlice)->memberships, 0u);
    EXPECT_FALSE(acc.usage(kBob)) << "nothing left over";
}

// A create given back that was never charged is a bug; it must not wrap the count (which would
// keep the uid from ever creating again, and from ever being forgotten).
TEST_F(Shares, ACreateGivenBackTwiceDoesNotWrapTheCount) {
    frontend::Accounts &acc = sessions.accounts();
    const Gid g1 = *parse_gid("ff15::1");
    acc.charge(kAlice, 0, g1);
    acc.uncharge(kAlice, 0, g1, true);
    EXPECT_EQ(acc.usage(kAlice), nullptr) << "a uid that uses nothing is forgotten";
}

} // namespace
} // namespace mcastd::test
