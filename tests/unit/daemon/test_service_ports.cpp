// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The Service and its ports: the port event sources talk to it directly and it keeps the one
// registry; what the layers under it must do in turn they hear once, through PortListener.
// Above all, "the SA lost this port's memberships" takes one path whichever found it (the port
// rules' SMInfo poll, or the engine's audit): one re-join, one SA window restart, one SMInfo
// baseline reset.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fakes/fake_ethernet_backend.hpp"
#include "fakes/fake_port.hpp"
#include "fakes/fake_sa.hpp"
#include "fakes/fake_timers.hpp"
#include "port/port_rules.hpp"
#include "service/service.hpp"

namespace mcastd::test {
namespace {

// What HostPorts hears, and the port rules behind it as HostPorts wires them.
struct RecordingListener final : PortListener {
    std::vector<std::string> heard;
    std::size_t gone = 0;
    port::PortRules *rules = nullptr; // HostPorts: the poller's rules of the port
    void sa_route_changed(PortIndex port) override { heard.push_back("route " + std::to_string(port)); }
    void memberships_gone(PortIndex port) override {
        heard.push_back("gone " + std::to_string(port));
        ++gone;
        if (rules)
            rules->on_memberships_gone();
    }
};

sa::SmInfoRecord sm(std::uint32_t act_count, std::uint64_t guid = 0x0002c90300000001ULL) {
    sa::SmInfoRecord r;
    r.lid = 1;
    r.guid = guid;
    r.act_count = act_count;
    r.sm_state = sa::sm_state::master;
    return r;
}

class ServicePorts : public ::testing::Test {
protected:
    ServicePorts() : service(EngineConfig{}, sa, timers) {
        port = service.add_port(test_port(), true);
        sa.port_gids[port] = test_port().port_gid();
        service.add_port_listener(listener);
        client = service.add_client(ClientInfo{100, 1000, 1000, "app"}, nullptr);
    }

    JoinResult join(const char *mgid) {
        JoinResult out;
        out.error = Error{Errc::internal, "no answer", {}};
        service.join(client, join_request(mgid), [&out](const JoinResult &r) { out = r; });
        settle();
        return out;
    }
    void settle() {
        for (int i = 0; i < 10000; ++i) {
            sa.run();
            if (service.idle() && sa.pending() == 0)
                return;
            if (sa.pending() == 0 && !timers.step())
                return;
        }
        FAIL() << "did not settle";
    }
    std::optional<std::uint8_t> sa_bits(const char *mgid) const {
        return sa.state.join_state(*parse_gid(mgid), test_port().port_gid());
    }
    std::size_t sets() const {
        std::size_t n = 0;
        for (const SaRequest &r : sa.log)
            n += r.method == SaMethod::set;
        return n;
    }

