// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What mcastd-bench-daemon, mcastd-bench-policy and mcastd-bench-state put a daemon through, with
// librdmamcast: held-group join round trips, and many clients joining and leaving held groups.
// The groups must be held already (by another connection), so that no join waits for the SA.
#pragma once

#include <arpa/inet.h>
#include <rdmamcast/client.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

// A process's resident memory (VmRSS), in KiB; -1 when it cannot be read.
inline long rss_kib(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stol(line.substr(6));
    return -1;
}

inline double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * double(v.size() - 1))];
}

inline rdmamcast_client *connect_or_die(const std::string &path) {
    rdmamcast_client *c = nullptr;
    if (int rc = rdmamcast_connect(path.c_str(), &c); rc < 0) {
        std::fprintf(stderr, "connect: %s\n", std::strerror(-rc));
        std::_Exit(1);
    }
    return c;
}

inline rdmamcast_join_params params(const std::string &mgid) {
    rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
    p.device = "ibsim0";
    p.port = 1;
    inet_pton(AF_INET6, mgid.c_str(), p.mgid);
    return p;
}

inline std::uint64_t join_or_die(rdmamcast_client *c, const rdmamcast_join_params &p) {
    rdmamcast_record rec;
    std::uint64_t id = 0;
    if (int rc = rdmamcast_join(c, &p, &rec, &id); rc < 0) {
        const rdmamcast_error *e = rdmamcast_last_error(c);
        std::fprintf(stderr, "join: %s\n", e ? e->message : std::strerror(-rc));
        std::_Exit(1);
    }
    return id;
}

// `n` joins (and leaves) of the held group `mgid` on one connection: each join's round trip.
inline std::vector<double> held_join_round_trips(rdmamcast_client *c, const std::string &mgid, int n) {
    const auto p = params(mgid);
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        const auto t0 = Clock::now();
        const std::uint64_t id = join_or_die(c, p);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        rdmamcast_leave(c, id);
    }
    return us;
}

// `clients` threads, one connection each, joining and leaving one of the held `mgids` in turn
// for `window`: the joins plus leaves made, and the seconds they took, all threads together.
struct Load {
    std::uint64_t ops = 0;
    double seconds = 0;
    double rate() const { return double(ops) / seconds; }
};
inline Load join_leave_load(const std::string &socket, const std::vector<std::string> &mgids, int clients,
                            std::chrono::seconds window = std::chrono::seconds(3)) {
    std::atomic<bool> go{false}, stop{false};
    std::atomic<std::uint64_t> ops{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < clients; ++t)
        threads.emplace_back([&, t] {
            rdmamcast_client *c = connect_or_die(socket);
            const auto p = params(mgids[static_cast<std::size_t>(t) % mgids.size()]);
            while (!go)
                std::this_thread::yield();
            std::uint64_t mine = 0;
            while (!stop) {
                rdmamcast_leave(c, join_or_die(c, p));
                mine += 2;
            }
            ops += mine;
            rdmamcast_close(c);
        });
    const auto t0 = Clock::now();
    go = true;
    std::this_thread::sleep_for(window); // the measuring window
    stop = true;
    for (auto &t : threads)
        t.join();
    return Load{ops, std::chrono::duration<double>(Clock::now() - t0).count()};
}

// The same, as joins plus leaves per second.
inline double join_leave_rate(const std::string &socket, const std::vector<std::string> &mgids, int clients,
                              std::chrono::seconds window = std::chrono::seconds(3)) {
    return join_leave_load(socket, mgids, clients, window).rate();
}

} // namespace bench
