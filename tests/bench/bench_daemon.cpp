// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-daemon: figures for rdma-mcastd's client path, on a simulated fabric.
//
//  1. Latency: a join of a group the port already holds (answered without any MAD), through
//     librdmamcast, as round trips (p50, p99), beside a bare SOCK_SEQPACKET request/response
//     round trip of the same sizes to another process, measured in the same run, in two
//     placements: both processes pinned to one CPU, and pinned to two CPUs. Unpinned, the
//     figure swings with where the scheduler puts them (a wake-up across CPUs costs tens of
//     microseconds on a small VM), so each placement is measured on its own.
//  2. Throughput: 64 clients (threads, one connection each) joining and leaving held groups
//     concurrently; aggregate operations (joins + leaves) per second.
//  3. Memory: the daemon's resident memory per membership, with 100,000 memberships held, and
//     the rate of the 100,000 joins that build them up (it must not fall as memberships pile up).
//
// It prints figures; it does not pass or fail on them.
#include <filesystem>
#include <arpa/inet.h>
#include <rdmamcast/client.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.hpp"
#include "client_load.hpp"
#include "sim/daemon_harness.hpp"

using namespace mcastd::sim;
using bench::Clock;
using bench::connect_or_die;
using bench::join_or_die;
using bench::params;
using bench::rss_kib;
using bench::percentile;

namespace {

// The baseline: the same message sizes, echoed by another process with no work in between.
// Pins `pid` (0: the calling thread) to one CPU.
void pin(pid_t pid, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(pid, sizeof set, &set) < 0)
        std::perror("sched_setaffinity");
}

// Where the two ends of a round trip run: the server (the daemon, or the echo process) on CPU 0,
// the client on `client_cpu`.
struct Placement {
    const char *name;
    int client_cpu;
};

std::vector<double> bare_round_trips(std::size_t request, std::size_t reply, int n, const Placement &where) {
    int sv[2];
    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv);
    const pid_t child = fork();
    if (child == 0) {
        pin(0, 0);
        close(sv[0]);
        std::string in(65536, '\0'), out(reply, 'x');
        while (recv(sv[1], in.data(), in.size(), 0) > 0)
            send(sv[1], out.data(), out.size(), 0);
        _exit(0);
    }
    close(sv[1]);
    pin(0, where.client_cpu);
    std::string msg(request, 'y'), in(65536, '\0');
    std::vector<double> us;
    for (int i = 0; i < n; ++i) {
        const auto t0 = Clock::now();
        send(sv[0], msg.data(), msg.size(), 0);
        recv(sv[0], in.data(), in.size(), 0);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    close(sv[0]);
    waitpid(child, nullptr, 0);
    return us;
}

void latency(Daemon &d) {
    rdmamcast_client *anchor = connect_or_die(d.socket()), *c = connect_or_die(d.socket());
    const auto p = params("ff15:b::1");
    join_or_die(anchor, p); // the port now holds the group: every join below is local
    const int n = 20000;
    std::vector<Placement> placements{{"one CPU", 0}};
    if (std::thread::hardware_concurrency() > 1)
        placements.push_back({"two CPUs", 1});
    pin(d.process().pid(), 0);
    for (const Placement &where : placements) {
        pin(0, where.client_cpu);
        const std::vector<double> us = bench::held_join_round_trips(c, "ff15:b::1", n);
        // Sizes of a join request and its reply as they travel (measured on this run's messages).
        const auto bare = bare_round_trips(110, 340, n, where);
        const double jp50 = percentile(us, 0.5), jp99 = percentile(us, 0.99);
        const double bp50 = percentile(bare, 0.5), bp99 = percentile(bare, 0.99);
        std::printf("[ bench ] pinned to %s: local join via librdmamcast p50 %.1f us, p99 %.1f us (%d joins); "
                    "bare SOCK_SEQPACKET round trip p50 %.1f us, p99 %.1f us\n",
                    where.name, jp50, jp99, n, bp50, bp99);
        std::printf("[ bench ] pinned to %s: join p50 / bare p50 = %.2fx (target: at most 3x)\n", where.name,
                    jp50 / bp50);
    }
    // The rest runs as the scheduler likes.
    cpu_set_t all;
    CPU_ZERO(&all);
    for (unsigned i = 0; i < std::thread::hardware_concurrency(); ++i)
        CPU_SET(i, &all);
    sched_setaffinity(0, sizeof all, &all);
    sched_setaffinity(d.process().pid(), sizeof all, &all);
    rdmamcast_close(c);
    rdmamcast_close(anchor);
}

