// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the front door refused, counted by reason (frontend/refusals.hpp) where each refusal is
// decided: the allow lists at both doors, the rules, every quota and share, the per-connection
// limits, the hello deadline; and `status`'s `refused`, which lists every reason once.
#include <unistd.h>

#include <algorithm>

#include "front_door.hpp"
#include "frontend/refusals.hpp"

namespace mcastd::test {
namespace {

using frontend::Credentials;
using frontend::Door;
using frontend::Limits;
namespace refusal = frontend::refusal;

class Quiet final : public frontend::SessionOutlet {
public:
    void membership_event(MembershipId, const MembershipEvent &) override {}
    void disconnect(const std::string &) override {}
};

constexpr uid_t kAlice = 1001, kBob = 1002;

// ---- the reasons ----

TEST(RefusalReasons, APolicyErrorNamesItsRuleOrItsQuotasKey) {
    EXPECT_EQ(refusal::reason_of(Error{Errc::denied, "m", {}, PolicyRef{"hpc", {}, 0}}), "access.rules");
    const std::pair<const char *, const char *> quotas[] = {
        {"memberships_per_uid", "access.quotas.memberships_per_uid"},
        {"creates_per_uid", "access.quotas.creates_per_uid"},
        {"groups_per_port_per_uid", "access.quotas.groups_per_port_per_uid"},
        {"groups_per_port", "access.quotas.groups_per_port"},
        {"sa_mads_per_second", "access.quotas.sa_mads_per_second"},
        {"max_clients", "limits.max_clients"},
        {"root_reserved_clients", "limits.root_reserved_clients"},
        {"max_clients_per_uid", "limits.max_clients_per_uid"},
        {"max_monitors_per_uid", "limits.max_monitors_per_uid"},
        {"max_memberships", "limits.max_memberships"},
    };
    for (const auto &[quota, key] : quotas)
        EXPECT_EQ(refusal::reason_of(Error{Errc::limit, "m", {}, PolicyRef{{}, quota, 1}}), key) << quota;
    EXPECT_FALSE(refusal::reason_of(Error{Errc::limit, "no policy", {}}));
    EXPECT_FALSE(refusal::reason_of(Error{Errc::limit, "m", {}, PolicyRef{{}, "a_key_nobody_has", 1}}));
}

TEST(RefusalReasons, TheSnapshotListsEveryReasonOnceAndAnUnknownOneIsNoNewSeries) {
    frontend::Refusals r;
    r.count(refusal::kRules);
    r.count(refusal::kRules);
    r.count("ff15::1"); // not a reason: dropped
    r.count(Error{Errc::limit, "m", {}, PolicyRef{{}, "creates_per_uid", 64}});
    const auto all = r.snapshot();
    ASSERT_EQ(all.size(), refusal::kReasons.size());
    for (std::size_t i = 0; i < all.size(); ++i)
        EXPECT_EQ(all[i].reason, refusal::kReasons[i]);
    EXPECT_EQ(r.of("access.rules"), 2u);
    EXPECT_EQ(r.of("access.quotas.creates_per_uid"), 1u);
    std::uint64_t total = 0;
    for (const auto &c : all)
        total += c.count;
    EXPECT_EQ(total, 3u);
}

// ---- where they are counted ----

Limits tight_limits() {
    Limits l;
    l.max_clients_per_uid = 2;
    l.max_monitors_per_uid = 1;
    l.max_memberships_per_client = 2;
    l.max_requests_in_flight = 1;
    l.hello_timeout = std::chrono::milliseconds(100);
    return l;
}

policy::Policy site() {
    policy::Policy p;
    p.allow_uids = {kAlice, kBob};
    policy::Rule r;
    r.name = "lab";
    r.mgids = {std::get<policy::MgidPrefix>(policy::parse_mgid_prefix("ff15::/16"))};
    r.create = policy::Create::any;
    p.rules = {r};
    p.quotas.creates_per_uid = 1;
    return p;
}

class Counted : public FrontDoor {
protected:
    Counted() : FrontDoor(tight_limits(), site()) {}

