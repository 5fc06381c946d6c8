// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Discovery over a directory laid out like /sys/class/infiniband (SysfsPortSource): the Ethernet
// bed's fake RDMA device (doc/ethernet-bed.md §5) is read as the daemon will read it under
// --sysfs-root, a kernel-like tree's unused GID entries (attributes that fail to read) and
// missing files are tolerated, a GID table re-read shows an address going and coming back, and
// the two sources combine as doc/architecture.md §6.2 says: InfiniBand ports from libibumad,
// Ethernet ports from the directory, each port once.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "ethernet/fake_rdma_device.hpp"
#include "port/port_source.hpp"
#include "port/sysfs_ports.hpp"

namespace mcastd::port {
namespace {

namespace fs = std::filesystem;

constexpr eth::Mac kMac{0x02, 0x00, 0x4d, 0x00, 0x00, 0x01};
constexpr std::array<std::uint8_t, 4> kIpv4{10, 77, 0, 1};

Gid gid(const char *text) { return *parse_gid(text); }

void write(const fs::path &file, const std::string &text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text << '\n';
}

class SysfsPorts : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/mcastd-sysfs-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        scratch_ = tmpl;
        root_ = scratch_ / "class" / "infiniband"; // FakeRdmaDevice::write takes the /sys
    }
    void TearDown() override { fs::remove_all(scratch_); }

    // The bed's device for host 1: rxe1 port 1 on veth1 (GIDs: 0 link-local v1, 1 IPv4 v2,
    // 2 unused, 3 the ULA v2 when `ipv6`).
    eth::FakeRdmaDevice bed_device(bool ipv6 = false) const {
        return eth::roce_device("rxe1", "veth1", kMac, kIpv4,
                                ipv6 ? std::optional<Gid>(gid("fd00:77::1")) : std::nullopt);
    }
    fs::path port_dir(const std::string &dev, unsigned port) const {
        return root_ / dev / "ports" / std::to_string(port);
    }

    fs::path scratch_;
    fs::path root_;
};

TEST(SysfsTexts, NumbersStatesAndRatesParseAsTheKernelPrintsThem) {
    EXPECT_EQ(parse_sysfs_state("4: ACTIVE\n"), 4);
    EXPECT_EQ(parse_sysfs_state("1: DOWN"), 1);
    EXPECT_EQ(parse_sysfs_state("5: LinkUp\n"), 5);
    EXPECT_EQ(parse_sysfs_state("4"), 4);
    EXPECT_FALSE(parse_sysfs_state("ACTIVE"));
    EXPECT_FALSE(parse_sysfs_state("4 ACTIVE"));
    EXPECT_FALSE(parse_sysfs_state("300: X"));
    EXPECT_EQ(parse_sysfs_rate("25 Gb/sec (1X EDR)\n"), 25u);
    EXPECT_EQ(parse_sysfs_rate("2.5 Gb/sec (1X SDR)\n"), 2u) << "the integer part, as libibumad";
    EXPECT_EQ(parse_sysfs_rate("?"), 0u);
    EXPECT_EQ(parse_sysfs_number("0x0\n"), 0u);
    EXPECT_EQ(parse_sysfs_number("0xffff\n"), 0xffffu);
    EXPECT_EQ(parse_sysfs_number("0x00010000"), 0x10000u);
    EXPECT_EQ(parse_sysfs_number("12\n"), 12u);
    EXPECT_FALSE(parse_sysfs_number("0x"));
    EXPECT_FALSE(parse_sysfs_number("12 Gb"));
    EXPECT_FALSE(parse_sysfs_number(""));
}

