// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/traffic.hpp"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace mcastd::eth {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void throw_errno(const std::string &what, int err = errno) {
    throw std::system_error(err, std::generic_category(), what);
}

// Room for thousands of frames, so a test that counts late loses none (needs CAP_NET_ADMIN,
// which the bed has; plain SO_RCVBUF would be capped by net.core.rmem_max).
constexpr int kReceiveBuffer = 8 << 20;

// Does this Ethernet frame carry UDP to port 4791? No VLAN tags and no IPv6 extension headers
// on the bed, and a fragment's tail has no UDP header.
bool is_roce_v2(const std::uint8_t *frame, std::size_t len) {
    if (len < ETH_HLEN)
        return false;
    const unsigned type = frame[12] << 8 | frame[13];
    const std::uint8_t *ip = frame + ETH_HLEN;
    const std::size_t ip_len = len - ETH_HLEN;
    std::size_t udp = 0;
    if (type == ETH_P_IP && ip_len >= 20) {
        const std::size_t ihl = (ip[0] & 0x0f) * 4u;
        const bool first_fragment = ((ip[6] & 0x1f) << 8 | ip[7]) == 0;
        if (ip[9] != IPPROTO_UDP || !first_fragment || ihl < 20)
            return false;
        udp = ihl;
    } else if (type == ETH_P_IPV6 && ip_len >= 40) {
        if (ip[6] != IPPROTO_UDP)
            return false;
        udp = 40;
    } else {
        return false;
    }
    if (ip_len < udp + 8)
        return false;
    return (ip[udp + 2] << 8 | ip[udp + 3]) == kRoceV2Port;
}

} // namespace

FrameCounter::FrameCounter(const std::string &ns, const std::string &ifname)
    // Protocol 0 receives nothing until bind() names the protocol and the interface: no frame
    // of another interface gets in between.
    : where_(ifname + " in " + ns), fd_(socket_in(ns, AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, 0)) {
    const int one = 1;
    // What the host itself sends is not what the switch delivered.
    if (::setsockopt(fd_.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) < 0)
        throw_errno("PACKET_IGNORE_OUTGOING on " + where_);
    if (::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUFFORCE, &kReceiveBuffer, sizeof kReceiveBuffer) < 0)
        throw_errno("SO_RCVBUFFORCE on " + where_);
    sockaddr_ll at{};
    at.sll_family = AF_PACKET;
    at.sll_protocol = htons(ETH_P_ALL);
    at.sll_ifindex = static_cast<int>(ifindex_in(ns, ifname));
    if (::bind(fd_.get(), reinterpret_cast<const sockaddr *>(&at), sizeof at) < 0)
        throw_errno("bind AF_PACKET to " + where_);
}

void FrameCounter::drain() {
    std::uint8_t frame[2048];
    while (true) {
        sockaddr_ll from{};
        socklen_t from_len = sizeof from;
        // Only the headers matter: a longer frame is cut (MSG_TRUNC says so) and counted.
        const ssize_t n = ::recvfrom(fd_.get(), frame, sizeof frame, MSG_TRUNC,
                                     reinterpret_cast<sockaddr *>(&from), &from_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0)
            throw_errno("recvfrom AF_PACKET on " + where_);
        const std::size_t len = std::min(static_cast<std::size_t>(n), sizeof frame);
        if (from.sll_pkttype == PACKET_OUTGOING || !is_roce_v2(frame, len))
            continue;
        Mac dst;
        std::copy(frame, frame + dst.size(), dst.begin());
        ++counts_[dst];
    }
}

std::size_t FrameCounter::count(const Mac &dst) {
    drain();
    auto it = counts_.find(dst);
    return it == counts_.end() ? 0 : it->second;
}

bool FrameCounter::wait_for(const Mac &dst, std::size_t at_least, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (count(dst) < at_least) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0)
            return false;
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR)
            throw_errno("poll AF_PACKET on " + where_);
    }
    return true;
}

std::string FrameCounter::summary() {
    drain();
    std::string s;
    for (const auto &[mac, n] : counts_)
        s += (s.empty() ? "" : " ") + format_mac(mac) + "=" + std::to_string(n);
    return s.empty() ? "(nothing)" : s;
}

DatagramSender::DatagramSender(const std::string &ns, const std::string &ifname, const std::string &ipv4)
    : where_(ifname + " in " + ns), v4_(socket_in(ns, AF_INET, SOCK_DGRAM, 0)),
      v6_(socket_in(ns, AF_INET6, SOCK_DGRAM, 0)) {
    const unsigned index = ifindex_in(ns, ifname);
    ip_mreqn out{};
    if (::inet_pton(AF_INET, ipv4.c_str(), &out.imr_address) != 1)
        throw std::invalid_argument("DatagramSender: not an IPv4 address: " + ipv4);
    out.imr_ifindex = static_cast<int>(index);
    if (::setsockopt(v4_.get(), IPPROTO_IP, IP_MULTICAST_IF, &out, sizeof out) < 0)
        throw_errno("IP_MULTICAST_IF " + ipv4 + " on " + where_);
    const int index6 = static_cast<int>(index);
    if (::setsockopt(v6_.get(), IPPROTO_IPV6, IPV6_MULTICAST_IF, &index6, sizeof index6) < 0)
        throw_errno("IPV6_MULTICAST_IF on " + where_);
}

void DatagramSender::send(const IpGroup &group, std::string_view payload) { send_to(group.text(), payload); }

void DatagramSender::send_to(const std::string &address, std::string_view payload) {
    sockaddr_storage to{};
    socklen_t to_len = 0;
    int fd = -1;
    auto *v4 = reinterpret_cast<sockaddr_in *>(&to);
    auto *v6 = reinterpret_cast<sockaddr_in6 *>(&to);
    if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(kRoceV2Port);
        to_len = sizeof *v4;
        fd = v4_.get();
    } else if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(kRoceV2Port);
        to_len = sizeof *v6;
        fd = v6_.get();
    } else {
        throw std::invalid_argument("DatagramSender: not an IP address: " + address);
    }
    const ssize_t n = ::sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr *>(&to), to_len);
    if (n != static_cast<ssize_t>(payload.size()))
        throw_errno("sendto " + address + ":" + std::to_string(kRoceV2Port) + " from " + where_);
}

} // namespace mcastd::eth
