// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-fabric-des: the fabric re-join simulation from the command line (README.md here).
// One run with the given knobs, or --table for the grid of issue 18 with today's defaults.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fabric_des.hpp"

using namespace mcastd;
using namespace mcastd::des;

namespace {

void usage(FILE *out) {
    std::fprintf(out, R"(usage: mcastd-fabric-des [options]
       mcastd-fabric-des --table [options]

Simulates N hosts, each running the daemon's real engine, SA client and SA transaction layer,
re-joining G memberships each after an SM restart against one simulated OpenSM SA, in virtual
time. Prints the configuration and one table row per run.

Fabric and SA:
  --hosts N             hosts (default 50)
  --groups G            memberships per host, the same G groups on every host (default 20)
  --sa-rate R           Sets/Deletes the SA serves per second, one FIFO (default 7000)
  --get-rate R          Gets served per second, a second FIFO (default: the Set rate)
  --get-drop-s S        drop Gets when the Get queue's last request waited longer (default 10,
                        OpenSM's max_msg_fifo_timeout; 0 = never)
  --wire-us U           one-way wire delay in microseconds (default 0)
  --host-cost-us U      each host handles the MADs it receives one at a time, U microseconds
                        each (default 0: at once)
  --kernel-timeouts     answers later than the try's timeout never reach the daemon (ib_umad);
                        default: every answer arrives, however late (umad2sim)
The daemon (defaults are the daemon's):
  --window W            SA transactions in flight per port (sa.window, 16)
  --timeout-ms T        first try's timeout (sa.timeout_ms, 300)
  --max-timeout-ms T    cap of the doubling (sa.max_timeout_ms, 2000)
  --tries K             tries per transaction (sa.tries, 6)
  --max-rate R          per-port pacing in MAD/s (sa.max_rate; default 0 = off, as the figures
                        in config/README.md were made: the daemon's own default is 1000)
  --burst B             pacing bucket (1)
  --budget-fraction F   a fabric budget (fabric.hosts = --hosts, fabric.sa_budget = F x the SA's
                        Set rate): each port paced at its share, the re-join jitter at least
                        hosts / budget (default 0: no budget)
  --fixed-window        no congestion control (sa.congestion_control false): the window is
                        --window from the first MAD and the tries' timeouts only double
  --rtt-target-ms T     round trip above which the SA counts as queueing (sa.rtt_target_ms, 50)
  --jitter-ms J         re-join jitter (rejoin.jitter_ms, 500)
  --retry-min-ms T      engine retry backoff start (retry.min_ms, 1000)
  --retry-max-ms T      engine retry backoff cap (retry.max_ms, 16000)
  --no-polls            no SMInfoRecord polls (but the first) and no audits; by default the
                        port poller runs at its default intervals
  --sminfo-shows-restart
                        SMInfoRecord answers show the new SM (ActCount starts low again);
                        after the CLIENT_REREGISTER's re-join that is the port rules' new
                        baseline, not a second re-join
  --no-reregister       no CLIENT_REREGISTER at the restart (ibsim's HCAs cannot take it): the
                        hosts learn of it only from their SMInfoRecord polls or audits
                        (implies --sminfo-shows-restart)
Run:
  --probe-join-s S      S seconds after the restart, a client of the first host joins a new
                        group; --details prints how long it waited
  --probe-join-held     the probe joins the group the first host re-joins last instead
  --cap-s S             virtual time allowed after the restart (default 400)
  --seed S              random seed (default 1)
  --fake-timers         run on tests/unit's FakeTimers instead of the simulation's event queue
  --details             after each row, the full counters of the run
  --table               the grid: hosts 2000 and 5000, memberships 10/50/200, SA 7000/s and
                        2000/s (other options still apply)
  --help
)");
}

[[noreturn]] void bad(const std::string &why) {
    std::fprintf(stderr, "mcastd-fabric-des: %s (try --help)\n", why.c_str());
    std::exit(2);
}

double number(const char *opt, const char *v) {
    if (!v)
        bad(std::string(opt) + " needs a value");
    char *end = nullptr;
    const double d = std::strtod(v, &end);
    if (end == v || *end || d < 0)
        bad(std::string(opt) + ": not a non-negative number: " + v);
    return d;
}

void print_details(const DesResult &r) {
    auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    std::printf("    each host's last re-join (status): longest %.3f s, mean %.3f s\n", r.host_rejoin_max_s,
                r.host_rejoin_mean_s);
    if (r.probe_join_s >= 0)
        std::printf("    a client's join during the re-join waited %.3f s\n", r.probe_join_s);
    std::printf("    re-joins started %llu (port rules %llu, audits %llu); restored %llu/%llu (first at %.2f s), "
                "lost %llu; engine Sets %llu: ok %llu, refused %llu, timed out %llu; engine Gets %llu (timed out "
                "%llu); SMInfo polls %llu (failed %llu), audits %llu, PortInfo polls %llu\n",
                u(r.invalidations + r.audit_rejoins), u(r.invalidations), u(r.audit_rejoins), u(r.restored),
                u(r.memberships), r.first_restored_s, u(r.lost), u(r.set_txns), u(r.set_ok), u(r.set_refused),
                u(r.set_timeouts), u(r.get_txns), u(r.get_timeouts),
                u(r.sminfo_polls), u(r.sminfo_timeouts), u(r.audits), u(r.portinfo_polls));
    std::printf("    SA received Sets %llu, Deletes %llu, Gets %llu (dropped %llu); served Sets %llu, Gets %llu; "
                "answers after their try's timeout %llu (dropped by the kernel model %llu); max Set queue %zu; "
                "peak %.0f Sets/s arriving; Get queue delay max %.2f s\n",
                u(r.sa_sets), u(r.sa_deletes), u(r.sa_gets), u(r.sa_gets_dropped), u(r.sa_served_sets),
                u(r.sa_served_gets), u(r.answers_after_timeout), u(r.answers_dropped_late), r.max_set_queue,
                r.peak_set_arrivals, r.get_delay_max);
    std::printf("    transactions: sent %llu, retransmits %llu, timeouts %llu, responses %llu, late %llu, "
                "rejected %llu, bounces %llu, send errors %llu; timers started %llu; wall: re-join %.1f s of %.1f s\n",
                u(r.txn.sent), u(r.txn.retransmits), u(r.txn.timeouts), u(r.txn.responses), u(r.txn.late),
                u(r.txn.rejected), u(r.txn.bounces), u(r.txn.send_errors), u(r.events), r.wall_rejoin_s, r.wall_s);
}

} // namespace

int main(int argc, char **argv) {
    DesConfig cfg;
    cfg.txn.congestion.enabled = true; // the daemon's default (sa.congestion_control)
    cfg.txn.pacing_rate = 0;           // not the daemon's 1000 (sa.max_rate): see --max-rate
    bool table = false, details = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
        auto num = [&] {
            ++i;
            return number(a.data(), v);
        };
        auto msec = [&] { return std::chrono::milliseconds(static_cast<long long>(num())); };
        if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        } else if (a == "--table") {
            table = true;
        } else if (a == "--details") {
            details = true;
        } else if (a == "--probe-join-held") {
            cfg.probe_join_held = true;
        } else if (a == "--no-polls") {
            cfg.polls = false;
        } else if (a == "--sminfo-shows-restart") {
            cfg.sminfo_shows_restart = true;
        } else if (a == "--no-reregister") {
            cfg.reregister = false;
            cfg.sminfo_shows_restart = true;
        } else if (a == "--kernel-timeouts") {
            cfg.kernel_drops_late = true;
        } else if (a == "--fake-timers") {
            cfg.fake_timers = true;
        } else if (a == "--hosts") {
            cfg.hosts = static_cast<unsigned>(num());
        } else if (a == "--groups") {
            cfg.groups = static_cast<unsigned>(num());
        } else if (a == "--sa-rate") {
            cfg.sa_rate = num();
        } else if (a == "--get-rate") {
            cfg.get_rate = num();
        } else if (a == "--get-drop-s") {
            cfg.get_drop_after = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(num()));
        } else if (a == "--wire-us") {
            cfg.wire_delay = Duration(static_cast<long long>(num()));
        } else if (a == "--host-cost-us") {
            cfg.host_cost = Duration(static_cast<long long>(num()));
        } else if (a == "--window") {
            cfg.txn.window = static_cast<unsigned>(num());
        } else if (a == "--timeout-ms") {
            cfg.txn.first_timeout = msec();
        } else if (a == "--max-timeout-ms") {
            cfg.txn.max_timeout = msec();
        } else if (a == "--tries") {
            cfg.txn.max_tries = static_cast<unsigned>(num());
        } else if (a == "--max-rate") {
            cfg.txn.pacing_rate = num();
        } else if (a == "--budget-fraction") {
            cfg.budget_fraction = num();
        } else if (a == "--burst") {
            cfg.txn.pacing_burst = static_cast<unsigned>(num());
        } else if (a == "--fixed-window") {
            cfg.txn.congestion.enabled = false;
        } else if (a == "--rtt-target-ms") {
            cfg.txn.congestion.rtt_target = msec();
        } else if (a == "--jitter-ms") {
            cfg.engine.rejoin_jitter = msec();
        } else if (a == "--retry-min-ms") {
            cfg.engine.retry_min = msec();
        } else if (a == "--retry-max-ms") {
            cfg.engine.retry_max = msec();
        } else if (a == "--probe-join-s") {
            cfg.probe_join_at = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(num()));
        } else if (a == "--cap-s") {
            cfg.cap = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(num()));
        } else if (a == "--seed") {
            cfg.seed = static_cast<std::uint64_t>(num());
        } else {
            bad("unknown option " + std::string(a));
        }
    }

    std::vector<DesConfig> runs;
    if (table) {
        for (unsigned hosts : {2000u, 5000u})
            for (unsigned groups : {10u, 50u, 200u})
                for (double rate : {7000.0, 2000.0}) {
                    DesConfig c = cfg;
                    c.hosts = hosts;
                    c.groups = groups;
                    c.sa_rate = rate;
                    runs.push_back(c);
                }
    } else {
        runs.push_back(cfg);
    }

    std::printf("fabric re-join after an SM restart, simulated (virtual time; wall = real time of the run)\n");
    std::printf("%s\n\n%s\n", describe_config(cfg).c_str(), table_header().c_str());
    std::fflush(stdout);
    for (const DesConfig &c : runs) {
        try {
            const DesResult r = run_des(c);
            std::printf("%s\n", table_row(c, r).c_str());
            if (details)
                print_details(r);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "mcastd-fabric-des: %u hosts x %u: %s\n", c.hosts, c.groups, e.what());
            return 1;
        }
        std::fflush(stdout);
    }
    return 0;
}
