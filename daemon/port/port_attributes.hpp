// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the daemon knows about one local CA port: pure data, no libibumad.
//
// A PortSource (port_source.hpp) fills PortAttributes: libibumad for InfiniBand ports,
// sysfs_ports.hpp for Ethernet ones; portinfo_smp.hpp decodes the live PortInfo attribute that a
// directed-route SMP returns. They use the IBA encodings below.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/gid.hpp"
#include "common/link_layer.hpp"
#include "port/gid_table.hpp"

namespace mcastd::port {

// PortInfo.PortState (IBA 14.2.5.6); also the number in sysfs "state" ("4: ACTIVE").
// 0 means "no state change" and is only valid in a Set.
enum class PortState : std::uint8_t { no_change = 0, down = 1, init = 2, armed = 3, active = 4 };

// PortInfo.PortPhysicalState; also the number in sysfs "phys_state" ("5: LinkUp").
enum class PhysState : std::uint8_t {
    no_change = 0,
    sleep = 1,
    polling = 2,
    disabled = 3,
    port_configuration_training = 4,
    link_up = 5,
    link_error_recovery = 6,
    phy_test = 7,
};

// "DOWN", "INIT", "ARMED", "ACTIVE"; "state(N)" for values outside the enum.
std::string port_state_name(std::uint8_t state);
// "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", ...; "phys(N)".
std::string phys_state_name(std::uint8_t phys);

// PortInfo.CapabilityMask bits the daemon looks at.
namespace capability {
inline constexpr std::uint32_t is_sm = 1u << 1;
inline constexpr std::uint32_t is_client_reregistration_supported = 1u << 25;
} // namespace capability

inline constexpr std::uint16_t kDefaultPkey = 0xFFFF;
inline constexpr std::uint16_t kPkeyFullMember = 0x8000;
inline constexpr std::uint16_t kPkeyBaseMask = 0x7FFF;

// Index of the full-member P_Key whose base (low 15 bits) is that of `pkey`, e.g. the index
// of 0xFFFF for the default partition. nullopt when the table has no such entry or when the
// base is 0 (0x0000 and 0x8000 are invalid P_Keys, and empty table slots read 0x0000).
std::optional<std::uint16_t> find_full_member_pkey(std::span<const std::uint16_t> table,
                                                   std::uint16_t pkey);

// The P_Key index to put on SA MADs: the full-member entry for `pkey` (default 0xFFFF), or 0
// when there is none, as the kernel's SA client does.
std::uint16_t pkey_index_or_default(std::span<const std::uint16_t> table,
                                    std::uint16_t pkey = kDefaultPkey);

// One port of one CA, as discovery reports it. On hardware sysfs is live; under umad2sim it
// is a snapshot taken when the process first touched the device (doc/testbed.md §5,
// quirk 1), so an InfiniBand port's live LID/state/SM LID come from the PortInfo SMP instead.
// An Ethernet (RoCE) port has no LID, SM or P_Key that matter: its GID table does.
struct PortAttributes {
    std::string device;           // CA name: "mlx5_0", "ibsim0"
    std::uint8_t port_num = 0;    // 1-based on a CA (0 is a switch's management port)
    std::uint64_t port_guid = 0;  // host order
    std::uint64_t gid_prefix = 0; // host order: GID index 0's subnet prefix
    std::uint16_t lid = 0;        // base LID
    std::uint8_t lmc = 0;
    std::uint16_t sm_lid = 0;
    std::uint8_t sm_sl = 0;
    std::uint8_t state = 0;      // PortState value
    std::uint8_t phys_state = 0; // PhysState value
    // Integer part of the Gb/s number sysfs prints ("2.5 Gb/sec (1X SDR)" gives 2), as
    // libibumad parses it. Not the IBA rate enum.
    unsigned rate_gbps = 0;
    std::uint32_t capability_mask = 0; // host order
    std::string link_layer;            // "InfiniBand", "Ethernet" ("IB" when sysfs has none)
    std::vector<std::uint16_t> pkeys;  // the P_Key table by index, host order
    // Active MTU (IBA enum 1 = 256 .. 5 = 4096): not in sysfs, so 0 until a PortInfo SMP
    // answered (Service::refresh_port).
    std::uint8_t mtu = 0;
    // The used entries of the GID table, in index order: read for Ethernet ports (a RoCE
    // membership's source GID and netdev); empty for InfiniBand, where the port GID is enough.
    std::vector<GidEntry> gids;

    Gid port_gid() const { return make_gid(gid_prefix, port_guid); }
    // By the registry's one rule (link_layer_from): anything but "Ethernet" is InfiniBand.
    bool is_infiniband() const { return link_layer_from(link_layer) == LinkLayer::infiniband; }
    bool is_active() const { return state == static_cast<std::uint8_t>(PortState::active); }

    bool operator==(const PortAttributes &) const = default;
};

} // namespace mcastd::port
