// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the RoCE backend needs to know of a port (doc/roce-multicast.md §3, §5): its GID table
// (which GID, of which type, on which netdev) and the netdev's MTU. Discovery reads them; the
// caller that wires the backend in fills these in from it, asked at every make so that they
// are current.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/gid.hpp"
#include "common/roce_address.hpp"
#include "core/sa_service.hpp" // PortIndex
#include "port/gid_table.hpp"

namespace mcastd::roce {

// One used entry of a port's GID table, as discovery reads it and HostPorts looks its netdev up
// (port/gid_table.hpp). A group is made from an entry whose netdev is not gone; one made from
// an entry that differs now in any field is made again.
using RoceGid = port::GidEntry;

struct RocePort {
    std::string name;          // "rxe0/1", for messages
    std::vector<RoceGid> gids; // the used entries, any order
    // The GID type a join that names none gets: the port's default RoCE mode (rdma_cm's
    // configfs default_roce_mode) when known, else RoCE v2.
    std::optional<GidType> default_type;
};

class RocePorts {
public:
    // The port as it is now; nullopt when it is not a RoCE port the caller knows.
    virtual std::optional<RocePort> port(PortIndex port) const = 0;
    // The MTU of `netdev` in bytes; nullopt when it cannot be read.
    virtual std::optional<unsigned> netdev_mtu(const std::string &netdev) const = 0;

protected:
    ~RocePorts() = default;
};

} // namespace mcastd::roce
