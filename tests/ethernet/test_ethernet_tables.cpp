// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The Ethernet bed's parts that need no privileges: IP groups and their MACs, the kernel's
// IGMP/MLD and bridge tables parsed from text the kernel and iproute2 printed, the fake RDMA
// device's tree, and passing a descriptor over a Unix socket.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ethernet/fake_rdma_device.hpp"
#include "ethernet/fd_passing.hpp"
#include "ethernet/ip_group.hpp"
#include "ethernet/kernel_tables.hpp"

namespace mcastd::eth {
namespace {

namespace fs = std::filesystem;

TEST(IpGroup, ParsesMulticastOnlyAndPrintsCanonically) {
    EXPECT_EQ(IpGroup::of("239.1.2.3").text(), "239.1.2.3");
    EXPECT_FALSE(IpGroup::of("239.1.2.3").is_v6());
    EXPECT_EQ(IpGroup::of("ff0e:0:0::1:2").text(), "ff0e::1:2");
    EXPECT_TRUE(IpGroup::of("ff0e::1:2").is_v6());
    EXPECT_EQ(IpGroup::of("FF0E::1:2"), IpGroup::of("ff0e::1:2"));
    EXPECT_EQ(IpGroup::parse("10.77.0.1"), std::nullopt);      // unicast
    EXPECT_EQ(IpGroup::parse("fd00:77::1"), std::nullopt);     // unicast
    EXPECT_EQ(IpGroup::parse("240.0.0.1"), std::nullopt);      // class E
    EXPECT_EQ(IpGroup::parse("239.1.2"), std::nullopt);
    EXPECT_EQ(IpGroup::parse(""), std::nullopt);
    EXPECT_TRUE(IpGroup::parse("224.0.0.0"));
    EXPECT_TRUE(IpGroup::parse("239.255.255.255"));
    EXPECT_THROW(IpGroup::of("10.0.0.1"), std::invalid_argument);
    std::ostringstream out;
    out << IpGroup::of("ff0e::1:2");
    EXPECT_EQ(out.str(), "ff0e::1:2");
}

TEST(IpGroup, MacsFollowRfc1112AndRfc2464) {
    // IPv4: 01:00:5e and the low 23 bits, so 239.129.2.3 and 239.1.2.3 share a MAC.
    EXPECT_EQ(format_mac(IpGroup::of("239.1.2.3").mac()), "01:00:5e:01:02:03");
    EXPECT_EQ(IpGroup::of("239.129.2.3").mac(), IpGroup::of("239.1.2.3").mac());
    EXPECT_EQ(format_mac(IpGroup::of("224.0.0.1").mac()), "01:00:5e:00:00:01");
    // IPv6: 33:33 and the low 32 bits.
    EXPECT_EQ(format_mac(IpGroup::of("ff0e::1:2").mac()), "33:33:00:01:00:02");
    EXPECT_EQ(format_mac(IpGroup::of("ff02::1:ff00:1").mac()), "33:33:ff:00:00:01");
}

TEST(IpGroup, MacTextRoundTrips) {
    const Mac m{0x02, 0x00, 0x4d, 0x00, 0x00, 0xfe};
    EXPECT_EQ(format_mac(m), "02:00:4d:00:00:fe");
    EXPECT_EQ(parse_mac("02:00:4D:00:00:FE"), m);
    EXPECT_EQ(parse_mac("02:00:4d:00:00"), std::nullopt);
    EXPECT_EQ(parse_mac("02-00-4d-00-00-fe"), std::nullopt);
    EXPECT_EQ(parse_mac("02:00:4d:00:00:fg"), std::nullopt);
}

// /proc/net/igmp of a host namespace with two members of 239.1.2.3 on veth1 (as printed by
// Linux 6.x on x86: tabs, and each group's 32 bits as a host-order number).
constexpr const char *kProcIgmp =
    "Idx\tDevice    : Count Querier\tGroup    Users Timer\tReporter\n"
    "1\tlo        :     1      V3\n"
    "\t\t\t\t010000E0     1 0:00000000\t\t0\n"
    "2\tveth1     :     2      V3\n"
    "\t\t\t\t030201EF     2 0:00000000\t\t0\n"
    "\t\t\t\t010000E0     1 0:00000000\t\t0\n"
    "5\tlong-name-of-a-dev:     0      V2\n";

TEST(KernelTables, ProcIgmpGivesGroupsAndUsersPerDevice) {
    const auto t = parse_proc_igmp(kProcIgmp);
    ASSERT_EQ(t.size(), 3u);
    EXPECT_EQ(t.at("lo"), (GroupUsers{{IpGroup::of("224.0.0.1"), 1}}));
    EXPECT_EQ(t.at("veth1"), (GroupUsers{{IpGroup::of("239.1.2.3"), 2}, {IpGroup::of("224.0.0.1"), 1}}));
    EXPECT_TRUE(t.at("long-name-of-a-dev").empty());
    EXPECT_TRUE(parse_proc_igmp("Idx\tDevice    : Count Querier\tGroup    Users Timer\tReporter\n").empty());
}

TEST(KernelTables, ProcIgmpRefusesWhatItCannotRead) {
    EXPECT_THROW(parse_proc_igmp("\t\t\t\t030201EF     1 0:00000000\t\t0\n"), std::runtime_error); // no device
    EXPECT_THROW(parse_proc_igmp("2\tveth1     :     1      V3\n\t\t\t\tXYZ     1\n"), std::runtime_error);
    EXPECT_THROW(parse_proc_igmp("2\tveth1     :     1      V3\n\t\t\t\t030201EF\n"), std::runtime_error);
    // 10.77.0.1 is no group.
    EXPECT_THROW(parse_proc_igmp("2\tveth1     :     1      V3\n\t\t\t\t01004D0A     1 0:0\t\t0\n"),
                 std::runtime_error);
    EXPECT_THROW(parse_proc_igmp("garbage\n"), std::runtime_error);
}

constexpr const char *kProcIgmp6 = "1    lo              ff020000000000000000000000000001     1 0000000C 0\n"
                                   "2    veth1           ff0e0000000000000000000000010002     2 00000004 0\n"
                                   "2    veth1           ff0200000000000000000001ff000001     1 00000004 0\n";

TEST(KernelTables, ProcIgmp6GivesGroupsAndUsersPerDevice) {
    const auto t = parse_proc_igmp6(kProcIgmp6);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t.at("lo"), (GroupUsers{{IpGroup::of("ff02::1"), 1}}));
    EXPECT_EQ(t.at("veth1"), (GroupUsers{{IpGroup::of("ff0e::1:2"), 2}, {IpGroup::of("ff02::1:ff00:1"), 1}}));
    EXPECT_TRUE(parse_proc_igmp6("").empty());
    EXPECT_THROW(parse_proc_igmp6("2    veth1           ff0e00000000000000000000000100     1 0 0\n"),
                 std::runtime_error); // 30 digits
    EXPECT_THROW(parse_proc_igmp6("2    veth1           fd000000000000000000000000010002     1 0 0\n"),
                 std::runtime_error); // not multicast
    EXPECT_THROW(parse_proc_igmp6("2    veth1           ff0e000000000000000000000001000g     1 0 0\n"),
                 std::runtime_error);
    EXPECT_THROW(parse_proc_igmp6("x    veth1           ff0e0000000000000000000000010002     1 0 0\n"),
                 std::runtime_error);
}

// `bridge -j mdb show dev br0` (iproute2 6.1) on the bed: a host's group, the bridge's own.
constexpr const char *kMdb =
    R"([{"mdb":[{"index":2,"dev":"br0","port":"p1","grp":"239.1.2.3","state":"temp","flags":[]},)"
    R"({"index":2,"dev":"br0","port":"p3","grp":"ff0e::1:2","state":"temp","flags":[]},)"
    R"({"index":2,"dev":"br0","port":"p2","grp":"232.1.1.1","src":"10.77.0.3","state":"temp","flags":[]},)"
    R"({"index":2,"dev":"br0","port":"br0","grp":"ff02::6a","state":"temp","flags":[]}],"router":{}}])";

TEST(KernelTables, MdbJsonGivesPortAndGroup) {
    const auto m = parse_mdb_json(kMdb);
    ASSERT_EQ(m.size(), 4u);
    EXPECT_EQ(m[0], (MdbEntry{"p1", IpGroup::of("239.1.2.3"), "temp", ""}));
    EXPECT_EQ(m[1], (MdbEntry{"p3", IpGroup::of("ff0e::1:2"), "temp", ""}));
    EXPECT_EQ(m[2], (MdbEntry{"p2", IpGroup::of("232.1.1.1"), "temp", "10.77.0.3"}));
    EXPECT_EQ(m[3].port, "br0");
    EXPECT_TRUE(parse_mdb_json(R"([{"mdb":[],"router":{}}])").empty());
    EXPECT_TRUE(parse_mdb_json("[]").empty());
    EXPECT_THROW(parse_mdb_json("dev br0 port p1 grp 239.1.2.3 temp"), std::runtime_error);
    EXPECT_THROW(parse_mdb_json(R"({"mdb":[]})"), std::runtime_error);
    EXPECT_THROW(parse_mdb_json(R"([{"mdb":[{"port":"p1"}]}])"), std::runtime_error);
    EXPECT_THROW(parse_mdb_json(R"([{"mdb":[{"port":"p1","grp":"10.0.0.1"}]}])"), std::runtime_error);
}

TEST(KernelTables, BridgePortStates) {
    const auto states = parse_bridge_port_states(
        R"([{"ifindex":4,"link":"veth1","ifname":"p1","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],)"
        R"("mtu":1500,"master":"br0","state":"disabled","priority":32,"cost":2},)"
        R"({"ifindex":5,"link":"veth2","ifname":"p2","flags":[],"mtu":1500,"master":"br0","state":"forwarding"}])");
    EXPECT_EQ(states, (std::map<std::string, std::string>{{"p1", "disabled"}, {"p2", "forwarding"}}));
    EXPECT_TRUE(parse_bridge_port_states("[]").empty());
    EXPECT_THROW(parse_bridge_port_states("p1 forwarding"), std::runtime_error);
    EXPECT_THROW(parse_bridge_port_states(R"([{"ifname":"p1"}])"), std::runtime_error);
    EXPECT_THROW(parse_bridge_port_states(R"({"ifname":"p1","state":"forwarding"})"), std::runtime_error);
}