    FakeTimers timers;
    FakeSa sa;
    Service service;
    RecordingListener listener;
    PortIndex port = 0;
    ClientId client = 0;
};

TEST_F(ServicePorts, WhatTheEventSourcesSeeLandsInTheRegistryOnce) {
    const port::RegisteredPort &p = service.ports().at(port);
    service.port_info(port, 9, 4, 5);
    service.sa_moved(port, 7, 2);
    service.pkey_table(port, {0x7fff, 0xffff});
    service.sm_seen(port, 7, 0x0002c90300000002ULL, 12);
    EXPECT_EQ(p.attributes.lid, 9);
    EXPECT_EQ(p.attributes.mtu, 5);
    EXPECT_EQ(p.attributes.sm_lid, 7);
    EXPECT_EQ(p.attributes.sm_sl, 2);
    EXPECT_EQ(p.attributes.pkeys, (std::vector<std::uint16_t>{0x7fff, 0xffff}));
    EXPECT_EQ(p.sm, (port::SmView{7, 0x0002c90300000002ULL, 12, true}));
    EXPECT_EQ(listener.heard, (std::vector<std::string>{"route 0", "route 0"}))
        << "the SA MADs follow the SM and the P_Key table";
}

TEST_F(ServicePorts, UsableIsTheRegistrysAndTheEngineFollowsIt) {
    service.port_usable(port, false, "port down");
    EXPECT_FALSE(service.ports().usable(port));
    EXPECT_EQ(join("ff15::1").error->code, Errc::port_not_active);
    service.port_usable(port, false, "port down"); // again: nothing changes
    service.port_usable(port, true, "port active");
    EXPECT_TRUE(service.ports().usable(port));
    EXPECT_FALSE(join("ff15::1").error);
    EXPECT_EQ(sa_bits("ff15::1"), join::full);
}

TEST_F(ServicePorts, AnInvalidationFromThePortRulesIsOneReJoinHeardOnce) {
    ASSERT_FALSE(join("ff15::1").error);
    sa.state = FakeSaState{}; // the SM restarted
    service.port_invalidated(port, port::Trigger::sm_restart, "the SM restarted");
    EXPECT_EQ(listener.heard, std::vector<std::string>{"gone 0"}) << "before any Set of the re-join";
    EXPECT_EQ(sets(), 1u);
    settle();
    EXPECT_EQ(sa_bits("ff15::1"), join::full);
    EXPECT_EQ(listener.heard, std::vector<std::string>{"gone 0"});
}

TEST_F(ServicePorts, AnAuditsFindingTakesTheSamePath) {
    ASSERT_FALSE(join("ff15::1").error);
    ASSERT_FALSE(join("ff15::2").error);
    sa.state = FakeSaState{}; // an SM restart no poll saw
    service.audit_due(port);
    settle();
    EXPECT_EQ(listener.heard, std::vector<std::string>{"gone 0"});
    EXPECT_EQ(sa_bits("ff15::1"), join::full);
    EXPECT_EQ(sa_bits("ff15::2"), join::full) << "the whole port re-joined";
}

TEST_F(ServicePorts, TheSmRestartsOwnSampleIsTheNewBaselineThroughThePath) {
    // The port rules talk to the Service; the re-join comes back to them through HostPorts.
    port::PortRules rules(port, service);
    listener.rules = &rules;
    port::PortInfo usable;
    usable.lid = 3;
    usable.master_sm_lid = 1;
    usable.port_state = static_cast<std::uint8_t>(port::PortState::active);
    rules.on_portinfo(usable);
    ASSERT_FALSE(join("ff15::1").error);
    rules.on_sminfo(sm(84));
    sa.state = FakeSaState{};
    rules.on_sminfo(sm(5)); // ActCount fell: the SM restarted
    EXPECT_EQ(listener.gone, 1u);
    ASSERT_TRUE(rules.sm_baseline());
    EXPECT_EQ(rules.sm_baseline()->act_count, 5u) << "the restarted SM's sample, not none";
    settle();
    EXPECT_EQ(sa_bits("ff15::1"), join::full);

    // A CLIENT_REREGISTER then the SMInfo poll that shows the restarted SM: one re-join.
    rules.on_verbs_event(port::VerbsEvent::client_reregister);
    EXPECT_FALSE(rules.sm_baseline()) << "the re-join dropped it";
    EXPECT_EQ(listener.gone, 2u);
    rules.on_sminfo(sm(2));
    EXPECT_EQ(listener.gone, 2u) << "the sample after the re-join is its baseline";
}

TEST_F(ServicePorts, APortsLinkLayerPicksHowItsMembershipsAreMade) {
    port::PortAttributes roce = test_port();
    roce.device = "rxe0";
    roce.link_layer = "Ethernet";
    try {
        service.add_port(roce, true);
        FAIL() << "an Ethernet port with nothing to make its memberships";
    } catch (const std::invalid_argument &e) {
        EXPECT_STREQ(e.what(), "rxe0/1 is an Ethernet port, and no membership backend serves Ethernet ports");
    }
    EXPECT_FALSE(service.ports().find("rxe0", 1)) << "every registered port is served";

    FakeEthernetBackend eth;
    service.set_membership_backend(LinkLayer::ethernet, eth);
    const PortIndex p = service.add_port(roce, true);
    EXPECT_EQ(service.ports().link_layer(p), LinkLayer::ethernet);
    JoinRequest r = join_request("ff0e::ffff:ef01:203");
    r.device = "rxe0";
    JoinResult out;
    service.join(client, r, [&out](const JoinResult &res) { out = res; });
    EXPECT_FALSE(out.error) << "answered inside the backend's make";
    EXPECT_EQ(eth.memberships(), 1u);
    EXPECT_TRUE(sa.log.empty());
}

} // namespace
} // namespace mcastd::test
