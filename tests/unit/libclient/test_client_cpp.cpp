// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The C++ wrapper (<rdmamcast/client.hpp>) against the fake daemon.
#include <rdmamcast/client.hpp>

#include "client_testing.hpp"

namespace {

using namespace fake;
namespace proto = mcastd::proto;

std::vector<std::uint64_t> left(FakeDaemon &d) {
    std::vector<std::uint64_t> out;
    for (const auto &l : d.requests_of<proto::Leave>())
        out.push_back(l.membership.value_or(0));
    return out;
}

TEST(ClientCpp, ConnectFailureThrowsWithTheCause) {
    try {
        rdmamcast::Client c("/nonexistent/sock");
        FAIL() << "connected to nothing";
    } catch (const rdmamcast::Error &e) {
        EXPECT_EQ(e.code(), RDMAMCAST_E_SYSTEM);
        EXPECT_EQ(e.error_number(), ENOENT);
        EXPECT_NE(std::string(e.what()).find("/nonexistent/sock"), std::string::npos);
    }
}

TEST(ClientCpp, JoinBuildsTheRequestAndLeavesOnDestruction) {
    FakeDaemon d(joins_from(7));
    rdmamcast::Client client(d.path());
    EXPECT_EQ(client.protocol_version(), 1u);
    EXPECT_EQ(client.daemon_version(), "rdma-mcastd 0.1.0-fake");
    {
        auto m = client.join(rdmamcast::JoinParams("mlx5_0", 1)
                                 .mgid("ff15::1:2")
                                 .join_state(rdmamcast::JoinState::nonmember)
                                 .qkey(0x1234)
                                 .pkey(0xffff)
                                 .sl(2)
                                 .mtu(2048, rdmamcast::Selector::greater)
                                 .rate(3)
                                 .traffic_class(1)
                                 .flow_label(2)
                                 .hop_limit(3));
        ASSERT_TRUE(m);
        EXPECT_EQ(m.id(), 7u);
        EXPECT_EQ(m.record().mlid, 0xc001);
        EXPECT_EQ(rdmamcast::gid_to_string(m.record().mgid), "ff15::1:2");
        auto r = d.requests_of<proto::Join>().at(0).request;
        EXPECT_EQ(r.mgid, gid("ff15::1:2"));
        EXPECT_EQ(r.join_state, mcastd::join::non_member);
        EXPECT_EQ(r.params.qkey, 0x1234u);
        EXPECT_EQ(r.params.pkey, 0xffff);
        EXPECT_EQ(r.params.sl, 2);
        EXPECT_EQ(r.params.mtu, (mcastd::Selected{mcastd::Selector::greater, 4}));
        EXPECT_EQ(r.params.rate, (mcastd::Selected{mcastd::Selector::exactly, 3}));
        EXPECT_EQ(r.params.tclass, 1);
        EXPECT_EQ(r.params.flow_label, 2u);
        EXPECT_EQ(r.params.hop_limit, 3);
        EXPECT_TRUE(left(d).empty());
    }
    EXPECT_EQ(left(d), std::vector<std::uint64_t>{7});
}

TEST(ClientCpp, CreateWithScope) {
    FakeDaemon d(joins_from(7));
    rdmamcast::Client client(d.path());
    auto m = client.join(rdmamcast::JoinParams("mlx5_0", 1).create(3));
    auto r = d.requests_of<proto::Join>().at(0).request;
    EXPECT_TRUE(mcastd::is_zero(r.mgid));
    EXPECT_EQ(r.scope, 3);
}

TEST(ClientCpp, ByNameAndTheLastOfMgidCreateNameWins) {
    FakeDaemon d(joins_from(7));
    rdmamcast::Client client(d.path());
    auto m = client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1").name("job-42"));
    auto r = d.requests_of<proto::Join>().at(0).request;
    EXPECT_EQ(r.name, "job-42");
    EXPECT_TRUE(mcastd::is_zero(r.mgid));
    auto m2 = client.join(rdmamcast::JoinParams("mlx5_0", 1).name("job-42").mgid("ff15::1"));
    r = d.requests_of<proto::Join>().at(1).request;
    EXPECT_TRUE(r.name.empty());
    EXPECT_EQ(r.mgid, *mcastd::parse_gid("ff15::1"));
}

TEST(ClientCpp, BadMgidTextThrowsBeforeSending) {
    EXPECT_THROW(rdmamcast::JoinParams("mlx5_0", 1).mgid("not-a-gid"), rdmamcast::Error);
}

TEST(ClientCpp, MovedMembershipLeavesOnce) {
    FakeDaemon d(joins_from(7));
    rdmamcast::Client client(d.path());
    {
        auto a = client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1"));
        rdmamcast::Membership b = std::move(a);
        EXPECT_FALSE(a); // NOLINT(bugprone-use-after-move): moved-from is empty by contract
        EXPECT_EQ(b.id(), 7u);
        rdmamcast::Membership c;
        c = std::move(b);
        EXPECT_EQ(c.id(), 7u);
    }
    EXPECT_EQ(left(d), std::vector<std::uint64_t>{7});
}

TEST(ClientCpp, AssigningOverAMembershipLeavesTheOldOne) {
    FakeDaemon d(joins_from(7));
    rdmamcast::Client client(d.path());
    auto a = client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1"));
    a = client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::2"));
    EXPECT_EQ(left(d), std::vector<std::uint64_t>{7});
    EXPECT_EQ(a.id(), 8u);
}

TEST(ClientCpp, ReleaseKeepsTheMembership) {
    FakeDaemon d(joins_from(7));
    rdmamcast::Client client(d.path());
    {
        auto m = client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1"));
        EXPECT_EQ(m.release(), 7u);
    }
    EXPECT_TRUE(left(d).empty());
}

TEST(ClientCpp, ExplicitLeaveReportsErrors) {
    FakeDaemon d([inner = joins_from(7)](Session &s, const proto::RequestEnvelope &env) {
        if (std::holds_alternative<proto::Leave>(env.request)) {
            s.fail(env.id, mcastd::Errc::not_found, "gone");
            return true;
        }
        return inner(s, env);
    });
    rdmamcast::Client client(d.path());
    auto m = client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1"));
    try {
        m.leave();
        FAIL();
    } catch (const rdmamcast::Error &e) {
        EXPECT_EQ(e.code(), RDMAMCAST_E_NOT_FOUND);
        EXPECT_EQ(e.code_name(), "not-found");
    }
    EXPECT_FALSE(m);
}

TEST(ClientCpp, MembershipKeepsTheConnectionAfterTheClientIsGone) {
    FakeDaemon d(joins_from(7));
    std::optional<rdmamcast::Membership> m;
    {
        rdmamcast::Client client(d.path());
        m = client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1"));
    }
    EXPECT_TRUE(left(d).empty());
    m.reset();
    EXPECT_EQ(left(d), std::vector<std::uint64_t>{7});
    EXPECT_TRUE(d.wait_closed(1));
}

TEST(ClientCpp, SaErrorThrowsWithStatus) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.fail(env.id, mcastd::Errc::sa_error, "SA status 0x0200", 0x0200);
        return true;
    });
    rdmamcast::Client client(d.path());
    try {
        client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1"));
        FAIL();
    } catch (const rdmamcast::Error &e) {
        EXPECT_EQ(e.code(), RDMAMCAST_E_SA_ERROR);
        EXPECT_EQ(e.result(), -EREMOTEIO);
        EXPECT_EQ(e.sa_status(), 0x0200);
        EXPECT_EQ(e.sa_status_name(), "ERR_REQ_INVALID");
        EXPECT_EQ(e.message(), "SA status 0x0200");
    }
}

