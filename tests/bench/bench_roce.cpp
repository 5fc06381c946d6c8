// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-roce: figures for rdma-mcastd on a RoCE port, on the Ethernet bed
// (doc/ethernet-bed.md §9: the daemon in host 1's namespace serving its fake device, the
// bridge's port p1 the switch's side of host 1's veth).
//
//  1. A join of a new group, through librdmamcast, until the host's kernel membership is made:
//     the daemon makes it before it answers, so the join's round trip is that time (p50, p99;
//     target p99 < 5 ms). Every group is checked in /proc/net/igmp afterwards.
//  2. The first IGMP report on the wire after the first join of a group, seen by an AF_PACKET
//     socket on the switch's port p1 (target < 50 ms).
//  3. 1,000 groups joined through one connection: `rdmamcast_join_start` for all of them, then
//     their completions (target < 1 s); all in /proc/net/igmp.
//  4. 1,000 cycles, each a join and leave through librdmamcast and a join by an
//     `rdma-mcastctl join --hold` process then killed with SIGKILL; /proc/net/igmp must come
//     back to what it was before (0 leaked).
//
// It needs root (namespaces, a bridge); without them it says why and exits 0. It prints
// figures; it does not pass or fail on them.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <rdmamcast/client.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "client_load.hpp"
#include "ethernet/bed_daemon.hpp"
#include "ethernet/netns.hpp"

using namespace mcastd::eth;
using bench::Clock;
using bench::connect_or_die;
using bench::percentile;

namespace {

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The i-th group of a series: 239.<series>.<i / 250>.<i % 250 + 1>.
IpGroup group(int series, int i) {
    return IpGroup::of("239." + std::to_string(series) + "." + std::to_string(i / 250) + "." +
                       std::to_string(i % 250 + 1));
}

rdmamcast_join_params roce_params(const std::string &device, const std::string &ip) {
    rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
    p.device = device.c_str();
    p.port = 1;
    p.flags = RDMAMCAST_JOIN_IP;
    p.ip = ip.c_str();
    return p;
}

std::uint64_t join_or_die(rdmamcast_client *c, const rdmamcast_join_params &p) {
    std::uint64_t id = 0;
    if (int rc = rdmamcast_join(c, &p, nullptr, &id); rc < 0) {
        const rdmamcast_error *e = rdmamcast_last_error(c);
        std::fprintf(stderr, "join %s: %s\n", p.ip, e ? e->message : std::strerror(-rc));
        std::_Exit(1);
    }
    return id;
}

std::size_t held(const GroupUsers &table, const std::vector<IpGroup> &groups) {
    return static_cast<std::size_t>(
        std::count_if(groups.begin(), groups.end(), [&](const IpGroup &g) { return table.count(g) > 0; }));
}

// An AF_PACKET socket on the switch's port of host 1 that finds IGMP reports (v2 0x16, v3 0x22)
// naming a group.
class ReportWatch {
public:
    ReportWatch(const std::string &ns, const std::string &port)
        : fd_(socket_in(ns, AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL))) {
        sockaddr_ll a{};
        a.sll_family = AF_PACKET;
        a.sll_protocol = htons(ETH_P_ALL); // ETH_P_IP taps come after the bridge took the frame
        in_netns(ns, [&] { a.sll_ifindex = static_cast<int>(if_nametoindex(port.c_str())); });
        if (a.sll_ifindex == 0 || ::bind(fd_.get(), reinterpret_cast<sockaddr *>(&a), sizeof a) < 0) {
            std::perror("bind AF_PACKET to the switch port");
            std::_Exit(1);
        }
    }

    // Waits for a report naming `g`; when it came, or nullopt after `timeout`.
    std::optional<Clock::time_point> wait_report(const IpGroup &g, std::chrono::milliseconds timeout) {
        const auto end = Clock::now() + timeout;
        unsigned char buf[2048];
        while (Clock::now() < end) {
            pollfd p{fd_.get(), POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count()) + 1) <= 0)
                continue;
            const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
            const auto at = Clock::now();
            if (n < 20 + 8 + 14 || buf[12] != 0x08 || buf[13] != 0x00) // Ethernet + IPv4
                continue;
            const unsigned char *ip = buf + 14;
            const std::size_t ihl = (ip[0] & 0x0f) * 4u;
            if (ip[9] != 2 || 14 + ihl >= static_cast<std::size_t>(n)) // IGMP
                continue;
            const unsigned char *igmp = ip + ihl;
            if (igmp[0] != 0x16 && igmp[0] != 0x22)
                continue;
            const auto *end_igmp = buf + n;
            if (std::search(igmp + 4, end_igmp, g.bytes().begin(), g.bytes().begin() + 4) != end_igmp)
                return at;
        }
        return std::nullopt;
    }

private:
    UniqueFd fd_;
};

} // namespace

