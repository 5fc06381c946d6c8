// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// MAD transactions: TIDs, per-try timeouts, retransmits, per-port windows and pacing, over a
// MadTransport and a Timers. Single-threaded and loop-driven: it does no I/O of its own and
// reads no clock but Timers::now().
//
// Retry policy. Try k (k = 0, 1, ...) waits min(first_timeout * 2^k, max_timeout) for an
// answer; after max_tries tries the transaction times out. The defaults (300 ms, 2000 ms,
// 6 tries) give 300 + 600 + 1200 + 2000 + 2000 + 2000 ms, so a transaction to a silent or
// unreachable SA ends after
//
//     bound = sum_{k=0}^{max_tries-1} min(first_timeout * 2^k, max_timeout) = 8.1 s
//
// (plus any time spent waiting for a window slot or a pacing token; timeout_bound() computes
// it). A submitter may replace that policy for one transaction with a TryPolicy: the port
// monitor's polls use one short try, so that a poll of a silent SA holds a window slot for
// one timeout instead of the whole bound, and the next poll is not stuck behind it. The bound is the same whether the SA is silent or bounces every try: a MAD that comes
// back undelivered, a send() that fails, and a port with no SA address are all failed tries
// whose retransmit still waits for that try's deadline, so an unreachable SA is not hammered.
//
// TIDs. The low 32 bits come from a per-instance counter that starts at a random value; the
// upper 32 bits are sent as 0 and are rewritten by ib_umad (and by umad2sim), so answers are
// matched on the low 32 bits only. Every try gets a fresh TID: ib_umad refuses a TID that is
// still in flight (EINVAL) and delivers only answers to a send it still tracks. All of a
// transaction's TIDs stay mapped to it, so a late answer to an earlier try completes it; once
// it completes (or is cancelled) they are forgotten and later answers are counted as late.
//
// Window and pacing (Route::sa only). At most `window` transactions per port are in flight;
// later ones wait FIFO per port, SaLane::background ones behind every other (and a background
// one that holds a slot but has sent nothing yet gives it up to a waiting client's). With congestion control on (congestion.hpp) the window is
// learned per port from the SA's round trips, `window` is its hard cap, and a try's timeout
// comes from the measured round trip within the try policy's bounds, so a transaction ends
// after at most max_tries * max_timeout. With pacing_rate > 0 every try (first or retransmit) in
// the window also takes a token from a per-port bucket of pacing_rate tokens per second holding
// at most pacing_burst. Both exist to keep a mass rejoin from flooding the SA. Polls and audits
// (SaLane::poll, SaLane::audit) are not paced: they run at the rates their own schedule sets, one
// at a time, and a poll that waited for a re-join's tokens would notice the next SM change late. Route::local_smp MADs
// skip both: they never reach the SA, and the PortInfo probe that tells the daemon the SM has
// moved must not queue behind transactions stuck on the old one.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/sa_service.hpp"
#include "core/timers.hpp"
#include "sa/congestion.hpp"
#include "sa/mad_transport.hpp"
#include "sa/tenant_queue.hpp"

namespace mcastd::sa {

struct TransactionConfig {
    std::chrono::milliseconds first_timeout{300}; // timeout of the first try
    std::chrono::milliseconds max_timeout{2000};  // cap of the doubling
    unsigned max_tries = 6;                       // >= 1
    unsigned window = 16;                         // in-flight SA transactions per port, >= 1
    double pacing_rate = 0; // SA MADs per second per port, fractions too (sa::FabricBudget); 0 = unlimited
    unsigned pacing_burst = 1; // bucket size, >= 1; 1 = evenly spaced, never two at once
    CongestionConfig congestion{}; // off: `window` is the window
    // Start of the TID counter; unset = random (std::random_device). Set only for reproducible
    // traces: two daemons with the same start would share TIDs.
    std::optional<std::uint32_t> first_tid;
    bool operator==(const TransactionConfig &) const = default;
};

// How long each try of one transaction waits and how many tries it makes: the config's
// first_timeout, max_timeout and max_tries, or a submitter's override of them.
struct TryPolicy {
    std::chrono::milliseconds first_timeout{300}; // > 0
    std::chrono::milliseconds max_timeout{2000};  // >= first_timeout
    unsigned max_tries = 6;                       // >= 1

