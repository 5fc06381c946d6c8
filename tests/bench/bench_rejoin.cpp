// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-rejoin: how long rdma-mcastd takes to restore 1,000 memberships of one port
// after an OpenSM restart, beside how long the same OpenSM takes for 1,000 raw pipelined SA
// Sets (mcastd-raw-sa, the daemon's SA stack without its logic) measured in the same run.
// Target (issue 4): restore time <= detection interval + 1.5 x raw time.
//
//  1. Raw Sets on H2 against the first OpenSM (then deleted again: the MLID pool holds 1,023).
//  2. rdma-mcastd on H2 polls the SA's SMInfoRecord every kSmInfoMs; one client joins 1,000
//     groups.
//  3. OpenSM is stopped and a new one started on the same node. mcastd-raw-sa `watch` on H3
//     notes when the new SA first answers. The client notes its first and its 1,000th
//     `restored` event; then the watcher checks every membership of H2 at the SA (per-group
//     Gets: saquery answers are cut to 3 records under the simulator).
//  4. The daemon stops (leaving every group) and the raw Sets run against the new OpenSM.
//
// Restore time counts from the new SA's first answer: before that nobody can restore anything.
// It prints figures; it does not pass or fail on them.
//
//   mcastd-bench-rejoin [GROUPS] [--fixed-window]   (1-1000, default 1000; --fixed-window: the daemon
//                                                    without sa.congestion_control, to compare)
#include <arpa/inet.h>
#include <poll.h>
#include <rdmamcast/client.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "bench_args.hpp"
#include "bench/tool_line.hpp"
#include "sim/daemon_harness.hpp"

using namespace mcastd::sim;
using mcastd::bench::field;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kSmInfoMs = 500, kSmInfoTimeoutMs = 100, kPortInfoMs = 200, kRejoinJitterMs = 50;
constexpr unsigned kWindow = 16; // the daemon's sa.window, for the raw Sets and the watcher
constexpr const char *kRawBase = "ff15:7a::", *kDaemonBase = "ff15:7b::";
constexpr auto kRestoreTimeout = std::chrono::seconds(60);

long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

double ms_between(long long from_ns, long long to_ns) { return double(to_ns - from_ns) / 1e6; }

struct Raw {
    double sets_ms = 0, deletes_ms = 0;
};

Raw raw_sets(Fabric &f, unsigned groups, const char *when) {
    const RunResult r = f.run_on("H2", {MCASTD_RAW_SA, "sets", std::to_string(groups), kRawBase,
                                        std::to_string(kWindow)},
                                 std::chrono::seconds(120));
    if (r.exit_code != 0)
        throw std::runtime_error(std::string("raw Sets ") + when + " exited " + std::to_string(r.exit_code) +
                                 ": " + r.out + r.err);
    const auto sets = r.out.substr(0, r.out.find('\n')), deletes = r.out.substr(r.out.find('\n') + 1);
    return {std::stod(field(sets, "ms")), std::stod(field(deletes, "ms"))};
}

rdmamcast_client *connect_or_die(const std::string &path) {
    rdmamcast_client *c = nullptr;
    if (int rc = rdmamcast_connect(path.c_str(), &c); rc < 0)
        throw std::runtime_error(std::string("connect: ") + std::strerror(-rc));
    return c;
}

void wait_for_sm_baseline(rdmamcast_client *client) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    for (;;) {
        rdmamcast_daemon_status *st = nullptr;
        if (int rc = rdmamcast_status(client, &st); rc < 0)
            throw std::runtime_error(std::string("status: ") + std::strerror(-rc));
        const bool known = st->num_ports > 0 && st->ports[0]->sm_known;
        rdmamcast_status_free(st);
        if (known)
            return;
        if (Clock::now() > deadline)
            throw std::runtime_error("the daemon never read the SM's SMInfoRecord");
        std::this_thread::sleep_for(std::chrono::milliseconds(20)); // status has no push form
    }
}

std::string mgid_text(unsigned i) {
    char m[48];
    std::snprintf(m, sizeof m, "%s%x", kDaemonBase, i);
    return m;
}

// What the client saw after the restart, with when.
struct Seen {
    long long first_restored_ns = 0;
    long long all_restored_ns = 0; // the client's groups-th `restored`
    unsigned restored = 0, lost = 0;
};

