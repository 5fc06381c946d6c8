// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A fake RDMA device: a directory tree laid out like the kernel's /sys/class/infiniband/<dev>,
// for the daemon's RoCE code to discover under a scratch directory it is pointed at instead of
// /sys (doc/ethernet-bed.md §5). Only what a RoCE port's discovery reads is written:
//
//   <root>/class/infiniband/<dev>/node_type            "1: CA"
//                                 node_guid            "0000:4dff:fe00:0001"
//                                 ports/<n>/state       "4: ACTIVE"
//                                           phys_state  "5: LinkUp"
//                                           link_layer  "Ethernet"
//                                           lid, sm_lid "0x0"; lid_mask_count, sm_sl "0"
//                                           rate        "25 Gb/sec (1X EDR)"
//                                           pkeys/<i>   "0xffff"
//                                           gids/<i>    "fe80:0000:0000:0000:0000:4dff:fe00:0001"
//                                           gid_attrs/types/<i>  "IB/RoCE v1" or "RoCE v2"
//                                           gid_attrs/ndevs/<i>  "veth1"
//
// Every file ends with a newline, as sysfs's do. An unused GID entry reads as all zeros and has
// no gid_attrs files: the kernel's fail with EINVAL there, the fake's do not exist (ENOENT).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/gid.hpp"
#include "ethernet/ip_group.hpp"

namespace mcastd::eth {

struct FakeGidEntry {
    Gid gid{};         // all zeros for an unused entry
    std::string type{}; // "IB/RoCE v1", "RoCE v2"; "" for an unused entry (no gid_attrs files)
    std::string ndev{}; // the netdev the GID belongs to
};

inline constexpr const char *kRoceV1 = "IB/RoCE v1";
inline constexpr const char *kRoceV2 = "RoCE v2";

struct FakeRdmaPort {
    unsigned number = 1;
    std::string state = "4: ACTIVE";
    std::string phys_state = "5: LinkUp";
    std::string link_layer = "Ethernet";
    std::string rate = "25 Gb/sec (1X EDR)";
    std::vector<std::uint16_t> pkeys{0xffff};
    std::vector<FakeGidEntry> gids{}; // the GID table, index = position
};

// The {} initializers let designated initializers skip members without
// -Wmissing-field-initializers.
struct FakeRdmaDevice {
    std::string name{};
    std::uint64_t node_guid = 0;
    std::string node_type = "1: CA";
    std::vector<FakeRdmaPort> ports{};

    // Writes the tree under <sysfs_root>/class/infiniband/<name> (sysfs_root stands for /sys),
    // replacing an earlier one of the same name; returns the device's directory. Throws
    // std::runtime_error naming the file it could not write.
    std::filesystem::path write(const std::filesystem::path &sysfs_root) const;
};

// The 64-bit identifier made from a MAC (modified EUI-64: ff:fe in the middle, the
// universal/local bit inverted), the node GUID of a RoCE device and the low half of its
// link-local GID.
std::uint64_t eui64_from_mac(const Mac &mac);
// fe80::<EUI-64 of the MAC>: the link-local address of the netdev, a RoCE v1 GID.
Gid link_local_gid(const Mac &mac);
// ::ffff:a.b.c.d: the GID a RoCE device holds for an IPv4 address of its netdev.
Gid ipv4_mapped_gid(const std::array<std::uint8_t, 4> &ipv4);

// The text sysfs shows: a GID as eight groups of four hex digits
// ("0000:0000:0000:0000:0000:ffff:0a4d:0001"), a GUID as four ("0000:4dff:fe00:0001").
std::string sysfs_gid_text(const Gid &gid);
std::string sysfs_guid_text(std::uint64_t guid);

// The device of a RoCE port on `ndev`: port 1, ACTIVE, link layer Ethernet; its GID table has
// at index 0 the link-local GID from the MAC (RoCE v1), at 1 the IPv4 address's (RoCE v2), at 2
// an unused entry, and at 3 the IPv6 address's (RoCE v2) when there is one.
FakeRdmaDevice roce_device(const std::string &name, const std::string &ndev, const Mac &mac,
                           const std::array<std::uint8_t, 4> &ipv4,
                           const std::optional<Gid> &ipv6 = std::nullopt);

} // namespace mcastd::eth