TEST_F(SysfsPorts, TheBedsFakeDeviceIsAnActiveEthernetPortWithItsGidTable) {
    bed_device(true).write(scratch_);
    const Discovery d = SysfsPortSource(root_).discover();
    ASSERT_TRUE(d.errors.empty()) << d.errors.front().message;
    ASSERT_EQ(d.ports.size(), 1u);
    const PortAttributes &p = d.ports[0];
    EXPECT_EQ(p.device, "rxe1");
    EXPECT_EQ(p.port_num, 1);
    EXPECT_EQ(p.link_layer, "Ethernet");
    EXPECT_FALSE(p.is_infiniband());
    EXPECT_TRUE(p.is_active());
    EXPECT_EQ(p.phys_state, static_cast<std::uint8_t>(PhysState::link_up));
    EXPECT_EQ(p.rate_gbps, 25u);
    EXPECT_EQ(p.lid, 0);
    EXPECT_EQ(p.sm_lid, 0);
    EXPECT_EQ(p.pkeys, std::vector<std::uint16_t>{0xffff});
    // The port GID is GID index 0, the link-local address from the MAC.
    EXPECT_EQ(p.port_gid(), eth::link_local_gid(kMac));
    EXPECT_EQ(p.gids, (std::vector<GidEntry>{
                          {0, eth::link_local_gid(kMac), GidType::roce_v1, "veth1"},
                          {1, eth::ipv4_mapped_gid(kIpv4), GidType::roce_v2, "veth1"},
                          {3, gid("fd00:77::1"), GidType::roce_v2, "veth1"},
                      }))
        << "index 2 is unused (zeros, no attribute files) and left out";
}

TEST_F(SysfsPorts, UnusedEntriesAsTheKernelShowsThemAreNoEntries) {
    bed_device().write(scratch_);
    // The kernel's unused entry: zeros, and its attributes fail to read (EINVAL there; a
    // directory in a file's place fails the read too, with EISDIR).
    const fs::path dir = port_dir("rxe1", 1);
    write(dir / "gids" / "4", "0000:0000:0000:0000:0000:0000:0000:0000");
    fs::create_directories(dir / "gid_attrs" / "types" / "4");
    fs::create_directories(dir / "gid_attrs" / "ndevs" / "4");
    // A used entry whose attributes fail to read is going away as it is read: not there either.
    write(dir / "gids" / "5", "0000:0000:0000:0000:0000:ffff:0a4d:0005");
    fs::create_directories(dir / "gid_attrs" / "types" / "5");
    const auto table = SysfsPortSource(root_).read_gid_table("rxe1", 1);
    ASSERT_TRUE(std::holds_alternative<GidTable>(table)) << std::get<Error>(table).message;
    const GidTable &t = std::get<GidTable>(table);
    EXPECT_TRUE(t.problems.empty());
    ASSERT_EQ(t.entries.size(), 2u);
    EXPECT_EQ(t.entries[0].index, 0u);
    EXPECT_EQ(t.entries[1].index, 1u);
}

TEST_F(SysfsPorts, MissingOptionalFilesAreZerosAndAPortWithoutStateIsAnErrorOfItsOwn) {
    eth::FakeRdmaDevice dev = bed_device();
    dev.ports.push_back(dev.ports[0]);
    dev.ports[1].number = 2;
    dev.write(scratch_);
    for (const char *f : {"rate", "phys_state", "lid", "sm_lid", "sm_sl", "lid_mask_count"})
        fs::remove(port_dir("rxe1", 1) / f);
    fs::remove_all(port_dir("rxe1", 1) / "pkeys");
    fs::remove(port_dir("rxe1", 2) / "state");
    // Names that are no port are not read at all.
    fs::create_directories(root_ / "rxe1" / "ports" / "x");
    fs::create_directories(root_ / "rxe1" / "ports" / "01");

    const Discovery d = SysfsPortSource(root_).discover();
    ASSERT_EQ(d.ports.size(), 1u);
    const PortAttributes &p = d.ports[0];
    EXPECT_EQ(p.port_num, 1);
    EXPECT_EQ(p.rate_gbps, 0u);
    EXPECT_EQ(p.phys_state, 0);
    EXPECT_TRUE(p.pkeys.empty());
    EXPECT_TRUE(p.is_active());
    EXPECT_EQ(p.gids.size(), 2u);
    ASSERT_EQ(d.errors.size(), 1u);
    EXPECT_EQ(d.errors[0].code, Errc::internal);
    EXPECT_EQ(d.errors[0].message, "cannot read " + (port_dir("rxe1", 2) / "state").string() +
                                       ": No such file or directory");
}

TEST_F(SysfsPorts, APortWithoutALinkLayerFileIsInfiniBandAsLibibumadSaysAndItsTableIsNotRead) {
    eth::FakeRdmaDevice dev = bed_device();
    dev.ports[0].link_layer = "InfiniBand";
    dev.write(scratch_);
    fs::remove(port_dir("rxe1", 1) / "link_layer");
    const Discovery d = SysfsPortSource(root_).discover();
    ASSERT_EQ(d.ports.size(), 1u);
    EXPECT_EQ(d.ports[0].link_layer, "IB");
    EXPECT_TRUE(d.ports[0].is_infiniband());
    EXPECT_TRUE(d.ports[0].gids.empty());
    // Asked for, it is read, with the InfiniBand type.
    const auto table = SysfsPortSource(root_).read_gid_table("rxe1", 1);
    ASSERT_TRUE(std::holds_alternative<GidTable>(table));
    EXPECT_EQ(std::get<GidTable>(table).entries.at(0).type, GidType::ib);
}