TEST(ClientCpp, PolicyErrorsThrowWithTheRuleOrTheQuota) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (std::holds_alternative<proto::Join>(env.request))
            s.fail(env.id, policy_failure(mcastd::Errc::denied, "rule hpc refuses", {"hpc", "", 0}));
        else if (std::holds_alternative<proto::Evict>(env.request))
            s.fail(env.id, policy_failure(mcastd::Errc::limit, "quota reached",
                                          {"", "groups_per_port", 8}));
        else
            return false;
        return true;
    });
    rdmamcast::Client client(d.path());
    try {
        client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1"));
        FAIL();
    } catch (const rdmamcast::Error &e) {
        EXPECT_EQ(e.code(), RDMAMCAST_E_DENIED);
        EXPECT_EQ(e.rule(), "hpc");
        EXPECT_EQ(e.quota(), "");
        EXPECT_EQ(e.limit(), 0u);
    }
    try {
        client.evict_uid(1001); // not what a daemon answers evict with: any call carries them
        FAIL();
    } catch (const rdmamcast::Error &e) {
        EXPECT_EQ(e.code(), RDMAMCAST_E_LIMIT);
        EXPECT_EQ(e.rule(), "");
        EXPECT_EQ(e.quota(), "groups_per_port");
        EXPECT_EQ(e.limit(), 8u);
    }
}

