// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastd on the Ethernet bed (doc/ethernet-bed.md §9), end to end: the real daemon in a
// host's namespace serving that host's fake RoCE device, its clients rdma-mcastctl processes run
// as users the test made. The judges are the switch's (the bridge's mdb), the host kernel's
// (/proc/net/igmp, its Users column) and the traffic each host receives, never the daemon's own
// report.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <memory>

#include "ethernet/bed_daemon.hpp"

namespace mcastd::eth {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;
using sim::TestGroup;
using sim::TestUser;
using sim::TestUsers;

// The mdb learns a group 0.02-0.08 s after the report and forgets it 2.0-2.1 s after the leave
// (two last-member queries 1 s apart, §4); the margin is for two busy cores.
constexpr auto kMdbTimeout = 20s;
// A client's death reaches the daemon as its connection's hang-up, in the same turn of its
// event loop, and the membership goes with one setsockopt or close: milliseconds. A second is
// the issue's bound, generous so that a loaded machine's scheduling cannot fail it.
constexpr auto kDropBound = 1s;
constexpr auto kTrafficTimeout = 5s;
constexpr std::size_t kFrames = 20;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool mdb_becomes(EthernetBed &bed, const IpGroup &group, const std::set<int> &hosts) {
    return sim::poll_until(kMdbTimeout, [&] { return bed.mdb_hosts(group) == hosts; });
}

// Kills a client with SIGKILL and reaps it.
void kill9(Process &p) {
    p.signal(SIGKILL);
    ASSERT_EQ(p.wait(10s), 128 + SIGKILL);
}


// Every test: a bed, a user of the socket's group (the daemon's clients are not root), and the
// daemon(s) it starts. Members are declared so that the users outlive what runs as them.
class RoceDaemon : public ::testing::Test {
protected:
    void SetUp() override {
        if (auto why = EthernetBed::unavailable())
            GTEST_SKIP() << *why;
        if (auto why = TestUsers::unavailable())
            GTEST_SKIP() << *why;
        users_ = std::make_unique<TestUsers>();
        group_ = users_->add_group("roce");
        alice_ = users_->add_user("alice", group_);
        bob_ = users_->add_user("bob", group_);
        carol_ = users_->add_user("carol", group_);
    }

    EthernetBed &bed(EthernetBed::Options opts) { return *(bed_ = std::make_unique<EthernetBed>(std::move(opts))); }
    BedDaemon &daemon(int host, std::string config = "{}") {
        return *daemons_.emplace_back(std::make_unique<BedDaemon>(
            *bed_, host, BedDaemon::Options{.config_json = std::move(config), .socket_group = group_.name}));
    }

    // Teardown order: daemons, then the bed (its clients and namespaces), then the users.
    void TearDown() override {
        daemons_.clear();
        bed_.reset();
    }

