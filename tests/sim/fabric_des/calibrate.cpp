// mcastd-fabric-des-calibrate: the fabric simulation against real daemons on the simulator.
//
// On ibsim + OpenSM (doc/testbed.md), with DAEMONS rdma-mcastd instances (H2..), each with one
// client holding the same GROUPS groups:
//  1. mcastd-raw-sa measures the SA: pipelined Sets (window 16) give its service time S, one
//     at a time give the round trip, from which the wire delay of the model follows.
//  2. OpenSM is stopped and started again. Each daemon notices at its next SMInfoRecord poll
//     (ibsim's HCAs cannot take ClientReregister), re-joins, and reports the re-join's length
//     in `status` (last_rejoin); its SA counters before and after give the MADs it sent.
//  3. The simulation runs the same fabric: the same number of hosts and groups, S and the
//     wire delay from step 1, the daemons' SA timeouts and re-join jitter.
// The model is told of the restart as the daemons are on ibsim: only by their SMInfoRecord polls.
// It prints both side by side: each host's re-join as `status` reports it (from its own
// detection to its last group), longest and mean, and the SA MADs per membership. It passes or
// fails on nothing: the machine's other load skews the simulator.
//
//   mcastd-fabric-des-calibrate [--daemons N] [--groups G] [--timeout-ms T] [--max-timeout-ms T]
//                               [--jitter-ms J] [--sminfo-ms P]
// Small timeouts (a few ms) make 8 daemons retransmit as thousands would with the defaults; a
// short SMInfoRecord interval (--sminfo-ms) makes them notice the restart closer together.
#include <arpa/inet.h>
#include <poll.h>
#include <rdmamcast/client.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
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
constexpr unsigned kWindow = 16;
constexpr const char *kRawBase = "ff15:7c::", *kGroupBase = "ff15:7d::";

struct Options {
    unsigned daemons = 8;
    unsigned groups = 100;
    unsigned timeout_ms = 300, max_timeout_ms = 2000;
    unsigned jitter_ms = 500;
    unsigned sminfo_ms = 500; // how soon the daemons notice the restart (no ClientReregister)
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

} // namespace