TEST(ClientCpp, EvictReturnsHowManyWereReleased) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        const auto *e = std::get_if<proto::Evict>(&env.request);
        if (!e)
            return false;
        if (e->membership && *e->membership == 8)
            s.fail(env.id, mcastd::Errc::not_found, "no membership 8");
        else
            s.reply(env.id, proto::EvictResult{e->uid ? 4u : 1u});
        return true;
    });
    rdmamcast::Client client(d.path());
    EXPECT_EQ(client.evict_uid(1001), 4u);
    EXPECT_EQ(client.evict_membership(7), 1u);
    EXPECT_THROW(client.evict_membership(8), rdmamcast::Error);
    EXPECT_THROW(client.evict_uid(UINT32_MAX), rdmamcast::Error);
    auto evicts = d.requests_of<proto::Evict>();
    ASSERT_EQ(evicts.size(), 3u);
    EXPECT_EQ(evicts[0].uid, 1001u);
    EXPECT_EQ(evicts[1].membership, 7u);
}

TEST(ClientCpp, EventsAndMembershipUpdate) {
    FakeDaemon d(joins_from(7));
    rdmamcast::Client client(d.path());
    auto m = client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1:2"));
    EXPECT_FALSE(client.next_event());

    proto::RestoredEvent r;
    r.membership = 7;
    r.record = sample_record();
    r.record.mlid = 0xc00a;
    r.changed = mcastd::field::mlid | mcastd::field::sl;
    d.broadcast(r);
    ASSERT_TRUE(readable(client.event_fd(), 10000));
    auto ev = client.next_event();
    ASSERT_TRUE(ev);
    const auto *re = std::get_if<rdmamcast::RestoredEvent>(&*ev);
    ASSERT_TRUE(re);
    EXPECT_TRUE(re->mlid_changed());
    EXPECT_EQ(re->changed_names(), (std::vector<std::string_view>{"mlid", "sl"}));
    EXPECT_TRUE(m.update(*ev));
    EXPECT_EQ(m.record().mlid, 0xc00a);

    proto::LostEvent l;
    l.membership = 7;
    l.why.error = mcastd::Error{mcastd::Errc::sa_timeout, "SA silent", std::nullopt};
    d.broadcast(l);
    ASSERT_TRUE(readable(client.event_fd(), 10000));
    ev = client.next_event();
    ASSERT_TRUE(ev);
    const auto *le = std::get_if<rdmamcast::LostEvent>(&*ev);
    ASSERT_TRUE(le);
    EXPECT_EQ(le->code, RDMAMCAST_E_SA_TIMEOUT);
    EXPECT_EQ(le->code_name, "sa-timeout");
    EXPECT_EQ(le->message, "SA silent");
    EXPECT_FALSE(le->sa_status);
    EXPECT_FALSE(m.update(*ev));
}

// The daemon closes the connection; next_event() must throw that it is gone.
void expect_disconnect_thrown(FakeDaemon &d, rdmamcast::Client &client) {
    d.close_all();
    ASSERT_TRUE(readable(client.event_fd(), 10000));
    try {
        client.next_event();
        FAIL();
    } catch (const rdmamcast::Error &e) {
        EXPECT_EQ(e.code(), RDMAMCAST_E_DISCONNECTED);
        EXPECT_EQ(e.error_number(), ECONNRESET);
    }
}

TEST(ClientCpp, DisconnectThrowsFromNextEvent) {
    FakeDaemon d;
    rdmamcast::Client client(d.path());
    expect_disconnect_thrown(d, client);
}

// A daemon restart that loses the session: the ReconnectedEvent lists the membership as lost,
// update() empties it (so it sends no leave), and the Client goes on with a new session.
TEST(ClientCpp, ReconnectedEventEmptiesLostMemberships) {
    FakeDaemon d(version2(resume_refused(), joins_from(7)));
    rdmamcast::Client client(d.path());
    client.set_reconnect(true, std::chrono::seconds(5));
    auto m = client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1:2"));
    d.close_all();
    ASSERT_TRUE(readable(client.event_fd(), 10000));
    auto ev = client.next_event();
    ASSERT_TRUE(ev);
    const auto *r = std::get_if<rdmamcast::ReconnectedEvent>(&*ev);
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->resumed);
    EXPECT_TRUE(r->kept.empty());
    EXPECT_EQ(r->lost, std::vector<std::uint64_t>{7});
    EXPECT_GE(r->gap.count(), 0);
    EXPECT_TRUE(m.update(*ev));
    EXPECT_FALSE(m);
    m = client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1:2"));
    EXPECT_EQ(m.id(), 8u);
    EXPECT_TRUE(left(d).empty());
}

