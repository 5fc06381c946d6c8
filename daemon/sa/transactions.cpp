// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sa/transactions.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>

#include "sa/mad_codec.hpp"

namespace mcastd::sa {

namespace {

using std::chrono::milliseconds;

// The address of a directed-route SMP to the local port (doc/sa-multicast.md §17).
constexpr MadAddress kLocalSmpAddress{
    .dlid = 0xffff, .dqp = 0, .sl = 0, .qkey = 0, .pkey_index = 0};

// Does `resp` answer a request sent with method `req`? The generic MAD rule: the response
// method is the request's with the R bit set, except that Set is answered by GetResp. OpenSM
// also answers a failed Set with GetResp; some SAs use Set|0x80, which the first rule covers.
bool answers(std::uint8_t req, std::uint8_t resp) {
    return resp == (req | mad::response_bit) ||
           (req == mad::method_set && resp == mad::method_get_resp);
}

std::string hex_tid(std::uint64_t tid) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(tid));
    return buf;
}

std::string port_name(PortIndex port) { return "port " + std::to_string(port); }

// Whether a lane's transactions take the port's window slots (or one slot of their own).
bool uses_window(SaLane lane) { return lane == SaLane::window || lane == SaLane::background; }

// The index of a lane beside the window in Port::lane_busy and lane_waiting.
std::size_t lane_slot(SaLane lane) { return lane == SaLane::poll ? 0 : 1; }

// Only the window's own transactions teach it. OpenSM serves Sets and Deletes from one queue
// and Gets from another (doc/sa-multicast.md §6), so a poll's or an audit's prompt answer says
// nothing of the queue the joins wait in: counted, it grew the window while Sets queued for
// seconds (tests/sim/fabric_des, 5000 hosts).
template <class T> bool steers_window(const T &t) { return t.route == Route::sa && uses_window(t.lane); }

// A transaction's queue in Port::waiting and Port::ready: background ones wait behind the rest.
std::size_t rank(SaLane lane) { return lane == SaLane::background ? 1 : 0; }

bool all_empty(const std::array<TenantQueue, 2> &queues) { return queues[0].empty() && queues[1].empty(); }

void check(bool ok, const char *what) {
    if (!ok)
        throw std::invalid_argument(std::string("MAD transaction config: ") + what);
}

} // namespace

TryPolicy try_policy(const TransactionConfig &cfg) {
    return TryPolicy{cfg.first_timeout, cfg.max_timeout, cfg.max_tries};
}

std::optional<std::string> check_try_policy(const TryPolicy &p) {
    if (p.first_timeout.count() <= 0)
        return "first_timeout must be positive";
    if (p.max_timeout < p.first_timeout)
        return "max_timeout must be >= first_timeout";
    if (p.max_tries < 1)
        return "max_tries must be at least 1";
    return std::nullopt;
}

std::chrono::milliseconds try_timeout(const TryPolicy &p, unsigned index) {
    milliseconds t = p.first_timeout;
    // Doubling stops at the cap, so neither the loop nor the value can overflow.
    for (unsigned k = 0; k < index && t < p.max_timeout; ++k)
        t *= 2;
    return std::min(t, p.max_timeout);
}

std::chrono::milliseconds timeout_bound(const TryPolicy &p) {
    milliseconds sum{0};
    for (unsigned k = 0; k < p.max_tries; ++k)
        sum += try_timeout(p, k);
    return sum;
}

std::chrono::milliseconds try_timeout(const TransactionConfig &cfg, unsigned index) {
    return try_timeout(try_policy(cfg), index);
}

std::chrono::milliseconds timeout_bound(const TransactionConfig &cfg) {
    return timeout_bound(try_policy(cfg));
}

std::string_view try_failure_name(TryFailure f) {
    switch (f) {
    case TryFailure::none:
        return "none";
    case TryFailure::no_answer:
        return "no-answer";
    case TryFailure::bounced:
        return "bounced";
    case TryFailure::send_failed:
        return "send-failed";
    case TryFailure::no_address:
        return "no-address";
    case TryFailure::rejected:
        return "rejected";
    }
    return "unknown";
}

