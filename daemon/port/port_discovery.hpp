// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Discovery of the local CAs and their ports through libibumad (which reads sysfs): the
// InfiniBand half of the daemon's PortSource (port_source.hpp).
//
// The only libibumad of daemon/port. The conversion from libibumad's struct is a separate pure
// function so that byte order and field mapping are unit-tested without a device.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "port/port_attributes.hpp"
#include "port/port_source.hpp"

struct umad_port; // <infiniband/umad.h>, kept out of this header

namespace mcastd::port {

// libibumad's port record -> PortAttributes (byte-swaps the big-endian GUID, prefix and
// capability mask; copies the P_Key table).
PortAttributes port_from_umad(const ::umad_port &p);

// Names of the CAs libibumad sees ("mlx5_0", "ibsim0"), or the reason it cannot list them.
std::variant<std::vector<std::string>, Error> list_devices();

// Every port of every CA. One unreadable CA does not hide the others.
Discovery discover_ports();

// One port, read afresh (on hardware sysfs is live, so this is the current state).
// Errors: no_such_device, no_such_port, internal (libibumad failed otherwise).
std::variant<PortAttributes, Error> discover_port(std::string_view device, unsigned port_num);

// The functions above as a PortSource. libibumad reads no GID table: read_gid_table fails.
class UmadPortSource final : public PortSource {
public:
    std::string name() const override { return "libibumad"; }
    Discovery discover() const override { return discover_ports(); }
    std::variant<PortAttributes, Error> read_port(std::string_view device, unsigned port) const override {
        return discover_port(device, port);
    }
    std::variant<GidTable, Error> read_gid_table(std::string_view device, unsigned port) const override;
};

// The daemon's discovery: InfiniBand ports from libibumad, Ethernet ports (with their GID
// tables) from `sysfs_root`, a directory laid out like /sys/class/infiniband
// (CombinedPortSource, sysfs_ports.hpp).
std::unique_ptr<PortSource> host_port_source(const std::string &sysfs_root);

} // namespace mcastd::port