    std::unique_ptr<TestUsers> users_;
    TestGroup group_;
    TestUser alice_, bob_, carol_;
    std::unique_ptr<EthernetBed> bed_;
    std::vector<std::unique_ptr<BedDaemon>> daemons_;
};

// Three clients of one group on one host cost one kernel membership (Users 1: the daemon's one
// socket, not three); the switch lists the host's port. The first two dying changes nothing;
// the last one's kill -9 drops the membership within a second, and the mdb follows once the
// bridge's last-member queries go unanswered.
TEST_F(RoceDaemon, ThreeClientsShareOneKernelMembershipAndTheLastKillDropsIt) {
    EthernetBed &b = bed({.hosts = 2});
    BedDaemon &d = daemon(1);
    const IpGroup g = IpGroup::of("239.1.2.3");
    // A RoCE-only host: libibumad finds no InfiniBand device, and that is no discovery problem.
    EXPECT_EQ(d.process().stderr_text().find("port discovery"), std::string::npos)
        << d.process().stderr_text();

    Process &a = d.hold(1, &alice_, d.on_port({"--ip", g.text()}));
    Process &bo = d.hold(1, &bob_, d.on_port({"--ip", g.text()}));
    Process &c = d.hold(1, &carol_, d.on_port({"--ip", g.text()}));
    EXPECT_EQ(b.users(1, g), 1) << "three clients, one membership";
    EXPECT_FALSE(b.users(2, g)) << "host 2 has no member";
    EXPECT_TRUE(mdb_becomes(b, g, {1})) << b.mdb_text();

    // The daemon's own view, for a sync point only: the uids of the members `list` shows.
    auto member_uids = [&] {
        std::set<uid_t> uids;
        const RunResult r = d.ctl(1, nullptr, "list", {});
        if (r.exit_code != 0) {
            ADD_FAILURE() << "rdma-mcastctl list: " << r.exit_code << " " << r.out << r.err;
            return uids;
        }
        const json list = json::parse(r.out); // named: a temporary would die before the loop
        for (const auto &port : list.at("ports"))
            for (const auto &grp : port.at("groups"))
                for (const auto &m : grp.at("members"))
                    uids.insert(m.at("uid").get<uid_t>());
        return uids;
    };
    EXPECT_EQ(member_uids(), (std::set<uid_t>{alice_.uid, bob_.uid, carol_.uid}));
    const RunResult listed = d.ctl(1, nullptr, "list", {});
    EXPECT_EQ(json::parse(listed.out).at("ports").at(0).at("link_layer"), "Ethernet") << listed.out;

    kill9(a);
    kill9(bo);
    // The daemon has taken both deaths in once its list shows one member left.
    ASSERT_TRUE(sim::poll_until(10s, [&] { return member_uids() == std::set<uid_t>{carol_.uid}; }));
    EXPECT_EQ(b.users(1, g), 1) << "the last member still holds it";
    EXPECT_EQ(b.mdb_hosts(g), std::set<int>{1});

    const auto killed = Clock::now();
    kill9(c);
    const auto dropped = b.time_until_gone(1, g, killed, kDropBound * 5);
    ASSERT_TRUE(dropped) << "still in host 1's IGMP table 5 s after the last client's kill -9";
    std::printf("[ figure ] kill -9 of the last client to the kernel membership gone: %.1f ms\n",
                seconds(*dropped) * 1e3);
    EXPECT_LT(*dropped, kDropBound);
    const auto mdb_from = Clock::now();
    EXPECT_TRUE(mdb_becomes(b, g, {})) << b.mdb_text();
    std::printf("[ figure ] ... and the bridge's mdb without host 1: %.2f s later\n", seconds(Clock::now() - mdb_from));
}

// The record a RoCE client gets from the daemon on the bed: the host's RoCE v2 GID and its index
// on veth1, the group's IP and MAC, MLID 0, hop limit 64 (IPv4 on RoCE v2), the IB MTU of a
// 1500-byte veth (1024). The membership ends with the one-shot client.
TEST_F(RoceDaemon, TheRecordIsRoCEs) {
    EthernetBed &b = bed({.hosts = 1});
    BedDaemon &d = daemon(1);
    const RunResult r = d.ctl(1, &alice_, "join", d.on_port({"--ip", "239.1.2.3"}));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const json rec = json::parse(r.out);
    EXPECT_EQ(rec.at("link_layer"), "Ethernet");
    EXPECT_EQ(rec.at("mgid"), "::ffff:239.1.2.3");
    EXPECT_EQ(rec.at("ip"), "239.1.2.3");
    EXPECT_EQ(rec.at("dmac"), "01:00:5e:01:02:03");
    EXPECT_EQ(rec.at("gid_type"), "roce_v2");
    EXPECT_EQ(rec.at("sgid_index"), 1);
    EXPECT_EQ(rec.at("port_gid"), "::ffff:10.77.0.1");
    EXPECT_EQ(rec.at("netdev"), b.ifname(1));
    EXPECT_EQ(rec.at("mlid"), 0);
    EXPECT_EQ(rec.at("hop_limit"), 64);
    EXPECT_EQ(rec.at("mtu"), 1024);
    EXPECT_TRUE(sim::poll_until(5s, [&] { return !b.users(1, IpGroup::of("239.1.2.3")); }))
        << "the client's exit left the group";
}

// An IPv6 group on RoCE v1 (rdma_cm refuses one only on RoCE v2): the daemon holds its MLD
// membership, which the host's MLD table and the switch's mdb show, and traffic to the group
// reaches the member host alone.
TEST_F(RoceDaemon, AnIPv6GroupOnRoceV1IsAnMldMembership) {
    EthernetBed &b = bed({.hosts = 3, .ipv6 = true});
    FrameCounter at1 = b.counter(1), at2 = b.counter(2);
    DatagramSender from3 = b.sender(3);
    BedDaemon &d = daemon(1);
    const IpGroup g = IpGroup::of("ff0e::1:2");
    d.hold(1, &alice_, d.on_port({"--ip", g.text(), "--gid-type", "roce_v1"}));
    EXPECT_EQ(b.users(1, g), 1);
    ASSERT_TRUE(mdb_becomes(b, g, {1})) << b.mdb_text();
    b.wait_until_snooping();
    from3.send(g);
    EXPECT_TRUE(at1.wait_for(g, 1, kTrafficTimeout)) << at1.summary();
    ASSERT_TRUE(b.sync_path(from3, 2, at2));
    EXPECT_EQ(at2.count(g), 0u) << at2.summary();
}

// Two hosts with members (each its own daemon) and one without: the group's datagrams from a
// fourth host reach exactly the two.
TEST_F(RoceDaemon, TrafficReachesExactlyTheMemberHosts) {
    EthernetBed &b = bed({.hosts = 4});
    FrameCounter at1 = b.counter(1), at2 = b.counter(2), at3 = b.counter(3);
    DatagramSender from4 = b.sender(4);
    BedDaemon &d1 = daemon(1);
    BedDaemon &d2 = daemon(2);
    daemon(3); // a daemon, but no member
    const IpGroup g = IpGroup::of("239.1.2.3");
    d1.hold(1, &alice_, d1.on_port({"--ip", g.text()}));
    d2.hold(2, &bob_, d2.on_port({"--ip", g.text()}));
    ASSERT_TRUE(mdb_becomes(b, g, {1, 2})) << b.mdb_text();
    b.wait_until_snooping();

    for (std::size_t i = 0; i < kFrames; ++i)
        from4.send(g);
    EXPECT_TRUE(at1.wait_for(g, kFrames, kTrafficTimeout)) << at1.summary();
    EXPECT_TRUE(at2.wait_for(g, kFrames, kTrafficTimeout)) << at2.summary();
    ASSERT_TRUE(b.sync_path(from4, 3, at3));
    EXPECT_EQ(at3.count(g), 0u) << at3.summary();
    EXPECT_FALSE(b.users(3, g));
}

// A client in a container on host 1: its own network namespace with its own veth into the
// switch (bed host 3, its veth named veth1 as host 1's: the daemon finds the GID's netdev by
// name in the client's namespace), reaching host 1's daemon by the socket's path. The socket it
// hands over makes the membership in the container's namespace: the container's table and
// port, not host 1's. A client on host 1 itself holds a second one, in host 1's namespace.
TEST_F(RoceDaemon, AClientInAContainerIsServedInItsOwnNamespace) {
    EthernetBed &b = bed({.hosts = 3, .ifnames = {{3, "veth1"}}});
    FrameCounter at3 = b.counter(3);
    DatagramSender from2 = b.sender(2);
    BedDaemon &d = daemon(1);
    const IpGroup g = IpGroup::of("239.1.2.3");

    Process &in_container = d.hold(3, &alice_, d.on_port({"--ip", g.text()}));
    EXPECT_EQ(b.users(3, g), 1) << "the container's namespace holds it";
    EXPECT_FALSE(b.users(1, g)) << "not host 1's";
    EXPECT_TRUE(mdb_becomes(b, g, {3})) << b.mdb_text();
    b.wait_until_snooping();
    from2.send(g);
    EXPECT_TRUE(at3.wait_for(g, 1, kTrafficTimeout)) << at3.summary();

    d.hold(1, &bob_, d.on_port({"--ip", g.text()}));
    EXPECT_EQ(b.users(1, g), 1);
    EXPECT_EQ(b.users(3, g), 1) << "one membership per namespace";
    EXPECT_TRUE(mdb_becomes(b, g, {1, 3})) << b.mdb_text();

    kill9(in_container);
    ASSERT_TRUE(b.time_until_gone(3, g, Clock::now(), kDropBound * 5)) << "the container's membership stayed";
    EXPECT_EQ(b.users(1, g), 1) << "host 1's stays";
    EXPECT_TRUE(mdb_becomes(b, g, {1})) << b.mdb_text();
}

// A container whose interface is named otherwise than the GID's netdev (its own veth called
// eth0, as a container's usually is): the daemon cannot guess it, so a join without --ifname
// fails naming the lookup and the way out; with --ifname eth0 the membership is the
// container's, on its eth0, and the switch learns its port.
TEST_F(RoceDaemon, AContainerNamesAnInterfaceOfItsOwn) {
    EthernetBed &b = bed({.hosts = 2, .ifnames = {{2, "eth0"}}});
    BedDaemon &d = daemon(1);
    const IpGroup g = IpGroup::of("239.1.2.3");
    const RunResult refused = d.ctl(2, &alice_, "join", d.on_port({"--ip", g.text()}));
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.err.find("SIOCGIFINDEX veth1 in the client's network namespace: ENODEV (No such device); a "
                               "client whose network namespace names the interface otherwise gives its name as "
                               "ifname"),
              std::string::npos)
        << refused.err;
    EXPECT_FALSE(b.users(2, g));

