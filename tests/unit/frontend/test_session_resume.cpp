// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Sessions across a restart of the daemon: the ticket a version 2 hello returns, and a detached
// session (restored from the state file) taken back by `resume` with no SA traffic.
#include <unistd.h>

#include "front_door.hpp"

namespace mcastd::test {
namespace {

class Resume : public FrontDoor {
protected:
    proto::HelloResult hello(int fd, std::vector<unsigned> versions,
                             std::optional<proto::SessionTicket> resume = std::nullopt) {
        send(fd, 1, proto::Hello{std::move(versions), "test", std::move(resume)});
        const proto::Reply r = reply(fd);
        EXPECT_TRUE(ok(r));
        auto out = proto::decode_hello_result(std::get<mcastd::json_check::OwnedValue>(r.body).get());
        return std::get<proto::HelloResult>(out);
    }

    // A session the previous instance left: `id`, `token`, holding membership 500 of ff15::1
    // as full (a first client holds the group at the SA, so the bits exist).
    frontend::ClientSession &detached(std::uint64_t id, const std::string &tok, uid_t uid, MembershipId m = 500) {
        frontend::RestoredSession rs = saved_session(id, uid, tok, 0, "holder");
        std::string why;
        frontend::ClientSession *restored = sessions.restore(rs, why);
        EXPECT_TRUE(restored) << why;
        frontend::ClientSession &s = *restored;
        frontend::Grant grant;
        grant.rule = "kept-rule";
        EXPECT_TRUE(s.adopt_member(m, 0, *parse_gid("ff15::1"), join::full, {}, grant));
        return s;
    }

    int holder_of_group() {
        const int fd = greeted();
        send(fd, 2, join_of("ff15::1"));
        EXPECT_TRUE(ok(reply(fd)));
        return fd;
    }

    const std::string token = std::string(32, 'c');
};

TEST_F(Resume, Version2HelloCarriesATicketVersion1DoesNot) {
    const auto v1 = hello(connect(), {1});
    EXPECT_EQ(v1.version, 1u);
    EXPECT_FALSE(v1.session);
    const auto a = hello(connect(), {1, 2});
    const auto b = hello(connect(), {2});
    ASSERT_TRUE(a.session && b.session);
    EXPECT_EQ(a.version, 2u);
    EXPECT_NE(a.session->id, b.session->id);
    EXPECT_NE(a.session->token, b.session->token);
    EXPECT_EQ(a.session->token.size(), proto::kTokenChars);
    EXPECT_FALSE(a.resumed);
}

TEST_F(Resume, ADetachedSessionComesBackWithItsMembershipsAndNoMad) {
    holder_of_group();
    detached(50, token, ::getuid());
    ASSERT_EQ(sessions.detached(), 1u);
    const std::size_t mads = sa.log.size();

    const int fd = connect();
    const auto r = hello(fd, {2}, proto::SessionTicket{50, token});
    EXPECT_EQ(r.resumed, std::optional<bool>(true));
    EXPECT_EQ(r.memberships, (std::vector<std::uint64_t>{500}));
    ASSERT_TRUE(r.session);
    EXPECT_EQ(r.session->id, 50u);
    EXPECT_EQ(r.session->token, token);
    EXPECT_EQ(sessions.detached(), 0u);
    EXPECT_EQ(sa.log.size(), mads);

    // It is that session now: its own list is that membership, with what the policy made of it.
    send(fd, 2, proto::List{true, std::nullopt});
    const proto::Reply listed = reply(fd);
    ASSERT_TRUE(ok(listed));
    const auto own = std::get<proto::ListResult>(proto::decode_list_result(std::get<mcastd::json_check::OwnedValue>(listed.body).get()));
    ASSERT_EQ(own.ports.at(0).groups.size(), 1u);
    ASSERT_EQ(own.ports[0].groups[0].members.size(), 1u);
    EXPECT_EQ(own.ports[0].groups[0].members[0].membership, 500u);
    EXPECT_EQ(own.ports[0].groups[0].members[0].rule, "kept-rule");
    // And its membership can be left through this connection.
    send(fd, 3, proto::Leave{500, std::nullopt});
    EXPECT_TRUE(ok(reply(fd)));
}

TEST_F(Resume, AWrongTokenOrAnotherUidGetsANewSessionAndTheOldOneWaits) {
    holder_of_group();
    detached(51, token, ::getuid());
    detached(52, token, ::getuid() + 1, 501);

    std::string wrong = token;
    wrong[31] = 'd';
    for (const proto::SessionTicket &t :
         {proto::SessionTicket{51, wrong}, proto::SessionTicket{52, token}, proto::SessionTicket{99, token}}) {
        const auto r = hello(connect(), {2}, t);
        EXPECT_EQ(r.resumed, std::optional<bool>(false)) << t.id;
        EXPECT_TRUE(r.memberships.empty());
        ASSERT_TRUE(r.session);
        EXPECT_NE(r.session->id, t.id);
    }
    EXPECT_EQ(sessions.detached(), 2u);
}

TEST_F(Resume, ReleasingADetachedSessionLeavesLikeAnyClient) {
    const int first = holder_of_group();
    detached(53, token, ::getuid());
    send(first, 3, proto::Leave{1, std::nullopt}); // the first client's own membership
    EXPECT_TRUE(ok(reply(first)));
    sa.run();
    EXPECT_EQ(sa_bits("ff15::1"), join::full); // the detached session still holds it
    EXPECT_EQ(sessions.release_detached([](const frontend::ClientSession &) { return true; }), 0u);
    sa.run();
    EXPECT_FALSE(sa_bits("ff15::1"));
}

} // namespace
} // namespace mcastd::test
