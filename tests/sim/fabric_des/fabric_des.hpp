// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric re-join simulation: N hosts, each running the daemon's real membership engine,
// SA client and SA transaction layer, re-join their memberships after an SM restart against one
// simulated SA (sim_sa.hpp), all on one virtual clock (event_queue.hpp). README.md in this
// directory describes the model; run_des() is one run of it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/engine_config.hpp"
#include "core/timers.hpp"
#include "port/port_poller.hpp" // MonitorConfig: the poll intervals the daemon uses
#include "sa/fabric_budget.hpp"
#include "sa/transactions.hpp"

namespace mcastd::des {

struct DesConfig {
    unsigned hosts = 50;
    unsigned groups = 20;  // memberships per host: every host joins the same `groups` groups
    double sa_rate = 7000; // Sets and Deletes the SA serves per second (one server, FIFO)
    double get_rate = 0;   // Gets per second (a second server); 0 = the same as sa_rate
    Duration wire_delay{0};                                     // each way
    Duration get_drop_after = std::chrono::seconds(10);         // OpenSM's Get drop; 0 = never
    bool kernel_drops_late = false; // ib_umad's matching (late answers dropped), not umad2sim's
    // Each host's work per MAD it receives, one at a time (SimSaConfig::host_cost); 0 = none.
    Duration host_cost{0};

    // The daemon's own configuration; the defaults are today's.
    sa::TransactionConfig txn;
    EngineConfig engine; // rejoin_jitter, retry_min/max
    // The daemon's `fabric` keys: `hosts` is this run's, the SA budget this fraction of
    // sa_rate. Applied (sa::apply) over `txn` and `engine` as the config reader does; 0 = none.
    double budget_fraction = 0;
    // The port poller (the daemon's PortPoller) of every host: its SMInfoRecord polls and
    // audits are SA Gets. Without `polls`, neither runs (PortInfo polls, which stay local,
    // still do).
    bool polls = true;
    port::MonitorConfig monitor;
    // How the hosts learn of the restart. `reregister`: the SM's first sweep asks every port
    // to re-register, and every host gets CLIENT_REREGISTER at t0. `sminfo_shows_restart`:
    // SMInfoRecord answers show the new SM (its ActCount starts low again, as OpenSM's does):
    // after a CLIENT_REREGISTER the next poll's answer is a new baseline; without it the port
    // rules invalidate the port at that poll, or the audit finds the loss first. Without
    // `reregister` it is the only way, as on ibsim, whose HCAs cannot take ClientReregister; at
    // least one must be set.
    bool reregister = true;
    bool sminfo_shows_restart = false;
    // With `reregister`: when each host gets CLIENT_REREGISTER, from t0, in host order (one
    // per host). Empty: every host at t0. The calibration (calibrate.cpp) hands the model the
    // instants at which the real daemons noticed the restart, so that both re-join with the
    // same overlap.
    std::vector<Duration> reregister_at;

    // > 0: every this often from t0 until every membership is back, each host's SA window and
    // smoothed round trip go into DesResult::trace (the calibration's --trace-ms).
    Duration trace_every{0};

    // A client of host 0 joins one new group this long after the SM restart, in the middle of
    // its port's re-join: how long it waits shows whether client joins go ahead. None if unset.
    std::optional<Duration> probe_join_at;
    // The probe joins the group host 0 re-joins last instead: a group it holds, so the join
    // waits for that group's re-join, which it must bring forward.
    bool probe_join_held = false;

    Duration cap = std::chrono::seconds(400); // virtual time after the SM restart
    std::uint64_t seed = 1;
    bool fake_timers = false; // run on tests/unit's FakeTimers instead of the EventQueue
};

struct DesResult {
    std::uint64_t memberships = 0; // hosts x groups
    // Setup: every host joined its groups through the engine (SA at zero service time).
    std::uint64_t setup_joined = 0, setup_failed = 0;