TEST(KernelTables, UsableLinkLocals) {
    const std::string_view json =
        R"([{"ifindex":2,"ifname":"br0","flags":["BROADCAST","MULTICAST","UP"],"addr_info":[)"
        R"({"family":"inet6","local":"fe80::1","prefixlen":64,"scope":"link","tentative":true},)"
        R"({"family":"inet6","local":"fe80::2","prefixlen":64,"scope":"link","dadfailed":true,"tentative":true},)"
        R"({"family":"inet6","local":"fd00:77::1","prefixlen":64,"scope":"global"},)"
        R"({"family":"inet","local":"10.77.0.1","prefixlen":24,"scope":"link"},)"
        R"({"family":"inet6","local":"fe80::3","prefixlen":64,"scope":"link"}]}])";
    EXPECT_EQ(parse_usable_link_locals(json), std::vector<std::string>{"fe80::3"});
    EXPECT_TRUE(parse_usable_link_locals(R"([{"ifname":"br0","addr_info":[]}])").empty());
    EXPECT_TRUE(parse_usable_link_locals("[]").empty());
    EXPECT_THROW(parse_usable_link_locals("inet6 fe80::3/64 scope link"), std::runtime_error);
    EXPECT_THROW(parse_usable_link_locals(R"([{"ifname":"br0"}])"), std::runtime_error);
}

