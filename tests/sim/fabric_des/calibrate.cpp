// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-fabric-des-calibrate: the fabric simulation against real daemons on the simulator.
//
// On ibsim + OpenSM (doc/testbed.md), with DAEMONS rdma-mcastd instances (H2..), each with one
// client holding the same GROUPS groups:
//  0. On a fabric of its own, one daemon alone, without the re-join jitter, re-joins its groups
//     after an OpenSM restart; the model's host cost (what each host spends on each answer) is
//     set so that the model's lone host takes as long (--no-host-cost: none).
//  1. mcastd-raw-sa measures the SA: pipelined Sets (window 16) give its service time S, one
//     at a time give the round trip, from which the wire delay of the model follows; each is
//     the median of 5 batches of 500.
//  2. OpenSM is stopped and started again. Each daemon notices at its next SMInfoRecord poll
//     (ibsim's HCAs cannot take ClientReregister), re-joins, and reports the re-join's length
//     in `status` (last_rejoin) and when it began; its SA counters before and after give the
//     MADs it sent.
//  3. The simulation runs the same fabric: the same number of hosts and groups, S and the
//     wire delay from step 1, the host cost from step 0, the daemons' SA config (timeouts,
//     window, congestion control and its RTT target), re-join jitter and poll intervals. It
//     runs twice: once told of the
//     restart as the daemons are on ibsim, only by its own SMInfoRecord polls (whose phases
//     are its own random draw), and once with each host told (CLIENT_REREGISTER) at the
//     instant its real daemon noticed the restart, so that both re-join with the same overlap.
//     Each runs with --model-seeds draws of its random pauses, and its figures are their mean.
// It prints both side by side: each host's re-join as `status` reports it (from its own
// detection to its last group), longest and mean; the span from the first detection to the
// last group; the time at least one host was re-joining and the memberships restored per
// second of it; the SA MADs per membership and the retransmits. With --runs K it does all of
// that K times, each on a fresh fabric, and ends with the median and the range of every
// figure and of every model/real ratio. It passes or fails on nothing: the machine's other
// load skews the simulator.
//
//   mcastd-fabric-des-calibrate [--daemons N] [--groups G] [--timeout-ms T] [--max-timeout-ms T]
//                               [--jitter-ms J] [--sminfo-ms P] [--window W] [--rtt-target-ms T]
//                               [--fixed-window] [--runs K] [--model-seeds K] [--trace-ms P]
//                               [--no-host-cost]
// --window, --rtt-target-ms and --fixed-window are the daemons' sa.window, sa.rtt_target_ms
// and sa.congestion_control false, and the model's alike. Small timeouts (a few ms) make 8
// daemons retransmit as thousands would with the defaults; a short SMInfoRecord interval
// (--sminfo-ms) makes them notice the restart closer together; an RTT target of 1 ms makes
// their congestion control see the queue 8 daemons build on ibsim. --trace-ms P samples every
// daemon's window and srtt every P ms and prints the model's beside it.
#include <arpa/inet.h>
#include <dirent.h>
#include <poll.h>
#include <rdmamcast/client.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/tool_line.hpp"
#include "fabric_des.hpp"
#include "sim/daemon_harness.hpp"

using namespace mcastd::sim;
using mcastd::bench::field;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kSmInfoTimeoutMs = 100, kPortInfoMs = 200;
constexpr unsigned kRawWindow = 16; // of the SA measurement, whatever the daemons' window
constexpr unsigned kRawSets = 500, kRawBatches = 5;
constexpr const char *kRawBase = "ff15:7c::", *kGroupBase = "ff15:7d::";

struct Options {
    unsigned daemons = 8;
    unsigned groups = 100;
    unsigned timeout_ms = 300, max_timeout_ms = 2000;
    unsigned jitter_ms = 500;
    unsigned sminfo_ms = 500; // how soon the daemons notice the restart (no ClientReregister)
    unsigned window = 16;     // sa.window
    unsigned rtt_target_ms = 50; // sa.rtt_target_ms
    bool fixed_window = false;   // sa.congestion_control false
    bool no_host_cost = false;   // no lone daemon, no host cost in the model
    unsigned runs = 1;
    unsigned model_seeds = 10; // model runs per real run, each its own random draws, averaged
    unsigned trace_ms = 0;     // > 0: sample every daemon's SA window this often during the re-join
};

unsigned number(const char *opt, const char *v) {
    if (!v)
        throw std::invalid_argument(std::string(opt) + " needs a value");
    return static_cast<unsigned>(std::stoul(v));
}

// Wall time of COUNT raw Sets with WINDOW in flight (then deleted again), in ms.
double raw_sets_ms(Fabric &f, unsigned count, unsigned window) {
    const RunResult r = f.run_on("H2", {MCASTD_RAW_SA, "sets", std::to_string(count), kRawBase, std::to_string(window)},
                                 std::chrono::seconds(120));
    if (r.exit_code != 0)
        throw std::runtime_error("mcastd-raw-sa exited " + std::to_string(r.exit_code) + ": " + r.out + r.err);
    return std::stod(field(r.out.substr(0, r.out.find('\n')), "ms"));
}

