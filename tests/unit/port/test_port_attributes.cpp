// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// P_Key index helpers, state names, and the mapping from libibumad's port record.
#include <gtest/gtest.h>

#include <endian.h>
#include <infiniband/umad.h>

#include <cstring>

#include "port/port_discovery.hpp"
#include "port/port_attributes.hpp"

namespace mcastd::port {
namespace {

using Table = std::vector<std::uint16_t>;

TEST(PortPkeyIndex, FindsTheDefaultPartition) {
    EXPECT_EQ(find_full_member_pkey(Table{0xffff, 0, 0}, 0xffff), 0);
    EXPECT_EQ(find_full_member_pkey(Table{0x8001, 0x7fff, 0xffff}, 0xffff), 2);
    EXPECT_EQ(pkey_index_or_default(Table{0x8001, 0x7fff, 0xffff}), 2);
}

TEST(PortPkeyIndex, MatchesTheBaseButOnlyAFullMemberEntry) {
    const Table t{0xffff, 0x0000, 0x0002, 0x8001, 0x8002};
    // Base 0x0001: the limited form of the request does not matter, the entry must be full.
    EXPECT_EQ(find_full_member_pkey(t, 0x0001), 3);
    EXPECT_EQ(find_full_member_pkey(t, 0x8001), 3);
    // 0x0002 (limited) sits before 0x8002 (full): the full one is chosen.
    EXPECT_EQ(find_full_member_pkey(t, 0x0002), 4);
}

TEST(PortPkeyIndex, FallsBackToIndexZero) {
    // Only the limited default 0x7fff: no full member of the default partition.
    const Table limited{0x8001, 0x7fff};
    EXPECT_EQ(find_full_member_pkey(limited, 0xffff), std::nullopt);
    EXPECT_EQ(pkey_index_or_default(limited), 0);
    EXPECT_EQ(pkey_index_or_default(limited, 0x0003), 0);
    EXPECT_EQ(pkey_index_or_default(Table{}), 0);
    EXPECT_EQ(find_full_member_pkey(Table{}, 0xffff), std::nullopt);
}

TEST(PortPkeyIndex, InvalidPkeysNeverMatch) {
    // 0x0000 and 0x8000 are invalid P_Keys; empty slots read 0x0000.
    const Table t{0x0000, 0x8000, 0xffff};
    EXPECT_EQ(find_full_member_pkey(t, 0x0000), std::nullopt);
    EXPECT_EQ(find_full_member_pkey(t, 0x8000), std::nullopt);
    EXPECT_EQ(find_full_member_pkey(t, 0xffff), 2);
}

TEST(PortStateNames, NamesAndUnknownValues) {
    EXPECT_EQ(port_state_name(4), "ACTIVE");
    EXPECT_EQ(port_state_name(1), "DOWN");
    EXPECT_EQ(port_state_name(9), "state(9)");
    EXPECT_EQ(phys_state_name(5), "LinkUp");
    EXPECT_EQ(phys_state_name(2), "Polling");
    EXPECT_EQ(phys_state_name(12), "phys(12)");
}

TEST(PortFromUmad, ConvertsByteOrderAndCopiesThePkeyTable) {
    std::uint16_t pkeys[] = {0xffff, 0x8001, 0x0000};
    umad_port_t u{};
    std::strcpy(u.ca_name, "mlx5_0");
    u.portnum = 2;
    u.base_lid = 0x1234;
    u.lmc = 2;
    u.sm_lid = 0x0042;
    u.sm_sl = 5;
    u.state = 4;
    u.phys_state = 5;
    u.rate = 100;
    u.capmask = htobe32(0x02510a6a);
    u.gid_prefix = htobe64(0xfe80000000000000);
    u.port_guid = htobe64(0x0002c90300a1b2c3);
    u.pkeys_size = 3;
    u.pkeys = pkeys;
    std::strcpy(u.link_layer, "InfiniBand");

    PortAttributes a = port_from_umad(u);
    EXPECT_EQ(a.device, "mlx5_0");
    EXPECT_EQ(a.port_num, 2);
    EXPECT_EQ(a.lid, 0x1234);
    EXPECT_EQ(a.lmc, 2);
    EXPECT_EQ(a.sm_lid, 0x0042);
    EXPECT_EQ(a.sm_sl, 5);
    EXPECT_EQ(a.state, 4);
    EXPECT_EQ(a.phys_state, 5);
    EXPECT_EQ(a.rate_gbps, 100u);
    EXPECT_EQ(a.capability_mask, 0x02510a6au);
    EXPECT_EQ(a.gid_prefix, 0xfe80000000000000u);
    EXPECT_EQ(a.port_guid, 0x0002c90300a1b2c3u);
    EXPECT_EQ(format_gid(a.port_gid()), "fe80::2:c903:a1:b2c3");
    EXPECT_EQ(a.pkeys, (Table{0xffff, 0x8001, 0x0000}));
    EXPECT_TRUE(a.is_infiniband());
    EXPECT_TRUE(a.is_active());
    EXPECT_TRUE(a.capability_mask & capability::is_client_reregistration_supported);
}

TEST(PortFromUmad, RoceAndEmptyTables) {
    umad_port_t u{};
    std::strcpy(u.ca_name, "mlx5_1");
    u.portnum = 1;
    u.state = 1;
    std::strcpy(u.link_layer, "Ethernet");
    PortAttributes a = port_from_umad(u);
    EXPECT_FALSE(a.is_infiniband());
    EXPECT_FALSE(a.is_active());
    EXPECT_TRUE(a.pkeys.empty());
    // libibumad's default when sysfs has no link_layer file (as under umad2sim).
    std::strcpy(u.link_layer, "IB");
    EXPECT_TRUE(port_from_umad(u).is_infiniband());
}

TEST(PortFromUmad, UnterminatedNamesStayInBounds) {
    umad_port_t u{};
    std::memset(u.ca_name, 'x', sizeof u.ca_name);
    std::memset(u.link_layer, 'y', sizeof u.link_layer);
    PortAttributes a = port_from_umad(u);
    EXPECT_EQ(a.device, std::string(sizeof u.ca_name, 'x'));
    EXPECT_EQ(a.link_layer, std::string(sizeof u.link_layer, 'y'));
}

} // namespace
} // namespace mcastd::port