    // One try that waits `timeout`, e.g. for a periodic poll that will simply run again.
    static TryPolicy single(std::chrono::milliseconds timeout) { return {timeout, timeout, 1}; }
    bool operator==(const TryPolicy &) const = default;
};

// The config's own policy.
TryPolicy try_policy(const TransactionConfig &cfg);
// Why `p` is unusable ("max_tries must be at least 1"), or nullopt when it is fine.
std::optional<std::string> check_try_policy(const TryPolicy &p);

// The timeout of try `index` (0-based) and the sum over all tries (see the header comment).
std::chrono::milliseconds try_timeout(const TryPolicy &p, unsigned index);
std::chrono::milliseconds timeout_bound(const TryPolicy &p);
std::chrono::milliseconds try_timeout(const TransactionConfig &cfg, unsigned index);
std::chrono::milliseconds timeout_bound(const TransactionConfig &cfg);

// Where a MAD goes.
enum class Route : std::uint8_t {
    sa,        // the port's SA address (the SaRoute), looked up again at every try
    local_smp, // a directed-route SMP to the local port: permissive DLID 0xFFFF, QP0, Q_Key 0
};

// Why a try failed.
enum class TryFailure : std::uint8_t {
    none,
    no_answer,   // its deadline passed with no answer
    bounced,     // the MAD came back undelivered (receive status != 0, e.g. 110)
    send_failed, // MadTransport::send returned a negative errno
    no_address,  // Route::sa and the port has no SA address (no SM known)
    rejected,    // an answer came but the submitter's validator refused it
};
std::string_view try_failure_name(TryFailure f);

struct TxnOutcome {
    enum class Kind : std::uint8_t { response, timeout };
    Kind kind = Kind::timeout;
    // For a response: the accepted MAD, valid only during the callback.
    std::span<const std::uint8_t> response;
    unsigned tries = 0; // tries made, including the one answered
    // For a timeout: why the last try failed, its errno (send_failed) and a one-line cause.
    TryFailure last_failure = TryFailure::none;
    int last_errno = 0;
    std::string detail;
};

// Counters; per port and summed over ports.
struct TxnStats {
    std::uint64_t sent = 0;        // tries the transport accepted
    std::uint64_t retransmits = 0; // tries after the first (whether or not accepted)
    std::uint64_t send_errors = 0; // tries that failed to go out (send error or no address)
    std::uint64_t timeouts = 0;    // transactions that used up every try
    std::uint64_t bounces = 0;     // our MADs that came back undelivered
    std::uint64_t responses = 0;   // answers that completed a transaction
    std::uint64_t late = 0;        // MADs with no live transaction (late, duplicate, unknown)
    std::uint64_t rejected = 0;    // answers refused: malformed, wrong class/method/port, or
                                   // by the validator
    std::uint64_t unsolicited = 0; // requests from the fabric (not responses), ignored

    TxnStats &operator+=(const TxnStats &o);
    bool operator==(const TxnStats &) const = default;
};

class MadTransactions {
public:
    using Id = std::uint64_t; // 0 is never an id
    using Callback = std::function<void(const TxnOutcome &)>;
    // Looks at an answer that matched a transaction by TID, class and method; returns the
    // reason to refuse it, or nullopt to accept. A refused answer does not complete the
    // transaction: the try keeps waiting for its deadline as if nothing had come.
    using Validator = std::function<std::optional<std::string>(std::span<const std::uint8_t>)>;
    // Gets one line for every received MAD that is dropped (for debug logging).
    using DropLog = std::function<void(PortIndex port, const std::string &why)>;

    // Registers itself as the transport's receiver (and clears it again on destruction): it is
    // the transport's only consumer, for SA MADs and local SMPs alike.
    // Throws std::invalid_argument naming the bad field of an invalid config.
    MadTransactions(MadTransport &transport, Timers &timers, TransactionConfig cfg = {});
    ~MadTransactions();
    MadTransactions(const MadTransactions &) = delete;
    MadTransactions &operator=(const MadTransactions &) = delete;

    // Where Route::sa MADs of a port go: the SM's address (dlid = SM LID, QP1, QP1 Q_Key, the
    // P_Key index of 0xFFFF), or nullopt when the port has none (no SM known); a dlid of 0
    // counts as none. Asked again at every try, so tries after the SM moved go to the new one.
    // What it answers from is the port registry's (HostPorts), kept nowhere here.
    using SaRoute = std::function<std::optional<MadAddress>(PortIndex)>;
    void set_sa_route(SaRoute route) { route_ = std::move(route); }
    // The route's answer for `port` may have changed. Another SM than the one the port's
    // window was learned from: what was learned of the old one's round trips says nothing of
    // this one's, and every host whose SM changed is about to send at once, so the window
    // starts again (a try that finds another SM does the same).
    void sa_route_changed(PortIndex port);
    // The port's SA may have lost its memberships (an SM restart, a ClientReregister, a port
    // that came back): every host is about to re-join at once, so the learned window starts
    // again from one MAD. A no-op with congestion control off.
    void restart_congestion(PortIndex port);
    // The route's answer for `port` now (nullopt: none, or a dlid of 0).
    std::optional<MadAddress> sa_address(PortIndex port) const;

    // Starts a transaction for `request` (its TID bytes are overwritten at every try). The
    // first try goes out at once when the window and pacing allow. `done` runs exactly once,
    // from a timer or the receiver, never from inside submit(), unless cancelled first.
    // `policy`, when given, replaces the config's timeouts and tries for this transaction
    // only (window and pacing still apply); an invalid one throws std::invalid_argument.
    // `tenant` is who caused it (SaRequest::tenant): waiting for a window slot or a pacing
    // token, tenants take turns (tenant_queue.hpp).
    Id submit(PortIndex port, const MadBuf &request, Route route, Callback done,
              Validator validate = {}, const std::optional<TryPolicy> &policy = std::nullopt,
              SaLane lane = SaLane::window, std::uint32_t tenant = 0);
    // A client now waits for a SaLane::background transaction: it becomes a SaLane::window one, and
    // if it is still queued, it queues behind the clients' instead of the background's. A no-op
    // for other lanes and for finished or unknown ids.
    void hasten(Id id);
    // Forgets a transaction: no callback, its window slot is freed, later answers are late.
    // A no-op for finished or unknown ids; safe from inside any callback.
    void cancel(Id id);
    // Forgets every transaction at once, without callbacks and without admitting queued ones:
    // for teardown, when the event loop may no longer accept timers. Later answers are late.
    void abandon_all();