TxnStats &TxnStats::operator+=(const TxnStats &o) {
    sent += o.sent;
    retransmits += o.retransmits;
    send_errors += o.send_errors;
    timeouts += o.timeouts;
    bounces += o.bounces;
    responses += o.responses;
    late += o.late;
    rejected += o.rejected;
    unsolicited += o.unsolicited;
    return *this;
}

MadTransactions::MadTransactions(MadTransport &transport, Timers &timers, TransactionConfig cfg)
    : transport_(transport), timers_(timers), cfg_(cfg) {
    if (auto why = check_try_policy(try_policy(cfg_)))
        check(false, why->c_str());
    check(cfg_.window >= 1, "window must be at least 1");
    check(cfg_.pacing_burst >= 1, "pacing_burst must be at least 1");
    check(cfg_.pacing_rate >= 0, "pacing_rate must not be negative");
    if (cfg_.pacing_rate > 0) {
        pace_interval_ = std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(1.0 / cfg_.pacing_rate));
        check(pace_interval_.count() > 0, "pacing_rate is too high");
        pace_tolerance_ = pace_interval_ * (cfg_.pacing_burst - 1);
    }
    if (cfg_.first_tid) {
        next_tid_ = *cfg_.first_tid;
    } else {
        std::random_device rd;
        next_tid_ = static_cast<std::uint32_t>(rd());
    }
    transport_.set_receiver([this](PortIndex port, std::span<const std::uint8_t> mad, int status) {
        on_receive(port, mad, status);
    });
}

MadTransactions::~MadTransactions() {
    transport_.set_receiver({});
    abandon_all();
}

void MadTransactions::abandon_all() {
    for (auto &[id, t] : txns_)
        timers_.cancel(t.timer);
    txns_.clear();
    tids_.clear();
    for (auto &[index, p] : ports_) {
        timers_.cancel(p.pace_timer);
        p.pace_timer = 0;
        timers_.cancel(p.gap_timer);
        p.gap_timer = 0;
        for (auto &q : p.waiting)
            q.clear();
        for (auto &q : p.ready)
            q.clear();
        p.active = 0;
        p.lane_busy = {};
        for (auto &q : p.lane_waiting)
            q.clear();
    }
}

MadTransactions::Port &MadTransactions::port_state(PortIndex port) {
    auto [it, made] = ports_.try_emplace(port);
    if (made && cfg_.congestion.enabled)
        it->second.cc.emplace(cfg_.congestion, cfg_.window);
    return it->second;
}

std::optional<MadAddress> MadTransactions::route_sa(PortIndex port, Port &p) {
    std::optional<MadAddress> a = route_ ? route_(port) : std::nullopt;
    if (!a || a->dlid == 0)
        return std::nullopt;
    // A first SM, or another one: what was learned of the old one's round trips says nothing
    // of this one's, and every host whose SM changed is about to send at once.
    if (a->dlid != p.window_sm) {
        p.window_sm = a->dlid;
        if (p.cc)
            p.cc->restart();
    }
    return a;
}

void MadTransactions::sa_route_changed(PortIndex port) { route_sa(port, port_state(port)); }

void MadTransactions::restart_congestion(PortIndex port) {
    if (Port &p = port_state(port); p.cc)
        p.cc->restart();
}

std::optional<MadAddress> MadTransactions::sa_address(PortIndex port) const {
    std::optional<MadAddress> a = route_ ? route_(port) : std::nullopt;
    return a && a->dlid != 0 ? a : std::nullopt;
}

