// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "roce/registry_roce_ports.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace mcastd::roce {

std::optional<RocePort> RegistryRocePorts::port(PortIndex index) const {
    const port::RegisteredPort *p = registry_.get(index);
    if (!p || p->link_layer != LinkLayer::ethernet)
        return std::nullopt;
    RocePort out{.name = p->name, .gids = {}, .default_type = std::nullopt};
    for (const port::GidEntry &e : p->attributes.gids)
        if (e.type == GidType::roce_v1 || e.type == GidType::roce_v2)
            out.gids.push_back(RoceGid{e.index, e.gid, e.type, e.netdev});
    return out;
}

std::optional<unsigned> RegistryRocePorts::netdev_mtu(const std::string &netdev) const {
    if (netdev.empty() || netdev.size() >= IFNAMSIZ)
        return std::nullopt;
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return std::nullopt;
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
    const int r = ::ioctl(fd, SIOCGIFMTU, &ifr);
    ::close(fd);
    if (r < 0 || ifr.ifr_mtu <= 0)
        return std::nullopt;
    return static_cast<unsigned>(ifr.ifr_mtu);
}

} // namespace mcastd::roce