int main(int argc, char **argv) {
    Options o;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
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
            else
                throw std::invalid_argument("unknown option " + a);
        }
        o.max_timeout_ms = std::max(o.max_timeout_ms, o.timeout_ms);

        Fabric::Options fo;
        fo.hcas = static_cast<int>(o.daemons) + 1; // H1 runs OpenSM
        Fabric fabric(fo);

        // 1. The SA on its own.
        const unsigned raw_n = 500;
        const double pipelined_ms = raw_sets_ms(fabric, raw_n, kWindow);
        const double sequential_ms = raw_sets_ms(fabric, raw_n, 1);
        const double rate = raw_n / (pipelined_ms / 1e3);
        const double rtt_ms = sequential_ms / raw_n;
        const double wire_ms = std::max(0.0, (rtt_ms - 1e3 / rate) / 2);

        // 2. The daemons, their clients, the restart.
        char config[512];
        std::snprintf(config, sizeof config,
                      R"({"log_level": "warning", "rejoin": {"jitter_ms": %u},)"
                      R"( "sa": {"timeout_ms": %u, "max_timeout_ms": %u},)"
                      R"( "monitor": {"sminfo_interval_ms": %u, "sminfo_timeout_ms": %d,)"
                      R"( "portinfo_interval_ms": %d, "jitter_percent": 0, "audit_per_second": 0}})",
                      o.jitter_ms, o.timeout_ms, o.max_timeout_ms, o.sminfo_ms, kSmInfoTimeoutMs, kPortInfoMs);
        std::vector<std::unique_ptr<Daemon>> daemons;
        std::vector<Client> clients(o.daemons);
        for (unsigned d = 0; d < o.daemons; ++d) {
            daemons.push_back(std::make_unique<Daemon>(fabric, "H" + std::to_string(d + 2), config));
            if (int rc = rdmamcast_connect(daemons.back()->socket().c_str(), &clients[d].c); rc < 0)
                throw std::runtime_error(std::string("connect: ") + std::strerror(-rc));
            for (unsigned g = 1; g <= o.groups; ++g) {
                char mgid[48];
                std::snprintf(mgid, sizeof mgid, "%s%x", kGroupBase, g);
                rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
                p.device = "ibsim0";
                p.port = 1;
                inet_pton(AF_INET6, mgid, p.mgid);
                if (int rc = rdmamcast_join(clients[d].c, &p, nullptr, nullptr); rc < 0)
                    throw std::runtime_error(std::string("join ") + mgid + ": " + std::strerror(-rc));
            }
        }
        std::vector<rdmamcast_counters> before(o.daemons);
        for (unsigned d = 0; d < o.daemons; ++d) {
            const auto deadline = Clock::now() + std::chrono::seconds(10);
            for (;;) { // the SM restart is judged against the first SMInfoRecord sample
                auto st = status_of(clients[d].c);
                if (st->num_ports > 0 && st->ports[0]->sm_known) {
                    before[d] = *st->counters;
                    break;
                }
                if (Clock::now() > deadline)
                    throw std::runtime_error("a daemon never read the SM's SMInfoRecord");
                std::this_thread::sleep_for(std::chrono::milliseconds(20)); // status has no push form
            }
        }
        fabric.stop_opensm();
        fabric.start_opensm();
        const auto end = Clock::now() + std::chrono::seconds(120);
        std::vector<unsigned> restored(o.daemons, 0);
        unsigned done = 0;
        while (done < o.daemons && Clock::now() < end) {
            std::vector<pollfd> fds;
            for (auto &c : clients)
                fds.push_back(pollfd{rdmamcast_event_fd(c.c), POLLIN, 0});
            if (::poll(fds.data(), fds.size(), 100) <= 0)
                continue;
            for (unsigned d = 0; d < o.daemons; ++d) {
                rdmamcast_event ev;
                while (rdmamcast_next_event(clients[d].c, &ev) == 0)
                    if (ev.type == RDMAMCAST_EVENT_RESTORED && ++restored[d] == o.groups)
                        ++done;
            }
        }
        if (done < o.daemons)
            throw std::runtime_error("only " + std::to_string(done) + " of " + std::to_string(o.daemons) +
                                     " daemons restored every membership within 120 s");
        double longest_s = 0, sum_s = 0;
        unsigned long long sent = 0, retransmits = 0, timeouts = 0;
        for (unsigned d = 0; d < o.daemons; ++d) {
            auto st = status_of(clients[d].c);
            const rdmamcast_rejoin *r = st->ports[0]->last_rejoin;
            if (!r)
                throw std::runtime_error("a daemon reports no re-join");
            longest_s = std::max(longest_s, r->duration_s);
            sum_s += r->duration_s;
            sent += st->counters->sa_mads_sent - before[d].sa_mads_sent;
            retransmits += st->counters->sa_retransmits - before[d].sa_retransmits;
            timeouts += st->counters->sa_timeouts - before[d].sa_timeouts;
        }
        const double memberships = static_cast<double>(o.daemons) * o.groups;

        // 3. The model of the same fabric.
        mcastd::des::DesConfig c;
        c.hosts = o.daemons;
        c.groups = o.groups;
        c.sa_rate = rate;
        c.wire_delay = std::chrono::duration_cast<mcastd::Duration>(std::chrono::duration<double, std::milli>(wire_ms));
        c.txn.first_timeout = std::chrono::milliseconds(o.timeout_ms);
        c.txn.max_timeout = std::chrono::milliseconds(o.max_timeout_ms);
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
        const mcastd::des::DesResult m = mcastd::des::run_des(c);

        std::printf("SA on ibsim: %u pipelined Sets (window %u) in %.1f ms = %.0f/s; one at a time %.3f ms round "
                    "trip, so %.3f ms of wire each way in the model\n",
                    raw_n, kWindow, pipelined_ms, rate, rtt_ms, wire_ms);
        std::printf("%u daemons x %u groups, sa.timeout_ms %u, max_timeout_ms %u, rejoin.jitter_ms %u, "
                    "monitor.sminfo_interval_ms %u\n",
                    o.daemons, o.groups, o.timeout_ms, o.max_timeout_ms, o.jitter_ms, o.sminfo_ms);
        // The daemons' counters cover the outage too: SMInfoRecord polls while OpenSM was down
        // count as sent (and as timeouts), so the real MAD figure is a little high.
        std::printf("  real:  re-join per daemon (from its own detection) longest %.3f s, mean %.3f s; SA MADs sent "
                    "%llu (%.2f per membership, SMInfoRecord polls included, outage too), retransmits %llu, "
                    "timeouts %llu\n",
                    longest_s, sum_s / o.daemons, sent, static_cast<double>(sent) / memberships, retransmits,
                    timeouts);
        std::printf("  model: re-join per host longest %.3f s, mean %.3f s; Sets %.2f per membership (SA MADs %.2f "
                    "with the polls), retransmits %llu, failed Sets %llu\n",
                    m.host_rejoin_max_s, m.host_rejoin_mean_s, m.sets_per_membership(),
                    static_cast<double>(m.sa_sets + m.sa_deletes + m.sa_gets) / memberships,
                    static_cast<unsigned long long>(m.txn.retransmits),
                    static_cast<unsigned long long>(m.set_timeouts));
        std::printf("  ratio model/real: longest re-join %.2f, mean %.2f, MADs per membership %.2f\n",
                    m.host_rejoin_max_s / longest_s, m.host_rejoin_mean_s / (sum_s / o.daemons),
                    (static_cast<double>(m.sa_sets + m.sa_deletes + m.sa_gets) / memberships) /
                        (static_cast<double>(sent) / memberships));
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mcastd-fabric-des-calibrate: %s\n", e.what());
        return 1;
    }
}