    // The re-join, from the SM restart (t0).
    bool done = false;           // every membership restored within the cap
    double completion_s = 0;     // last membership restored (or the cap)
    std::uint64_t outstanding = 0; // memberships not restored since their port's last re-join
    double ideal_s = 0;          // memberships x the SA's service time (1 / sa_rate in clock ticks)
    std::uint64_t restored = 0;  // members told `restored` (more than once if re-joined twice)
    std::uint64_t lost = 0;      // members told `lost`
    double first_restored_s = 0; // the first one
    double probe_join_s = -1;    // the probe join's wait (probe_join_at), request to answer; < 0: none, or it failed
    // Each host's last re-join as its Service reports it (`status`: from the port's
    // invalidation to its last group), the longest and the mean over hosts.
    double host_rejoin_max_s = 0, host_rejoin_mean_s = 0;
    // The same per host, in host order: when the last re-join started (seconds from t0), how
    // long it took (< 0: it had not finished), and the port's SA window and smoothed round trip
    // at the end of the run (0 without congestion control or before any answer).
    struct HostRejoin {
        double started_s = 0, length_s = -1;
        double window = 0, srtt_ms = 0;
    };
    std::vector<HostRejoin> host_rejoins;
    // With trace_every: one sample per interval, each host's window and srtt (ms) and whether
    // its port is re-joining.
    struct TraceSample {
        double t_s = 0;
        struct Host {
            double window = 0, srtt_ms = 0;
            bool rejoining = false;
        };
        std::vector<Host> hosts;
    };
    std::vector<TraceSample> trace;
    // When the SA itself first held every membership again (it may be long before the hosts
    // learn it: an answer that comes after its transaction ended is dropped). < 0: never.
    double sa_complete_s = -1;
    std::uint64_t sa_memberships = 0; // held at the end

    // What the SA received and served (the whole run after t0, including answers served after
    // the last membership was restored).
    std::uint64_t sa_sets = 0, sa_deletes = 0, sa_gets = 0, sa_gets_dropped = 0;
    std::uint64_t sa_served_sets = 0, sa_served_gets = 0;
    std::uint64_t answers_after_timeout = 0, answers_dropped_late = 0;
    double set_delay_p50 = 0, set_delay_p99 = 0, set_delay_max = 0; // seconds
    double get_delay_max = 0;
    std::size_t max_set_queue = 0;
    double peak_set_arrivals = 0; // the most Sets arriving in one second

    // The engine's SA work (what it asked of its SaService), and how it ended.
    std::uint64_t set_txns = 0, set_ok = 0, set_refused = 0, set_timeouts = 0;
    std::uint64_t get_txns = 0, get_timeouts = 0; // audits and refreshes
    // The port poller (summed over hosts): SMInfoRecord polls (and the failed ones), PortInfo
    // polls (local SMPs, answered by the host's HCA, never seen by the SA), audits.
    std::uint64_t sminfo_polls = 0, sminfo_timeouts = 0, portinfo_polls = 0, audits = 0;
    std::uint64_t smps = 0;          // PortInfo SMPs the HCAs answered
    std::uint64_t invalidations = 0; // port_invalidated calls after the restart (re-joins started)
    std::uint64_t audit_rejoins = 0; // ... and re-joins the engine started itself (an audit found
                                     // a port's state gone)
    // The transaction layer's counters, summed over hosts.
    sa::TxnStats txn;

    double wall_s = 0;        // real time of the whole run, setup included
    double wall_rejoin_s = 0; // of the re-join alone
    std::uint64_t events = 0; // timers fired after t0

    double sets_per_membership() const {
        return memberships ? static_cast<double>(sa_sets + sa_deletes) / static_cast<double>(memberships) : 0;
    }
    double fraction_done() const {
        return memberships ? 1.0 - static_cast<double>(outstanding) / static_cast<double>(memberships) : 0;
    }
};

// The fabric budget the run's daemons are configured with (none when budget_fraction is 0).
sa::FabricBudget fabric_budget(const DesConfig &cfg);

// One run. Throws std::invalid_argument for an unusable config, std::runtime_error when the
// setup (the joins before the restart) does not complete.
DesResult run_des(const DesConfig &cfg);

// "window 16, tries 6, timeout 300 ms doubling to 2000 ms, pacing off, jitter 500 ms, ..."
std::string describe_config(const DesConfig &cfg);
// The table's header and one row of it.
std::string table_header();
std::string table_row(const DesConfig &cfg, const DesResult &r);

} // namespace mcastd::des
