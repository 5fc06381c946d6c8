// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the engine asks about the ports it serves. The facts of a port (its name, GID, link
// layer, whether it is usable) are kept once, in the daemon's port registry
// (port/port_registry.hpp), which answers through this interface; the engine keeps only its
// memberships per port, indexed by PortIndex.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "common/gid.hpp"
#include "common/link_layer.hpp"
#include "core/sa_service.hpp" // PortIndex

namespace mcastd {

class PortFacts {
public:
    // The port `device`/`port`, if it is served. The one lookup by name every layer uses.
    virtual std::optional<PortIndex> find(std::string_view device, std::uint8_t port) const = 0;
    // Why find() found nothing, naming what exists: no-such-device or no-such-port.
    virtual Error not_found(std::string_view device, std::uint8_t port) const = 0;

    // Of a port the registry has (PortIndex from find() or add()):
    virtual const std::string &name(PortIndex port) const = 0; // "mlx5_0/1"
    virtual Gid gid(PortIndex port) const = 0;                 // the port GID memberships are made from
    virtual LinkLayer link_layer(PortIndex port) const = 0;
    // Whether memberships can be made on it now (InfiniBand: ACTIVE with an SM).
    virtual bool usable(PortIndex port) const = 0;

protected:
    ~PortFacts() = default;
};

} // namespace mcastd