struct Client {
    rdmamcast_client *c = nullptr;
    ~Client() {
        if (c)
            rdmamcast_close(c);
    }
};

std::unique_ptr<rdmamcast_daemon_status, void (*)(rdmamcast_daemon_status *)> status_of(rdmamcast_client *c) {
    rdmamcast_daemon_status *st = nullptr;
    if (int rc = rdmamcast_status(c, &st); rc < 0)
        throw std::runtime_error(std::string("status: ") + std::strerror(-rc));
    return {st, rdmamcast_status_free};
}

// A client of `daemon` holding the G groups.
void connect_and_join(Daemon &daemon, unsigned groups, Client &client) {
    if (int rc = rdmamcast_connect(daemon.socket().c_str(), &client.c); rc < 0)
        throw std::runtime_error(std::string("connect: ") + std::strerror(-rc));
    for (unsigned g = 1; g <= groups; ++g) {
        char mgid[48];
        std::snprintf(mgid, sizeof mgid, "%s%x", kGroupBase, g);
        rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
        p.device = "ibsim0";
        p.port = 1;
        inet_pton(AF_INET6, mgid, p.mgid);
        if (int rc = rdmamcast_join(client.c, &p, nullptr, nullptr); rc < 0)
            throw std::runtime_error(std::string("join ") + mgid + ": " + std::strerror(-rc));
    }
}

// The daemon's counters once it has read the SM's SMInfoRecord: an SM restart is judged
// against that first sample.
rdmamcast_counters counters_once_sm_known(rdmamcast_client *c) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    for (;;) {
        auto st = status_of(c);
        if (st->num_ports > 0 && st->ports[0]->sm_known)
            return *st->counters;
        if (Clock::now() > deadline)
            throw std::runtime_error("a daemon never read the SM's SMInfoRecord");
        std::this_thread::sleep_for(std::chrono::milliseconds(20)); // status has no push form
    }
}

// Reads events until every client has had G `restored`; false at the deadline, with
// `restored` saying how far each got.
bool wait_restored(std::vector<Client> &clients, unsigned groups, std::chrono::seconds within,
                   std::vector<unsigned> &restored) {
    const auto end = Clock::now() + within;
    restored.assign(clients.size(), 0);
    std::size_t done = 0;
    while (done < clients.size() && Clock::now() < end) {
        std::vector<pollfd> fds;
        for (auto &c : clients)
            fds.push_back(pollfd{rdmamcast_event_fd(c.c), POLLIN, 0});
        if (::poll(fds.data(), fds.size(), 100) <= 0)
            continue;
        for (std::size_t d = 0; d < clients.size(); ++d) {
            rdmamcast_event ev;
            while (rdmamcast_next_event(clients[d].c, &ev) == 0)
                if (ev.type == RDMAMCAST_EVENT_RESTORED && ++restored[d] == groups)
                    ++done;
        }
    }
    return done == clients.size();
}

