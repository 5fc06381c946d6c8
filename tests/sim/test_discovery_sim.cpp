// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// One daemon, both link layers (doc/architecture.md §6.2): attached to a simulated InfiniBand
// node (libibumad through umad2sim) and pointed at a fake RoCE device with --sysfs-root (the
// Ethernet bed's, doc/ethernet-bed.md §5), it serves both ports. rdma-mcastctl's status shows
// each with its link layer; a join on the InfiniBand port reaches the SA as ever, and one on the
// RoCE port goes to the RoCE backend (an IPv6 group on RoCE v2 is refused there), with nothing
// sent to the SA for it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ethernet/fake_rdma_device.hpp"
#include "sim/daemon_harness.hpp"

namespace mcastd::sim {
namespace {

using json = nlohmann::json;

TEST(DiscoverySim, AnInfiniBandPortAndARoCEPortInOneDaemon) {
    Fabric fabric;
    const eth::FakeRdmaDevice rxe = eth::roce_device("rxe1", "veth1", {0x02, 0x00, 0x4d, 0x00, 0x00, 0x01}, {10, 77, 0, 1});
    rxe.write(fabric.scratch() / "sys");
    Daemon d(fabric, "H2", "{}", {"--sysfs-root", (fabric.scratch() / "sys" / "class" / "infiniband").string()});

    auto ctl = [&](std::vector<std::string> args) {
        std::vector<std::string> argv{MCASTD_CTL, "--socket", d.socket().string(), "--json"};
        argv.insert(argv.end(), args.begin(), args.end());
        Process p({.argv = argv, .cwd = fabric.scratch()});
        const auto rc = p.wait(20s);
        return std::make_pair(rc, p.read_all(1s) + p.stderr_text());
    };

    const auto [status_rc, status_text] = ctl({"status"});
    ASSERT_EQ(status_rc, 0) << status_text;
    const json ports = json::parse(status_text).at("ports");
    ASSERT_EQ(ports.size(), 2u) << status_text;
    // InfiniBand ports first (their indexes do not depend on RoCE ports).
    EXPECT_EQ(ports[0].at("device"), "ibsim0");
    EXPECT_EQ(ports[0].at("link_layer"), "IB") << "libibumad's word under umad2sim, which has no link_layer file";
    EXPECT_NE(ports[0].at("lid"), 0);
    EXPECT_EQ(ports[1].at("device"), "rxe1");
    EXPECT_EQ(ports[1].at("link_layer"), "Ethernet");
    EXPECT_EQ(ports[1].at("state"), "ACTIVE");
    EXPECT_EQ(ports[1].at("lid"), 0);
    EXPECT_EQ(ports[1].at("port_gid"), format_gid(eth::link_local_gid({0x02, 0x00, 0x4d, 0x00, 0x00, 0x01})));

    // The InfiniBand port joins as ever, held while the client runs.
    Process holder({.argv = {MCASTD_CTL, "--socket", d.socket().string(), "--json", "join", "--device", "ibsim0",
                             "--port", "1", "--mgid", "ff15:3::7", "--hold"},
                    .cwd = fabric.scratch()});
    const auto record = holder.read_line(20s);
    ASSERT_TRUE(record) << holder.stderr_text();
    EXPECT_NE(json::parse(*record).at("mlid"), 0);
    EXPECT_EQ(fabric.sa_join_state(*parse_gid("ff15:3::7"), fabric.port_gid("H2")), 0x1);

    const auto [roce_rc, roce_text] = ctl({"join", "--device", "rxe1", "--port", "1", "--mgid", "ff15:3::8"});
    EXPECT_NE(roce_rc, 0) << roce_text;
    // It reaches the RoCE backend, not the SA: an IPv6 group on the default RoCE v2 GID is
    // refused there, as rdma_cm refuses it.
    EXPECT_NE(roce_text.find("the IPv6 group ff15:3::8 on a RoCE v2 GID would need an MLD membership"),
              std::string::npos)
        << roce_text;
    EXPECT_FALSE(fabric.sa_join_state(*parse_gid("ff15:3::8"), fabric.port_gid("H2")));

    holder.stop();
    EXPECT_EQ(d.stop(), 0);
}

} // namespace
} // namespace mcastd::sim