MadTransactions::Id MadTransactions::submit(PortIndex port, const MadBuf &request, Route route,
                                            Callback done, Validator validate,
                                            const std::optional<TryPolicy> &policy, SaLane lane,
                                            std::uint32_t tenant) {
    if (policy) {
        if (auto why = check_try_policy(*policy))
            throw std::invalid_argument("MAD transaction try policy: " + *why);
    }
    const Id id = next_id_++;
    Txn &t = txns_[id];
    t.port = port;
    t.mad = request;
    t.route = route;
    t.lane = route == Route::sa ? lane : SaLane::window;
    t.tenant = tenant;
    const std::size_t r = rank(t.lane);
    t.policy = policy ? *policy : try_policy(cfg_);
    t.done = std::move(done);
    t.validate = std::move(validate);

    Port &p = port_state(port);
    if (route == Route::local_smp) {
        request_send(id, t);
    } else if (!uses_window(t.lane)) {
        const std::size_t l = lane_slot(t.lane);
        if (p.lane_busy[l]) {
            p.lane_waiting[l].push_back(id);
        } else {
            p.lane_busy[l] = true;
            request_send(id, t);
        }
    } else if (p.waiting[0].empty() && (r == 0 || p.waiting[1].empty()) && may_admit(port, p)) {
        ++p.active;
        request_send(id, t);
    } else if (r == 0 && p.waiting[0].empty() && yield_background_slot(p)) {
        ++p.active;
        request_send(id, t);
    } else {
        t.stage = Stage::waiting_window;
        p.waiting[r].push_back(t.tenant, id);
    }
    return id;
}

// Paced, a background transaction may hold a window slot while it waits for its first token.
// A client's transaction that finds the window full takes the slot of the last such one, which
// goes back to the head of the background queue: it has sent nothing, so nothing is lost, and
// the client waits for one token instead of for the background ones ahead of it.
bool MadTransactions::yield_background_slot(Port &p) {
    // The last one that sent nothing yet (background work is the daemon's own: one tenant).
    std::optional<Id> last;
    p.ready[rank(SaLane::background)].for_each([&](Id id) {
        if (txns_.at(id).tries == 0) // a retransmit keeps its slot: its earlier tries may still be answered
            last = id;
    });
    if (!last)
        return false;
    Txn &b = txns_.at(*last);
    p.ready[rank(SaLane::background)].erase(b.tenant, *last);
    b.stage = Stage::waiting_window;
    p.waiting[rank(SaLane::background)].push_front(b.tenant, *last);
    --p.active;
    return true;
}

void MadTransactions::hasten(Id id) {
    auto it = txns_.find(id);
    if (it == txns_.end() || it->second.lane != SaLane::background)
        return;
    Txn &t = it->second;
    t.lane = SaLane::window;
    Port &p = port_state(t.port);
    auto requeue = [id, &t](std::array<TenantQueue, 2> &queues) {
        queues[rank(SaLane::background)].erase(t.tenant, id);
        queues[rank(SaLane::window)].push_back(t.tenant, id);
    };
    switch (t.stage) {
    case Stage::waiting_window:
        requeue(p.waiting);
        // At the head of the clients' queue it goes as a client's would, taking a slot a
        // background one holds unsent if need be.
        if (p.waiting[0].front() == id && (may_admit(t.port, p) || yield_background_slot(p))) {
            p.waiting[0].pop_front();
            ++p.active;
            request_send(id, t);
        }
        break;
    case Stage::waiting_token:
        requeue(p.ready); // the pacer serves the clients' queue first
        break;
    case Stage::in_flight:
        break; // sent: nothing left to overtake
    }
}

void MadTransactions::cancel(Id id) {
    if (txns_.contains(id))
        finish(id, nullptr);
}

bool MadTransactions::may_admit(PortIndex port, Port &p) {
    if (!p.cc)
        return p.active < cfg_.window;
    if (p.active >= p.cc->allowed())
        return false;
    const TimePoint now = timers_.now();
    const TimePoint at = p.cc->earliest_send(now);
    if (at <= now)
        return true;
    if (p.gap_timer == 0)
        p.gap_timer = timers_.start(std::chrono::ceil<Duration>(at - now), [this, port] {
            Port &q = port_state(port);
            q.gap_timer = 0;
            admit_waiting(port, q);
        });
    return false;
}

