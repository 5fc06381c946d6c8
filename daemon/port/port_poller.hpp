// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PortPoller: the polls and timers around one PortRules per port (port_rules.hpp decides what
// the answers mean; this file only asks the questions, on time).
//
// Per port, three jittered periodic activities (doc/architecture.md §6):
//
//   PortInfo  a directed-route SMP Get(PortInfo) to the port itself, every
//             portinfo_interval (1 s). The local HCA (or ibsim) answers it: it costs the SA
//             nothing, so it can be frequent. The first one goes out at start().
//   SMInfo    an SA Get(SMInfoRecord) of the master SM, selected by the MasterSMLID PortInfo
//             last reported (a mask-0 Get fails with 0x0400 when standby SMs exist), every
//             sminfo_interval (10 s). Only while the port is usable. The first one, which sets
//             the baseline, goes out as soon as the port is first seen usable (an SM restart
//             before it would go unnoticed); a new baseline about sminfo_retry (1 s) after
//             the SM LID changed. After a failure the next poll comes
//             sooner: sminfo_retry, doubling per failure up to sminfo_interval.
//   audit     PortEventSink::audit_due() at audit_per_second (0.2/s), only while the port is
//             usable; the engine picks the group and sends the SA Get. The first tick falls at
//             a random point of the first interval. One more, at once, when the SMInfo poll
//             succeeds after failing (PortRules's audit_now).
//
// Every delay is drawn from [d * (1 - j), d * (1 + j)] with j = jitter_percent / 100, so that
// thousands of hosts started together do not poll the SA in step.
//
// Polls use one short try (TryPolicy::single): portinfo_timeout (500 ms) for the SMP and
// sminfo_timeout (1 s) for the SA Get, so a poll of a silent SA holds a window slot for one
// timeout, never for the 8.1 s bound of the config's policy. A poll is never started while
// the previous one of its kind is in flight: the next periodic one is armed when it finishes,
// and a poll_now() (or a verbs event asking for one) during a PortInfo query runs once right
// after it.
//
// Single-threaded, on the event loop. The sink may call poll_now(), on_verbs_event() and
// stop() from inside its callbacks; it must not destroy the poller there.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "core/timers.hpp"
#include "port/port_events.hpp"
#include "port/port_registry.hpp"
#include "port/port_rules.hpp"
#include "sa/sa_client.hpp"
#include "sa/transactions.hpp"

namespace mcastd::port {

// The "monitor" section of the config file (config/README.md has the SA load arithmetic).
struct MonitorConfig {
    std::chrono::milliseconds portinfo_interval{1000}; // portinfo_interval_ms
    std::chrono::milliseconds sminfo_interval{10000};  // sminfo_interval_ms
    std::chrono::milliseconds sminfo_timeout{1000};    // sminfo_timeout_ms: the Get's one try
    double audit_per_second = 0.2;                     // audit_per_second, per port; 0 = off
    unsigned jitter_percent = 10;                      // jitter_percent, 0..50

    // Not in the config file.
    std::chrono::milliseconds portinfo_timeout{500}; // the SMP's one try (answered locally)
    std::chrono::milliseconds sminfo_retry{1000};    // first re-poll after a failure / new SM
    std::optional<std::uint64_t> seed = std::nullopt; // of the jitter; unset = random

    bool operator==(const MonitorConfig &) const = default;
};

// Why `cfg` cannot be used ("jitter_percent must be at most 50"), or nullopt.
std::optional<std::string> check_monitor_config(const MonitorConfig &cfg);

// The longest audit interval: a rate this low or lower audits once a day.
inline constexpr std::chrono::hours kMaxAuditInterval{24};

// Counters of one port.
struct PollStats {
    std::uint64_t portinfo_polls = 0;     // PortInfo queries sent
    std::uint64_t portinfo_failures = 0;  // ... that got no usable answer
    std::uint64_t portinfo_coalesced = 0; // poll requests folded into one in flight
    std::uint64_t sminfo_polls = 0;       // SMInfoRecord Gets sent
    std::uint64_t sminfo_failures = 0;    // ... that timed out or got an error status
    std::uint64_t sminfo_skipped = 0;     // polls due while the port was not usable
    std::uint64_t audits = 0;             // audit_due() calls
    std::uint64_t pkey_reads = 0;         // P_Key table re-reads (after PKEY_CHANGE)
    std::uint64_t verbs_events = 0;       // verbs events handed to the rules