TEST(FakeRdmaDevice, IdentifiersFromMacAndAddress) {
    const Mac mac{0x02, 0x00, 0x4d, 0x00, 0x00, 0x01};
    // The universal/local bit flipped, ff:fe inserted.
    EXPECT_EQ(eui64_from_mac(mac), 0x0000'4dff'fe00'0001ULL);
    EXPECT_EQ(sysfs_guid_text(eui64_from_mac(mac)), "0000:4dff:fe00:0001");
    EXPECT_EQ(sysfs_guid_text(eui64_from_mac({0x00, 0x11, 0x22, 0x33, 0x44, 0x55})), "0211:22ff:fe33:4455");
    EXPECT_EQ(sysfs_gid_text(link_local_gid(mac)), "fe80:0000:0000:0000:0000:4dff:fe00:0001");
    EXPECT_EQ(sysfs_gid_text(ipv4_mapped_gid({10, 77, 0, 1})), "0000:0000:0000:0000:0000:ffff:0a4d:0001");
    EXPECT_EQ(format_gid(ipv4_mapped_gid({10, 77, 0, 1})), "::ffff:10.77.0.1");
    EXPECT_EQ(sysfs_gid_text(Gid{}), "0000:0000:0000:0000:0000:0000:0000:0000");
}

// A scratch directory removed at the end of the test.
struct ScratchDir {
    fs::path path;
    ScratchDir() {
        std::string tmpl = (fs::temp_directory_path() / "mcastd-fakedev-XXXXXX").string();
        if (!::mkdtemp(tmpl.data()))
            throw std::runtime_error("mkdtemp failed");
        path = tmpl;
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string read_file(const fs::path &p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

TEST(FakeRdmaDevice, WritesTheSysfsLayoutOfARocePort) {
    ScratchDir root;
    const Mac mac{0x02, 0x00, 0x4d, 0x00, 0x00, 0x02};
    const auto dev = roce_device("rxe2", "veth2", mac, {10, 77, 0, 2}, parse_gid("fd00:77::2"));
    const fs::path d = dev.write(root.path);
    EXPECT_EQ(d, root.path / "class/infiniband/rxe2");
    EXPECT_EQ(read_file(d / "node_type"), "1: CA\n");
    EXPECT_EQ(read_file(d / "node_guid"), "0000:4dff:fe00:0002\n");
    const fs::path p = d / "ports/1";
    EXPECT_EQ(read_file(p / "state"), "4: ACTIVE\n");
    EXPECT_EQ(read_file(p / "phys_state"), "5: LinkUp\n");
    EXPECT_EQ(read_file(p / "link_layer"), "Ethernet\n");
    EXPECT_EQ(read_file(p / "lid"), "0x0\n");
    EXPECT_EQ(read_file(p / "sm_lid"), "0x0\n");
    EXPECT_EQ(read_file(p / "lid_mask_count"), "0\n");
    EXPECT_EQ(read_file(p / "sm_sl"), "0\n");
    EXPECT_EQ(read_file(p / "rate"), "25 Gb/sec (1X EDR)\n");
    EXPECT_EQ(read_file(p / "pkeys/0"), "0xffff\n");
    EXPECT_FALSE(fs::exists(p / "pkeys/1"));
    // Index 0: link-local from the MAC, RoCE v1; 1: the IPv4 address, RoCE v2.
    EXPECT_EQ(read_file(p / "gids/0"), "fe80:0000:0000:0000:0000:4dff:fe00:0002\n");
    EXPECT_EQ(read_file(p / "gid_attrs/types/0"), "IB/RoCE v1\n");
    EXPECT_EQ(read_file(p / "gid_attrs/ndevs/0"), "veth2\n");
    EXPECT_EQ(read_file(p / "gids/1"), "0000:0000:0000:0000:0000:ffff:0a4d:0002\n");
    EXPECT_EQ(read_file(p / "gid_attrs/types/1"), "RoCE v2\n");
    EXPECT_EQ(read_file(p / "gid_attrs/ndevs/1"), "veth2\n");
    // Index 2: unused, zeros and no attributes (sysfs: EINVAL on reading them).
    EXPECT_EQ(read_file(p / "gids/2"), "0000:0000:0000:0000:0000:0000:0000:0000\n");
    EXPECT_FALSE(fs::exists(p / "gid_attrs/types/2"));
    EXPECT_FALSE(fs::exists(p / "gid_attrs/ndevs/2"));
    // Index 3: the IPv6 address, RoCE v2.
    EXPECT_EQ(read_file(p / "gids/3"), "fd00:0077:0000:0000:0000:0000:0000:0002\n");
    EXPECT_EQ(read_file(p / "gid_attrs/types/3"), "RoCE v2\n");
    EXPECT_FALSE(fs::exists(p / "gids/4"));
    EXPECT_FALSE(fs::exists(d / "ports/2"));
}

TEST(FakeRdmaDevice, RewritesAndCarriesCustomPorts) {
    ScratchDir root;
    FakeRdmaDevice dev = roce_device("mlx5_0", "eth0", {0, 1, 2, 3, 4, 5}, {10, 0, 0, 1});
    EXPECT_EQ(dev.ports.at(0).gids.size(), 3u); // no IPv6 address: no index 3
    dev.write(root.path);
    dev.ports.at(0).state = "1: DOWN";
    dev.ports.at(0).phys_state = "3: Disabled";
    dev.ports.push_back(FakeRdmaPort{.number = 2, .gids = {{}}});
    const fs::path d = dev.write(root.path);
    EXPECT_EQ(read_file(d / "ports/1/state"), "1: DOWN\n");
    EXPECT_EQ(read_file(d / "ports/1/phys_state"), "3: Disabled\n");
    EXPECT_EQ(read_file(d / "ports/2/gids/0"), "0000:0000:0000:0000:0000:0000:0000:0000\n");
    EXPECT_FALSE(fs::exists(d / "ports/2/gid_attrs"));
    EXPECT_THROW(FakeRdmaDevice{.name = "../x"}.write(root.path), std::invalid_argument);
}

TEST(FdPassing, ADescriptorArrivesAsTheSameOpenFile) {
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    const int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(udp, 0);
    ASSERT_EQ(send_fd(pair[0], udp), 0);
    const int got = receive_fd(pair[1]);
    ASSERT_GE(got, 0) << std::strerror(-got);
    struct stat a {}, b {};
    ASSERT_EQ(::fstat(udp, &a), 0);
    ASSERT_EQ(::fstat(got, &b), 0);
    EXPECT_EQ(a.st_ino, b.st_ino);
    EXPECT_NE(got, udp);
    EXPECT_EQ(::fcntl(got, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    // A message without a descriptor, then the peer gone.
    ASSERT_EQ(::write(pair[0], "x", 1), 1);
    EXPECT_EQ(receive_fd(pair[1]), -EBADMSG);
    ::close(pair[0]);
    EXPECT_EQ(receive_fd(pair[1]), -ECONNRESET);
    EXPECT_EQ(send_fd(pair[1], udp), -EPIPE);
    ::close(got);
    ::close(udp);
    ::close(pair[1]);
}

} // namespace
} // namespace mcastd::eth
