// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-memory [CLIENTS MEMBERSHIPS]: what the daemon's front door and engine hold in
// memory per client and per membership, measured in one process over the unit tests' fake SA:
// the Service, the client sessions and the Unix-socket transport serving CLIENTS socketpair
// clients (default 1,024: umad2sim's fd numbers rule that out on the simulator) that say hello
// and join MEMBERSHIPS memberships between them (default 100,000, over 1,000 groups). It prints
// the resident set (VmRSS) at each step, the cost per client and per membership, and what the
// default bounds (limits.max_clients, max_memberships, max_queued_bytes_total) let the daemon
// reach at most: the figure the unit's MemoryHigh= and MemoryMax= are set from
// (config/README.md, "limits").
//
// The process's own client ends cost little (an fd each). Prints figures, never fails on them.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "fakes/fake_port.hpp"
#include "fakes/fake_sa.hpp"
#include "fakes/fake_timers.hpp"
#include "frontend/sessions.hpp"
#include "proto/protocol.hpp"
#include "runtime/event_loop.hpp"
#include "server/socket_server.hpp"

using namespace mcastd;

namespace {

long rss_kib() {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stol(line.substr(6));
    return 0;
}

// Runs the loop and the SA until `fd` has a message, and returns it.
std::string reply(runtime::EventLoop &loop, test::FakeSa &sa, int fd) {
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 0) > 0) {
            std::string buf(1 << 16, '\0');
            const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
            return buf.substr(0, n > 0 ? static_cast<std::size_t>(n) : 0);
        }
        loop.run_once(std::chrono::milliseconds(1));
        sa.run();
    }
}

} // namespace

int main(int argc, char **argv) {
    bench::CommandLine cl(argc, argv, "mcastd-bench-memory",
                          "[CLIENTS MEMBERSHIPS]\n"
                          "Resident memory per client and per membership of the front door and engine, in one process.\n");
    std::size_t clients = 1024, memberships = 100000;
    if (cl.args.size() == 2) {
        clients = cl.count(cl.args[0], 1, 20000);
        memberships = cl.count(cl.args[1], 0, 10000000);
    } else if (!cl.args.empty()) {
        cl.bad(cl.args[0]);
    }

    runtime::EventLoop loop;
    test::FakeTimers timers;
    test::FakeSa sa;
    sa.state.mlid_limit = 0xfffe;
    Service service(EngineConfig{}, sa, timers);
    frontend::Limits limits;
    limits.max_clients = clients + 8;
    limits.max_memberships = memberships + 1;
    limits.max_memberships_per_client = memberships;
    frontend::Sessions sessions(service, timers, "rdma-mcastd bench", limits, policy::Policy{});
    server::SocketServer server(loop, sessions, -1);
    const PortIndex port = service.add_port(test::test_port(), true);
    sa.port_gids[port] = test::test_port().port_gid();

    const long base = rss_kib();
    std::vector<int> fds;
    for (std::size_t i = 0; i < clients; ++i) {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
            std::perror("socketpair");
            return 1;
        }
        server.adopt(sv[0]);
        fds.push_back(sv[1]);
        const std::string hello = proto::encode_request(1, proto::Hello{{2}, "bench"});
        ::send(sv[1], hello.data(), hello.size(), 0);
        reply(loop, sa, sv[1]);
    }
    const long with_clients = rss_kib();

    constexpr std::size_t kGroups = 1000;
    std::size_t failed = 0;
    for (std::size_t i = 0; i < memberships; ++i) {
        char mgid[32];
        std::snprintf(mgid, sizeof mgid, "ff15::%zx", 1 + i % kGroups);
        JoinRequest r;
        r.device = test::test_port().device;
        r.port = test::test_port().port_num;
        r.mgid = *parse_gid(mgid);
        const int fd = fds[i % fds.size()];
        const std::string join = proto::encode_request(2 + i, proto::Join{r});
        ::send(fd, join.data(), join.size(), 0);
        failed += reply(loop, sa, fd).find("\"ok\":true") == std::string::npos;
    }
    const long with_memberships = rss_kib();

    const double per_client = static_cast<double>(with_clients - base) * 1024.0 / static_cast<double>(clients);
    const double per_membership =
        memberships ? static_cast<double>(with_memberships - with_clients) * 1024.0 / static_cast<double>(memberships)
                    : 0.0;
    std::printf("clients %zu, memberships %zu over %zu groups (%zu joins failed)\n", clients, memberships, kGroups,
                failed);
    std::printf("VmRSS: start %ld KiB, with the clients %ld KiB, with the memberships %ld KiB\n", base, with_clients,
                with_memberships);
    std::printf("per client %.0f bytes, per membership %.0f bytes\n", per_client, per_membership);
    const frontend::Limits d;
    const double worst_mib = (static_cast<double>(base) * 1024.0 + per_client * static_cast<double>(d.max_clients) +
                              per_membership * static_cast<double>(d.max_memberships) +
                              static_cast<double>(d.max_queued_bytes_total)) /
                             (1024.0 * 1024.0);
    std::printf("at the default bounds (%zu clients, %zu memberships, %zu MiB queued): at most %.0f MiB\n",
                d.max_clients, d.max_memberships, d.max_queued_bytes_total >> 20, worst_mib);
    for (int fd : fds)
        ::close(fd);
    return 0;
}
