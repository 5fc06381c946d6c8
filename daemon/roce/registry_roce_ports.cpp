// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "roce/registry_roce_ports.hpp"

#include "port/netdevs.hpp"

namespace mcastd::roce {

std::optional<RocePort> RegistryRocePorts::port(PortIndex index) const {
    const port::RegisteredPort *p = registry_.get(index);
    if (!p || p->link_layer != LinkLayer::ethernet)
        return std::nullopt;
    RocePort out{.name = p->name, .gids = {}, .default_type = std::nullopt};
    for (const port::GidEntry &e : p->attributes.gids)
        if (is_roce(e.type))
            out.gids.push_back(e);
    return out;
}

std::optional<unsigned> RegistryRocePorts::netdev_mtu(const std::string &netdev) const {
    const port::NetdevState n = port::lookup_netdev(netdev);
    if (!n.mtu)
        return std::nullopt;
    return n.mtu;
}

} // namespace mcastd::roce