// Reads the client's events as they come. The last `restored` tells the watcher to verify at the
// SA: every `restored` follows the SA's answer to the daemon's Set, so the SA held all groups
// by then, and a watcher polling during the re-join would only slow down what it measures.
Seen watch_events(rdmamcast_client *client, Process &watcher, unsigned groups) {
    Seen s;
    const auto end = Clock::now() + kRestoreTimeout;
    pollfd pfd{rdmamcast_event_fd(client), POLLIN, 0};
    while (s.restored < groups && Clock::now() < end) {
        if (::poll(&pfd, 1, 100) <= 0)
            continue;
        const long long t = now_ns();
        rdmamcast_event ev;
        while (rdmamcast_next_event(client, &ev) == 0) {
            if (ev.type == RDMAMCAST_EVENT_LOST)
                ++s.lost;
            if (ev.type != RDMAMCAST_EVENT_RESTORED)
                continue;
            if (++s.restored == 1)
                s.first_restored_ns = t;
            if (s.restored == groups) {
                s.all_restored_ns = t;
                watcher.write_stdin("verify\n");
            }
        }
    }
    watcher.close_stdin(); // EOF starts the watcher too, should no `restored` have come
    return s;
}

// The daemon's own note "re-joined N group(s) on DEV/PORT in M ms (why)", logged when the
// last group of the re-join is done; M counts from the moment it noticed the restart.
std::string rejoin_note(Daemon &d) {
    const auto end = Clock::now() + std::chrono::seconds(5);
    for (;;) {
        const std::string err = d.process().stderr_text();
        if (const auto at = err.find("re-joined "); at != std::string::npos)
            return err.substr(at, err.find('\n', at) - at);
        if (Clock::now() > end)
            throw std::runtime_error("rdma-mcastd never logged its re-join: " + err);
        std::this_thread::sleep_for(std::chrono::milliseconds(20)); // stderr has no readiness signal here
    }
}

std::string watcher_line(Process &watcher, const std::string &what) {
    const auto line = watcher.wait_for_line(what, kRestoreTimeout);
    if (!line)
        throw std::runtime_error("mcastd-raw-sa watch never said " + what + " (" +
                                 (watcher.running() ? "still running" : "exited") + "): " +
                                 watcher.read_all(std::chrono::milliseconds(100)) + watcher.stderr_text());
    return *line;
}

} // namespace

