// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/netdevs.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <map>

namespace mcastd::port {

NetdevState lookup_netdev(const std::string &netdev) {
    NetdevState out;
    if (netdev.empty() || netdev.size() >= IFNAMSIZ)
        return out;
    const unsigned index = ::if_nametoindex(netdev.c_str());
    if (index == 0)
        return out; // ENODEV: not in this namespace
    out.present = true;
    out.ifindex = static_cast<int>(index);
    // Any socket of the namespace answers the interface ioctls (the kernel falls back to
    // dev_ioctl() for every family): AF_UNIX, since the shipped unit's
    // RestrictAddressFamilies=AF_UNIX AF_NETLINK refuses an AF_INET socket.
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return out;
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
    if (::ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
        out.mtu = static_cast<unsigned>(ifr.ifr_mtu);
    ::close(fd);
    return out;
}

void annotate_netdevs(std::vector<GidEntry> &entries, const NetdevLookup &lookup) {
    std::map<std::string, NetdevState> seen;
    for (GidEntry &e : entries) {
        if (e.netdev.empty())
            continue; // InfiniBand: no netdev
        auto it = seen.find(e.netdev);
        if (it == seen.end())
            it = seen.emplace(e.netdev, lookup(e.netdev)).first;
        e.netdev_gone = !it->second.present;
        e.ifindex = it->second.ifindex;
        e.mtu = it->second.mtu;
    }
}

} // namespace mcastd::port