TEST_F(SysfsPorts, AProblemInTheGidTableIsReportedAndCostsItsEntryOnly) {
    bed_device().write(scratch_);
    write(port_dir("rxe1", 1) / "gid_attrs" / "types" / "1", "RoCE v3");
    const Discovery d = SysfsPortSource(root_).discover();
    ASSERT_EQ(d.ports.size(), 1u);
    EXPECT_EQ(d.ports[0].gids.size(), 1u);
    ASSERT_EQ(d.errors.size(), 1u);
    EXPECT_EQ(d.errors[0].message, "rxe1/1: gid_attrs/types/1: unknown GID type 'RoCE v3'");
}

TEST_F(SysfsPorts, AReReadSeesAnAddressGoAndComeBackElsewhere) {
    bed_device().write(scratch_);
    const SysfsPortSource source(root_);
    auto read = [&] {
        auto t = source.read_gid_table("rxe1", 1);
        EXPECT_TRUE(std::holds_alternative<GidTable>(t));
        return std::get<GidTable>(t).entries;
    };
    const std::vector<GidEntry> before = read();
    ASSERT_EQ(before.size(), 2u);

    // The IPv4 address removed from veth1: the kernel zeroes its entry.
    const fs::path dir = port_dir("rxe1", 1);
    write(dir / "gids" / "1", eth::sysfs_gid_text(kZeroGid));
    fs::remove(dir / "gid_attrs" / "types" / "1");
    fs::remove(dir / "gid_attrs" / "ndevs" / "1");
    const std::vector<GidEntry> gone = read();
    EXPECT_EQ(diff_gid_tables(before, gone).removed, std::vector<GidEntry>{before[1]});

    // Added back, it took the free index 2.
    write(dir / "gids" / "2", eth::sysfs_gid_text(eth::ipv4_mapped_gid(kIpv4)));
    write(dir / "gid_attrs" / "types" / "2", "RoCE v2");
    write(dir / "gid_attrs" / "ndevs" / "2", "veth1");
    const GidTableChange back = diff_gid_tables(gone, read());
    ASSERT_EQ(back.added.size(), 1u);
    EXPECT_EQ(back.added[0].index, 2u);
    EXPECT_EQ(diff_gid_tables(before, read()).moved.size(), 1u);
}

TEST_F(SysfsPorts, OnePortIsReadByNameAndWhatIsNotThereIsNamed) {
    bed_device().write(scratch_);
    const SysfsPortSource source(root_);
    const auto p = source.read_port("rxe1", 1);
    ASSERT_TRUE(std::holds_alternative<PortAttributes>(p));
    EXPECT_EQ(std::get<PortAttributes>(p).gids.size(), 2u);

    const auto no_dev = source.read_port("mlx5_0", 1);
    ASSERT_TRUE(std::holds_alternative<Error>(no_dev));
    EXPECT_EQ(std::get<Error>(no_dev).code, Errc::no_such_device);
    EXPECT_EQ(std::get<Error>(no_dev).message, "no RDMA device 'mlx5_0' under " + root_.string());
    const auto no_port = source.read_gid_table("rxe1", 2);
    ASSERT_TRUE(std::holds_alternative<Error>(no_port));
    EXPECT_EQ(std::get<Error>(no_port).code, Errc::no_such_port);
    EXPECT_EQ(std::get<Error>(source.read_port("..", 1)).code, Errc::no_such_device) << "not a device name";
}

TEST_F(SysfsPorts, ARootThatDoesNotExistIsAHostWithoutDevices) {
    const Discovery d = SysfsPortSource(scratch_ / "none").discover();
    EXPECT_TRUE(d.ports.empty());
    EXPECT_TRUE(d.errors.empty());
    // Given on the command line it is refused before the daemon starts.
    EXPECT_EQ(sysfs_root_problem(scratch_ / "none"), (scratch_ / "none").string() + ": No such file or directory");
    write(scratch_ / "file", "x");
    EXPECT_EQ(sysfs_root_problem(scratch_ / "file"), (scratch_ / "file").string() + " is not a directory");
    EXPECT_EQ(sysfs_root_problem(scratch_), std::nullopt);
}

