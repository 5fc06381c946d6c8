// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PortRegistry: every served port once, the one lookup by name every layer uses, and the
// error that names what exists when a name matches nothing.
#include <gtest/gtest.h>

#include <stdexcept>

#include "port/port_registry.hpp"

namespace mcastd::port {
namespace {

PortAttributes attrs(const char *dev, std::uint8_t num, const char *link_layer = "InfiniBand") {
    PortAttributes a;
    a.device = dev;
    a.port_num = num;
    a.gid_prefix = 0xfe80000000000000ULL;
    a.port_guid = 0x100000u + num;
    a.link_layer = link_layer;
    return a;
}

TEST(PortRegistry, PortsGetIndexesInOrderAndAreFoundByName) {
    PortRegistry r;
    EXPECT_EQ(r.add(attrs("mlx5_0", 1), true), 0u);
    EXPECT_EQ(r.add(attrs("mlx5_0", 2), false), 1u);
    EXPECT_EQ(r.add(attrs("mlx5_1", 1), true), 2u);
    EXPECT_EQ(r.find("mlx5_0", 2), 1u);
    EXPECT_EQ(r.find("mlx5_1", 1), 2u);
    EXPECT_FALSE(r.find("mlx5_1", 2));
    EXPECT_FALSE(r.find("mlx5", 1)) << "a prefix of a name is not the name";
    EXPECT_EQ(r.name(1), "mlx5_0/2");
    EXPECT_EQ(r.gid(1), make_gid(0xfe80000000000000ULL, 0x100002));
    EXPECT_TRUE(r.usable(0));
    EXPECT_FALSE(r.usable(1));
    EXPECT_EQ(r.of_device("mlx5_0"), (std::vector<PortIndex>{0, 1}));
    EXPECT_EQ(port_name(r, 2), "mlx5_1/1");
    EXPECT_EQ(port_name(r, 3), "?");
    EXPECT_EQ(r.get(3), nullptr);
}

TEST(PortRegistry, APortIsRegisteredOnce) {
    PortRegistry r;
    r.add(attrs("mlx5_0", 1), true);
    EXPECT_THROW(r.add(attrs("mlx5_0", 1), true), std::invalid_argument);
    EXPECT_EQ(r.size(), 1u);
}

TEST(PortRegistry, TheLinkLayerComesFromTheAttributes) {
    PortRegistry r;
    r.add(attrs("mlx5_0", 1, "InfiniBand"), true);
    r.add(attrs("mlx5_0", 2, "IB"), true); // libibumad's word when sysfs has none
    r.add(attrs("mlx5_1", 1, "Ethernet"), true);
    EXPECT_EQ(r.link_layer(0), LinkLayer::infiniband);
    EXPECT_EQ(r.link_layer(1), LinkLayer::infiniband);
    EXPECT_EQ(r.link_layer(2), LinkLayer::ethernet);
}

TEST(PortRegistry, WhatFindDidNotFindIsNamedWithWhatExists) {
    PortRegistry r;
    r.add(attrs("mlx5_0", 1), true);
    r.add(attrs("mlx5_0", 2), true);
    r.add(attrs("mlx5_1", 1), true);
    const Error dev = r.not_found("mlx9_9", 1);
    EXPECT_EQ(dev.code, Errc::no_such_device);
    EXPECT_EQ(dev.message, "no RDMA device 'mlx9_9' (devices: mlx5_0, mlx5_1)");
    const Error port = r.not_found("mlx5_0", 3);
    EXPECT_EQ(port.code, Errc::no_such_port);
    EXPECT_EQ(port.message, "mlx5_0 has no port 3 (ports: 1, 2)");
    EXPECT_EQ(PortRegistry{}.not_found("mlx5_0", 1).message, "no RDMA device 'mlx5_0' (devices: none)");
}

TEST(PortRegistry, UpdatesKeepOneCopyOfEachFact) {
    PortRegistry r;
    const PortIndex p = r.add(attrs("mlx5_0", 1), false);
    EXPECT_TRUE(r.set_usable(p, true));
    EXPECT_FALSE(r.set_usable(p, true)) << "no change";
    r.set_sa(p, 7, 2);
    r.set_port_info(p, 12, 4, 5);
    r.set_pkeys(p, {0x7fff, 0xffff});
    r.set_sm(p, SmView{7, 0x0002c90300000001, 42, true});
    const RegisteredPort &e = r.at(p);
    EXPECT_EQ(e.attributes.sm_lid, 7);
    EXPECT_EQ(e.attributes.sm_sl, 2);
    EXPECT_EQ(e.attributes.lid, 12);
    EXPECT_EQ(e.attributes.state, 4);
    EXPECT_EQ(e.attributes.mtu, 5);
    EXPECT_EQ(e.attributes.pkeys, (std::vector<std::uint16_t>{0x7fff, 0xffff}));
    EXPECT_EQ(e.sm, (SmView{7, 0x0002c90300000001, 42, true}));
    EXPECT_TRUE(e.usable);
}

} // namespace
} // namespace mcastd::port
