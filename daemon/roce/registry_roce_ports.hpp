// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The RoCE backend's view of the ports (roce_port.hpp) over the daemon's port registry: an
// Ethernet port's GID table as discovery last read it (port::PortRegistry, kept current by
// Service::gid_table), and a netdev's MTU asked of the kernel in the daemon's own network
// namespace (SIOCGIFMTU), where the netdevs of its RDMA devices' GID tables are.
#pragma once

#include "port/port_registry.hpp"
#include "roce/roce_port.hpp"

namespace mcastd::roce {

class RegistryRocePorts final : public RocePorts {
public:
    explicit RegistryRocePorts(const port::PortRegistry &registry) : registry_(registry) {}

    std::optional<RocePort> port(PortIndex port) const override;
    std::optional<unsigned> netdev_mtu(const std::string &netdev) const override;

private:
    const port::PortRegistry &registry_;
};

} // namespace mcastd::roce