// ---- the two sources combined ----

// A source that reports what it is given: libibumad's part in these tests.
struct ListedSource final : PortSource {
    Discovery found;
    std::string name() const override { return "libibumad"; }
    Discovery discover() const override { return found; }
    std::variant<PortAttributes, Error> read_port(std::string_view device, unsigned port) const override {
        for (const PortAttributes &p : found.ports)
            if (p.device == device && p.port_num == port)
                return p;
        return Error{Errc::no_such_device, "no RDMA device '" + std::string(device) + "'", {}};
    }
    std::variant<GidTable, Error> read_gid_table(std::string_view, unsigned) const override {
        return Error{Errc::internal, "libibumad reads no GID table", {}};
    }
};

PortAttributes umad_port(const char *device, std::uint8_t num, const char *link_layer) {
    PortAttributes a;
    a.device = device;
    a.port_num = num;
    a.link_layer = link_layer;
    a.state = static_cast<std::uint8_t>(PortState::active);
    a.lid = 3;
    return a;
}

TEST_F(SysfsPorts, InfiniBandPortsComeFromLibibumadEthernetPortsFromTheDirectoryEachOnce) {
    // The directory: the bed's RoCE device, an InfiniBand device, and a RoCE port named like one
    // of libibumad's InfiniBand ports.
    bed_device().write(scratch_);
    eth::FakeRdmaDevice ib = bed_device();
    ib.name = "mlx5_0";
    ib.ports[0].link_layer = "InfiniBand";
    ib.write(scratch_);
    eth::FakeRdmaDevice clash = bed_device();
    clash.name = "ibsim0";
    clash.write(scratch_);
    // libibumad: the same InfiniBand device, the simulator's port, and the RoCE port it sees too.
    auto umad = std::make_unique<ListedSource>();
    umad->found.ports = {umad_port("ibsim0", 1, "IB"), umad_port("mlx5_0", 1, "InfiniBand"),
                         umad_port("rxe1", 1, "Ethernet")};
    umad->found.errors.push_back(Error{Errc::internal, "libibumad: something", {}});
    const CombinedPortSource source(std::move(umad), std::make_unique<SysfsPortSource>(root_));

    const Discovery d = source.discover();
    ASSERT_EQ(d.ports.size(), 3u);
    // libibumad's InfiniBand ports first, in its order, then the directory's Ethernet port.
    EXPECT_EQ(d.ports[0].device, "ibsim0");
    EXPECT_EQ(d.ports[0].lid, 3) << "libibumad's";
    EXPECT_EQ(d.ports[1].device, "mlx5_0");
    EXPECT_EQ(d.ports[1].lid, 3) << "libibumad's, not the directory's";
    EXPECT_EQ(d.ports[2].device, "rxe1");
    EXPECT_EQ(d.ports[2].gids.size(), 2u) << "the directory's, with its GID table";
    ASSERT_EQ(d.errors.size(), 2u);
    EXPECT_EQ(d.errors[0].message, "libibumad: something");
    EXPECT_EQ(d.errors[1].message, "ibsim0/1 under " + root_.string() +
                                       " is left out: libibumad serves an InfiniBand port of that name");

    // One port read afresh comes from the same source as at discovery.
    const auto rxe = source.read_port("rxe1", 1);
    ASSERT_TRUE(std::holds_alternative<PortAttributes>(rxe));
    EXPECT_EQ(std::get<PortAttributes>(rxe).gids.size(), 2u);
    const auto mlx = source.read_port("mlx5_0", 1);
    ASSERT_TRUE(std::holds_alternative<PortAttributes>(mlx));
    EXPECT_EQ(std::get<PortAttributes>(mlx).lid, 3);
    const auto none = source.read_port("mlx5_9", 1);
    ASSERT_TRUE(std::holds_alternative<Error>(none));
    EXPECT_EQ(std::get<Error>(none).code, Errc::no_such_device);
    // GID tables come from the directory.
    const auto table = source.read_gid_table("rxe1", 1);
    ASSERT_TRUE(std::holds_alternative<GidTable>(table));
    EXPECT_EQ(std::get<GidTable>(table).entries.size(), 2u);
}

} // namespace
} // namespace mcastd::port