int main(int argc, char **argv) {
    mcastd::bench::CommandLine cmd(argc, argv, "mcastd-bench-roce",
                                   "\nrdma-mcastd on a RoCE port of the Ethernet bed: join latency, the first IGMP "
                                   "report, 1,000 groups on one connection, 1,000 join/leave/kill cycles.\n");
    cmd.none();
    if (auto why = EthernetBed::unavailable()) {
        std::printf("skipped: %s\n", why->c_str());
        return 0;
    }
    EthernetBed bed(EthernetBed::Options{.hosts = 2});
    // The benches run as root, whose memberships no per-uid quota counts.
    BedDaemon d(bed, 1);
    const std::string ns = bed.host_ns(1), device = d.device(), socket = d.socket().string();
    const GroupUsers baseline = bed.igmp(1);
    ReportWatch reports(bed.switch_ns(), bed.port(1));
    constexpr int kGroups = 1000;

    // 1 and 2, on a thread in host 1's namespace: the socket a join hands over is made there.
    std::vector<double> join_ms, report_ms;
    std::size_t in_table = 0;
    in_netns(ns, [&] {
        rdmamcast_client *c = connect_or_die(socket);
        std::vector<IpGroup> gs;
        std::vector<std::uint64_t> ids;
        for (int i = 0; i < kGroups; ++i) {
            gs.push_back(group(10, i));
            const std::string ip = gs.back().text();
            const auto p = roce_params(device, ip);
            const auto t0 = Clock::now();
            ids.push_back(join_or_die(c, p));
            join_ms.push_back(ms(Clock::now() - t0));
            if (i < 50) { // the first report of the first 50 groups (each report is a frame to read)
                if (auto at = reports.wait_report(gs.back(), std::chrono::seconds(2)))
                    report_ms.push_back(ms(*at - t0));
            }
        }
        in_table = held(bed.igmp(1), gs);
        for (auto id : ids)
            rdmamcast_leave(c, id);
        rdmamcast_close(c);
    });
    std::printf("join of a new RoCE group to the kernel membership: p50 %.3f ms, p99 %.3f ms (%d groups, "
                "%zu of them in /proc/net/igmp at the end; target p99 < 5 ms)\n",
                percentile(join_ms, 0.5), percentile(join_ms, 0.99), kGroups, in_table);
    if (report_ms.empty())
        std::printf("first IGMP report on the wire after the join: none seen\n");
    else
        std::printf("first IGMP report on the wire (switch port p1) after the join: p50 %.3f ms, max %.3f ms "
                    "(%zu groups; target < 50 ms)\n",
                    percentile(report_ms, 0.5), *std::max_element(report_ms.begin(), report_ms.end()),
                    report_ms.size());

    // 3: every join started at once on one connection, then the completions.
    in_netns(ns, [&] {
        rdmamcast_client *c = connect_or_die(socket);
        std::vector<IpGroup> gs;
        std::vector<std::string> ips;
        for (int i = 0; i < kGroups; ++i) {
            gs.push_back(group(20, i));
            ips.push_back(gs.back().text());
        }
        const auto t0 = Clock::now();
        for (const auto &ip : ips) {
            const auto p = roce_params(device, ip);
            if (int rc = rdmamcast_join_start(c, &p, nullptr, nullptr); rc < 0) {
                std::fprintf(stderr, "join_start %s: %s\n", ip.c_str(), std::strerror(-rc));
                std::_Exit(1);
            }
        }
        std::size_t ok = 0, failed = 0;
        while (ok + failed < ips.size()) {
            pollfd p{rdmamcast_event_fd(c), POLLIN, 0};
            if (::poll(&p, 1, 30000) != 1) {
                std::fprintf(stderr, "no completion within 30 s (%zu of %zu)\n", ok + failed, ips.size());
                std::_Exit(1);
            }
            rdmamcast_event ev;
            while (rdmamcast_next_event(c, &ev) == 0) {
                ok += ev.type == RDMAMCAST_EVENT_JOINED;
                failed += ev.type == RDMAMCAST_EVENT_JOIN_ERROR;
            }
        }
        const double took = ms(Clock::now() - t0);
        std::printf("1,000 groups joined through one connection (join_start, then the completions): %.1f ms, "
                    "%zu joined, %zu failed, %zu in /proc/net/igmp (target < 1 s)\n",
                    took, ok, failed, held(bed.igmp(1), gs));
        rdmamcast_close(c); // leaves them all
    });

    // 4: join/leave through the library, join/kill -9 through a client process, 1,000 times.
    const std::string ip_tool = mcastd::sim::find_tool("ip").value_or("ip").string();
    const auto t0 = Clock::now();
    for (int i = 0; i < kGroups; ++i) {
        const std::string ip = group(30, i).text();
        in_netns(ns, [&] {
            rdmamcast_client *c = connect_or_die(socket);
            rdmamcast_leave(c, join_or_die(c, roce_params(device, ip)));
            rdmamcast_close(c);
        });
        // A Process of its own, not the bed's: a thousand of them would pile up in the bed.
        std::vector<std::string> client{ip_tool, "netns", "exec", ns};
        for (auto &a : d.ctl_argv(nullptr, "join", d.on_port({"--ip", group(40, i).text(), "--hold"})))
            client.push_back(a);
        Process p(Process::Options{.argv = std::move(client)});
        if (!p.read_line(std::chrono::seconds(10))) {
            std::fprintf(stderr, "cycle %d: rdma-mcastctl printed no record: %s\n", i, p.stderr_text().c_str());
            return 1;
        }
        p.signal(SIGKILL);
        p.wait(std::chrono::seconds(10));
    }
    const double cycles_s = std::chrono::duration<double>(Clock::now() - t0).count();
    // The last kill reaches the daemon as a hang-up a moment after the process is reaped.
    mcastd::sim::poll_until(std::chrono::seconds(5), [&] { return bed.igmp(1) == baseline; });
    const GroupUsers after = bed.igmp(1);
    std::size_t leaked = 0;
    for (const auto &[g, users] : after) {
        auto it = baseline.find(g);
        leaked += it == baseline.end() ? 1 : 0;
    }
    std::printf("1,000 join/leave/kill cycles: %.1f s, %zu groups leaked in /proc/net/igmp (baseline %zu "
                "groups, now %zu; target 0 leaked)\n",
                cycles_s, leaked, baseline.size(), after.size());
    return 0;
}
