// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Ethernet (RoCE) ports in the daemon: HostPorts registers them from discovery with their link
// layer and GID table, usable while ACTIVE, and starts none of the InfiniBand machinery for them
// (no umad port, no PortInfo or SMInfo polls, no SA window); a join on one is made by the
// Ethernet membership backend, with no SA MAD; a re-read of the GID table reaches the registry
// and says what changed. The backend here is the fake one (fakes/fake_ethernet_backend.hpp); the
// real one is tested in tests/unit/roce.
#include <gtest/gtest.h>

#include <memory>
#include <system_error>
#include <vector>

#include "fakes/fake_ethernet_backend.hpp"
#include "fakes/fake_port.hpp"
#include "fakes/fake_sa.hpp"
#include "fakes/fake_timers.hpp"
#include "host/host_ports.hpp"
#include "service/service.hpp"
#include "service/views.hpp"

namespace mcastd::test {
namespace {

using port::GidEntry;
using mcastd::GidType;

Gid gid(const char *text) { return *parse_gid(text); }

const GidEntry kLinkLocal{0, gid("fe80::4dff:fe00:1"), GidType::roce_v1, "veth1"};
const GidEntry kIpv4{1, gid("::ffff:10.77.0.1"), GidType::roce_v2, "veth1"};

port::PortAttributes roce_port(const char *device = "rxe1", std::uint8_t num = 1, bool active = true) {
    port::PortAttributes a;
    a.device = device;
    a.port_num = num;
    a.link_layer = "Ethernet";
    a.state = static_cast<std::uint8_t>(active ? port::PortState::active : port::PortState::down);
    a.gid_prefix = 0xfe80000000000000ULL;
    a.port_guid = 0x00004dfffe000001ULL;
    a.gids = {kLinkLocal, kIpv4};
    return a;
}

JoinRequest join_on(const char *device, const char *mgid) {
    JoinRequest r = join_request(mgid);
    r.device = device;
    return r;
}

// ---- the Service ----

class EthernetService : public EthernetBackendFirst, public ::testing::Test {
protected:
    EthernetService() : service(EngineConfig{}, sa, timers) {
        service.set_membership_backend(LinkLayer::ethernet, eth);
        ib = service.add_port(test_port(), true);
        sa.port_gids[ib] = test_port().port_gid();
        roce = service.add_port(roce_port(), true);
        client = service.add_client(ClientInfo{100, 1000, 1000, "app"}, nullptr);
    }

