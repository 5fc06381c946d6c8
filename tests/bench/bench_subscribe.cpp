// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-subscribe: an application subscribing to 1,000 new groups through librdmamcast's
// asynchronous join (rdmamcast_join_start, completions on the event fd), beside 1,000 raw
// pipelined SA Sets (mcastd-raw-sa, the daemon's SA stack without its logic) with the same
// window as the daemon's SA (sa.window, 16), measured in the same run. Target (issue 16): the
// library's rate at least 80 % of the raw rate.
//
//  1. Raw Sets on H2 (created, then deleted again: the MLID pool holds 1,023).
//  2. rdma-mcastd on H2; one client starts 1,000 joins of new groups (explicit MGIDs) at once
//     and collects the completions. The daemon's status counters (sa_sets, sa_gets, version 2)
//     before and after give the SA MADs each join cost: 2, the probe Get and the Set
//     (doc/architecture.md §5 says why the Get stays outside an owned prefix).
//  3. The client closes (the daemon leaves those groups); another starts 1,000 joins of new
//     named groups (issue 29). Their MGIDs are in the named groups' prefix, which the daemon
//     owns by default (config groups.owned_prefixes): one Set each, no probe Get.
//  4. Another starts 1,000 creates of groups with SA-assigned MGIDs, which cost one Set each:
//     the same MADs as the raw Sets, so the rates compare the daemon and the library themselves.
//  5. Raw Sets again, with the daemon idle (it holds no group by then).
//
// Steps 2 to 5 are one round; several rounds run against one daemon. A kind's ratio in a round
// is its rate against the mean of the raw Sets just before and just after it. On a small
// machine one run moves by 15 points and more, and the raw Sets alone by a fifth between two
// runs: the median over the rounds is the figure.
//
// The rounds run twice, in two arrangements of the CPUs:
//  - shared: OpenSM, ibsim, the daemon, the client and the raw Sets share every CPU. The
//    daemon's path then runs four busy processes where the raw Sets run three, so on a machine
//    with few cores the ratio measures the simulated fabric's CPU beside the daemon's;
//  - fabric apart: ibsim and OpenSM have the first half of the CPUs, everything else the other
//    half, as a real fabric's switches and SM node are not on the host. The host side (the
//    daemon and its client, or the raw Sets) then has the same CPUs in both runs. Skipped on
//    one CPU.
//
// Beside each kind's rate it prints the host side's CPU for a join and its leave (the daemon's
// threads and this process, the library's) and the raw tool's for a Set and its Delete: with
// the fabric apart, the host's CPU is what the daemon's rate runs out of on a small machine.
// To show which side a rate runs out of, it also prints how busy each side was while the joins
// (or the raw Sets and Deletes) ran: the CPU both used over that time, as % of one CPU.
//
// It prints figures; it does not pass or fail on them.
//
//   mcastd-bench-subscribe [GROUPS [ROUNDS]]   (default 1000 and 5)
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <rdmamcast/client.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "bench/tool_line.hpp"
#include "sim/daemon_harness.hpp"

using namespace mcastd::sim;
using mcastd::bench::field;
using Clock = std::chrono::steady_clock;

