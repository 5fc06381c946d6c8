// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Discovery of the local CAs and their ports through libibumad (which reads sysfs).
//
// The only I/O of daemon/port. The conversion from libibumad's struct is a separate pure
// function so that byte order and field mapping are unit-tested without a device.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "port/port_attributes.hpp"

struct umad_port; // <infiniband/umad.h>, kept out of this header

namespace mcastd::port {

// libibumad's port record -> PortAttributes (byte-swaps the big-endian GUID, prefix and
// capability mask; copies the P_Key table).
PortAttributes port_from_umad(const ::umad_port &p);

// Names of the CAs libibumad sees ("mlx5_0", "ibsim0"), or the reason it cannot list them.
std::variant<std::vector<std::string>, Error> list_devices();

struct Discovery {
    std::vector<PortAttributes> ports; // every port of every CA that could be read
    std::vector<Error> errors;         // one per CA or port that could not be read
};

// Every port of every CA. One unreadable CA does not hide the others.
Discovery discover_ports();

// One port, read afresh (on hardware sysfs is live, so this is the current state).
// Errors: no_such_device, no_such_port, internal (libibumad failed otherwise).
std::variant<PortAttributes, Error> discover_port(std::string_view device, unsigned port_num);

} // namespace mcastd::port