void throughput(const Daemon &d) {
    constexpr int kClients = 64, kGroups = 16;
    rdmamcast_client *anchor = connect_or_die(d.socket());
    std::vector<std::string> mgids;
    for (int g = 1; g <= kGroups; ++g) {
        mgids.push_back("ff15:c::" + std::to_string(g));
        join_or_die(anchor, params(mgids.back().c_str()));
    }
    const double rate = bench::join_leave_rate(d.socket(), mgids, kClients);
    std::printf("[ bench ] %d clients joining/leaving held groups: %.0f ops/s (target: at least 50,000)\n",
                kClients, rate);
    rdmamcast_close(anchor);
}

void memory(Daemon &d) {
    constexpr int kConnections = 100, kPerConnection = 1000;
    const pid_t pid = d.process().pid();
    // The groups first (their SA work and records are per group, not per membership).
    rdmamcast_client *anchor = connect_or_die(d.socket());
    std::vector<std::string> mgids;
    for (int g = 1; g <= kPerConnection; ++g) {
        char m[40];
        std::snprintf(m, sizeof m, "ff15:d::%x", g);
        mgids.push_back(m);
        join_or_die(anchor, params(m));
    }
    std::vector<rdmamcast_client *> conns;
    for (int i = 0; i < kConnections; ++i)
        conns.push_back(connect_or_die(d.socket()));
    const long before = rss_kib(pid);
    const auto t0 = Clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = t; i < kConnections; i += 4)
                for (const auto &m : mgids)
                    join_or_die(conns[static_cast<std::size_t>(i)], params(m.c_str()));
        });
    for (auto &t : threads)
        t.join();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    const long after = rss_kib(pid);
    const long n = long(kConnections) * kPerConnection;
    // A join must not cost more as memberships pile up: this rate is the held-group join rate
    // at 1,000 to 100,000 memberships (4 clients, one request at a time each).
    std::printf("[ bench ] %ld joins of held groups, up to %ld memberships held: %.1f s, %.0f joins/s\n", n, n, s,
                double(n) / s);
    std::printf("[ bench ] daemon RSS %ld KiB -> %ld KiB with %ld memberships: %.0f bytes per membership "
                "(target: under 1 KiB)\n",
                before, after, n, double(after - before) * 1024.0 / double(n));
    for (auto *c : conns)
        rdmamcast_close(c);
    rdmamcast_close(anchor);
}

} // namespace

int main(int argc, char **argv) {
    mcastd::bench::CommandLine(argc, argv, "mcastd-bench-daemon", "\nJoin latency, client throughput and memory per membership.\n").none();
    Fabric fabric;
    // Room for the memory figure: 1000 memberships per connection, 1100 clients.
    // With a state directory, as under systemd: the restart state is kept as memberships change.
    std::filesystem::create_directories(fabric.scratch() / "state");
    // sa.max_rate 0: the daemon's own cost, as a small fabric may run it (the setup's creates too).
    Daemon d(fabric, "H2",
             R"({"limits": {"max_memberships_per_client": 2000, "max_clients": 2000}, "log_level": "warning",)"
             R"( "sa": {"max_rate": 0}})",
             {"--state-dir", (fabric.scratch() / "state").string()});
    latency(d);
    throughput(d);
    memory(d);
    return 0;
}
