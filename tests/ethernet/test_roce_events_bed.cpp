// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// RoCE port events on the Ethernet bed (issue 27 §4, doc/roce-multicast.md §8): a daemon in host
// 1's namespace serves the bed's fake RDMA device there; a client holds 239.1.2.3 on it. The fake
// tree's IPv4 GID removed: the client hears `lost`, and the host's IGMP membership and the
// switch's mdb entry go. The GID back at another index: `restored` with the new sgid_index, and
// both come back. The judges are the bed's: /proc/net/igmp in the host and `bridge mdb show`.
// The daemon is the bed's (bed_daemon.hpp); BedDaemon::publish() changes its port's sysfs tree.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <memory>
#include <string>

#include "ethernet/bed_daemon.hpp"
#include "ethernet/group_watch.hpp"

namespace mcastd::eth {
namespace {

using json = nlohmann::json;

constexpr auto kEvent = 10s; // several watch periods (200 ms here) and the bridge's leave handling

std::optional<json> next_json(sim::Process &p, std::chrono::milliseconds timeout) {
    const auto line = p.read_line(timeout);
    if (!line)
        return std::nullopt;
    return json::parse(*line);
}

// A bed of `hosts` hosts with a daemon on host 1, and its clients.
class RoceEventsBed : public ::testing::Test {
protected:
    void SetUp() override {
        if (auto why = EthernetBed::unavailable())
            GTEST_SKIP() << *why;
    }
    // `store`: the service manager keeps an fd store, for a planned restart that keeps it all.
    void start(int hosts, bool store = false) {
        bed_ = std::make_unique<EthernetBed>(EthernetBed::Options{.hosts = hosts});
        // Its port watched every 200 ms (the default is a second), so that an event comes soon.
        daemon_ = std::make_unique<BedDaemon>(
            *bed_, 1,
            BedDaemon::Options{.config_json = R"({"dbus": {"enabled": false}, "ports": ["rxe1/1"],
                                                  "monitor": {"portinfo_interval_ms": 200}})",
                               .fd_store = store});
    }
    // rdma-mcastctl join --ip `ip` --hold on host 1: its record is its first line, read by the
    // test (BedDaemon::hold() would take it).
    sim::Process &hold(const std::string &ip) {
        return bed_->spawn_on(1, daemon_->ctl_argv(nullptr, "join", daemon_->on_port({"--ip", ip, "--hold"})));
    }
    // Host 1 reports `group` and the switch lists its port alone, within kEvent.
    bool held_by_host_1(const IpGroup &group) {
        return sim::poll_until(kEvent, [&] { return bed_->igmp(1).count(group) && bed_->mdb_hosts(group) == std::set<int>{1}; });
    }
    // The holder ends as a client does (SIGTERM): its leave takes the group from host 1's table;
    // then the daemon stops.
    void end(sim::Process &holder, const IpGroup &group) {
        holder.signal(SIGTERM);
        EXPECT_EQ(holder.wait(10s), 0) << holder.stderr_text();
        EXPECT_TRUE(sim::poll_until(kEvent, [&] { return !bed_->igmp(1).count(group); })) << "left";
        EXPECT_EQ(daemon_->stop(20s), 0) << daemon_->process().stderr_text();
    }

    std::unique_ptr<EthernetBed> bed_; // first, so it goes last: the daemon's process is the bed's
    std::unique_ptr<BedDaemon> daemon_;
};

TEST_F(RoceEventsBed, AGidRemovedIsLostAndDroppedAndItsReturnAtAnotherIndexIsRestored) {
    ASSERT_NO_FATAL_FAILURE(start(2));
    EthernetBed &bed = *bed_;
    BedDaemon &daemon = *daemon_;
    const IpGroup group = IpGroup::of("239.1.2.3");

    sim::Process &holder = hold("239.1.2.3");
    const auto record = next_json(holder, 20s);
    ASSERT_TRUE(record) << holder.stderr_text() << daemon.process().stderr_text();
    EXPECT_EQ(record->at("sgid_index"), 1) << record->dump();
    EXPECT_EQ(record->at("netdev"), "veth1") << record->dump();
    ASSERT_TRUE(held_by_host_1(group)) << "joined: the host reports it, the switch lists its port";

    // The address leaves veth1: the kernel removes its GID entry (an unused entry reads as zeros).
    FakeRdmaDevice dev = bed.rdma_device(1);
    const FakeGidEntry v4 = dev.ports[0].gids[1];
    dev.ports[0].gids[1] = FakeGidEntry{};
    daemon.publish(dev);
    const auto lost = next_json(holder, kEvent);
    ASSERT_TRUE(lost) << holder.stderr_text() << daemon.process().stderr_text();
    EXPECT_EQ(lost->at("event"), "lost") << lost->dump();
    EXPECT_EQ(lost->at("error").at("code"), "port-not-active") << lost->dump();
    EXPECT_TRUE(sim::poll_until(kEvent, [&] { return !bed.igmp(1).count(group); }))
        << "the kernel membership is dropped";
    EXPECT_TRUE(sim::poll_until(kEvent, [&] { return bed.mdb_hosts(group).empty(); }))
        << "and the switch prunes the port";
    EXPECT_TRUE(daemon.process().wait_for_stderr("GID table: removed 1 ::ffff:10.77.0.1 roce_v2 veth1", 1s))
        << daemon.process().stderr_text();

    // Added back, at index 2.
    dev.ports[0].gids[2] = v4;
    daemon.publish(dev);
    const auto restored = next_json(holder, kEvent);
    ASSERT_TRUE(restored) << holder.stderr_text() << daemon.process().stderr_text();
    EXPECT_EQ(restored->at("event"), "restored") << restored->dump();
    EXPECT_EQ(restored->at("record").at("sgid_index"), 2) << restored->dump();
    EXPECT_NE(std::find(restored->at("changed").begin(), restored->at("changed").end(), "sgid_index"),
              restored->at("changed").end())
        << restored->dump();
    EXPECT_TRUE(held_by_host_1(group)) << "made again: reported, and listed by the switch";
    end(holder, group);
}

