// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-eth-member IFNAME GROUP...
//
// The Ethernet bed's own member, independent of the daemon: run in a host's namespace, it joins
// every GROUP (IPv4 or IPv6) on IFNAME with a plain UDP socket per family (IP_ADD_MEMBERSHIP
// with the interface's index in a struct ip_mreqn, IPV6_ADD_MEMBERSHIP), so the kernel sends
// the IGMP or MLD reports, and holds them until its stdin closes. Prints "joined GROUP" for each
// group, then "holding". Exits 0 after stdin's EOF (closing the sockets leaves the groups),
// 1 when a join fails (with errno's text), 2 for bad arguments.
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

int fail(const std::string &what) {
    std::fprintf(stderr, "mcastd-eth-member: %s: %s\n", what.c_str(), std::strerror(errno));
    return 1;
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: mcastd-eth-member IFNAME GROUP...\n");
        return 2;
    }
    const std::string ifname = argv[1];
    const unsigned index = ::if_nametoindex(ifname.c_str());
    if (index == 0)
        return fail("no interface " + ifname);
    int v4 = -1, v6 = -1; // one socket per family, made when first needed
    for (int i = 2; i < argc; ++i) {
        const std::string group = argv[i];
        ip_mreqn mreq{};
        ipv6_mreq mreq6{};
        if (::inet_pton(AF_INET, group.c_str(), &mreq.imr_multiaddr) == 1) {
            if (v4 < 0 && (v4 = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
                return fail("socket(AF_INET)");
            mreq.imr_ifindex = static_cast<int>(index);
            if (::setsockopt(v4, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq) < 0)
                return fail("IP_ADD_MEMBERSHIP " + group + " on " + ifname);
        } else if (::inet_pton(AF_INET6, group.c_str(), &mreq6.ipv6mr_multiaddr) == 1) {
            if (v6 < 0 && (v6 = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
                return fail("socket(AF_INET6)");
            mreq6.ipv6mr_interface = index;
            if (::setsockopt(v6, IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, &mreq6, sizeof mreq6) < 0)
                return fail("IPV6_ADD_MEMBERSHIP " + group + " on " + ifname);
        } else {
            std::fprintf(stderr, "mcastd-eth-member: not an IP address: %s\n", group.c_str());
            return 2;
        }
        std::printf("joined %s\n", group.c_str());
    }
    std::printf("holding\n");
    std::fflush(stdout);
    char buf[256];
    while (true) {
        const ssize_t n = ::read(0, buf, sizeof buf);
        if (n == 0)
            break;
        if (n < 0 && errno != EINTR)
            return fail("read stdin");
    }
    return 0; // the sockets close with the process: the kernel leaves the groups
}