    Process &held = d.hold(2, &alice_, d.on_port({"--ip", g.text(), "--ifname", "eth0"}));
    EXPECT_EQ(b.users(2, g), 1) << "the container's eth0 holds it";
    EXPECT_FALSE(b.users(1, g)) << "not host 1's";
    EXPECT_TRUE(mdb_becomes(b, g, {2})) << b.mdb_text();
    kill9(held);
    ASSERT_TRUE(b.time_until_gone(2, g, Clock::now(), kDropBound * 5)) << "the container's membership stayed";
}

// Send-only joins (SendOnlyNonMember, SendOnlyFullMember) are served (a record) and make no
// kernel membership, so no report: the switch never learns them. A full member's group joined
// after them is the marker: once the mdb has learned it, a report sent before it would have
// been learned too.
TEST_F(RoceDaemon, SendOnlyJoinsSendNoReportAndHoldNoMembership) {
    EthernetBed &b = bed({.hosts = 2});
    BedDaemon &d = daemon(1);
    const IpGroup so_full = IpGroup::of("239.1.2.4"), so_non = IpGroup::of("239.1.2.5"),
                  marker = IpGroup::of("239.1.2.6");
    Process &s1 = d.hold(1, &alice_, d.on_port({"--ip", so_full.text(), "--join-state", "sendonly-full"}));
    Process &s2 = d.hold(1, &bob_, d.on_port({"--ip", so_non.text(), "--join-state", "sendonly-nonmember"}));
    EXPECT_FALSE(b.users(1, so_full));
    EXPECT_FALSE(b.users(1, so_non));
    d.hold(1, &carol_, d.on_port({"--ip", marker.text()}));
    EXPECT_EQ(b.users(1, marker), 1);
    ASSERT_TRUE(mdb_becomes(b, marker, {1})) << b.mdb_text();
    EXPECT_EQ(b.mdb_hosts(so_full), std::set<int>{}) << b.mdb_text();
    EXPECT_EQ(b.mdb_hosts(so_non), std::set<int>{}) << b.mdb_text();
    EXPECT_TRUE(s1.running());
    EXPECT_TRUE(s2.running());
}