// CPU seconds (user + system) used so far by this process's children (the daemons, ibsim,
// OpenSM, ...) by command name, and by this process itself ("calibrate").
std::map<std::string, double> cpu_seconds() {
    std::map<std::string, double> by_name;
    const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const pid_t self = ::getpid();
    auto read_stat = [&](const std::string &path, pid_t want_parent, const char *as) {
        std::ifstream in(path);
        std::string line;
        if (!std::getline(in, line))
            return;
        const auto open = line.find('('), close = line.rfind(')');
        if (open == std::string::npos || close == std::string::npos)
            return;
        std::istringstream rest(line.substr(close + 2));
        std::string state;
        long ppid = 0;
        rest >> state >> ppid;
        if (want_parent && ppid != want_parent)
            return;
        std::string skip;
        for (int i = 0; i < 9; ++i) // pgrp .. cmajflt
            rest >> skip;
        unsigned long long utime = 0, stime = 0;
        rest >> utime >> stime;
        by_name[as ? as : line.substr(open + 1, close - open - 1)] += static_cast<double>(utime + stime) / tick;
    };
    read_stat("/proc/self/stat", 0, "calibrate");
    if (DIR *d = ::opendir("/proc")) {
        while (const dirent *e = ::readdir(d))
            if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
                read_stat(std::string("/proc/") + e->d_name + "/stat", self, nullptr);
        ::closedir(d);
    }
    return by_name;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// What one run measured for real.
struct Real {
    double pipelined_ms = 0, sequential_ms = 0, rate = 0, rtt_ms = 0, wire_ms = 0; // medians
    std::vector<double> pipelined_all_ms, sequential_all_ms;                        // every batch
    std::vector<double> detect_s; // each daemon's detection, from the first one
    std::vector<double> length_s; // each daemon's re-join (status)
    unsigned long long sent = 0, retransmits = 0, timeouts = 0, late = 0;
    std::vector<double> window, srtt_ms; // each port's window and srtt at the end
    std::map<std::string, double> cpu_s; // from OpenSM's stop to the last `restored`
    double cpu_wall_s = 0;
    std::vector<std::string> trace; // --trace-ms: "t_ms w0/srtt0 w1/srtt1 ..." (* re-joining)
    double sa_back_s = 0;           // start_opensm's return (the SA answered), from OpenSM's stop
    double first_detect_s = 0;      // the first daemon's detection, from OpenSM's stop
};

// The figures compared, for the real daemons and for the model.
// `busy` is the time at least one host was re-joining (the union of the re-joins), and `rate`
// the memberships restored per second of it: the SA's throughput as the hosts got it, whatever
// the gaps between their detections.
struct Figures {
    double longest_s = 0, mean_s = 0, span_s = 0, busy_s = 0, rate = 0, mads_per_membership = 0, retransmits = 0;
};

struct Field {
    const char *name;
    double Figures::*member;
    int decimals;
};
constexpr Field kFields[] = {{"longest s", &Figures::longest_s, 3},
                             {"mean s", &Figures::mean_s, 3},
                             {"span s", &Figures::span_s, 3},
                             {"busy s", &Figures::busy_s, 3},
                             {"restored/s busy", &Figures::rate, 0},
                             {"MADs/memb", &Figures::mads_per_membership, 3},
                             {"retransmits", &Figures::retransmits, 0}};

Figures figures_of(const std::vector<double> &start_s, const std::vector<double> &length_s, double mads,
                   double retransmits, double memberships) {
    Figures f;
    double sum = 0, first = 1e300, last = 0;
    std::vector<std::pair<double, double>> spans;
    for (std::size_t i = 0; i < length_s.size(); ++i) {
        f.longest_s = std::max(f.longest_s, length_s[i]);
        sum += length_s[i];
        first = std::min(first, start_s[i]);
        last = std::max(last, start_s[i] + length_s[i]);
        spans.emplace_back(start_s[i], start_s[i] + length_s[i]);
    }
    std::sort(spans.begin(), spans.end());
    double covered_to = -1e300;
    for (const auto &[from, to] : spans) {
        f.busy_s += std::max(0.0, to - std::max(from, covered_to));
        covered_to = std::max(covered_to, to);
    }
    f.mean_s = length_s.empty() ? 0 : sum / static_cast<double>(length_s.size());
    f.span_s = length_s.empty() ? 0 : last - first;
    f.rate = f.busy_s > 0 ? memberships / f.busy_s : 0;
    f.mads_per_membership = mads / memberships;
    f.retransmits = retransmits;
    return f;
}

// The SA on its own: pipelined Sets (window 16) give its rate, one at a time the round trip.
// One batch of 500 varies by a factor of 2 on a shared 2-core machine; the median of
// kRawBatches of each is steadier.
struct RawSa {
    double pipelined_ms = 0, sequential_ms = 0, rate = 0, rtt_ms = 0, wire_ms = 0; // medians
    std::vector<double> pipelined_all_ms, sequential_all_ms;                        // every batch
};

struct Lone {
    RawSa sa;            // its fabric's SA
    double rejoin_s = 0; // the daemon's re-join
};

RawSa measure_sa(Fabric &fabric) {
    RawSa m;
    for (unsigned b = 0; b < kRawBatches; ++b) {
        m.pipelined_all_ms.push_back(raw_sets_ms(fabric, kRawSets, kRawWindow));
        m.sequential_all_ms.push_back(raw_sets_ms(fabric, kRawSets, 1));
    }
    m.pipelined_ms = median(m.pipelined_all_ms);
    m.sequential_ms = median(m.sequential_all_ms);
    m.rate = kRawSets / (m.pipelined_ms / 1e3);
    m.rtt_ms = m.sequential_ms / kRawSets;
    m.wire_ms = std::max(0.0, (m.rtt_ms - 1e3 / m.rate) / 2);
    return m;
}

// One daemon alone, without the re-join jitter, on a fabric of its own (H1 the SM, H2 the
// daemon): the SA measured as in run_real, then the daemon's re-join after an OpenSM restart.
// The model's host cost is fitted to it. A fabric of its own, because a daemon notices a
// restart by the SM's ActCount falling: the first OpenSM of a fresh fabric counts well beyond
// where a restarted one starts, a second restart need not fall below the first's.
Lone run_lone(const Options &o, const std::string &lone_config) {
    Lone lone;
    Fabric::Options fo;
    fo.hcas = 2;
    Fabric fabric(fo);
    lone.sa = measure_sa(fabric);
    Daemon daemon(fabric, "H2", lone_config);
    std::vector<Client> client(1);
    connect_and_join(daemon, o.groups, client[0]);
    counters_once_sm_known(client[0].c);
    fabric.stop_opensm();
    fabric.start_opensm();
    std::vector<unsigned> restored;
    if (!wait_restored(client, o.groups, std::chrono::seconds(60), restored))
        throw std::runtime_error("the lone daemon restored " + std::to_string(restored[0]) + " of " +
                                 std::to_string(o.groups) + " memberships within 60 s");
    auto st = status_of(client[0].c);
    const rdmamcast_rejoin *r = st->ports[0]->last_rejoin;
    if (!r || !r->finished)
        throw std::runtime_error("the lone daemon reports no finished re-join");
    lone.rejoin_s = r->duration_s;
    return lone;
}

Real run_real(const Options &o, const std::string &config) {
    Real real;
    Fabric::Options fo;
    fo.hcas = static_cast<int>(o.daemons) + 1; // H1 runs OpenSM
    Fabric fabric(fo);

    // 1. The SA on its own.
    const RawSa sa = measure_sa(fabric);
    real.pipelined_ms = sa.pipelined_ms;
    real.sequential_ms = sa.sequential_ms;
    real.pipelined_all_ms = sa.pipelined_all_ms;
    real.sequential_all_ms = sa.sequential_all_ms;
    real.rate = sa.rate;
    real.rtt_ms = sa.rtt_ms;
    real.wire_ms = sa.wire_ms;

    // 2. The daemons, their clients, the restart.
    std::vector<std::unique_ptr<Daemon>> daemons;
    std::vector<Client> clients(o.daemons);
    for (unsigned d = 0; d < o.daemons; ++d) {
        daemons.push_back(std::make_unique<Daemon>(fabric, "H" + std::to_string(d + 2), config));
        connect_and_join(*daemons.back(), o.groups, clients[d]);
    }
    std::vector<rdmamcast_counters> before(o.daemons);
    for (unsigned d = 0; d < o.daemons; ++d)
        before[d] = counters_once_sm_known(clients[d].c);
    // --trace-ms: a thread of its own samples every daemon's window through connections of
    // its own, from before OpenSM restarts (the daemons may re-join before start_opensm has
    // seen the SA answer) until the last `restored`.
    std::atomic<bool> tracing{o.trace_ms > 0};
    std::vector<Client> tracers(o.trace_ms ? o.daemons : 0);
    for (unsigned d = 0; d < tracers.size(); ++d)
        if (int rc = rdmamcast_connect(daemons[d]->socket().c_str(), &tracers[d].c); rc < 0)
            throw std::runtime_error(std::string("connect: ") + std::strerror(-rc));
    fabric.stop_opensm();
    const auto cpu0 = cpu_seconds();
    const auto wall0 = Clock::now();
    std::thread tracer;
    if (o.trace_ms)
        tracer = std::thread([&] {
            for (auto next = Clock::now(); tracing; next += std::chrono::milliseconds(o.trace_ms)) {
                std::this_thread::sleep_until(next);
                char buf[64];
                std::snprintf(buf, sizeof buf, "%6.0f",
                              std::chrono::duration<double, std::milli>(Clock::now() - wall0).count());
                std::string line = buf;
                for (auto &c : tracers) {
                    rdmamcast_daemon_status *st = nullptr;
                    if (rdmamcast_status(c.c, &st) < 0 || st->num_ports == 0) {
                        line += " ?";
                    } else {
                        const rdmamcast_port_status *port = st->ports[0];
                        std::snprintf(buf, sizeof buf, " %s%.2g/%.2g", port->rejoining ? "*" : "",
                                      port->sa ? port->sa->window : 0, port->sa ? port->sa->srtt_ms : 0);
                        line += buf;
                    }
                    rdmamcast_status_free(st);
                }
                real.trace.push_back(line);
            }
        });
    fabric.start_opensm();
    real.sa_back_s = std::chrono::duration<double>(Clock::now() - wall0).count();
    std::vector<unsigned> restored;
    const bool all_restored = wait_restored(clients, o.groups, std::chrono::seconds(120), restored);
    tracing = false;
    if (tracer.joinable())
        tracer.join();
    const auto cpu1 = cpu_seconds();
    real.cpu_wall_s = std::chrono::duration<double>(Clock::now() - wall0).count();
    for (const auto &[name, s] : cpu1)
        real.cpu_s[name] = s - (cpu0.count(name) ? cpu0.at(name) : 0.0);
    if (!all_restored) {
        std::string counts;
        for (unsigned d = 0; d < o.daemons; ++d) {
            auto st = status_of(clients[d].c);
            counts += " H" + std::to_string(d + 2) + " " + std::to_string(restored[d]) +
                      (st->ports[0]->last_rejoin ? "" : " (no re-join)");
        }
        throw std::runtime_error("not every daemon restored its " + std::to_string(o.groups) +
                                 " memberships within 120 s:" + counts);
    }
    std::vector<double> detected; // on this process's steady clock, seconds
    for (unsigned d = 0; d < o.daemons; ++d) {
        auto st = status_of(clients[d].c);
        const double asked = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
        const rdmamcast_port_status *port = st->ports[0];
        const rdmamcast_rejoin *r = port->last_rejoin;
        if (!r || !r->finished)
            throw std::runtime_error("a daemon reports no finished re-join");
        detected.push_back(asked - r->started_ago_s);
        real.length_s.push_back(r->duration_s);
        real.sent += st->counters->sa_mads_sent - before[d].sa_mads_sent;
        real.retransmits += st->counters->sa_retransmits - before[d].sa_retransmits;
        real.timeouts += st->counters->sa_timeouts - before[d].sa_timeouts;
        real.late += st->counters->sa_late - before[d].sa_late;
        real.window.push_back(port->sa ? port->sa->window : 0);
        real.srtt_ms.push_back(port->sa && port->sa->has_srtt ? port->sa->srtt_ms : 0);
    }
    const double first = *std::min_element(detected.begin(), detected.end());
    real.first_detect_s = first - std::chrono::duration<double>(wall0.time_since_epoch()).count();
    for (double t : detected)
        real.detect_s.push_back(t - first);
    return real;
}

mcastd::des::DesConfig model_config(const Options &o, const Real &real) {
    mcastd::des::DesConfig c;
    c.hosts = o.daemons;
    c.groups = o.groups;
    c.sa_rate = real.rate;
    c.wire_delay =
        std::chrono::duration_cast<mcastd::Duration>(std::chrono::duration<double, std::milli>(real.wire_ms));
    c.txn.first_timeout = std::chrono::milliseconds(o.timeout_ms);
    c.txn.max_timeout = std::chrono::milliseconds(o.max_timeout_ms);
    c.txn.window = o.window;
    c.txn.congestion.enabled = !o.fixed_window; // the daemon's default is on
    c.txn.congestion.rtt_target = std::chrono::milliseconds(o.rtt_target_ms);
    c.engine.rejoin_jitter = std::chrono::milliseconds(o.jitter_ms);
    c.monitor.sminfo_interval = std::chrono::milliseconds(o.sminfo_ms);
    c.monitor.sminfo_timeout = std::chrono::milliseconds(kSmInfoTimeoutMs);
    c.monitor.portinfo_interval = std::chrono::milliseconds(kPortInfoMs);
    c.monitor.jitter_percent = 0;
    c.monitor.audit_per_second = 0;
    // As on ibsim: no CLIENT_REREGISTER, each daemon finds the restart at its next
    // SMInfoRecord poll.
    c.reregister = false;
    c.sminfo_shows_restart = true;
    return c;
}

// The host cost at which the model's one host, alone and without jitter, re-joins in
// `lone_s` as the lone daemon did; 0 when the model is that slow without one. `none_s` is the
// model's lone re-join without a host cost.
mcastd::Duration fit_host_cost(mcastd::des::DesConfig c, double lone_s, double &none_s) {
    c.hosts = 1;
    c.engine.rejoin_jitter = mcastd::Duration::zero();
    c.reregister = true;
    c.sminfo_shows_restart = false;
    c.reregister_at.clear();
    auto length = [&c](std::chrono::nanoseconds h) {
        c.host_cost = std::chrono::duration_cast<mcastd::Duration>(h);
        return mcastd::des::run_des(c).host_rejoins.at(0).length_s;
    };
    none_s = length(std::chrono::nanoseconds(0));
    if (none_s >= lone_s)
        return mcastd::Duration::zero();
    std::chrono::nanoseconds lo{0}, hi{100'000};
    while (length(hi) < lone_s && hi < std::chrono::milliseconds(100))
        hi *= 2;
    while (hi - lo > std::chrono::nanoseconds(200)) { // its length grows with the cost
        const auto mid = lo + (hi - lo) / 2;
        (length(mid) < lone_s ? lo : hi) = mid;
    }
    return std::chrono::duration_cast<mcastd::Duration>(hi);
}

// The same, each host told at the instant its real daemon noticed the restart.
mcastd::des::DesConfig at_real_instants(mcastd::des::DesConfig c, const Real &real) {
    c.reregister = true;
    c.sminfo_shows_restart = false;
    for (double t : real.detect_s)
        c.reregister_at.push_back(
            std::chrono::duration_cast<mcastd::Duration>(std::chrono::duration<double>(t)));
    return c;
}

Figures model_figures(const mcastd::des::DesResult &m, double memberships) {
    std::vector<double> start, length;
    for (const auto &h : m.host_rejoins) {
        start.push_back(h.started_s);
        length.push_back(std::max(0.0, h.length_s));
    }
    return figures_of(start, length, static_cast<double>(m.sa_sets + m.sa_deletes + m.sa_gets),
                      static_cast<double>(m.txn.retransmits), memberships);
}

std::string list_ms(const std::vector<double> &v, double scale = 1e3) {
    std::string s;
    char buf[32];
    for (double x : v) {
        std::snprintf(buf, sizeof buf, "%s%.0f", s.empty() ? "" : " ", x * scale);
        s += buf;
    }
    return s;
}

std::string list_g(const std::vector<double> &v) {
    std::string s;
    char buf[32];
    for (double x : v) {
        std::snprintf(buf, sizeof buf, "%s%.3g", s.empty() ? "" : " ", x);
        s += buf;
    }
    return s;
}

void print_figures(const char *who, const Figures &f, const char *extra) {
    std::printf("  %-22s longest %.3f s, mean %.3f s, span %.3f s, busy %.3f s (%.0f restored/s); SA MADs %.3f per "
                "membership; retransmits %.0f%s\n",
                who, f.longest_s, f.mean_s, f.span_s, f.busy_s, f.rate, f.mads_per_membership, f.retransmits, extra);
}

struct Stat {
    std::vector<double> v;
    void add(double x) { v.push_back(x); }
    std::string show(int decimals = 3) const {
        if (v.empty())
            return "-";
        char buf[128];
        std::snprintf(buf, sizeof buf, "%.*f [%.*f-%.*f]", decimals, median(v), decimals,
                      *std::min_element(v.begin(), v.end()), decimals, *std::max_element(v.begin(), v.end()));
        return buf;
    }
};

} // namespace

constexpr const char *kUsage =
    "usage: mcastd-fabric-des-calibrate [--daemons N] [--groups G] [--timeout-ms T] [--max-timeout-ms T]\n"
    "                                   [--jitter-ms J] [--sminfo-ms P] [--window W] [--rtt-target-ms T]\n"
    "                                   [--fixed-window] [--runs K] [--model-seeds K] [--trace-ms P]\n"
    "                                   [--no-host-cost]\n"
    "Runs the fabric simulation beside real daemons on ibsim + OpenSM and prints both\n"
    "(tests/sim/fabric_des/README.md, \"Calibration against the simulator\").\n";

int main(int argc, char **argv) {
    Options o;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--help" || a == "-h") {
                std::fputs(kUsage, stdout);
                return 0;
            }
            if (a == "--fixed-window" || a == "--no-host-cost") {
                (a == "--fixed-window" ? o.fixed_window : o.no_host_cost) = true;
                continue;
            }
            const char *v = i + 1 < argc ? argv[++i] : nullptr;
            if (a == "--daemons")
                o.daemons = number(argv[i - 1], v);
            else if (a == "--groups")
                o.groups = number(argv[i - 1], v);
            else if (a == "--timeout-ms")
                o.timeout_ms = number(argv[i - 1], v);
            else if (a == "--max-timeout-ms")
                o.max_timeout_ms = number(argv[i - 1], v);
            else if (a == "--jitter-ms")
                o.jitter_ms = number(argv[i - 1], v);
            else if (a == "--sminfo-ms")
                o.sminfo_ms = number(argv[i - 1], v);
            else if (a == "--window")
                o.window = number(argv[i - 1], v);
            else if (a == "--rtt-target-ms")
                o.rtt_target_ms = number(argv[i - 1], v);
            else if (a == "--runs")
                o.runs = std::max(1u, number(argv[i - 1], v));
            else if (a == "--trace-ms")
                o.trace_ms = number(argv[i - 1], v);
            else if (a == "--model-seeds")
                o.model_seeds = std::max(1u, number(argv[i - 1], v));
            else
                throw std::invalid_argument("unknown option " + a);
        }
        o.max_timeout_ms = std::max(o.max_timeout_ms, o.timeout_ms);

        // sa.max_rate 0: unpaced, as the model runs unless told (--max-rate), so both measure the same.
        auto config_with = [&o](unsigned jitter_ms) {
            char config[640];
            std::snprintf(config, sizeof config,
                          R"({"log_level": "warning", "rejoin": {"jitter_ms": %u},)"
                          R"( "sa": {"timeout_ms": %u, "max_timeout_ms": %u, "window": %u,)"
                          R"( "congestion_control": %s, "rtt_target_ms": %u, "max_rate": 0},)"
                          R"( "monitor": {"sminfo_interval_ms": %u, "sminfo_timeout_ms": %d,)"
                          R"( "portinfo_interval_ms": %d, "jitter_percent": 0, "audit_per_second": 0}})",
                          jitter_ms, o.timeout_ms, o.max_timeout_ms, o.window, o.fixed_window ? "false" : "true",
                          o.rtt_target_ms, o.sminfo_ms, kSmInfoTimeoutMs, kPortInfoMs);
            return std::string(config);
        };
        const std::string config = config_with(o.jitter_ms), lone_config = config_with(0);
        std::printf("%u daemons x %u groups; sa: timeout_ms %u, max_timeout_ms %u, window %u, %s; "
                    "rejoin.jitter_ms %u, monitor.sminfo_interval_ms %u; %u run(s)\n",
                    o.daemons, o.groups, o.timeout_ms, o.max_timeout_ms, o.window,
                    o.fixed_window ? "congestion_control false (fixed window)"
                                   : ("congestion_control, rtt_target_ms " + std::to_string(o.rtt_target_ms)).c_str(),
                    o.jitter_ms, o.sminfo_ms, o.runs);
        const double memberships = static_cast<double>(o.daemons) * o.groups;

        // Medians and ranges over the runs.
        Stat rate, rtt, load;
        std::vector<Figures> reals, own_polls, instants_all; // one per run
        for (unsigned run = 0; run < o.runs; ++run) {
            double load1 = 0;
            if (std::ifstream in("/proc/loadavg"); in)
                in >> load1;
            std::optional<Lone> lone;
            if (!o.no_host_cost)
                lone = run_lone(o, lone_config);
            const Real real = run_real(o, config);

            // 3. The model of the same fabric, twice, each with model_seeds draws of its random
            // pauses and poll phases: the figures are their means, the per-host lines the first's.
            auto cfg = model_config(o, real);
            double lone_model_s = 0;
            if (lone) { // the lone daemon's model: its own fabric's SA, the rest as the main run's
                auto lone_cfg = cfg;
                lone_cfg.sa_rate = lone->sa.rate;
                lone_cfg.wire_delay = std::chrono::duration_cast<mcastd::Duration>(
                    std::chrono::duration<double, std::milli>(lone->sa.wire_ms));
                cfg.host_cost = fit_host_cost(lone_cfg, lone->rejoin_s, lone_model_s);
            }
            auto run_model = [&](const mcastd::des::DesConfig &base, mcastd::des::DesResult &first) {
                std::vector<Figures> each;
                for (unsigned k = 0; k < o.model_seeds; ++k) {
                    mcastd::des::DesConfig c = base;
                    c.seed = std::uint64_t{run} * o.model_seeds + k + 1;
                    const mcastd::des::DesResult m = mcastd::des::run_des(c);
                    each.push_back(model_figures(m, memberships));
                    if (k == 0)
                        first = m;
                }
                Figures mean;
                for (const Field &fd : kFields)
                    for (const Figures &f : each)
                        mean.*fd.member += f.*fd.member / static_cast<double>(each.size());
                return mean;
            };
            mcastd::des::DesResult polls, instants;
            const Figures pf = run_model(cfg, polls);
            auto replay = at_real_instants(cfg, real);
            replay.trace_every = std::chrono::milliseconds(o.trace_ms);
            const Figures inf = run_model(replay, instants);

            const Figures rf = figures_of(real.detect_s, real.length_s, static_cast<double>(real.sent),
                                          static_cast<double>(real.retransmits), memberships);

            std::printf("run %u (load %.2f): SA on ibsim: %u pipelined Sets (window %u) in %.1f ms = %.0f/s; one at "
                        "a time %.3f ms round trip, so %.3f ms of wire each way in the model (medians of %u batches: "
                        "pipelined ms %s, one at a time %s)\n",
                        run + 1, load1, kRawSets, kRawWindow, real.pipelined_ms, real.rate, real.rtt_ms, real.wire_ms,
                        kRawBatches, list_g(real.pipelined_all_ms).c_str(), list_g(real.sequential_all_ms).c_str());
            if (lone)
                std::printf("  one daemon alone, no jitter, on a fabric of its own (SA %.0f Sets/s, round trip %.3f ms): "
                            "re-join %.1f ms, the model's %.1f ms without a host cost; a host cost of %.1f us per MAD "
                            "received makes them equal\n",
                            lone->sa.rate, lone->sa.rtt_ms, lone->rejoin_s * 1e3, lone_model_s * 1e3,
                            std::chrono::duration<double, std::micro>(cfg.host_cost).count());
            // The daemons' counters cover the outage too: SMInfoRecord polls while OpenSM was
            // down count as sent (and as timeouts), so the real MAD figure is a little high.
            char extra[1024];
            std::snprintf(extra, sizeof extra,
                          " (timeouts %llu, late %llu; polls of the outage included)\n"
                          "    detected at ms: %s\n    re-join ms:      %s\n    window at the end: %s, srtt ms: %s",
                          real.timeouts, real.late, list_ms(real.detect_s).c_str(), list_ms(real.length_s).c_str(),
                          list_g(real.window).c_str(), list_g(real.srtt_ms).c_str());
            print_figures("real:", rf, extra);
            for (const std::string &line : real.trace)
                std::printf("    trace ms %s\n", line.c_str());
            std::string cpu;
            double busy = 0;
            for (const auto &[name, s] : real.cpu_s) {
                if (s <= 0)
                    continue;
                char buf[64];
                std::snprintf(buf, sizeof buf, "%s%s %.0f", cpu.empty() ? "" : ", ", name.c_str(), s * 1e3);
                cpu += buf;
                busy += s;
            }
            std::printf("    from OpenSM's stop: SA back at %.0f ms (start_opensm's saquery), first detection at %.0f ms, "
                        "last restored at %.0f ms; CPU ms meanwhile: %s; %.2f cores busy\n",
                        real.sa_back_s * 1e3, real.first_detect_s * 1e3, real.cpu_wall_s * 1e3, cpu.c_str(),
                        busy / real.cpu_wall_s);
            auto model_lines = [&](const char *who, const mcastd::des::DesResult &m, const Figures &f) {
                std::vector<double> start, length, window, srtt;
                for (const auto &h : m.host_rejoins) {
                    start.push_back(h.started_s);
                    length.push_back(h.length_s);
                    window.push_back(h.window);
                    srtt.push_back(h.srtt_ms);
                }
                const double s0 = start.empty() ? 0 : *std::min_element(start.begin(), start.end());
                for (double &s : start)
                    s -= s0;
                std::snprintf(extra, sizeof extra,
                              " (mean of %u seeds; the first: failed Sets %llu, Set queue p50/p99/max "
                              "%.2f/%.2f/%.2f ms)\n    detected at ms: %s\n    re-join ms:      %s\n"
                              "    window at the end: %s, srtt ms: %s",
                              o.model_seeds, static_cast<unsigned long long>(m.set_timeouts), m.set_delay_p50 * 1e3,
                              m.set_delay_p99 * 1e3, m.set_delay_max * 1e3, list_ms(start).c_str(),
                              list_ms(length).c_str(), list_g(window).c_str(), list_g(srtt).c_str());
                print_figures(who, f, extra);
            };
            model_lines("model, own polls:", polls, pf);
            model_lines("model, real instants:", instants, inf);
            // The first seed's trace, on the real trace's clock: its t0 is the first detection.
            for (const auto &ts : instants.trace) {
                std::string line;
                char buf[64];
                std::snprintf(buf, sizeof buf, "%6.0f", (ts.t_s + real.first_detect_s) * 1e3);
                line = buf;
                for (const auto &h : ts.hosts) {
                    std::snprintf(buf, sizeof buf, " %s%.2g/%.2g", h.rejoining ? "*" : "", h.window, h.srtt_ms);
                    line += buf;
                }
                std::printf("    model trace ms %s\n", line.c_str());
            }
            std::printf("  ratio model/real, own polls:     longest %.2f, mean %.2f, span %.2f, rate %.2f, MADs %.2f\n",
                        pf.longest_s / rf.longest_s, pf.mean_s / rf.mean_s, pf.span_s / rf.span_s, pf.rate / rf.rate,
                        pf.mads_per_membership / rf.mads_per_membership);
            std::printf("  ratio model/real, real instants: longest %.2f, mean %.2f, span %.2f, rate %.2f, MADs %.2f\n",
                        inf.longest_s / rf.longest_s, inf.mean_s / rf.mean_s, inf.span_s / rf.span_s,
                        inf.rate / rf.rate, inf.mads_per_membership / rf.mads_per_membership);
            std::fflush(stdout);

            rate.add(real.rate);
            rtt.add(real.rtt_ms);
            load.add(load1);
            reals.push_back(rf);
            own_polls.push_back(pf);
            instants_all.push_back(inf);
        }
        std::printf("summary over %u run(s), median [min-max]: SA %s Sets/s, round trip %s ms, load %s\n", o.runs,
                    rate.show(0).c_str(), rtt.show(3).c_str(), load.show(2).c_str());
        std::printf("  %-21s", "");
        for (const Field &fd : kFields)
            std::printf(" %-24s", fd.name);
        std::printf("\n");
        auto row = [&](const char *who, const std::vector<Figures> &v, const std::vector<Figures> *over) {
            std::printf("  %-21s", who);
            for (const Field &fd : kFields) {
                Stat st;
                for (std::size_t i = 0; i < v.size(); ++i)
                    if (!over)
                        st.add(v[i].*fd.member);
                    else if ((*over)[i].*fd.member > 0) // a ratio of retransmits to none is none
                        st.add(v[i].*fd.member / ((*over)[i].*fd.member));
                std::printf(" %-24s", st.show(over ? 2 : fd.decimals).c_str());
            }
            std::printf("\n");
        };
        row("real", reals, nullptr);
        row("model, own polls", own_polls, nullptr);
        row("model, real instants", instants_all, nullptr);
        row("ratio, own polls", own_polls, &reals);
        row("ratio, real instants", instants_all, &reals);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mcastd-fabric-des-calibrate: %s (try --help)\n", e.what());
        return 1;
    }
}
