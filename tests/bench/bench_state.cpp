// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-state: what the restart state costs a join as the daemon holds more, on a
// simulated fabric. 64 clients (threads, one connection each) join and leave held groups for
// 3 s, first with about 1,000 memberships held, then with about 100,000 (100 connections of
// 1,000 memberships each: few descriptors, as the simulator needs); beside each rate, the bytes
// the daemon wrote per join (and its leave), from its wchar in /proc/PID/io (the restart state's
// writes: its replies go by send(2), which wchar does not count), and how much of it went to
// whole state files (a compaction; with a daemon before the change log, every write).
//
// Set MCASTD_DAEMON_BINARY to another build's rdma-mcastd to measure it the same way.
// It prints figures; it does not pass or fail on them.
#include <rdmamcast/client.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
using bench::rss_kib;
namespace fs = std::filesystem;

namespace {

constexpr int kClients = 64, kLoadGroups = 16, kGroups = 1000, kConnections = 99;

// The daemon's bytes written by write(2) and friends so far.
std::uint64_t wchar(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/io");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("wchar:", 0) == 0)
            return std::stoull(line.substr(6));
    return 0;
}

// Waits until the daemon has written nothing for 200 ms (its last change is on disk); its wchar.
std::uint64_t settled(pid_t pid) {
    std::uint64_t last = wchar(pid);
    for (auto quiet = bench::Clock::now();;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const std::uint64_t now = wchar(pid);
        if (now != last) {
            last = now;
            quiet = bench::Clock::now();
        } else if (bench::Clock::now() - quiet > std::chrono::milliseconds(200)) {
            return now;
        }
    }
}

std::uintmax_t size_of(const fs::path &p) {
    std::error_code ec;
    const auto n = fs::file_size(p, ec);
    return ec ? 0 : n;
}

// Counts the state files written whole (a compaction, or each write of an older daemon: a new
// inode of state.json each time) while it runs, polling every millisecond; their bytes too.
class WholeWrites {
public:
    explicit WholeWrites(fs::path file) : file_(std::move(file)), thread_([this] { run(); }) {}
    ~WholeWrites() { stop(); }
    void stop() {
        done_ = true;
        if (thread_.joinable())
            thread_.join();
    }
    std::uint64_t count = 0, bytes = 0;

private:
    void run() {
        struct stat last{};
        ::stat(file_.c_str(), &last);
        while (!done_) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            struct stat now{};
            if (::stat(file_.c_str(), &now) == 0 && now.st_ino != last.st_ino) {
                ++count;
                bytes += static_cast<std::uint64_t>(now.st_size);
                last = now;
            }
        }
    }
    fs::path file_;
    std::atomic<bool> done_{false};
    std::thread thread_;
};

struct Figure {
    double rate;
    double bytes_per_join;
};

Figure measure(Daemon &d, const fs::path &state, const std::vector<std::string> &load_groups, long held) {
    const pid_t pid = d.process().pid();
    const std::uint64_t before = settled(pid);
    WholeWrites whole(state / "state.json");
    const bench::Load load = bench::join_leave_load(d.socket(), load_groups, kClients);
    const std::uint64_t after = settled(pid);
    whole.stop();
    const double joins = double(load.ops) / 2;
    const double total = double(after - before) / joins, files = double(whole.bytes) / joins;
    const Figure f{load.rate(), total - files};
    std::printf("[ bench ] %ld memberships held: %d clients joining/leaving held groups: %.0f ops/s; the daemon wrote "
                "%.0f bytes per join and its leave (%.0f joins)\n",
                held, kClients, f.rate, total, joins);
    // A compaction is as large as the state and comes once the log has grown as large (or more):
    // whether one falls in a 3 s window is chance, what it adds on average is at most the rest.
    std::printf("[ bench ]   %.0f bytes per join besides whole state files; whole state files: %ju written in the "
                "window, %.0f bytes per join; now state.json %ju bytes, state.log %ju bytes; daemon RSS %ld KiB\n",
                f.bytes_per_join, std::uintmax_t{whole.count}, files, size_of(state / "state.json"),
                size_of(state / "state.log"), rss_kib(pid));
    return f;
}

} // namespace

int main(int argc, char **argv) {
    mcastd::bench::CommandLine(argc, argv, "mcastd-bench-state",
                               "\nJoin/leave throughput and bytes written per join with 1,000 and 100,000 memberships "
                               "held.\n")
        .none();
    Fabric fabric;
    const fs::path state = fabric.scratch() / "state";
    fs::create_directories(state);
    // sa.max_rate 0: the daemon's own cost (the setup's creates too).
    Daemon d(fabric, "H2",
             R"({"limits": {"max_memberships_per_client": 2000, "max_clients": 2000}, "log_level": "warning",)"
             R"( "sa": {"max_rate": 0}})",
             {"--state-dir", state.string()});

    // The groups, held by one connection: the load's, and 1,000 more.
    rdmamcast_client *anchor = connect_or_die(d.socket());
    std::vector<std::string> load_groups, groups;
    for (int g = 1; g <= kLoadGroups; ++g) {
        load_groups.push_back("ff15:c::" + std::to_string(g));
        join_or_die(anchor, params(load_groups.back()));
    }
    for (int g = 1; g <= kGroups; ++g) {
        char m[40];
        std::snprintf(m, sizeof m, "ff15:d::%x", g);
        groups.push_back(m);
        join_or_die(anchor, params(m));
    }
    const Figure small = measure(d, state, load_groups, kLoadGroups + kGroups);

    // 99 more connections of 1,000 memberships each.
    std::vector<rdmamcast_client *> conns;
    for (int i = 0; i < kConnections; ++i)
        conns.push_back(connect_or_die(d.socket()));
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = t; i < kConnections; i += 4)
                for (const auto &m : groups)
                    join_or_die(conns[static_cast<std::size_t>(i)], params(m));
        });
    for (auto &t : threads)
        t.join();
    const Figure large = measure(d, state, load_groups, kLoadGroups + long(kConnections + 1) * kGroups);

    std::printf("[ bench ] join/leave rate with 1,000 / with 100,000 memberships held = %.2fx (target: at most 1.3x)\n",
                small.rate / large.rate);
    std::printf("[ bench ] bytes written per join besides whole state files, with 100,000 / with 1,000 memberships "
                "held = %.2fx (it must not grow with the state)\n",
                large.bytes_per_join / small.bytes_per_join);
    for (auto *c : conns)
        rdmamcast_close(c);
    rdmamcast_close(anchor);
    return 0;
}