// 1,000 groups on one port through one connection: the kernel takes at most
// igmp_max_memberships (20) groups per socket, so the daemon packs them onto sockets; every one
// is in the host's table (Users 1) and the switch's mdb, and every one is gone after the leave.
TEST_F(RoceDaemon, AThousandGroupsThroughOneConnection) {
    EthernetBed &b = bed({.hosts = 2});
    // One uid's memberships may span 256 groups per port by default (access.quotas).
    BedDaemon &d = daemon(1, R"({"access": {"quotas": {"groups_per_port_per_uid": 1000}}})");
    std::vector<IpGroup> groups;
    std::vector<std::string> args = d.on_port({});
    for (int i = 0; i < 1000; ++i) {
        groups.push_back(IpGroup::of("239.2." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1)));
        args.insert(args.end(), {"--ip", groups.back().text()});
    }
    const auto t0 = Clock::now();
    Process &holder = d.hold(1, &alice_, args, groups.size(), 60s);
    std::printf("[ figure ] 1,000 groups joined through one connection (rdma-mcastctl): %.3f s\n",
                seconds(Clock::now() - t0));
    const GroupUsers table = b.igmp(1);
    std::size_t held = 0;
    for (const auto &g : groups) {
        auto it = table.find(g);
        held += it != table.end() && it->second == 1;
    }
    EXPECT_EQ(held, groups.size()) << "groups with Users 1 in host 1's IGMP table";
    auto in_mdb = [&] {
        std::size_t n = 0;
        for (const auto &e : b.mdb())
            n += e.port == b.port(1) && std::find(groups.begin(), groups.end(), e.group) != groups.end();
        return n;
    };
    EXPECT_TRUE(sim::poll_until(kMdbTimeout, [&] { return in_mdb() == groups.size(); })) << in_mdb() << " in the mdb";

    holder.signal(SIGTERM); // --hold leaves its memberships and exits
    EXPECT_EQ(holder.wait(30s), 0) << holder.stderr_text();
    EXPECT_TRUE(sim::poll_until(5s, [&] {
        const GroupUsers t = b.igmp(1);
        return std::none_of(groups.begin(), groups.end(), [&](const IpGroup &g) { return t.count(g) > 0; });
    })) << "left in host 1's IGMP table";
    EXPECT_TRUE(sim::poll_until(kMdbTimeout, [&] { return in_mdb() == 0; })) << in_mdb() << " left in the mdb";
}