namespace {

constexpr unsigned kWindow = 16; // the daemon's sa.window, for the raw Sets
constexpr const char *kRawBase = "ff15:7c::";

// CPU time a process has had, all its threads, in ns (the first field of each thread's
// /proc/PID/task/TID/schedstat: precise, where /proc/PID/stat counts clock ticks).
double cpu_ns(pid_t pid) {
    double ns = 0;
    const auto tasks = std::filesystem::path("/proc") / std::to_string(pid) / "task";
    for (const auto &t : std::filesystem::directory_iterator(tasks)) {
        std::ifstream in(t.path() / "schedstat");
        double run = 0;
        if (in >> run)
            ns += run;
    }
    return ns;
}

// CPU time of this process's children that have ended (the raw Sets tool), in ns.
double ended_children_cpu_ns() {
    rusage ru{};
    ::getrusage(RUSAGE_CHILDREN, &ru);
    auto ns = [](const timeval &tv) {
        return static_cast<double>(tv.tv_sec) * 1e9 + static_cast<double>(tv.tv_usec) * 1e3;
    };
    return ns(ru.ru_utime) + ns(ru.ru_stime);
}

// CPU time of OpenSM and ibsim, in ns.
double fabric_cpu_ns(const Fabric &f) {
    double ns = 0;
    for (pid_t p : f.fabric_pids())
        ns += cpu_ns(p);
    return ns;
}

struct RawRun {
    double ms = 0;
    double cpu_us = 0; // the tool's CPU per Set and its Delete
    double fabric_busy = 0, host_busy = 0; // % of one CPU over the Sets and the Deletes
};

RawRun raw_sets(Fabric &f, unsigned groups, const char *when) {
    const double cpu_before = ended_children_cpu_ns();
    const double fabric_before = fabric_cpu_ns(f);
    const RunResult r = f.run_on("H2", {MCASTD_RAW_SA, "sets", std::to_string(groups), kRawBase,
                                        std::to_string(kWindow)},
                                 std::chrono::seconds(120));
    if (r.exit_code != 0)
        throw std::runtime_error(std::string("raw Sets ") + when + " exited " +
                                 std::to_string(r.exit_code) + ": " + r.out + r.err);
    const auto line = [&](std::size_t n) { // the output's line n
        std::size_t at = 0;
        for (; n; --n)
            at = r.out.find('\n', at) + 1;
        return r.out.substr(at, r.out.find('\n', at) - at);
    };
    RawRun run;
    run.ms = std::stod(field(line(0), "ms"));
    const double both_ms = run.ms + std::stod(field(line(1), "ms")); // "deletes ... ms="
    const double tool_ns = ended_children_cpu_ns() - cpu_before;
    run.cpu_us = tool_ns / 1e3 / groups;
    run.fabric_busy = (fabric_cpu_ns(f) - fabric_before) / 1e4 / both_ms;
    run.host_busy = tool_ns / 1e4 / both_ms;
    return run;
}

struct SaCounters {
    unsigned long long sets = 0, gets = 0;
};

// The daemon's MCMemberRecord transaction counters, from a version 2 `status`.
SaCounters sa_counters(RawClient &raw) {
    static long long id = 100;
    ++id;
    const auto reply = nlohmann::json::parse(
        raw.call(R"({"id":)" + std::to_string(id) + R"(,"op":"status"})", id));
    const auto &c = reply.at("result").at("counters");
    return {c.value("sa_sets", 0ull), c.value("sa_gets", 0ull)};
}

std::string mgid_text(unsigned i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "ff15:7d::%x", i);
    return buf;
}

std::uint64_t port_groups(RawClient &raw) {
    static long long id = 10000;
    ++id;
    const auto reply = nlohmann::json::parse(
        raw.call(R"({"id":)" + std::to_string(id) + R"(,"op":"status"})", id));
    return reply.at("result").at("ports").at(0).at("groups").get<std::uint64_t>();
}

struct Subscribed {
    double ms = 0, start_ms = 0;
    unsigned failed = 0, twice = 0;
    std::string first_error;
    double sets = 0, gets = 0; // per join
    // CPU per join and its leave, in µs: the daemon's (every thread) and this process's (the
    // library; the bench's status calls are in both, and small).
    double daemon_cpu_us = 0, client_cpu_us = 0;
    // While the joins ran, % of one CPU: OpenSM and ibsim; the daemon and this process.
    double fabric_busy = 0, host_busy = 0;
};

