// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Where the daemon's ports and its SA come from: the host's InfiniBand ports over libibumad
// (HostPorts, host_ports.hpp), or in tests a fake SA with ports made by hand. The Daemon builds
// the Service over sa(), then lets the backend add its ports.
#pragma once

#include "core/sa_service.hpp"

namespace mcastd {

class Service;

class PortBackend {
public:
    virtual ~PortBackend() = default;
    // What the engine sends its SA work to.
    virtual SaService &sa() = 0;
    // Adds the ports to `service` and starts feeding it their events and SA counters. Throws
    // std::runtime_error naming the port when a configured one cannot be used, or when none is
    // usable at all.
    virtual void open(Service &service) = 0;
    // Drops every SA transaction in flight without an answer. After the loop has ended, before
    // the service goes: nothing may arm a timer any more.
    virtual void quiesce() = 0;
};

} // namespace mcastd