    // The transport's receiver; public so that a test or a demultiplexer can feed it.
    void on_receive(PortIndex port, std::span<const std::uint8_t> mad, int status);

    void set_drop_log(DropLog log) { drop_log_ = std::move(log); }

    TxnStats stats(PortIndex port) const;
    TxnStats total_stats() const;
    std::size_t in_flight(PortIndex port) const; // holding a window slot (not a lane beside it)
    bool lane_in_flight(PortIndex port, SaLane lane) const; // a lane beside the window: its slot is taken
    std::size_t queued(PortIndex port) const;    // waiting for a window slot
    // The port's congestion window; nullptr with congestion control off (or an unknown port).
    const CongestionWindow *congestion(PortIndex port) const;
    const TransactionConfig &config() const { return cfg_; }

private:
    enum class Stage : std::uint8_t { waiting_window, waiting_token, in_flight };

    struct Txn {
        PortIndex port = 0;
        MadBuf mad{};
        Route route = Route::sa;
        SaLane lane = SaLane::window;
        std::uint32_t tenant = 0; // who caused it: tenants take turns in Port::waiting and ready
        TryPolicy policy; // the config's, or the submitter's override
        Callback done;
        Validator validate;
        Stage stage = Stage::waiting_window;
        unsigned tries = 0;
        struct Sent {
            std::uint32_t tid; // the try's low 32 TID bits
            TimePoint at;      // when it went out: a round-trip sample each
        };
        std::vector<Sent> sent; // every try, in order (one allocation per transaction)
        Duration timeout{};     // the current try's
        Timers::Id timer = 0;            // the current try's deadline
        // The current try's failure, if any; after the last try, the timeout's cause.
        TryFailure failure = TryFailure::none;
        int failure_errno = 0;
        std::string failure_detail;
    };

    struct Port {
        std::uint16_t window_sm = 0; // the SM LID the window was learned from; 0: none yet
        unsigned active = 0;      // Route::sa transactions holding a window slot
        // For a window slot, by rank (SaLane::window first, then SaLane::background); within a rank,
        // tenants take turns.
        std::array<TenantQueue, 2> waiting;
        // The one slot of each lane beside the window (SaLane::poll, SaLane::audit), and those
        // waiting for it.
        std::array<bool, 2> lane_busy{};
        std::array<std::deque<Id>, 2> lane_waiting;
        std::array<TenantQueue, 2> ready; // for a pacing token, by rank, tenants taking turns
        TimePoint tat{};          // pacing: theoretical arrival time (GCRA form of the bucket)
        Timers::Id pace_timer = 0;
        std::optional<CongestionWindow> cc; // with congestion control on
        Timers::Id gap_timer = 0;           // below one MAD per round trip: the next admission
        TxnStats stats;
    };

    bool paced(const Txn &t) const;
    // The first transaction waiting in `queues`, highest rank first; 0 when none waits.
    static Id front(const std::array<TenantQueue, 2> &queues);
    bool token_available(const Port &p) const;
    void take_token(Port &p);
    void arm_pacer(PortIndex port, Port &p);
    void on_pacer(PortIndex port);

    Port &port_state(PortIndex port);
    // The port's SA address now, restarting the window when it is another SM's.
    std::optional<MadAddress> route_sa(PortIndex port, Port &p);
    // Whether a waiting Route::sa transaction may take a window slot now; arms the gap timer
    // when only the congestion window's spacing keeps it back.
    bool may_admit(PortIndex port, Port &p);
    void admit_waiting(PortIndex port, Port &p);
    bool yield_background_slot(Port &p);
    void request_send(Id id, Txn &t);
    void send_try(Id id, Txn &t);
    void on_try_deadline(Id id);
    std::uint32_t allocate_tid();
    void finish(Id id, const TxnOutcome *outcome); // nullptr: cancelled, no callback
    void drop(PortIndex port, const std::string &why);

    MadTransport &transport_;
    Timers &timers_;
    TransactionConfig cfg_;
    Clock::duration pace_interval_{}; // 1 s / pacing_rate
    Clock::duration pace_tolerance_{}; // (pacing_burst - 1) * interval
    std::uint32_t next_tid_ = 0;
    Id next_id_ = 1;
    std::unordered_map<Id, Txn> txns_;
    std::unordered_map<std::uint32_t, Id> tids_;
    std::unordered_map<PortIndex, Port> ports_;
    SaRoute route_;
    DropLog drop_log_;
};

} // namespace mcastd::sa
