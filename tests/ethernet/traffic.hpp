// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Traffic on the Ethernet bed (doc/ethernet-bed.md §4): a sender of UDP datagrams to RoCE v2's
// port from a host, and a counter of what reaches a host's interface, whether or not any socket
// there listens. Both are sockets made in the host's namespace (netns.hpp) and used from the
// test's own thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "ethernet/ip_group.hpp"
#include "ethernet/netns.hpp"

namespace mcastd::eth {

// RoCE v2 runs over UDP to this port (IANA); what the bed sends and counts.
inline constexpr std::uint16_t kRoceV2Port = 4791;

// An AF_PACKET socket on one interface that counts the incoming frames carrying UDP to port
// 4791, by destination MAC. Frames the host sends, and everything else (IGMP and MLD reports,
// which an IGMPv2 host sends to the group address itself, ARP, neighbour discovery), are not
// counted, so a count is exactly the RoCE v2 traffic the switch delivered to this port.
class FrameCounter {
public:
    FrameCounter(const std::string &ns, const std::string &ifname);

    // Frames so far to `dst` (reads what has arrived first).
    std::size_t count(const Mac &dst);
    std::size_t count(const IpGroup &group) { return count(group.mac()); }
    // Waits until count(dst) >= at_least, woken by the socket (no polling); false on timeout.
    bool wait_for(const Mac &dst, std::size_t at_least, std::chrono::milliseconds timeout);
    bool wait_for(const IpGroup &group, std::size_t at_least, std::chrono::milliseconds timeout) {
        return wait_for(group.mac(), at_least, timeout);
    }
    // Every destination counted so far, for failure messages: "01:00:5e:01:02:03=5 ...".
    std::string summary();

private:
    void drain();
    std::string where_;
    UniqueFd fd_;
    std::map<Mac, std::size_t> counts_;
};

// UDP datagrams to port 4791 from one host: multicast leaves by the host's interface
// (IP_MULTICAST_IF with its address, IPV6_MULTICAST_IF with its index), unicast by its routes.
class DatagramSender {
public:
    DatagramSender(const std::string &ns, const std::string &ifname, const std::string &ipv4);

    void send(const IpGroup &group, std::string_view payload = "rdma-mcastd ethernet bed");
    // To a unicast address ("10.77.0.1", "fd00:77::1"): the bed's markers.
    void send_to(const std::string &address, std::string_view payload = "rdma-mcastd ethernet bed");

private:
    std::string where_;
    UniqueFd v4_, v6_;
};

} // namespace mcastd::eth