int main(int argc, char **argv) {
    const mcastd::bench::CommandLine cl(argc, argv, "mcastd-bench-rejoin",
                                        "[GROUPS (1-1000, default 1000)] [--fixed-window]\n"
                                        "The time to restore one port's memberships after an OpenSM restart.\n");
    unsigned groups = 1000;
    bool fixed_window = false;
    for (const std::string &a : cl.args) {
        if (a == "--fixed-window")
            fixed_window = true;
        else // the raw Sets and the daemon's share one MLID pool
            groups = static_cast<unsigned>(cl.count(a, 1, 1000));
    }
    try {
        Fabric fabric;
        const std::string h2_gid = mcastd::format_gid(fabric.port_gid("H2"));

        const Raw before = raw_sets(fabric, groups, "before the restart");

        // The audit is off: it would re-join a lost group on its own, and its `restored` would
        // blur when the SMInfoRecord poll's re-join began. sa.max_rate 0: the re-join at the
        // daemon's own speed beside the raw Sets, as a small fabric may run it.
        char config[512];
        std::snprintf(config, sizeof config,
                      R"({"log_level": "warning", "rejoin": {"jitter_ms": %d},)"
                      R"( "monitor": {"sminfo_interval_ms": %d, "sminfo_timeout_ms": %d,)"
                      R"( "portinfo_interval_ms": %d, "jitter_percent": 0, "audit_per_second": 0},)"
                      R"( "sa": {"congestion_control": %s, "max_rate": 0}})",
                      kRejoinJitterMs, kSmInfoMs, kSmInfoTimeoutMs, kPortInfoMs, fixed_window ? "false" : "true");
        Daemon daemon(fabric, "H2", config);
        rdmamcast_client *client = connect_or_die(daemon.socket().string());
        for (unsigned i = 1; i <= groups; ++i) {
            rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
            p.device = "ibsim0";
            p.port = 1;
            inet_pton(AF_INET6, mgid_text(i).c_str(), p.mgid);
            if (int rc = rdmamcast_join(client, &p, nullptr, nullptr); rc < 0) {
                const rdmamcast_error *e = rdmamcast_last_error(client);
                throw std::runtime_error("join " + mgid_text(i) + ": " + (e ? e->message : std::strerror(-rc)));
            }
        }

        // A restart is judged against the daemon's first SMInfoRecord sample (taken as soon as
        // the port is usable); status says when it exists.
        wait_for_sm_baseline(client);
        fabric.stop_opensm();
        // Started after the stop, so that its first answer is the new SA's.
        Process &watcher = fabric.spawn_on("H3",
                                           {MCASTD_RAW_SA, "watch", std::to_string(groups), kDaemonBase, h2_gid,
                                            std::to_string(kWindow)},
                                           {}, true);
        Seen seen;
        std::jthread events([&] { seen = watch_events(client, watcher, groups); });
        const long long osm_start_ns = now_ns();
        fabric.start_opensm();
        events.join();
        if (seen.restored < groups)
            throw std::runtime_error("the client got " + std::to_string(seen.restored) + " of " +
                                     std::to_string(groups) + " restored events (and " +
                                     std::to_string(seen.lost) + " lost) within 60 s; rdma-mcastd said:\n" +
                                     daemon.process().stderr_text());
        const long long sa_ns = std::stoll(field(watcher_line(watcher, "sa-answers"), "t_ns"));
        const std::string all_line = watcher_line(watcher, "all-present");
        const long long all_ns = std::stoll(field(all_line, "t_ns"));

        const std::string note = rejoin_note(daemon);
        rdmamcast_close(client);
        daemon.stop(); // leaves every group: the raw Sets below need the MLIDs back
        const Raw after = raw_sets(fabric, groups, "after the restart");

        // Every `restored` follows the SA's answer to the daemon's Set, so when the watcher's first
        // round finds them all, the SA held them all by the client's last `restored`. A group
        // missing in that round would make the watcher's time the restore time.
        const bool verified = std::stoul(field(all_line, "rounds")) == 1;
        const long long restored_ns = verified ? seen.all_restored_ns : std::max(all_ns, seen.all_restored_ns);
        const double restore = ms_between(sa_ns, restored_ns);
        const double target = kSmInfoMs + 1.5 * after.sets_ms;
        std::printf("[ bench ] SM restart, %u groups on one port; detection interval %d ms "
                    "(monitor.sminfo_interval_ms; sminfo_timeout_ms %d, jitter_percent 0, audit off, "
                    "rejoin.jitter_ms %d)\n",
                    groups, kSmInfoMs, kSmInfoTimeoutMs, kRejoinJitterMs);
        std::printf("[ bench ] raw %u pipelined Sets (window %u): %.1f ms on the first OpenSM, %.1f ms on the "
                    "new one (Deletes %.1f / %.1f ms)\n",
                    groups, kWindow, before.sets_ms, after.sets_ms, before.deletes_ms, after.deletes_ms);
        std::printf("[ bench ] OpenSM start -> new SA answers: %.1f ms\n", ms_between(osm_start_ns, sa_ns));
        // The first `restored` comes one Set after the daemon noticed and its jitter ended; from
        // there to the last is the re-join's own work, the part comparable with the raw Sets.
        const double sets_phase = ms_between(seen.first_restored_ns, seen.all_restored_ns);
        std::printf("[ bench ] from SA answers: first restored %.1f ms (detection + jitter), last restored "
                    "%.1f ms (%u lost events); first -> last %.1f ms = %.2f x raw\n",
                    ms_between(sa_ns, seen.first_restored_ns), ms_between(sa_ns, seen.all_restored_ns), seen.lost,
                    sets_phase, sets_phase / after.sets_ms);
        std::printf("[ bench ] at the SA: %s (%s, done %.1f ms after the last restored)\n",
                    verified ? "all present in the first round" : "some missing in the first round",
                    all_line.substr(all_line.find("rounds")).c_str(), ms_between(seen.all_restored_ns, all_ns));
        std::printf("[ bench ] daemon: %s\n", note.c_str());
        std::printf("[ bench ] restore (SA answers -> all back) %.1f ms, from OpenSM start %.1f ms; "
                    "target %d + 1.5 x %.1f = %.1f ms: %s\n",
                    restore, ms_between(osm_start_ns, restored_ns), kSmInfoMs, after.sets_ms, target,
                    restore <= target ? "met" : "NOT met");
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mcastd-bench-rejoin: %s\n", e.what());
        return 1;
    }
}