// One client starts every join of `params` at once and collects the completions; the client
// is closed again, and this waits until the daemon holds no group on the port.
Subscribed subscribe(const Fabric &fabric, const std::string &socket, pid_t daemon, RawClient &raw,
                     std::vector<rdmamcast_join_params> &params) {
    const double daemon_before = cpu_ns(daemon), client_before = cpu_ns(::getpid());
    rdmamcast_client *c = nullptr;
    if (int rc = rdmamcast_connect(socket.c_str(), &c); rc < 0)
        throw std::runtime_error(std::string("connect: ") + rdmamcast_last_error(nullptr)->message);
    const auto groups = static_cast<unsigned>(params.size());
    std::vector<int> completed(groups, 0);
    const SaCounters before = sa_counters(raw);
    Subscribed out;

    const double fabric_before = fabric_cpu_ns(fabric);
    const double host_before = cpu_ns(daemon) + cpu_ns(::getpid());
    const auto t0 = Clock::now();
    for (unsigned i = 0; i < groups; ++i)
        if (int rc = rdmamcast_join_start(c, &params[i], &completed[i], nullptr); rc < 0)
            throw std::runtime_error(std::string("join_start: ") + rdmamcast_last_error(c)->message);
    const auto started = Clock::now();
    unsigned done = 0;
    while (done < groups) {
        pollfd p{rdmamcast_event_fd(c), POLLIN, 0};
        if (::poll(&p, 1, 30000) != 1)
            throw std::runtime_error("no completion within 30 s (" + std::to_string(done) + " of " +
                                     std::to_string(groups) + ")");
        rdmamcast_event ev;
        while (rdmamcast_next_event(c, &ev) == 0) {
            if (ev.type == RDMAMCAST_EVENT_JOINED) {
                ++*static_cast<int *>(ev.joined.context);
            } else if (ev.type == RDMAMCAST_EVENT_JOIN_ERROR) {
                ++*static_cast<int *>(ev.join_error.context);
                if (!out.failed++)
                    out.first_error = ev.join_error.error.message;
            } else {
                continue;
            }
            ++done;
        }
    }
    const auto t1 = Clock::now();
    const double fabric_ns = fabric_cpu_ns(fabric) - fabric_before;
    const double host_ns = cpu_ns(daemon) + cpu_ns(::getpid()) - host_before;
    const SaCounters after = sa_counters(raw);
    for (int n : completed)
        out.twice += n != 1;
    out.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    out.start_ms = std::chrono::duration<double, std::milli>(started - t0).count();
    out.fabric_busy = fabric_ns / 1e4 / out.ms;
    out.host_busy = host_ns / 1e4 / out.ms;
    out.sets = double(after.sets - before.sets) / groups;
    out.gets = double(after.gets - before.gets) / groups;

    rdmamcast_close(c);
    // The MLID pool (1,023) and groups_per_port (1,024) need these groups gone before more.
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (port_groups(raw) != 0) {
        if (Clock::now() > deadline)
            throw std::runtime_error("the daemon still holds groups 30 s after the client left");
        ::poll(nullptr, 0, 5);
    }
    out.daemon_cpu_us = (cpu_ns(daemon) - daemon_before) / 1e3 / groups;
    out.client_cpu_us = (cpu_ns(::getpid()) - client_before) / 1e3 / groups;
    return out;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One kind of join over the rounds, each beside the raw Sets of its round.
struct Kind {
    const char *what;
    std::vector<rdmamcast_join_params> params;
    std::vector<Subscribed> runs;
    std::vector<double> ratios; // % of the round's raw rate
};

void report(const Kind &k, unsigned groups, double raw_cpu_us) {
    std::vector<double> rates, per_mad, daemon_cpu, client_cpu, fabric_busy, host_busy;
    unsigned failed = 0, twice = 0;
    std::string first_error;
    double sets = 0, gets = 0;
    for (std::size_t r = 0; r < k.runs.size(); ++r) {
        const Subscribed &s = k.runs[r];
        rates.push_back(groups / s.ms * 1000);
        per_mad.push_back(k.ratios[r] * (s.sets + s.gets));
        daemon_cpu.push_back(s.daemon_cpu_us);
        client_cpu.push_back(s.client_cpu_us);
        fabric_busy.push_back(s.fabric_busy);
        host_busy.push_back(s.host_busy);
        failed += s.failed;
        twice += s.twice;
        if (first_error.empty())
            first_error = s.first_error;
        sets += s.sets / static_cast<double>(k.runs.size());
        gets += s.gets / static_cast<double>(k.runs.size());
    }
    std::string each;
    for (double r : k.ratios)
        each += (each.empty() ? "" : ", ") + std::to_string(static_cast<int>(r + 0.5));
    std::printf("[ bench ] librdmamcast: %u asynchronous %s on one connection (library window %u, "
                "daemon sa.window %u), %zu round(s): median %.0f joins/s; %u failed%s%s; %u completed "
                "other than once\n",
                groups, k.what, RDMAMCAST_JOIN_WINDOW, kWindow, k.runs.size(), median(rates), failed,
                failed ? ", first: " : "", first_error.c_str(), twice);
    std::printf("[ bench ]   SA MADs per join (daemon counters): %.2f Sets + %.2f Gets = %.2f\n", sets, gets,
                sets + gets);
    // Counted per MAD, against the raw Sets' one MAD per group: how much of the gap is the
    // MADs a join costs rather than the daemon or the library.
    if (sets + gets > 0)
        std::printf("[ bench ]   per SA MAD: median %.0f %% of the raw rate\n", median(per_mad));
    // Where the rate goes when the host's CPUs are the limit: the host side's CPU for a join and
    // its leave, beside the raw tool's for a Set and its Delete (the same SA stack).
    std::printf("[ bench ]   host CPU per join and its leave (medians): daemon %.1f us + client %.1f us = %.1f us; "
                "the raw tool: %.1f us per Set and its Delete\n",
                median(daemon_cpu), median(client_cpu), median(daemon_cpu) + median(client_cpu), raw_cpu_us);
    std::printf("[ bench ]   busy while the joins ran (medians, %% of one CPU): fabric (OpenSM, ibsim) %.0f %%, "
                "host (daemon, client) %.0f %%\n",
                median(fabric_busy), median(host_busy));
    const double m = median(k.ratios);
    std::printf("[ bench ]   rate / raw rate, each round: %s %%; median %.0f %% (target >= 80 %%): %s\n",
                each.c_str(), m, m >= 80 ? "met" : "NOT met");
}

// Every thread of `pid` on `cpus`.
void pin(pid_t pid, const cpu_set_t &cpus) {
    const auto tasks = std::filesystem::path("/proc") / std::to_string(pid) / "task";
    for (const auto &t : std::filesystem::directory_iterator(tasks))
        if (::sched_setaffinity(std::stoi(t.path().filename().string()), sizeof cpus, &cpus) < 0)
            throw std::runtime_error("sched_setaffinity(" + t.path().string() + "): " + std::strerror(errno));
}

struct Arrangement {
    std::vector<RawRun> raw; // before each round and after the last
    std::vector<Kind> kinds;
};

// `rounds` rounds against a daemon started for them (and stopped after).
Arrangement measure(Fabric &fabric, unsigned groups, unsigned rounds) {
    Arrangement a;
    a.raw.push_back(raw_sets(fabric, groups, "before the daemon"));

    // sa.max_rate 0: the daemon's own cost beside the raw Sets, as a small fabric may run it.
    Daemon daemon(fabric, "H2", R"({"log_level": "warning", "sa": {"max_rate": 0}})");
    RawClient raw(daemon.socket());
    raw.call(R"({"id":1,"op":"hello","versions":[2]})", 1);

    static std::vector<std::string> names; // the join parameters point into them
    names.resize(groups);
    Kind by_mgid{"joins of new groups by MGID", std::vector<rdmamcast_join_params>(groups), {}, {}};
    Kind named{"joins of new named groups (owned prefix)", by_mgid.params, {}, {}};
    Kind created{"creates (SA-assigned MGIDs)", by_mgid.params, {}, {}};
    for (unsigned i = 0; i < groups; ++i) {
        rdmamcast_join_params &m = by_mgid.params[i];
        m = RDMAMCAST_JOIN_PARAMS_INIT;
        m.device = "ibsim0";
        m.port = 1;
        inet_pton(AF_INET6, mgid_text(i + 1).c_str(), m.mgid);
        rdmamcast_join_params &c = created.params[i];
        c = m;
        std::memset(c.mgid, 0, sizeof c.mgid);
        c.flags = RDMAMCAST_JOIN_CREATE;
        names[i] = "bench-subscribe-" + std::to_string(i + 1);
        named.params[i] = c;
        named.params[i].flags = 0;
        named.params[i].name = names[i].c_str();
    }
    a.kinds = {std::move(by_mgid), std::move(named), std::move(created)};
    for (unsigned r = 0; r < rounds; ++r) {
        for (Kind &k : a.kinds)
            k.runs.push_back(subscribe(fabric, daemon.socket(), daemon.process().pid(), raw, k.params));
        // The daemon holds no group now (subscribe waited for that): the MLIDs are back.
        a.raw.push_back(raw_sets(fabric, groups, "between rounds"));
        const double raw_rate = groups / ((a.raw[r].ms + a.raw[r + 1].ms) / 2) * 1000;
        for (Kind &k : a.kinds)
            k.ratios.push_back(100 * groups / k.runs.back().ms * 1000 / raw_rate);
    }
    daemon.stop();
    return a;
}

void report(const char *arrangement, const Arrangement &a, unsigned groups) {
    std::printf("[ bench ] %s\n", arrangement);
    std::string each;
    char ms[32];
    std::vector<double> raw_ms, raw_cpu, fabric_busy, host_busy;
    for (const RawRun &r : a.raw) {
        fabric_busy.push_back(r.fabric_busy);
        host_busy.push_back(r.host_busy);
        std::snprintf(ms, sizeof ms, "%s%.1f", each.empty() ? "" : ", ", r.ms);
        each += ms;
        raw_ms.push_back(r.ms);
        raw_cpu.push_back(r.cpu_us);
    }
    const double raw = median(raw_ms);
    std::printf("[ bench ] raw %u pipelined SA Sets (window %u), before each round and after the last: %s ms; "
                "median %.1f ms = %.0f Sets/s\n",
                groups, kWindow, each.c_str(), raw, groups / raw * 1000);
    std::printf("[ bench ]   busy while the raw Sets and Deletes ran (medians, %% of one CPU): fabric (OpenSM, "
                "ibsim) %.0f %%, host (the raw tool) %.0f %%\n",
                median(fabric_busy), median(host_busy));
    for (const Kind &k : a.kinds)
        report(k, groups, median(raw_cpu));
}

} // namespace