// The access policy holds on a RoCE port as on InfiniBand: a join no rule admits (here: of a
// user the one rule does not name) is refused with `denied`, and nothing reaches the kernel; the
// admitted user's join of the same group is the control.
TEST_F(RoceDaemon, APolicyRefusalOnARoCEPortReachesNoKernel) {
    EthernetBed &b = bed({.hosts = 2});
    const json config = {{"access", {{"rules", json::array({{{"name", "roce-lab"}, {"users", {bob_.name}}}})}}}};
    BedDaemon &d = daemon(1, config.dump());
    const IpGroup g = IpGroup::of("239.1.2.3");

    const RunResult r = d.ctl(1, &alice_, "join", d.on_port({"--ip", g.text()}));
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("denied"), std::string::npos) << r.out << r.err;
    EXPECT_FALSE(b.users(1, g)) << "refused before the kernel";

    Process &admitted = d.hold(1, &bob_, d.on_port({"--ip", g.text()}));
    EXPECT_EQ(b.users(1, g), 1);
    ASSERT_TRUE(mdb_becomes(b, g, {1})) << b.mdb_text();
    kill9(admitted);
    ASSERT_TRUE(b.time_until_gone(1, g, Clock::now(), kDropBound * 5)) << "the refused join left a membership";
}

// One daemon, both link layers at once: in bed host 1's namespace, attached to the simulated
// InfiniBand node H2 (umad2sim) and pointed at host 1's fake RoCE device. ibsim's sockets are
// abstract, which a network namespace does hide, so the fabric runs in host 1's namespace too
// (Fabric::Options::netns). A join on each: the SA's view for the
// InfiniBand one, the host's table and the switch's mdb for the RoCE one.
TEST_F(RoceDaemon, AnInfiniBandPortAndARoCEPortServedByOneDaemon) {
    EthernetBed &b = bed({.hosts = 2});
    sim::Fabric fabric({.netns = b.host_ns(1)});
    struct StopDaemonsFirst { // before the fabric they are attached to, also when a check fails
        std::vector<std::unique_ptr<BedDaemon>> &d;
        ~StopDaemonsFirst() { d.clear(); }
    } stop_first{daemons_};
    BedDaemon &d = *daemons_.emplace_back(std::make_unique<BedDaemon>(
        b, 1, BedDaemon::Options{.socket_group = group_.name, .fabric = &fabric, .node = "H2"}));
    const IpGroup g = IpGroup::of("239.1.2.3");
    const Gid ib_mgid = *parse_gid("ff15:3::7");

    d.hold(1, &alice_, {"--device", "ibsim0", "--port", "1", "--mgid", format_gid(ib_mgid)});
    EXPECT_EQ(fabric.sa_join_state(ib_mgid, fabric.port_gid("H2")), 0x1) << "the SA holds H2 as a full member";
    d.hold(1, &bob_, d.on_port({"--ip", g.text()}));
    EXPECT_EQ(b.users(1, g), 1);
    EXPECT_TRUE(mdb_becomes(b, g, {1})) << b.mdb_text();
    EXPECT_FALSE(fabric.sa_join_state(*parse_gid("::ffff:239.1.2.3"), fabric.port_gid("H2")))
        << "nothing of the RoCE group at the SA";

    const RunResult status = d.ctl(1, nullptr, "status", {});
    ASSERT_EQ(status.exit_code, 0) << status.err;
    const json ports = json::parse(status.out).at("ports");
    ASSERT_EQ(ports.size(), 2u) << status.out;
    EXPECT_EQ(ports[0].at("link_layer"), "IB");
    EXPECT_EQ(ports[1].at("link_layer"), "Ethernet");
}

} // namespace
} // namespace mcastd::eth