    FakeTimers timers;
    FakeSa sa;
    Service service;
    PortIndex ib = 0, roce = 0;
    ClientId client = 0;
};

TEST_F(EthernetService, TheRegistryHasTheLinkLayerAndTheGidTable) {
    EXPECT_EQ(service.ports().link_layer(ib), LinkLayer::infiniband);
    EXPECT_EQ(service.ports().link_layer(roce), LinkLayer::ethernet);
    EXPECT_EQ(service.ports().at(roce).attributes.gids, (std::vector<GidEntry>{kLinkLocal, kIpv4}));
    const std::vector<PortView> views = service.port_views();
    ASSERT_EQ(views.size(), 2u);
}

// `list` says each port's link layer, as `status` does: a client reads an Ethernet port's
// groups as IP groups by it.
TEST_F(EthernetService, ListSaysEachPortsLinkLayer) {
    const proto::ListResult all = list_view(service);
    ASSERT_EQ(all.ports.size(), 2u);
    EXPECT_EQ(all.ports[0].link_layer, LinkLayer::infiniband);
    EXPECT_EQ(all.ports[1].device, "rxe1");
    EXPECT_EQ(all.ports[1].link_layer, LinkLayer::ethernet);
}

TEST_F(EthernetService, AJoinOnAnEthernetPortIsMadeByItsBackendAndSendsNoSaMad) {
    std::optional<JoinResult> got;
    service.join(client, join_on("rxe1", "ff12::1"), [&](const JoinResult &r) { got = r; });
    ASSERT_TRUE(got) << "the fake backend answers inside the call";
    ASSERT_FALSE(got->error) << got->error->message;
    ASSERT_EQ(eth.made.size(), 1u);
    EXPECT_EQ(eth.made[0].port, roce);
    EXPECT_EQ(eth.made[0].mgid, gid("ff12::1"));
    EXPECT_EQ(got->record.mlid, 0u) << "the backend's record: no MLID on RoCE";
    EXPECT_EQ(eth.at(roce, gid("ff12::1")).holders, 1u) << "the member was added to the backend";
    sa.run();
    EXPECT_TRUE(sa.log.empty()) << "no SA MAD for an Ethernet port";
    EXPECT_EQ(service.group_count(roce), 1u);
    EXPECT_EQ(service.memberships_of(client).size(), 1u);

    // The InfiniBand port beside it joins as ever.
    std::optional<JoinResult> on_ib;
    service.join(client, join_request("ff12::1"), [&](const JoinResult &r) { on_ib = r; });
    for (int i = 0; i < 100 && !on_ib; ++i)
        sa.run();
    ASSERT_TRUE(on_ib);
    EXPECT_FALSE(on_ib->error) << on_ib->error->message;
}

// list says where a RoCE group is sent from, and status each port's link layer.
TEST_F(EthernetService, ListAndStatusSayWhatARoceGroupAndPortAre) {
    eth.source = RoceSource{GidType::roce_v2, 1, "veth1"};
    std::optional<JoinResult> got;
    service.join(client, join_on("rxe1", "::ffff:239.1.2.3"), [&](const JoinResult &r) { got = r; });
    ASSERT_TRUE(got && !got->error);
    const proto::ListResult l = list_view(service);
    ASSERT_EQ(l.ports.size(), 2u);
    EXPECT_EQ(l.ports[1].link_layer, LinkLayer::ethernet);
    ASSERT_EQ(l.ports[1].groups.size(), 1u);
    EXPECT_EQ(l.ports[1].groups[0].roce, eth.source);
    const proto::StatusResult st = status_view(service, {});
    ASSERT_EQ(st.ports.size(), 2u);
    EXPECT_EQ(st.ports[0].link_layer, "InfiniBand");
    EXPECT_EQ(st.ports[1].link_layer, "Ethernet");
}

TEST_F(EthernetService, AGidTableReadIsKeptAndWhatChangedIsSaid) {
    // The IPv4 address removed from the netdev.
    const port::GidTableChange gone = service.gid_table(roce, {kLinkLocal});
    EXPECT_EQ(gone.removed, std::vector<GidEntry>{kIpv4});
    EXPECT_EQ(service.ports().at(roce).attributes.gids, std::vector<GidEntry>{kLinkLocal});
    // Back, at index 2.
    GidEntry again = kIpv4;
    again.index = 2;
    const port::GidTableChange back = service.gid_table(roce, {kLinkLocal, again});
    EXPECT_EQ(back.added, std::vector<GidEntry>{again});
    EXPECT_TRUE(service.gid_table(roce, {kLinkLocal, again}).empty());
}

// A change of an Ethernet port's GID table asks the backend about each of the port's groups;
// a table that did not change, or an InfiniBand port's, asks nothing.
TEST_F(EthernetService, AGidTableChangeHasTheBackendJudgeEveryGroupOfThePort) {
    service.join(client, join_on("rxe1", "ff12::1"), [](const JoinResult &) {});
    const FakeEthernetBackend::Key group{roce, gid("ff12::1")};
    ASSERT_TRUE(eth.checked.empty());
    eth.sources[group] = SourceCheck{SourceCheck::State::gone, "the source is gone"};
    ASSERT_FALSE(service.gid_table(roce, {kLinkLocal}).empty());
    EXPECT_EQ(eth.checked, std::vector<FakeEthernetBackend::Key>{group});
    EXPECT_EQ(eth.suspended, std::vector<FakeEthernetBackend::Key>{group}) << "its members' memberships let go";
    EXPECT_TRUE(service.gid_table(roce, {kLinkLocal}).empty());
    EXPECT_EQ(eth.checked.size(), 1u) << "nothing changed: nothing asked";
}

// ---- HostPorts ----

// Discovery as a fixed list, GID tables from a map the test edits.
struct ScriptedSource final : port::PortSource {
    port::Discovery found;
    std::vector<GidEntry> table;
    std::string name() const override { return "scripted"; }
    port::Discovery discover() const override { return found; }
    std::variant<port::PortAttributes, Error> read_port(std::string_view device, unsigned) const override {
        for (const port::PortAttributes &p : found.ports)
            if (p.device == device)
                return p;
        return Error{Errc::no_such_device, "no RDMA device '" + std::string(device) + "'", {}};
    }
    std::variant<port::GidTable, Error> read_gid_table(std::string_view device, unsigned) const override {
        if (device != "rxe1")
            return Error{Errc::no_such_device, "no RDMA device '" + std::string(device) + "'", {}};
        return port::GidTable{table, {"gids/9: 'x' is not a GID"}};
    }
};

class EthernetHostPorts : public ::testing::Test {
protected:
    void SetUp() override {
        auto src = std::make_unique<ScriptedSource>();
        source = src.get();
        source->found.ports = {roce_port("rxe1", 1), roce_port("rxe2", 1, false)};
        source->table = {kLinkLocal, kIpv4};
        try {
            host = std::make_unique<HostPorts>(loop, HostPortsConfig{}, std::move(src));
        } catch (const std::system_error &e) { // umad_init: no ib_umad on this machine
            GTEST_SKIP() << e.what();
        }
        service = std::make_unique<Service>(EngineConfig{}, host->sa(), loop.timers());
        service->set_membership_backend(LinkLayer::ethernet, eth);
        // veth1 is in the daemon's namespace (index and MTU left unread, as the entries above).
        host->set_netdev_lookup([this](const std::string &netdev) {
            ++lookups;
            return port::NetdevState{netdev == "veth1" && veth1_here, 0, 0};
        });
        host->open(*service);
    }
    void TearDown() override {
        if (host)
            host->quiesce();
        service.reset();
        host.reset();
    }