// With reconnecting off, a restart is the end of the connection, as before.
TEST(ClientCpp, SetReconnectOff) {
    FakeDaemon d(version2(resume_refused()));
    rdmamcast::Client client(d.path());
    client.set_reconnect(false);
    expect_disconnect_thrown(d, client);
    EXPECT_EQ(d.requests_of<proto::Hello>().size(), 1u);
}

TEST(ClientCpp, ListAndListOwnGetEveryPage) {
    FakeDaemon d(list_pages(sample_pages()));
    rdmamcast::Client client(d.path());
    const auto all = client.list();
    ASSERT_EQ(all.size(), 2u);
    ASSERT_EQ(all[0].groups.size(), 2u);
    EXPECT_EQ(all[0].groups[0].members.size(), 3u) << "the group a page boundary cut, whole";
    EXPECT_EQ(all[1].groups.at(0).members.at(0).comm, "last-page");
    EXPECT_EQ(client.list_own()[1].groups.at(0).members.at(0).membership, 5u);
    const auto asked = d.requests_of<proto::List>();
    ASSERT_EQ(asked.size(), 6u);
    EXPECT_FALSE(asked[2].own);
    EXPECT_TRUE(asked[3].own);
    EXPECT_EQ(asked[5].after, "p2");
}

TEST(ClientCpp, ListAndStatus) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (std::holds_alternative<proto::List>(env.request)) {
            proto::ListResult l;
            proto::GroupInfo g;
            g.mgid = gid("ff15::1:2");
            g.mlid = 0xc001;
            g.counts = {1, 2, 3, 4};
            g.members.push_back({7, mcastd::join::full, "active", 4242, 1000, "my-app", "hpc",
                                 true, "rule hpc no longer admits uid 1000"});
            g.members.push_back({8, mcastd::join::full, "active", 4243, 1000, "my-app", "any",
                                 false, "", "job-42"});
            l.ports.push_back({"mlx5_0", 1, gid("fe80::1"), {g}});
            s.reply(env.id, l);
            return true;
        }
        if (std::holds_alternative<proto::Status>(env.request)) {
            proto::StatusResult st;
            st.daemon = "rdma-mcastd 9";
            st.ports.push_back({"mlx5_0", 1, "ACTIVE", 3, 1, 0, gid("fe80::1"), "InfiniBand",
                                56, 1, 2048, 0xabc, 9, true,
                                proto::RejoinStatus{"LID changed", 2, std::nullopt, 1}});
            st.ports.push_back({"mlx5_0", 2, "ACTIVE", 4, 1, 0, gid("fe80::2"), "InfiniBand",
                                56, 0, 2048, std::nullopt, std::nullopt, false,
                                proto::RejoinStatus{"SM changed", 9, 0.5, 0}});
            st.counters.joins = 5;
            st.counters.sa_responses = 7;
            st.counters.sa_late = 1;
            st.counters.sa_gets = 4;
            st.counters.sa_amplification = 1.5;
            st.ports[0].max_groups = 16;
            st.ports[0].sa = proto::SaCongestion{0.5, false, 12.5, std::nullopt};
            st.users.push_back({1000, "alice", 2, 10, 1, 0, 1, 1, 256, 0, 4, 512, 8388608, 2, 256, 199.5, 50});
            st.ports[1].memberships = {1, 0, 3, 0};
            st.ports[1].rejoins = 4;
            st.counters.restored = 2;
            st.counters.lost = 1;
            st.refused = {{"access.rules", 5}};
            s.reply(env.id, st);
            return true;
        }
        return false;
    });
    rdmamcast::Client client(d.path());
    auto ports = client.list();
    ASSERT_EQ(ports.size(), 1u);
    EXPECT_EQ(ports[0].device, "mlx5_0");
    EXPECT_EQ(rdmamcast::gid_to_string(ports[0].port_gid), "fe80::1");
    ASSERT_EQ(ports[0].groups.size(), 1u);
    const auto &g = ports[0].groups[0];
    EXPECT_EQ(g.counts, (std::array<std::uint32_t, 4>{1, 2, 3, 4}));
    ASSERT_EQ(g.members.size(), 2u);
    EXPECT_EQ(g.members[0].comm, "my-app");
    EXPECT_EQ(g.members[0].pid, 4242);
    EXPECT_EQ(g.members[0].rule, "hpc");
    EXPECT_TRUE(g.members[0].created);
    EXPECT_EQ(g.members[0].flagged, "rule hpc no longer admits uid 1000");
    EXPECT_EQ(g.members[1].rule, "any");
    EXPECT_FALSE(g.members[1].created);
    EXPECT_EQ(g.members[1].flagged, "");
    EXPECT_EQ(g.members[0].name, "");
    EXPECT_EQ(g.members[1].name, "job-42");

    auto st = client.status();
    EXPECT_EQ(st.daemon, "rdma-mcastd 9");
    ASSERT_EQ(st.ports.size(), 2u);
    EXPECT_EQ(st.ports[0].state, "ACTIVE");
    EXPECT_DOUBLE_EQ(st.ports[0].rate_gbps, 56);
    EXPECT_EQ(st.ports[0].mtu, 2048u);
    EXPECT_EQ(st.ports[0].sm_guid, 0xabcu);
    EXPECT_EQ(st.ports[0].sm_act_count, 9u);
    EXPECT_TRUE(st.ports[0].rejoining);
    ASSERT_TRUE(st.ports[0].last_rejoin);
    EXPECT_EQ(st.ports[0].last_rejoin->reason, "LID changed");
    EXPECT_FALSE(st.ports[0].last_rejoin->duration_s);
    EXPECT_FALSE(st.ports[1].sm_guid);
    EXPECT_FALSE(st.ports[1].sm_act_count);
    ASSERT_TRUE(st.ports[1].last_rejoin);
    EXPECT_EQ(st.ports[1].last_rejoin->duration_s, 0.5);
    EXPECT_EQ(st.counters.joins, 5u);
    EXPECT_EQ(st.ports[0].max_groups, 16u);
    EXPECT_EQ(st.ports[1].max_groups, 0u);
    ASSERT_EQ(st.users.size(), 1u);
    EXPECT_EQ(st.users[0].uid, 1000u);
    EXPECT_EQ(st.users[0].user, "alice");
    EXPECT_EQ(st.users[0].memberships, 2u);
    EXPECT_EQ(st.users[0].clients, 1u);
    EXPECT_EQ(st.users[0].clients_quota, 256u);
    EXPECT_EQ(st.users[0].monitors_quota, 4u);
    EXPECT_EQ(st.users[0].queued_bytes, 512u);
    EXPECT_EQ(st.users[0].queued_bytes_quota, 8388608u);
    EXPECT_EQ(st.users[0].groups_per_port, 2u);
    EXPECT_EQ(st.users[0].groups_per_port_quota, 256u);
    EXPECT_DOUBLE_EQ(st.users[0].sa_tokens, 199.5);
    EXPECT_EQ(st.users[0].sa_mads_per_second, 50u);
    EXPECT_EQ(st.ports[1].memberships, (std::array<std::uint64_t, 4>{1, 0, 3, 0}));
    EXPECT_EQ(st.ports[1].rejoins, 4u);
    EXPECT_EQ(st.counters.restored, 2u);
    EXPECT_EQ(st.counters.lost, 1u);
    ASSERT_EQ(st.refused.size(), 1u);
    EXPECT_EQ(st.refused[0].reason, "access.rules");
    EXPECT_EQ(st.refused[0].count, 5u);
    EXPECT_EQ(st.users[0].memberships_quota, 10u);
    EXPECT_EQ(st.users[0].creates, 1u);
    EXPECT_EQ(st.users[0].creates_quota, 0u);
    EXPECT_EQ(st.users[0].flagged, 1u);
    EXPECT_EQ(st.counters.sa_responses, 7u);
    EXPECT_EQ(st.counters.sa_late, 1u);
    EXPECT_EQ(st.counters.sa_gets, 4u);
    EXPECT_EQ(st.counters.sa_amplification, 1.5);
    ASSERT_TRUE(st.ports[0].sa);
    EXPECT_EQ(st.ports[0].sa->window, 0.5);
    EXPECT_FALSE(st.ports[0].sa->slow_start);
    EXPECT_EQ(st.ports[0].sa->srtt_ms, 12.5);
    EXPECT_FALSE(st.ports[0].sa->timeout_ms);
    EXPECT_FALSE(st.ports[1].sa);
}

} // namespace
