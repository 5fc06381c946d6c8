// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/port_poller.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "common/sa_status.hpp"
#include "port/port_discovery.hpp"
#include "port/portinfo_smp.hpp"

namespace mcastd::port {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

struct PortPoller::Port {
    Port(PortIndex index_, PortEventSink &sink) : index(index_), rules(index_, sink) {}

    PortIndex index; // what the port is (device, number, P_Keys): the registry's
    PortRules rules;
    bool stopped = false; // set by stop(); a callback that still holds the port checks it

    Timers::Id portinfo_timer = 0;
    sa::MadTransactions::Id portinfo_txn = 0; // 0: none in flight
    bool portinfo_again = false;              // poll once more when the one in flight is done
    // poll_now() callers: of the poll in flight (`now`), or of the one after it (`next`,
    // because the answer in flight may predate their request).
    std::vector<std::function<void()>> waiters_now, waiters_next;

    Timers::Id sminfo_timer = 0;
    TimePoint sminfo_due{}; // of sminfo_timer
    SaService::TxnId sminfo_txn = 0;
    bool sminfo_again = false; // a "soon" request came while a Get was in flight
    unsigned sminfo_failures = 0;
    bool sminfo_ever_asked = false; // the port's first sample goes out at once

    Timers::Id audit_timer = 0;
    PollStats stats;
};

std::optional<std::string> check_monitor_config(const MonitorConfig &c) {
    if (c.portinfo_interval.count() <= 0)
        return "portinfo_interval must be positive";
    if (c.sminfo_interval.count() <= 0)
        return "sminfo_interval must be positive";
    if (c.sminfo_timeout.count() <= 0)
        return "sminfo_timeout must be positive";
    if (c.portinfo_timeout.count() <= 0)
        return "portinfo_timeout must be positive";
    if (c.sminfo_retry.count() <= 0)
        return "sminfo_retry must be positive";
    if (!std::isfinite(c.audit_per_second) || c.audit_per_second < 0)
        return "audit_per_second must be a finite number >= 0";
    // Beyond 50 % two consecutive polls could land almost on top of each other.
    if (c.jitter_percent > 50)
        return "jitter_percent must be at most 50";
    return std::nullopt;
}

std::variant<std::vector<std::uint16_t>, Error> read_pkey_table_umad(const RegisteredPort &port) {
    auto r = discover_port(port.device(), port.number());
    if (auto *e = std::get_if<Error>(&r))
        return std::move(*e);
    return std::move(std::get<PortAttributes>(r).pkeys);
}

PortPoller::PortPoller(sa::MadTransactions &txns, sa::SaClient &sa, Timers &timers, const PortRegistry &ports,
                       PortEventSink &sink, MonitorConfig cfg)
    : txns_(txns), sa_(sa), timers_(timers), registry_(ports), sink_(sink), cfg_(std::move(cfg)),
      read_pkeys_(read_pkey_table_umad) {
    if (auto why = check_monitor_config(cfg_))
        throw std::invalid_argument("config monitor: " + *why);
    rng_.seed(cfg_.seed ? *cfg_.seed : std::random_device{}());
}

PortPoller::~PortPoller() {
    while (!ports_.empty())
        stop(ports_.begin()->first);
}

Duration PortPoller::jittered(Duration base) {
    if (cfg_.jitter_percent == 0 || base <= Duration::zero())
        return base;
    const double j = cfg_.jitter_percent / 100.0;
    std::uniform_real_distribution<double> factor(1.0 - j, 1.0 + j);
    return Duration(std::llround(static_cast<double>(base.count()) * factor(rng_)));
}

Duration PortPoller::audit_interval() const {
    if (cfg_.audit_per_second <= 0)
        return Duration::zero();
    const double us = 1e6 / cfg_.audit_per_second;
    const auto cap = duration_cast<Duration>(kMaxAuditInterval);
    if (us >= static_cast<double>(cap.count()))
        return cap;
    return Duration(std::max<long long>(1, std::llround(us)));
}

void PortPoller::start(PortIndex index) {
    stop(index);
    const std::vector<std::uint16_t> &pkeys = registry_.at(index).attributes.pkeys;
    auto p = std::make_shared<Port>(index, sink_);
    ports_.emplace(index, p);
    if (!pkeys.empty())
        p->rules.on_pkey_table(pkeys); // the baseline: emits nothing
    send_portinfo(p);
    // Due only if the first PortInfo answer does not ask for the SMInfo baseline sooner.
    arm_sminfo(p, jittered(cfg_.sminfo_interval));
    if (const Duration audit = audit_interval(); audit > Duration::zero()) {
        // A random phase, not the jitter alone: daemons started together audit apart.
        std::uniform_int_distribution<Duration::rep> phase(0, audit.count());
        arm_audit(p, Duration(phase(rng_)));
    }
}

void PortPoller::stop(PortIndex index) {
    auto it = ports_.find(index);
    if (it == ports_.end())
        return;
    PortPtr p = it->second;
    ports_.erase(it);
    p->stopped = true;
    timers_.cancel(p->portinfo_timer);
    timers_.cancel(p->sminfo_timer);
    timers_.cancel(p->audit_timer);
    if (p->portinfo_txn != 0)
        txns_.cancel(p->portinfo_txn);
    if (p->sminfo_txn != 0)
        sa_.cancel(p->sminfo_txn);
}

const PortRules *PortPoller::rules(PortIndex index) const {
    auto it = ports_.find(index);
    return it == ports_.end() ? nullptr : &it->second->rules;
}

PollStats PortPoller::stats(PortIndex index) const {
    auto it = ports_.find(index);
    return it == ports_.end() ? PollStats{} : it->second->stats;
}

void PortPoller::poll_now(PortIndex index, std::function<void()> done) {
    auto it = ports_.find(index);
    if (it == ports_.end()) {
        if (done)
            done();
        return;
    }
    const PortPtr p = it->second;
    if (done)
        (p->portinfo_txn ? p->waiters_next : p->waiters_now).push_back(std::move(done));
    send_portinfo(p);
}

void PortPoller::on_verbs_event(PortIndex index, VerbsEvent event) {
    auto it = ports_.find(index);
    if (it == ports_.end())
        return;
    const PortPtr p = it->second; // a copy: the sink may stop the port meanwhile
    ++p->stats.verbs_events;
    Followup f = p->rules.on_verbs_event(event);
    act(p, std::move(f));
}

void PortPoller::on_memberships_gone(PortIndex index) {
    auto it = ports_.find(index);
    if (it == ports_.end())
        return;
    it->second->rules.on_memberships_gone();
}

// ---- PortInfo --------------------------------------------------------------------------------

void PortPoller::send_portinfo(const PortPtr &p) {
    if (p->stopped)
        return;
    if (p->portinfo_txn != 0) {
        // Never two in flight. The answer in flight may predate what prompted this request,
        // so one more query follows it.
        ++p->stats.portinfo_coalesced;
        p->portinfo_again = true;
        return;
    }
    timers_.cancel(p->portinfo_timer);
    p->portinfo_timer = 0;
    ++p->stats.portinfo_polls;
    const SmpBuf req = encode_portinfo_get(0, registry_.at(p->index).number());
    auto validate = [](std::span<const std::uint8_t> mad) -> std::optional<std::string> {
        auto r = decode_portinfo_reply(mad);
        if (auto *e = std::get_if<SmpError>(&r))
            return "not a PortInfo answer: " + e->message;
        return std::nullopt;
    };
    std::weak_ptr<Port> weak = p;
    p->portinfo_txn = txns_.submit(
        p->index, req, sa::Route::local_smp,
        [this, weak](const sa::TxnOutcome &out) {
            if (PortPtr q = weak.lock())
                portinfo_done(q, out);
        },
        validate, sa::TryPolicy::single(cfg_.portinfo_timeout));
}

void PortPoller::portinfo_done(const PortPtr &p, const sa::TxnOutcome &out) {
    p->portinfo_txn = 0;
    Followup f;
    if (out.kind == sa::TxnOutcome::Kind::response) {
        // The validator accepted these bytes, so they decode.
        f = p->rules.on_portinfo(std::get<PortInfoReply>(decode_portinfo_reply(out.response)).info);
    } else {
        ++p->stats.portinfo_failures;
        f = p->rules.on_portinfo_failed(out.detail);
    }
    const bool again = std::exchange(p->portinfo_again, false) || f.poll_portinfo_now;
    f.poll_portinfo_now = false;
    act(p, std::move(f));
    auto waiters = std::exchange(p->waiters_now, std::exchange(p->waiters_next, {}));
    for (auto &w : waiters)
        w();
    if (p->stopped || p->portinfo_txn != 0) // stopped, or the sink asked for a poll already
        return;
    if (again)
        send_portinfo(p);
    else
        arm_portinfo(p);
}

void PortPoller::arm_portinfo(const PortPtr &p) {
    timers_.cancel(p->portinfo_timer);
    std::weak_ptr<Port> weak = p;
    p->portinfo_timer = timers_.start(jittered(cfg_.portinfo_interval), [this, weak] {
        if (PortPtr q = weak.lock()) {
            q->portinfo_timer = 0;
            send_portinfo(q);
        }
    });
}

// ---- SMInfoRecord ----------------------------------------------------------------------------

void PortPoller::arm_sminfo(const PortPtr &p, Duration delay) {
    timers_.cancel(p->sminfo_timer);
    p->sminfo_due = timers_.now() + delay;
    std::weak_ptr<Port> weak = p;
    p->sminfo_timer = timers_.start(delay, [this, weak] {
        if (PortPtr q = weak.lock()) {
            q->sminfo_timer = 0;
            send_sminfo(q);
        }
    });
}

void PortPoller::sminfo_soon(const PortPtr &p) {
    if (p->stopped)
        return;
    if (p->sminfo_txn != 0) {
        p->sminfo_again = true; // the answer in flight may be the old SM's
        return;
    }
    // sminfo_retry after a success (a new baseline), doubling with each failure in a row,
    // never beyond the normal interval.
    // The very first sample at once: until a baseline exists an SM restart goes unnoticed
    // (only the audit would find the loss, one group at a time).
    Duration delay = p->sminfo_ever_asked ? duration_cast<Duration>(cfg_.sminfo_retry) : Duration::zero();
    const Duration cap = duration_cast<Duration>(cfg_.sminfo_interval);
    for (unsigned k = 1; k < p->sminfo_failures && delay < cap; ++k)
        delay *= 2;
    delay = jittered(std::min(delay, cap));
    if (p->sminfo_timer != 0 && p->sminfo_due <= timers_.now() + delay)
        return; // already due sooner
    arm_sminfo(p, delay);
}

void PortPoller::send_sminfo(const PortPtr &p) {
    if (p->stopped || p->sminfo_txn != 0)
        return;
    const std::uint16_t lid = p->rules.sm_lid();
    if (p->rules.usable() != true || lid == 0) {
        // Nothing to ask, or no way to ask it: the port's return asks for a poll soon.
        ++p->stats.sminfo_skipped;
        arm_sminfo(p, jittered(cfg_.sminfo_interval));
        return;
    }
    ++p->stats.sminfo_polls;
    p->sminfo_ever_asked = true;
    std::weak_ptr<Port> weak = p;
    p->sminfo_txn = sa_.get_sm_info(p->index, sa::SmInfoQuery::by_lid(lid),
                                    sa::TryPolicy::single(cfg_.sminfo_timeout),
                                    [this, weak, lid](const sa::SmInfoResult &r) {
                                        if (PortPtr q = weak.lock())
                                            sminfo_done(q, r, lid);
                                    });
}

void PortPoller::sminfo_done(const PortPtr &p, const sa::SmInfoResult &r, std::uint16_t lid) {
    p->sminfo_txn = 0;
    Followup f;
    if (r.ok()) {
        p->sminfo_failures = 0;
        f = p->rules.on_sminfo(r.record);
    } else {
        ++p->sminfo_failures;
        ++p->stats.sminfo_failures;
        const std::string whom = "the Get of the SM at LID " + std::to_string(lid);
        std::string detail;
        if (r.kind == sa::SmInfoResult::Kind::response)
            detail = whom + " was answered with " + sa_status_describe(r.status);
        else if (r.bounced)
            detail = whom + " did not reach the SA (it bounced, could not be sent, or the port "
                            "has no SA address)";
        else
            detail = whom + " got no answer within " +
                     std::to_string(cfg_.sminfo_timeout.count()) + " ms";
        f = p->rules.on_sminfo_failed(r.bounced, detail);
    }
    if (std::exchange(p->sminfo_again, false))
        f.poll_sminfo_soon = true;
    act(p, std::move(f));
    if (!p->stopped && p->sminfo_txn == 0 && p->sminfo_timer == 0)
        arm_sminfo(p, jittered(cfg_.sminfo_interval));
}

// ---- audit -----------------------------------------------------------------------------------

void PortPoller::arm_audit(const PortPtr &p, Duration delay) {
    std::weak_ptr<Port> weak = p;
    p->audit_timer = timers_.start(delay, [this, weak] {
        if (PortPtr q = weak.lock()) {
            q->audit_timer = 0;
            audit_tick(q);
        }
    });
}

void PortPoller::audit_tick(const PortPtr &p) {
    // An audit of a port that is not usable would only bounce; the port's return re-joins
    // everything anyway.
    if (p->rules.usable() == true) {
        ++p->stats.audits;
        sink_.audit_due(p->index);
    }
    if (!p->stopped && p->audit_timer == 0)
        arm_audit(p, jittered(audit_interval()));
}

// ---- P_Key table -----------------------------------------------------------------------------

void PortPoller::read_pkeys(const PortPtr &p) {
    ++p->stats.pkey_reads;
    auto r = read_pkeys_ ? read_pkeys_(registry_.at(p->index))
                         : std::variant<std::vector<std::uint16_t>, Error>(
                               Error{Errc::internal, "no P_Key table reader", std::nullopt});
    if (auto *e = std::get_if<Error>(&r)) {
        if (note_)
            note_(p->index, Note{Note::Level::warning,
                                 "PKEY_CHANGE: re-reading the P_Key table failed: " + e->message});
        return;
    }
    const auto table = std::move(std::get<std::vector<std::uint16_t>>(r));
    sink_.pkey_table(p->index, table);
    if (p->stopped)
        return;
    act(p, p->rules.on_pkey_table(table));
}

// ---- followups -------------------------------------------------------------------------------

void PortPoller::act(const PortPtr &p, Followup f) {
    if (f.note && note_)
        note_(p->index, *f.note);
    if (p->stopped)
        return;
    if (f.audit_now && p->rules.usable() == true) {
        ++p->stats.audits;
        sink_.audit_due(p->index);
        if (p->stopped)
            return;
    }
    if (f.read_pkey_table)
        read_pkeys(p);
    if (f.poll_portinfo_now)
        send_portinfo(p);
    if (f.poll_sminfo_soon)
        sminfo_soon(p);
}

} // namespace mcastd::port
