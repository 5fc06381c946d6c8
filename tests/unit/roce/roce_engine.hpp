// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The engine's tests over the RoCE backend serve one Ethernet port, rxe0/1 (index 0).
#pragma once

#include "core/engine.hpp"
#include "port/port_registry.hpp"

namespace mcastd::test {

// Registers rxe0/1, an Ethernet port, usable, and has the engine serve it (its backend set).
inline PortIndex serve_rxe0(port::PortRegistry &registry, Engine &engine) {
    port::PortAttributes a;
    a.device = "rxe0";
    a.port_num = 1;
    a.link_layer = "Ethernet";
    const PortIndex index = registry.add(a, true);
    engine.add_port(index);
    return index;
}

} // namespace mcastd::test