MadTransactions::Id MadTransactions::front(const std::array<TenantQueue, 2> &queues) {
    for (const auto &q : queues)
        if (!q.empty())
            return q.front();
    return 0;
}

void MadTransactions::admit_waiting(PortIndex port, Port &p) {
    while (!all_empty(p.waiting) && may_admit(port, p)) {
        const Id id = front(p.waiting);
        Txn &t = txns_.at(id);
        p.waiting[rank(t.lane)].pop_front();
        ++p.active;
        request_send(id, t);
    }
}

// --- pacing ---------------------------------------------------------------------------------
//
// The token bucket in its GCRA form: one "theoretical arrival time" per port instead of a
// token count, so everything stays in integer clock ticks. A try may go at time t when
// t >= tat - tolerance; sending moves tat to max(tat, t) + interval. This allows a burst of
// pacing_burst tries and then one per interval, exactly as a bucket of that size would.

bool MadTransactions::paced(const Txn &t) const {
    return t.route == Route::sa && uses_window(t.lane) && cfg_.pacing_rate > 0;
}

bool MadTransactions::token_available(const Port &p) const {
    return timers_.now() >= p.tat - pace_tolerance_;
}

void MadTransactions::take_token(Port &p) { p.tat = std::max(p.tat, timers_.now()) + pace_interval_; }

void MadTransactions::arm_pacer(PortIndex port, Port &p) {
    if (p.pace_timer != 0 || all_empty(p.ready))
        return;
    const auto wait = (p.tat - pace_tolerance_) - timers_.now();
    const Duration delay = std::max(Duration::zero(), std::chrono::ceil<Duration>(wait));
    p.pace_timer = timers_.start(delay, [this, port] { on_pacer(port); });
}

void MadTransactions::on_pacer(PortIndex port) {
    Port &p = port_state(port);
    p.pace_timer = 0;
    while (!all_empty(p.ready) && token_available(p)) {
        const Id id = front(p.ready);
        Txn &t = txns_.at(id);
        p.ready[rank(t.lane)].pop_front();
        take_token(p);
        send_try(id, t);
    }
    arm_pacer(port, p);
}

// --- tries ----------------------------------------------------------------------------------

void MadTransactions::request_send(Id id, Txn &t) {
    if (!paced(t)) {
        send_try(id, t);
        return;
    }
    Port &p = port_state(t.port);
    // FIFO by rank: a try never overtakes one of its rank or above already waiting for a token.
    const std::size_t r = rank(t.lane);
    if (p.ready[0].empty() && (r == 0 || p.ready[1].empty()) && token_available(p)) {
        take_token(p);
        send_try(id, t);
        return;
    }
    t.stage = Stage::waiting_token;
    p.ready[r].push_back(t.tenant, id);
    arm_pacer(t.port, p);
}

std::uint32_t MadTransactions::allocate_tid() {
    // Skipping TIDs still mapped only matters after 2^32 tries, but then it keeps a late
    // answer from completing the wrong transaction.
    while (tids_.contains(next_tid_))
        ++next_tid_;
    return next_tid_++;
}

void MadTransactions::send_try(Id id, Txn &t) {
    Port &p = port_state(t.port);
    t.stage = Stage::in_flight;
    ++t.tries;
    if (t.tries > 1)
        ++p.stats.retransmits;

    const std::uint32_t tid = allocate_tid();
    t.sent.push_back({tid, timers_.now()});
    tids_[tid] = id;
    set_mad_tid(t.mad, tid);
    t.failure = TryFailure::none;
    t.failure_errno = 0;
    t.failure_detail.clear();

    // The address first: a try that finds another SM restarts the window its timeout uses.
    const std::optional<MadAddress> addr = t.route == Route::local_smp ? kLocalSmpAddress : route_sa(t.port, p);
    const Duration fixed = try_timeout(t.policy, t.tries - 1);
    t.timeout = p.cc && t.route == Route::sa
                    ? p.cc->try_timeout(t.tries - 1, t.policy.first_timeout, t.policy.max_timeout, fixed)
                    : fixed;
    const auto timeout = std::chrono::ceil<milliseconds>(t.timeout);

    if (!addr) {
        ++p.stats.send_errors;
        t.failure = TryFailure::no_address;
        t.failure_detail = port_name(t.port) + " has no SA address (no SM known)";
    } else {
        const int rc = transport_.send(t.port, t.mad, *addr, static_cast<unsigned>(timeout.count()));
        if (rc < 0) {
            ++p.stats.send_errors;
            t.failure = TryFailure::send_failed;
            t.failure_errno = -rc;
            t.failure_detail = "sending the MAD failed: " + std::string(std::strerror(-rc));
        } else {
            ++p.stats.sent;
        }
    }
    t.timer = timers_.start(t.timeout, [this, id] { on_try_deadline(id); });
}