    runtime::EventLoop loop{runtime::EventLoop::Kind::fresh};
    FakeEthernetBackend eth; // declared before the service: it outlives it
    ScriptedSource *source = nullptr;
    bool veth1_here = true;
    unsigned lookups = 0;
    std::unique_ptr<HostPorts> host;
    std::unique_ptr<Service> service;
};

TEST_F(EthernetHostPorts, EthernetPortsAreRegisteredUsableWhileActiveAndNotPolled) {
    const port::PortRegistry &ports = service->ports();
    ASSERT_EQ(ports.size(), 2u);
    EXPECT_EQ(ports.link_layer(0), LinkLayer::ethernet);
    EXPECT_EQ(ports.name(0), "rxe1/1");
    EXPECT_TRUE(ports.usable(0)) << "ACTIVE: no SM needed";
    EXPECT_FALSE(ports.usable(1)) << "DOWN";
    EXPECT_EQ(ports.at(0).attributes.gids, (std::vector<GidEntry>{kLinkLocal, kIpv4}));
    for (PortIndex p : {PortIndex{0}, PortIndex{1}}) {
        EXPECT_FALSE(host->polled(p)) << "no PortInfo or SMInfo polls, no audit clock";
        EXPECT_EQ(host->transactions().congestion(p), nullptr) << "no SA window";
        // What the Service tells its listeners about a port does nothing on an Ethernet one.
        service->port_invalidated(p, port::Trigger::port_up, "test");
        EXPECT_EQ(host->transactions().congestion(p), nullptr) << "memberships gone: no SA window restarted";
        service->sa_moved(p, 1, 0);
        EXPECT_EQ(host->transactions().congestion(p), nullptr) << "SA route: none";
    }
    EXPECT_EQ(host->transactions().total_stats().sent, 0u) << "no MAD for an Ethernet port";
}

TEST_F(EthernetHostPorts, AGidTableReReadReachesTheRegistryAndSaysWhatChanged) {
    source->table = {kLinkLocal};
    const auto gone = host->reread_gid_table(0);
    ASSERT_TRUE(std::holds_alternative<port::GidTableChange>(gone)) << std::get<Error>(gone).message;
    EXPECT_EQ(std::get<port::GidTableChange>(gone).removed, std::vector<GidEntry>{kIpv4});
    EXPECT_EQ(service->ports().at(0).attributes.gids, std::vector<GidEntry>{kLinkLocal});

    const auto unchanged = host->reread_gid_table(0);
    ASSERT_TRUE(std::holds_alternative<port::GidTableChange>(unchanged));
    EXPECT_TRUE(std::get<port::GidTableChange>(unchanged).empty());

    const auto unread = host->reread_gid_table(1);
    ASSERT_TRUE(std::holds_alternative<Error>(unread));
    EXPECT_EQ(std::get<Error>(unread).code, Errc::no_such_device);
    EXPECT_EQ(service->ports().at(1).attributes.gids, (std::vector<GidEntry>{kLinkLocal, kIpv4}))
        << "a failed read changes nothing";
    EXPECT_EQ(std::get<Error>(host->reread_gid_table(7)).code, Errc::no_such_port);
}

TEST(EthernetHostPortsConfig, OnlyTheConfiguredPortsAreServedAndNoneIsAnError) {
    runtime::EventLoop loop{runtime::EventLoop::Kind::fresh};
    FakeEthernetBackend eth; // outlives every Service below
    auto make = [&](std::vector<std::string> names) {
        auto src = std::make_unique<ScriptedSource>();
        src->found.ports = {roce_port("rxe1", 1), roce_port("rxe2", 1)};
        HostPortsConfig cfg;
        cfg.ports = std::move(names);
        return std::make_unique<HostPorts>(loop, cfg, std::move(src));
    };
    std::unique_ptr<HostPorts> host;
    try {
        host = make({"rxe2"});
    } catch (const std::system_error &e) {
        GTEST_SKIP() << e.what();
    }
    Service service(EngineConfig{}, host->sa(), loop.timers());
    service.set_membership_backend(LinkLayer::ethernet, eth);
    host->open(service);
    ASSERT_EQ(service.ports().size(), 1u);
    EXPECT_EQ(service.ports().name(0), "rxe2/1");

    auto missing = make({"mlx5_0"});
    Service other(EngineConfig{}, missing->sa(), loop.timers());
    other.set_membership_backend(LinkLayer::ethernet, eth);
    EXPECT_THROW(
        {
            try {
                missing->open(other);
            } catch (const std::runtime_error &e) {
                EXPECT_STREQ(e.what(), "configured port 'mlx5_0' does not exist");
                throw;
            }
        },
        std::runtime_error);

    auto none = std::make_unique<HostPorts>(loop, HostPortsConfig{}, std::make_unique<ScriptedSource>());
    Service empty(EngineConfig{}, none->sa(), loop.timers());
    empty.set_membership_backend(LinkLayer::ethernet, eth);
    try {
        none->open(empty);
        ADD_FAILURE() << "no port at all must stop the daemon";
    } catch (const std::runtime_error &e) {
        EXPECT_STREQ(e.what(), "no usable RDMA port found (scripted)");
    }
}

// The watch: a link flap changes the port's usable flag and nothing else (the kernel keeps the
// memberships); a netdev gone from the daemon's namespace is a change of the GID table.
TEST_F(EthernetHostPorts, EthernetPortsAreWatchedAndALinkFlapOnlyFlipsUsable) {
    EXPECT_TRUE(host->watched(0));
    EXPECT_TRUE(host->watched(1));
    service->join(service->add_client(ClientInfo{100, 1000, 1000, "app"}, nullptr), join_on("rxe1", "ff12::1"),
                  [](const JoinResult &) {});
    ASSERT_EQ(eth.made.size(), 1u);
    source->found.ports[0].state = static_cast<std::uint8_t>(port::PortState::down);
    host->check_ethernet(0);
    EXPECT_FALSE(service->ports().usable(0));
    source->found.ports[0].state = static_cast<std::uint8_t>(port::PortState::active);
    host->check_ethernet(0);
    EXPECT_TRUE(service->ports().usable(0));
    EXPECT_EQ(eth.made.size(), 1u) << "no re-join";
    EXPECT_TRUE(eth.removed.empty());
    EXPECT_TRUE(eth.checked.empty()) << "the GID table did not change";
}

TEST_F(EthernetHostPorts, ANetdevGoneFromTheNamespaceIsAChangeOfTheGidTable) {
    veth1_here = false;
    const unsigned before = lookups;
    const auto gone = host->reread_gid_table(0);
    ASSERT_TRUE(std::holds_alternative<port::GidTableChange>(gone));
    const port::GidTableChange &c = std::get<port::GidTableChange>(gone);
    ASSERT_EQ(c.netdev.size(), 2u);
    EXPECT_TRUE(c.netdev[0].netdev_gone && c.netdev[1].netdev_gone);
    EXPECT_EQ(lookups, before + 1) << "one lookup for the two entries on veth1";
    EXPECT_TRUE(service->ports().at(0).attributes.gids[1].netdev_gone);
    veth1_here = true;
    host->check_ethernet(0);
    EXPECT_FALSE(service->ports().at(0).attributes.gids[1].netdev_gone) << "back";
}

} // namespace
} // namespace mcastd::test