int main(int argc, char **argv) {
    const mcastd::bench::CommandLine cl(argc, argv, "mcastd-bench-subscribe",
                                        "[GROUPS (1-1000, default 1000) [ROUNDS (1-100, default 5)]]\n"
                                        "Asynchronous joins of new groups through librdmamcast beside raw SA Sets.\n");
    if (cl.args.size() > 2)
        cl.bad(cl.args[2]);
    // The raw Sets' groups and the daemon's share the SA's pool of 1,023 MLIDs.
    const unsigned groups = cl.args.empty() ? 1000 : static_cast<unsigned>(cl.count(cl.args[0], 1, 1000));
    const unsigned rounds = cl.args.size() < 2 ? 5 : static_cast<unsigned>(cl.count(cl.args[1], 1, 100));
    try {
        Fabric fabric;
        const Arrangement shared = measure(fabric, groups, rounds);
        report("CPUs shared by the fabric (OpenSM, ibsim) and the host side:", shared, groups);

        cpu_set_t all;
        if (::sched_getaffinity(0, sizeof all, &all) < 0)
            throw std::runtime_error(std::string("sched_getaffinity: ") + std::strerror(errno));
        std::vector<int> cpus;
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &all))
                cpus.push_back(c);
        if (cpus.size() < 2) {
            std::printf("[ bench ] fabric apart: skipped, one CPU\n");
            return 0;
        }
        cpu_set_t fabric_cpus, host_cpus;
        CPU_ZERO(&fabric_cpus);
        CPU_ZERO(&host_cpus);
        for (std::size_t i = 0; i < cpus.size(); ++i)
            CPU_SET(cpus[i], i < cpus.size() / 2 ? &fabric_cpus : &host_cpus);
        for (pid_t p : fabric.fabric_pids())
            pin(p, fabric_cpus);
        pin(::getpid(), host_cpus); // the daemon, its client and the raw Sets start from here
        const Arrangement apart = measure(fabric, groups, rounds);
        const std::string title = "fabric apart: OpenSM and ibsim on " + std::to_string(cpus.size() / 2) +
                                  " CPU(s), the host side on the other " +
                                  std::to_string(cpus.size() - cpus.size() / 2) + ":";
        report(title.c_str(), apart, groups);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mcastd-bench-subscribe: %s\n", e.what());
        return 1;
    }
}
