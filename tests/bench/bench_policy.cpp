// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-policy: what the access policy costs a client, on a simulated fabric.
//
// The same two figures as mcastd-bench-daemon's first two, measured for an unprivileged caller
// (root passes the rules unchecked) against a daemon with no rules and against one with 100
// rules where the caller's is the last (every join walks all 100), each daemon in turn, in one
// run:
//  1. a join of a held group (no MAD) through librdmamcast: round trip p50 and p99;
//  2. 64 clients joining and leaving held groups: operations per second.
// The clients run in a child process that became uid/gid 65534 before connecting (the daemon
// reads SO_PEERCRED at connect). It prints figures; it does not pass or fail on them.
#include <arpa/inet.h>
#include <grp.h>
#include <rdmamcast/client.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.hpp"
#include "client_load.hpp"
#include "sim/daemon_harness.hpp"

using namespace mcastd::sim;
using bench::connect_or_die;
using bench::join_or_die;
using bench::params;
using bench::percentile;

namespace {

constexpr uid_t kNobody = 65534;

struct Figures {
    double p50 = 0, p99 = 0, ops = 0;
};

// In the child, as nobody: both figures. The groups are held by the parent (root).
Figures measure(const std::string &socket) {
    Figures f;
    rdmamcast_client *c = connect_or_die(socket);
    const std::vector<double> us = bench::held_join_round_trips(c, "ff15:b::1", 20000);
    rdmamcast_close(c);
    f.p50 = percentile(us, 0.5);
    f.p99 = percentile(us, 0.99);
    std::vector<std::string> mgids;
    for (int g = 1; g <= 16; ++g)
        mgids.push_back("ff15:c::" + std::to_string(g));
    f.ops = bench::join_leave_rate(socket, mgids, 64);
    return f;
}

Figures run(Fabric &fabric, const std::string &access) {
    Daemon d(fabric, "H2",
             R"({"log_level": "warning", "socket_group": 65534, "limits": {"max_clients": 200}, "access": )" + access +
                 "}");
    rdmamcast_client *anchor = connect_or_die(d.socket());
    join_or_die(anchor, params("ff15:b::1"));
    for (int g = 1; g <= 16; ++g)
        join_or_die(anchor, params("ff15:c::" + std::to_string(g)));

    int pipe_fds[2];
    if (::pipe(pipe_fds) < 0)
        std::exit(1);
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(pipe_fds[0]);
        if (::setgroups(0, nullptr) < 0 || ::setresgid(kNobody, kNobody, kNobody) < 0 ||
            ::setresuid(kNobody, kNobody, kNobody) < 0) {
            std::perror("dropping to nobody");
            std::_Exit(1);
        }
        const Figures f = measure(d.socket());
        (void)!::write(pipe_fds[1], &f, sizeof f);
        std::_Exit(0);
    }
    ::close(pipe_fds[1]);
    Figures f;
    const bool got = ::read(pipe_fds[0], &f, sizeof f) == static_cast<ssize_t>(sizeof f);
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    rdmamcast_close(anchor);
    if (!got) {
        std::fprintf(stderr, "the unprivileged client failed\n");
        std::exit(1);
    }
    return f;
}

// 99 rules for other uids, then the caller's: a join is judged after walking all 100.
std::string hundred_rules() {
    std::string rules = "[";
    for (int i = 0; i < 99; ++i)
        rules += R"({"name": "r)" + std::to_string(i) + R"(", "users": [)" + std::to_string(20000 + i) +
                 R"(], "mgids": ["ff15:)" + std::to_string(i + 100) + R"(::/32"], "create": true},)";
    rules += R"({"name": "nobody", "users": [65534], "mgids": ["ff15:b::/32", "ff15:c::/32"],
                 "join_states": ["full"], "pkeys": ["0xffff"]}])";
    return R"({"rules": )" + rules + "}";
}

} // namespace

int main(int argc, char **argv) {
    mcastd::bench::CommandLine(argc, argv, "mcastd-bench-policy", "\nThe access policy's cost to an unprivileged client.\n").none();
    Fabric fabric;
    // The scratch directories are 0700: nobody must reach the daemon's socket through them.
    for (auto p = fabric.scratch(); p.string().size() > 5; p = p.parent_path())
        std::filesystem::permissions(p, std::filesystem::perms::others_exec, std::filesystem::perm_options::add);
    const Figures none = run(fabric, "{}");
    const Figures hundred = run(fabric, hundred_rules());
    std::printf("[ bench ] held-group join as uid 65534, no rules:  p50 %.1f us, p99 %.1f us\n", none.p50, none.p99);
    std::printf("[ bench ] held-group join as uid 65534, 100 rules: p50 %.1f us, p99 %.1f us\n", hundred.p50,
                hundred.p99);
    std::printf("[ bench ] 100 rules / no rules, join p50 = %.3fx (target: at most 1.10x)\n", hundred.p50 / none.p50);
    std::printf("[ bench ] 64 clients as uid 65534: %.0f ops/s with no rules, %.0f ops/s with 100 rules (target: at "
                "least 50,000)\n",
                none.ops, hundred.ops);
    return 0;
}