// A planned restart while the group's source GID is gone. The next instance takes the
// membership back still waiting for a source: the client hears nothing from the restart, the host
// never reports the group meanwhile, and when the GID is back the client hears `restored` and
// the host holds the group again, on the socket the fd store kept.
TEST_F(RoceEventsBed, AMembershipSetAsideWhenAPlannedRestartComesWaitsForItsSourceInTheNextInstance) {
    ASSERT_NO_FATAL_FAILURE(start(2, true));
    EthernetBed &bed = *bed_;
    BedDaemon &daemon = *daemon_;
    const IpGroup group = IpGroup::of("239.1.2.5");
    sim::Process &holder = hold("239.1.2.5");
    ASSERT_TRUE(next_json(holder, 20s)) << holder.stderr_text() << daemon.process().stderr_text();
    ASSERT_TRUE(held_by_host_1(group));

    FakeRdmaDevice dev = bed.rdma_device(1);
    dev.ports[0].gids[1] = FakeGidEntry{};
    daemon.publish(dev);
    const auto lost = next_json(holder, kEvent);
    ASSERT_TRUE(lost) << holder.stderr_text() << daemon.process().stderr_text();
    ASSERT_EQ(lost->at("event"), "lost") << lost->dump();
    ASSERT_TRUE(sim::poll_until(kEvent, [&] { return !bed.igmp(1).count(group) && bed.mdb_hosts(group).empty(); }));

    // From here on until the GID is back neither judge may list the group: not the host's IGMP
    // table, not the mdb.
    GroupWatch watch(bed, 1, group);
    const std::optional<int> handed = daemon.hand_over();
    daemon.start();
    EXPECT_EQ(handed, 0) << daemon.process().stderr_text();
    const GroupWatch::Seen seen = watch.finish();
    EXPECT_GT(seen.igmp.polls, 0u);
    EXPECT_EQ(seen.igmp.absent, seen.igmp.polls) << "the host reported the group in "
                                                 << seen.igmp.polls - seen.igmp.absent << " of " << seen.igmp.polls
                                                 << " polls while its GID was gone\n"
                                                 << daemon.process().stderr_text();
    EXPECT_EQ(seen.mdb.absent, seen.mdb.polls) << "the mdb listed the port in " << seen.mdb.polls - seen.mdb.absent
                                               << " of " << seen.mdb.polls << " polls";

    daemon.publish(bed.rdma_device(1)); // the address is back
    const auto told = next_json(holder, kEvent);
    ASSERT_TRUE(told) << "the client was not told\n" << holder.stderr_text() << daemon.process().stderr_text();
    EXPECT_EQ(told->at("event"), "restored") << "the first word after the restart: " << told->dump();
    EXPECT_EQ(daemon.process().stderr_text().find("is not taken back"), std::string::npos)
        << daemon.process().stderr_text();
    EXPECT_TRUE(held_by_host_1(group)) << "the host holds the group again";
    end(holder, group);
}

// The link going down and up (the port's state file, as the kernel shows a netdev's carrier):
// no event, and the host's membership never leaves.
TEST_F(RoceEventsBed, ALinkFlapTellsNobodyAndKeepsTheMembership) {
    ASSERT_NO_FATAL_FAILURE(start(1));
    EthernetBed &bed = *bed_;
    BedDaemon &daemon = *daemon_;
    const IpGroup group = IpGroup::of("239.1.2.4");
    sim::Process &holder = hold("239.1.2.4");
    ASSERT_TRUE(next_json(holder, 20s)) << holder.stderr_text() << daemon.process().stderr_text();
    ASSERT_TRUE(sim::poll_until(kEvent, [&] { return bed.igmp(1).count(group) == 1; }));

    FakeRdmaDevice dev = bed.rdma_device(1);
    dev.ports[0].state = "1: DOWN";
    daemon.publish(dev);
    ASSERT_TRUE(daemon.process().wait_for_stderr("rxe1/1: the link is DOWN", kEvent)) << daemon.process().stderr_text();
    dev.ports[0].state = "4: ACTIVE";
    daemon.publish(dev);
    ASSERT_TRUE(daemon.process().wait_for_stderr("rxe1/1: usable", kEvent)) << daemon.process().stderr_text();
    EXPECT_FALSE(holder.read_line(1s)) << "no lost, no restored";
    EXPECT_EQ(bed.igmp(1).count(group), 1u);
    holder.signal(SIGTERM);
    EXPECT_EQ(holder.wait(10s), 0);
}

} // namespace
} // namespace mcastd::eth