void MadTransactions::on_try_deadline(Id id) {
    auto it = txns_.find(id);
    if (it == txns_.end())
        return;
    Txn &t = it->second;
    t.timer = 0;
    if (t.failure == TryFailure::none) {
        t.failure = TryFailure::no_answer;
        t.failure_detail = "no answer within " +
                           std::to_string(std::chrono::ceil<milliseconds>(t.timeout).count()) + " ms";
        // Silence is the SA's congestion signal; a bounce or a send error is not.
        if (Port &p = port_state(t.port); p.cc && steers_window(t))
            p.cc->on_timeout(timers_.now());
    }
    if (t.tries < t.policy.max_tries) {
        request_send(id, t);
        return;
    }
    ++port_state(t.port).stats.timeouts;
    TxnOutcome out;
    out.kind = TxnOutcome::Kind::timeout;
    out.tries = t.tries;
    out.last_failure = t.failure;
    out.last_errno = t.failure_errno;
    out.detail = "no answer after " + std::to_string(t.tries) + " tries; last try: " +
                 t.failure_detail;
    finish(id, &out);
}

void MadTransactions::finish(Id id, const TxnOutcome *outcome) {
    auto it = txns_.find(id);
    Txn t = std::move(it->second);
    txns_.erase(it);

    timers_.cancel(t.timer);
    for (const Txn::Sent &s : t.sent)
        tids_.erase(s.tid);

    Port &p = port_state(t.port);
    auto unqueue = [id](std::deque<Id> &q) { q.erase(std::remove(q.begin(), q.end(), id), q.end()); };
    if (t.stage == Stage::waiting_window) {
        if (uses_window(t.lane))
            p.waiting[rank(t.lane)].erase(t.tenant, id);
        else
            unqueue(p.lane_waiting[lane_slot(t.lane)]);
    } else {
        if (t.stage == Stage::waiting_token)
            p.ready[rank(t.lane)].erase(t.tenant, id);
        if (!uses_window(t.lane)) {
            const std::size_t l = lane_slot(t.lane);
            p.lane_busy[l] = false;
            if (!p.lane_waiting[l].empty()) {
                const Id next = p.lane_waiting[l].front();
                p.lane_waiting[l].pop_front();
                p.lane_busy[l] = true;
                request_send(next, txns_.at(next));
            }
        } else {
            if (t.route == Route::sa)
                --p.active;
            admit_waiting(t.port, p);
        }
    }
    // Last, with our state consistent: the callback may submit or cancel.
    if (outcome && t.done)
        t.done(*outcome);
}

// --- reception ------------------------------------------------------------------------------

void MadTransactions::drop(PortIndex port, const std::string &why) {
    if (drop_log_)
        drop_log_(port, why);
}