    std::variant<std::unique_ptr<frontend::ClientSession>, proto::Failure> try_open(uid_t uid, Door door = Door::dbus) {
        return sessions.open(door, Credentials{ClientInfo{::getpid(), uid, 100, "app"}, {}, "/user.slice"}, quiet);
    }
    std::unique_ptr<frontend::ClientSession> open(uid_t uid, Door door = Door::dbus) {
        auto s = try_open(uid, door);
        if (auto *f = std::get_if<proto::Failure>(&s)) {
            ADD_FAILURE() << f->error.message;
            return nullptr;
        }
        return std::get<std::unique_ptr<frontend::ClientSession>>(std::move(s));
    }
    std::uint64_t of(std::string_view reason) const { return sessions.refusals().of(reason); }
    // Every reason but `except` is still 0.
    void only(std::string_view except, std::uint64_t n) {
        for (const auto &c : sessions.refusals().snapshot())
            EXPECT_EQ(c.count, c.reason == except ? n : 0u) << c.reason;
    }

    Quiet quiet;
};

TEST_F(Counted, TheAllowListsAtTheDbusDoorAndAtASocketsHello) {
    EXPECT_TRUE(std::holds_alternative<proto::Failure>(try_open(4242)));
    auto socket_session = open(4242, Door::socket); // the socket door asks at hello
    std::optional<proto::Failure> refused;
    socket_session->handle(1, proto::Hello{{2}, "test"}, [&](frontend::Answer a) {
        if (auto *f = std::get_if<proto::Failure>(&a))
            refused = *f;
    });
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->error.code, Errc::denied);
    only(refusal::kAllowLists, 2);
}

TEST_F(Counted, AShareOfClientSlotsAndOfMonitors) {
    auto a1 = open(kAlice), a2 = open(kAlice);
    EXPECT_TRUE(std::holds_alternative<proto::Failure>(try_open(kAlice)));
    EXPECT_EQ(of("limits.max_clients_per_uid"), 1u);
    EXPECT_FALSE(a1->set_monitor(true));
    EXPECT_TRUE(a2->set_monitor(true));
    EXPECT_EQ(of("limits.max_monitors_per_uid"), 1u);
}

TEST_F(Counted, ARulesDenialAndTheCreateQuotaAtTheCreateGate) {
    auto alice = open(kAlice);
    EXPECT_TRUE(join_now(*alice, join_request("ff12::1")).failure) << "outside the rule's prefix";
    only(refusal::kRules, 1);
    EXPECT_FALSE(join_now(*alice, join_request("ff15::1")).failure) << "creates its group";
    const auto second = join_now(*alice, join_request("ff15::2"));
    ASSERT_TRUE(second.failure);
    EXPECT_EQ(second.failure->error.code, Errc::limit);
    EXPECT_EQ(of("access.quotas.creates_per_uid"), 1u) << "refused at the create gate, after the probe";
}

TEST_F(Counted, TheLimitsOfOneConnection) {
    auto alice = open(kAlice);
    std::vector<std::optional<frontend::JoinAnswer>> answers(3);
    alice->join(1, join_request("ff15::1"), [&](const frontend::JoinAnswer &a) { answers[0] = a; });
    alice->join(2, join_request("ff15::1"), [&](const frontend::JoinAnswer &a) { answers[1] = a; });
    ASSERT_TRUE(answers[1] && answers[1]->failure) << "one join waits for the SA already";
    EXPECT_EQ(of(refusal::kRequestsInFlight), 1u);
    sa.run();
    EXPECT_FALSE(join_now(*alice, join_request("ff15::1")).failure);
    alice->join(3, join_request("ff15::1"), [&](const frontend::JoinAnswer &a) { answers[2] = a; });
    ASSERT_TRUE(answers[2] && answers[2]->failure) << "two held";
    EXPECT_EQ(of(refusal::kMembershipsPerClient), 1u);
}

TEST_F(Counted, AConnectionThatSaysNoHelloInTimeAndStatusListsEveryReason) {
    const int silent = connect();
    EXPECT_FALSE(next(silent)) << "closed at the deadline";
    const int fd = greeted();
    send(fd, 2, proto::Status{});
    const proto::Reply r = reply(fd);
    ASSERT_TRUE(ok(r));
    const auto st = std::get<proto::StatusResult>(
        proto::decode_status_result(std::get<mcastd::json_check::OwnedValue>(r.body).get()));
    ASSERT_EQ(st.refused.size(), refusal::kReasons.size());
    for (const auto &c : st.refused) {
        EXPECT_NE(std::find(refusal::kReasons.begin(), refusal::kReasons.end(), c.reason), refusal::kReasons.end())
            << c.reason;
        EXPECT_EQ(c.count, c.reason == refusal::kHelloTimeout ? 1u : 0u) << c.reason;
    }
}

} // namespace
} // namespace mcastd::test