    bool operator==(const PollStats &) const = default;
};

// The port's P_Key table as libibumad reads it (sysfs; live on hardware).
std::variant<std::vector<std::uint16_t>, Error> read_pkey_table_umad(const RegisteredPort &port);

class PortPoller {
public:
    using PkeyReader =
        std::function<std::variant<std::vector<std::uint16_t>, Error>(const RegisteredPort &)>;
    using NoteSink = std::function<void(PortIndex, const Note &)>;

    // All references must outlive the poller. What a port is (device, number, P_Key table) is
    // the registry's, which the sink keeps current. Throws std::invalid_argument naming the
    // bad field of an invalid config.
    PortPoller(sa::MadTransactions &txns, sa::SaClient &sa, Timers &timers, const PortRegistry &ports,
               PortEventSink &sink, MonitorConfig cfg = {});
    ~PortPoller(); // stops every port: no timer, transaction or callback outlives it
    PortPoller(const PortPoller &) = delete;
    PortPoller &operator=(const PortPoller &) = delete;

    // Starts watching the registry's `port` (restarting it if it was watched): the first
    // PortInfo query goes out at once; its P_Key table now is the index baseline.
    void start(PortIndex port);
    // Cancels the port's timers and polls; its rules and counters are forgotten.
    void stop(PortIndex port);
    bool watching(PortIndex port) const { return ports_.contains(port); }

    // A PortInfo query now, or right after the one in flight. No-op for unwatched ports.
    // `done` runs once a PortInfo answer newer than this call was applied (or failed).
    void poll_now(PortIndex port, std::function<void()> done = {});
    // A verbs async event of the port (verbs_events.hpp). No-op for unwatched ports.
    void on_verbs_event(PortIndex port, VerbsEvent event);
    // The port's memberships are gone and the engine re-joins them all, whatever found it
    // (PortRules::on_memberships_gone: the next SMInfo sample is a new baseline). No-op for
    // unwatched ports.
    void on_memberships_gone(PortIndex port);

    void set_pkey_reader(PkeyReader reader) { read_pkeys_ = std::move(reader); }
    void set_note_sink(NoteSink sink) { note_ = std::move(sink); }

    const PortRules *rules(PortIndex port) const;
    PollStats stats(PortIndex port) const;
    const MonitorConfig &config() const { return cfg_; }

    // `base` with the configured jitter applied (one random draw).
    Duration jittered(Duration base);
    // 1 s / audit_per_second, at most kMaxAuditInterval; zero when auditing is off.
    Duration audit_interval() const;

private:
    // One watched port. Timer and transaction callbacks hold it weakly and the sink may stop
    // it from inside a callback, so every step checks Port::stopped after calling out.
    struct Port;
    using PortPtr = std::shared_ptr<Port>;

    void send_portinfo(const PortPtr &p);
    void portinfo_done(const PortPtr &p, const sa::TxnOutcome &out);
    void arm_portinfo(const PortPtr &p);

    void send_sminfo(const PortPtr &p);
    void sminfo_done(const PortPtr &p, const sa::SmInfoResult &r, std::uint16_t asked_lid);
    void arm_sminfo(const PortPtr &p, Duration delay);
    void sminfo_soon(const PortPtr &p);

    void arm_audit(const PortPtr &p, Duration delay);
    void audit_tick(const PortPtr &p);

    void read_pkeys(const PortPtr &p);
    void act(const PortPtr &p, Followup f);

    sa::MadTransactions &txns_;
    sa::SaClient &sa_;
    Timers &timers_;
    const PortRegistry &registry_;
    PortEventSink &sink_;
    MonitorConfig cfg_;
    std::mt19937_64 rng_;
    std::unordered_map<PortIndex, PortPtr> ports_;
    PkeyReader read_pkeys_;
    NoteSink note_;
};

} // namespace mcastd::port