void MadTransactions::on_receive(PortIndex port, std::span<const std::uint8_t> bytes, int status) {
    Port &p = port_state(port);
    const auto hdr = decode_mad_header(bytes);
    if (!hdr) {
        ++p.stats.rejected;
        drop(port, "dropped a malformed MAD: " + hdr.error().message());
        return;
    }
    const auto low = static_cast<std::uint32_t>(hdr->tid);
    const auto m = tids_.find(low);
    Txn *t = m == tids_.end() ? nullptr : &txns_.at(m->second);
    if (t && t->port != port) {
        ++p.stats.rejected;
        drop(port, "dropped a MAD with TID " + hex_tid(hdr->tid) + " that belongs to " +
                       port_name(t->port));
        return;
    }

    if (status != 0) {
        // One of our sends came back undelivered. The try fails, but its retransmit waits for
        // the try's deadline so that an unreachable SA costs the same time as a silent one.
        if (!t) {
            ++p.stats.late;
            drop(port, "ignored a bounce of TID " + hex_tid(hdr->tid) + " with no live transaction");
            return;
        }
        ++p.stats.bounces;
        if (t->stage == Stage::in_flight && t->sent.back().tid == low) {
            t->failure = TryFailure::bounced;
            t->failure_detail = "the MAD came back undelivered (status " + std::to_string(status) + ")";
        }
        return;
    }

    if (!(hdr->method & mad::response_bit)) {
        ++p.stats.unsolicited;
        char buf[96];
        std::snprintf(buf, sizeof buf, "ignored a request (class 0x%02x, method 0x%02x, attribute 0x%04x)",
                      hdr->mgmt_class, hdr->method, hdr->attr_id);
        drop(port, buf);
        return;
    }
    if (!t) {
        ++p.stats.late;
        drop(port, "ignored a late or duplicate response, TID " + hex_tid(hdr->tid));
        return;
    }

    const Id id = m->second;
    const std::uint8_t req_class = t->mad[1];
    const std::uint8_t req_method = t->mad[3];
    std::optional<std::string> why;
    if (hdr->mgmt_class != req_class || !answers(req_method, hdr->method)) {
        char buf[128];
        std::snprintf(buf, sizeof buf,
                      "class 0x%02x method 0x%02x does not answer class 0x%02x method 0x%02x",
                      hdr->mgmt_class, hdr->method, req_class, req_method);
        why = buf;
    } else if (t->validate) {
        why = t->validate(bytes);
    }
    if (why) {
        ++p.stats.rejected;
        if (t->stage == Stage::in_flight && t->sent.back().tid == low) {
            t->failure = TryFailure::rejected;
            t->failure_detail = "the answer was refused: " + *why;
        }
        drop(port, "refused the response with TID " + hex_tid(hdr->tid) + ": " + *why);
        return;
    }

    ++p.stats.responses;
    if (p.cc && steers_window(*t)) {
        // The answer names its try by TID: the round trip of exactly that try.
        const auto try_of = std::find_if(t->sent.begin(), t->sent.end(),
                                         [low](const Txn::Sent &s) { return s.tid == low; });
        p.cc->on_answer(try_of->at, timers_.now());
    }
    TxnOutcome out;
    out.kind = TxnOutcome::Kind::response;
    out.response = bytes;
    out.tries = t->tries;
    finish(id, &out);
}

// --- introspection --------------------------------------------------------------------------

TxnStats MadTransactions::stats(PortIndex port) const {
    auto it = ports_.find(port);
    return it == ports_.end() ? TxnStats{} : it->second.stats;
}

TxnStats MadTransactions::total_stats() const {
    TxnStats sum;
    for (const auto &[index, p] : ports_)
        sum += p.stats;
    return sum;
}

std::size_t MadTransactions::in_flight(PortIndex port) const {
    auto it = ports_.find(port);
    return it == ports_.end() ? 0 : it->second.active;
}

bool MadTransactions::lane_in_flight(PortIndex port, SaLane lane) const {
    auto it = ports_.find(port);
    return !uses_window(lane) && it != ports_.end() && it->second.lane_busy[lane_slot(lane)];
}

const CongestionWindow *MadTransactions::congestion(PortIndex port) const {
    auto it = ports_.find(port);
    return it == ports_.end() || !it->second.cc ? nullptr : &*it->second.cc;
}

std::size_t MadTransactions::queued(PortIndex port) const {
    auto it = ports_.find(port);
    return it == ports_.end() ? 0 : it->second.waiting[0].size() + it->second.waiting[1].size();
}

} // namespace mcastd::sa
