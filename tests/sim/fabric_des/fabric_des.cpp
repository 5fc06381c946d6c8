// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "fabric_des.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/gid.hpp"
#include "core/engine.hpp"
#include "port/port_attributes.hpp"
#include "service/service.hpp"
#include "event_queue.hpp"
#include "fakes/fake_timers.hpp"
#include "sa/sa_client.hpp"
#include "sim_sa.hpp"

namespace mcastd::des {

namespace {

using std::chrono::duration;
using std::chrono::milliseconds;
using WallClock = std::chrono::steady_clock;

constexpr std::uint64_t kSubnetPrefix = 0xfe80000000000000ULL;
constexpr std::uint64_t kMgidPrefix = 0xff15000100000000ULL; // site-local, transient
constexpr sa::MadAddress kSaAddress{.dlid = 1, .dqp = 1, .sl = 0, .qkey = 0x80010000, .pkey_index = 0};

std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

double seconds(Duration d) { return duration<double>(d).count(); }
double seconds(TimePoint::duration d) { return duration<double>(d).count(); }

Duration service_time(double rate) {
    if (!(rate > 0))
        throw std::invalid_argument("the SA's rate must be positive");
    return std::chrono::duration_cast<Duration>(duration<double>(1.0 / rate));
}

// The virtual clock the run steps, whichever Timers implementation it is.
class Driver {
public:
    virtual ~Driver() = default;
    virtual Timers &timers() = 0;
    virtual bool next(TimePoint &due) = 0; // the next deadline, false when nothing is pending
    virtual void step() = 0;               // fires what is due at the next deadline
    virtual std::uint64_t started() const = 0;
};

class QueueDriver final : public Driver {
public:
    Timers &timers() override { return q_; }
    bool next(TimePoint &due) override { return q_.next_deadline(due); }
    void step() override { q_.step(); }
    std::uint64_t started() const override { return q_.started(); }

private:
    EventQueue q_;
};

class FakeDriver final : public Driver {
public:
    Timers &timers() override { return t_; }
    bool next(TimePoint &due) override {
        const auto d = t_.next_deadline();
        if (d)
            due = *d;
        return d.has_value();
    }
    void step() override { t_.step(); }
    std::uint64_t started() const override { return t_.started(); }

private:
    test::FakeTimers t_;
};

// What every host adds up, for the whole fabric.
struct Tally {
    std::uint64_t joined = 0, join_failed = 0;
    std::uint64_t restored = 0, lost = 0;
    std::optional<TimePoint> first_restored, last_restored;
    std::uint64_t set_txns = 0, set_ok = 0, set_refused = 0, set_timeouts = 0;
    std::uint64_t get_txns = 0, get_timeouts = 0;
    std::uint64_t invalidations = 0; // port_invalidated calls
    std::uint64_t audit_rejoins = 0; // the engine's own (an audit found the port's state gone)
    // From the restart on: hosts whose port has not finished a re-join begun since then (or is
    // re-joining again). The fabric is done when this is 0; all_restored runs each time it
    // gets there.
    std::optional<TimePoint> t0;
    std::uint64_t unsettled = 0;
    std::optional<TimePoint> done_at;
    std::function<void()> all_restored;
};

// Between a host's engine and its SaClient: counts the engine's SA work and how it ended.
class CountingSa final : public SaService {
public:
    CountingSa(SaService &inner, Tally &tally) : inner_(inner), tally_(tally) {}

    TxnId submit(const SaRequest &req, Callback done) override {
        const bool set = req.method != SaMethod::get;
        ++(set ? tally_.set_txns : tally_.get_txns);
        return inner_.submit(req, [this, set, done = std::move(done)](const SaResult &r) {
            if (r.kind == SaResult::Kind::timeout)
                ++(set ? tally_.set_timeouts : tally_.get_timeouts);
            else if (set)
                ++(r.status == 0 ? tally_.set_ok : tally_.set_refused);
            if (done)
                done(r);
        });
    }
    void cancel(TxnId id) override { inner_.cancel(id); }
    void hasten(TxnId id) override { inner_.hasten(id); }

private:
    SaService &inner_;
    Tally &tally_;
};

// One host: the daemon's Service (with its engine) and port poller over its own SA client
// and transaction layer, wired as HostPorts wires them, with the host's SimSa endpoint in
// place of the umad transport. One port, one client holding every membership. The port
// monitor's events pass through the host on their way to the Service, so that it can count
// them and join once the port is usable.
class Host final : private port::PortEventSink, private PortListener, private MembershipEventSink {
public:
    Host(std::uint32_t index, const DesConfig &cfg, Timers &timers, SimSa &sa, Tally &tally)
        : cfg_(cfg), timers_(timers), tally_(tally), index_(index),
          txns_(sa.endpoint(sa.add_host(gid_of(index))), timers, txn_config(cfg, index)), client_(txns_),
          counting_(client_, tally), service_(engine_config(cfg, index), counting_, timers),
          poller_(txns_, client_, timers, service_.ports(), *this, monitor_config(cfg, index)) {
        poller_.set_pkey_reader([](const port::RegisteredPort &) { return std::vector<std::uint16_t>{0xffff}; });
        // The engine notes the start and the end of every port re-join as warnings, whatever
        // started it (the port rules, or an audit that found the port's state gone).
        service_.add_observer([this](const EngineNote &n) {
            if (n.kind == EngineNote::Kind::warning)
                track_rejoin();
        });
        // As HostPorts::open wires it, with the SA at kSaAddress's QP and Q_Key.
        txns_.set_sa_route([this](PortIndex port) -> std::optional<sa::MadAddress> {
            const port::PortAttributes &p = service_.ports().at(port).attributes;
            if (!p.sm_lid)
                return std::nullopt;
            sa::MadAddress a = kSaAddress;
            a.dlid = p.sm_lid;
            a.sl = p.sm_sl;
            a.pkey_index = port::pkey_index_or_default(p.pkeys);
            return a;
        });
        service_.add_port_listener(*this);
    }
    ~Host() override = default;
    Host(const Host &) = delete;
    Host &operator=(const Host &) = delete;

    static Gid gid_of(std::uint32_t index) { return make_gid(kSubnetPrefix, 0x100000ULL + index + 1); }

    // The daemon starts (HostPorts::open_ports): the port goes to the Service, SA MADs go to
    // the SM, the port poller starts. The client joins once the port is seen usable.
    void boot() {
        port::PortAttributes a;
        a.device = "mlx5_0";
        a.port_num = 1;
        a.gid_prefix = kSubnetPrefix;
        a.port_guid = 0x100000ULL + index_ + 1;
        a.lid = static_cast<std::uint16_t>(index_ + 2);
        a.sm_lid = kSaAddress.dlid;
        a.state = static_cast<std::uint8_t>(port::PortState::active);
        a.link_layer = "InfiniBand";
        a.pkeys = {0xffff};
        port_ = service_.add_port(a, true);
        client_id_ = service_.add_client(ClientInfo{static_cast<pid_t>(1000 + index_), 0, 0, "des"}, this);
        txns_.sa_route_changed(port_);
        poller_.start(port_);
    }

    // The SM restarted and asked every port to re-register: the verbs event the daemon gets
    // (IBV_EVENT_CLIENT_REREGISTER), handed to the port poller as VerbsEvents would.
    void sm_restarted() { poller_.on_verbs_event(port_, port::VerbsEvent::client_reregister); }

    // A client joins a group nobody holds yet (a probe Get, then the Set that creates it), or
    // with probe_join_held the host's last group; `done` gets its wait in seconds, or -1 if it
    // failed.
    void probe_join(std::function<void(double)> done) {
        JoinRequest r;
        r.device = "mlx5_0";
        r.port = 1;
        r.mgid = make_gid(kMgidPrefix, cfg_.probe_join_held ? cfg_.groups : cfg_.groups + 1);
        r.join_state = join::full;
        const TimePoint start = timers_.now();
        service_.join(client_id_, r, [this, start, done = std::move(done)](const JoinResult &res) {
            done(res.error ? -1 : seconds(timers_.now() - start));
        });
    }

    // The restart is about to happen: the host counts as unsettled until its port has finished
    // a re-join begun from now on.
    void arm() {
        settled_ = false;
        ++tally_.unsettled;
    }
    // Memberships restored since the restart and not re-joining now.
    unsigned restored_memberships() const {
        if (settled_)
            return cfg_.groups;
        const auto views = service_.port_views();
        const bool began = !views.empty() && views.front().rejoin_started && *views.front().rejoin_started >= *tally_.t0;
        return began ? cfg_.groups - pending_ : 0;
    }

    // The port's last re-join, as `status` shows it; nullopt while one runs or before any.
    std::optional<double> last_rejoin_s() const {
        const auto views = service_.port_views();
        if (views.empty() || views.front().rejoining || !views.front().rejoin_started ||
            !views.front().rejoin_finished)
            return std::nullopt;
        return seconds(*views.front().rejoin_finished - *views.front().rejoin_started);
    }
    // When the port's last re-join started, from `t0`; nullopt before any.
    std::optional<double> last_rejoin_start_s(TimePoint t0) const {
        const auto views = service_.port_views();
        if (views.empty() || !views.front().rejoin_started)
            return std::nullopt;
        return seconds(*views.front().rejoin_started - t0);
    }

    // The port poller's counters until now; it stops (no more polls or audits).
    port::PollStats stop_polls() {
        if (!polls_stopped_) {
            final_polls_ = poller_.stats(port_);
            poller_.stop(port_);
            polls_stopped_ = true;
        }
        return final_polls_;
    }
    port::PollStats poll_stats() const { return polls_stopped_ ? final_polls_ : poller_.stats(port_); }
    sa::TxnStats txn_stats() const { return txns_.total_stats(); }
    // The port's SA window and srtt now, and whether it is re-joining.
    DesResult::TraceSample::Host sample() const {
        DesResult::TraceSample::Host h;
        if (const sa::CongestionWindow *cc = txns_.congestion(port_)) {
            h.window = cc->window();
            h.srtt_ms = cc->srtt() ? duration<double, std::milli>(*cc->srtt()).count() : 0;
        }
        const auto views = service_.port_views();
        h.rejoining = !views.empty() && views.front().rejoining;
        return h;
    }

private:
    static sa::TransactionConfig txn_config(const DesConfig &cfg, std::uint32_t index) {
        sa::TransactionConfig t = cfg.txn;
        if (!t.first_tid) // reproducible runs; TIDs only need to differ within one host
            t.first_tid = static_cast<std::uint32_t>(splitmix(cfg.seed * 7919 + index));
        return t;
    }
    static EngineConfig engine_config(const DesConfig &cfg, std::uint32_t index) {
        EngineConfig e = cfg.engine;
        e.seed = splitmix(cfg.seed * 104729 + index); // each host its own jitter
        return e;
    }
    static port::MonitorConfig monitor_config(const DesConfig &cfg, std::uint32_t index) {
        port::MonitorConfig m = cfg.monitor;
        m.seed = splitmix(cfg.seed * 1299709 + index);
        if (!cfg.polls) { // the baseline sample at start only
            m.sminfo_interval = std::chrono::hours(24);
            m.audit_per_second = 0;
        }
        return m;
    }

    void track_rejoin() {
        if (!tally_.t0)
            return;
        const auto views = service_.port_views();
        if (views.empty())
            return;
        const PortView &p = views.front();
        if (p.rejoining && settled_) {
            settled_ = false;
            pending_ = cfg_.groups;
            ++tally_.unsettled;
        } else if (!p.rejoining && !settled_ && p.rejoin_started && *p.rejoin_started >= *tally_.t0) {
            settled_ = true;
            pending_ = 0;
            if (--tally_.unsettled == 0) {
                tally_.done_at = timers_.now();
                if (tally_.all_restored)
                    tally_.all_restored();
            }
        }
    }

    void join_all() {
        for (unsigned g = 0; g < cfg_.groups; ++g) {
            JoinRequest r;
            r.device = "mlx5_0";
            r.port = 1;
            r.mgid = make_gid(kMgidPrefix, g + 1);
            r.join_state = join::full;
            service_.join(client_id_, r, [this](const JoinResult &res) {
                ++(res.error ? tally_.join_failed : tally_.joined);
            });
        }
    }

    // port::PortEventSink: what the port poller tells the Service, counted on the way.
    void port_usable(PortIndex port, bool usable, const std::string &why) override {
        service_.port_usable(port, usable, why);
        if (usable && !joined_) {
            joined_ = true;
            join_all();
        }
    }
    void port_invalidated(PortIndex port, port::Trigger trigger, const std::string &why) override {
        ++tally_.invalidations;
        invalidating_ = true; // the re-join it starts is not the engine's own (an audit's)
        service_.port_invalidated(port, trigger, why);
        invalidating_ = false;
    }
    void sa_moved(PortIndex port, std::uint16_t sm_lid, std::uint8_t sm_sl) override {
        service_.sa_moved(port, sm_lid, sm_sl);
    }
    void sm_seen(PortIndex port, std::uint16_t lid, std::uint64_t guid, std::uint32_t act_count) override {
        service_.sm_seen(port, lid, guid, act_count);
    }
    void port_info(PortIndex port, std::uint16_t lid, std::uint8_t state, std::uint8_t mtu) override {
        service_.port_info(port, lid, state, mtu);
    }
    void audit_due(PortIndex port) override { service_.audit_due(port); }
    void pkey_table(PortIndex port, const std::vector<std::uint16_t> &pkeys) override {
        service_.pkey_table(port, pkeys);
    }

    // PortListener, as HostPorts is: the SA MADs follow the SM; every re-join of the port (the
    // port poller's or an audit's) restarts the SA window and the SMInfo baseline.
    void sa_route_changed(PortIndex port) override { txns_.sa_route_changed(port); }
    void memberships_gone(PortIndex port) override {
        if (!invalidating_)
            ++tally_.audit_rejoins;
        pending_ = cfg_.groups; // every membership re-joins again, those restored included
        txns_.restart_congestion(port);
        poller_.on_memberships_gone(port);
    }

    void membership_event(ClientId, MembershipId, const MembershipEvent &ev) override {
        if (ev.kind == MembershipEvent::Kind::restored) {
            ++tally_.restored;
            if (!tally_.first_restored)
                tally_.first_restored = timers_.now();
            tally_.last_restored = timers_.now();
            if (pending_ > 0)
                --pending_;
        } else {
            ++tally_.lost;
        }
    }

    const DesConfig &cfg_;
    Timers &timers_;
    Tally &tally_;
    std::uint32_t index_;
    sa::MadTransactions txns_;
    sa::SaClient client_;
    CountingSa counting_;
    Service service_;
    port::PortPoller poller_; // last: it goes first, and stops its polls
    PortIndex port_ = 0;
    ClientId client_id_ = 0;
    unsigned pending_ = 0; // memberships not restored since the port's last invalidation
    bool settled_ = true;  // see Tally::unsettled
    bool joined_ = false, polls_stopped_ = false;
    bool invalidating_ = false; // inside port_invalidated
    port::PollStats final_polls_;
};

// Turns spdlog's default logger off for the lifetime of the object.
class QuietLog {
public:
    QuietLog() : level_(spdlog::get_level()) { spdlog::set_level(spdlog::level::off); }
    ~QuietLog() { spdlog::set_level(level_); }
    QuietLog(const QuietLog &) = delete;
    QuietLog &operator=(const QuietLog &) = delete;

private:
    spdlog::level::level_enum level_;
};

double percentile(std::vector<float> &v, double p) {
    if (v.empty())
        return 0;
    const auto k = static_cast<std::size_t>(std::min<double>(std::ceil(p * static_cast<double>(v.size())) - 1,
                                                             static_cast<double>(v.size() - 1)));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

[[gnu::format(printf, 1, 2)]] std::string fmt(const char *f, ...) {
    char buf[512];
    std::va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

} // namespace

sa::FabricBudget fabric_budget(const DesConfig &cfg) {
    return {cfg.hosts, static_cast<unsigned>(cfg.budget_fraction * cfg.sa_rate)};
}

DesResult run_des(const DesConfig &given) {
    // The daemons' configuration as their config reader leaves it: the budget applied.
    DesConfig cfg = given;
    sa::apply(fabric_budget(cfg), cfg.txn, cfg.engine.rejoin_jitter);
    if (cfg.hosts == 0 || cfg.groups == 0)
        throw std::invalid_argument("hosts and groups must be at least 1");
    if (!cfg.reregister && !(cfg.sminfo_shows_restart && cfg.polls))
        throw std::invalid_argument("without CLIENT_REREGISTER the hosts learn of the restart only from SMInfoRecord "
                                    "polls that show it");
    if (!cfg.reregister_at.empty() && (!cfg.reregister || cfg.reregister_at.size() != cfg.hosts))
        throw std::invalid_argument("reregister_at needs CLIENT_REREGISTER and one instant per host");
    // The Service logs every port event of every host: thousands of lines per run.
    const QuietLog quiet;
    const auto wall0 = WallClock::now();

    std::unique_ptr<Driver> driver =
        cfg.fake_timers ? std::unique_ptr<Driver>(new FakeDriver) : std::unique_ptr<Driver>(new QueueDriver);
    Timers &timers = driver->timers();

    SimSaConfig sa_cfg;
    sa_cfg.set_service = service_time(cfg.sa_rate);
    sa_cfg.get_service = service_time(cfg.get_rate > 0 ? cfg.get_rate : cfg.sa_rate);
    sa_cfg.wire_delay = cfg.wire_delay;
    sa_cfg.get_drop_after = cfg.get_drop_after;
    sa_cfg.kernel_drops_late = cfg.kernel_drops_late;
    sa_cfg.host_cost = cfg.host_cost;

    // Setup: the fabric as it was before the restart. The SA serves at zero service time, so
    // the joins cost no virtual time and leave no queue behind.
    SimSaConfig instant = sa_cfg;
    instant.set_service = instant.get_service = Duration{0};
    instant.get_drop_after = Duration{0};
    instant.kernel_drops_late = false;
    instant.host_cost = Duration{0};
    SimSa simsa(timers, instant);

    Tally tally;
    std::vector<std::unique_ptr<Host>> hosts;
    hosts.reserve(cfg.hosts);
    for (std::uint32_t i = 0; i < cfg.hosts; ++i)
        hosts.push_back(std::make_unique<Host>(i, cfg, timers, simsa, tally));

    // Setup. The daemons start at random times over one SMInfo period (10 s by default), so
    // that their polls and audits are spread as on a fabric that has been up a while; each
    // joins its groups once its port is usable. The SA serves at zero service time, so the
    // joins leave no queue behind.
    DesResult r;
    r.memberships = static_cast<std::uint64_t>(cfg.hosts) * cfg.groups;
    const Duration spread = std::min<Duration>(cfg.polls ? Duration(cfg.monitor.sminfo_interval) : Duration::zero(),
                                               std::chrono::seconds(60));
    std::mt19937_64 boot_rng(splitmix(cfg.seed));
    std::uniform_int_distribution<Duration::rep> boot_at(0, spread.count());
    for (auto &h : hosts)
        timers.start(Duration(boot_at(boot_rng)), [p = h.get()] { p->boot(); });
    const TimePoint setup_end = timers.now() + spread + std::chrono::seconds(2);
    // A paced port (sa.max_rate, a fabric budget) takes groups / rate to join; after its last
    // join its bucket needs one more interval to fill, as on a fabric that has been up a while.
    // Restarting before that would start every port's re-join at its setup's phase, not at its
    // own re-join jitter.
    const double rate = cfg.txn.pacing_rate;
    const Duration token_interval =
        rate > 0 ? std::chrono::duration_cast<Duration>(std::chrono::duration<double>(1 / rate)) : Duration::zero();
    const TimePoint setup_limit = setup_end + std::chrono::seconds(600) + token_interval * (cfg.groups + 1);

    // The SM restarts once every join is in and nothing is in flight: the SA forgets
    // everything, and its first sweep asks every port to re-register at once. From then on the
    // SA serves at its real service time. It happens from a timer, like everything else, so
    // that the run is the same event for event on any Timers.
    std::optional<TimePoint> t0;
    std::vector<sa::TxnStats> base;
    std::vector<port::PollStats> base_polls;
    std::uint64_t started0 = 0;
    auto wall1 = WallClock::now();
    bool buckets_full = token_interval == Duration::zero();
    std::function<void()> trace_sample; // cfg.trace_every
    std::function<void()> restart = [&] {
        if (tally.joined + tally.join_failed < r.memberships || !simsa.idle()) {
            timers.start(std::chrono::milliseconds(1), restart);
            return;
        }
        if (!buckets_full) {
            buckets_full = true;
            timers.start(token_interval, restart);
            return;
        }
        r.setup_joined = tally.joined;
        r.setup_failed = tally.join_failed;
        for (auto &h : hosts) {
            base.push_back(h->txn_stats());
            base_polls.push_back(h->poll_stats());
        }
        tally = Tally{};
        // Once every membership is back, the polls stop, and the run goes on only until the SA
        // has served what it still holds and the last answers are in: those late answers
        // belong to the figures. The port pollers stop one SMInfoRecord period later, if
        // nothing re-joined meanwhile: a poll may still find the restart and invalidate its
        // port again.
        const Duration settle = std::chrono::duration_cast<Duration>(cfg.monitor.sminfo_interval * 1.1 +
                                                                     cfg.monitor.sminfo_timeout) +
                                std::chrono::seconds(1);
        tally.all_restored = [&hosts, &tally, &timers, settle] {
            timers.start(settle, [&hosts, &tally] {
                if (tally.unsettled != 0)
                    return; // re-joining again; its end arms another check
                for (auto &h : hosts)
                    h->stop_polls();
            });
        };
        if (cfg.trace_every > Duration::zero()) {
            trace_sample = [&] {
                DesResult::TraceSample ts;
                ts.t_s = seconds(timers.now() - *t0);
                for (auto &h : hosts)
                    ts.hosts.push_back(h->sample());
                r.trace.push_back(std::move(ts));
                if (tally.unsettled != 0)
                    timers.start(cfg.trace_every, trace_sample);
            };
            timers.start(Duration::zero(), trace_sample);
        }
        simsa.set_config(sa_cfg);
        simsa.forget_all(cfg.sminfo_shows_restart);
        simsa.reset_stats();
        simsa.watch_memberships(r.memberships + (cfg.probe_join_at && !cfg.probe_join_held ? 1 : 0));
        t0 = timers.now();
        tally.t0 = t0;
        for (auto &h : hosts)
            h->arm();
        started0 = driver->started();
        wall1 = WallClock::now();
        if (cfg.reregister && cfg.reregister_at.empty()) // else nothing happens until a poll sees the new SM
            for (auto &h : hosts)
                h->sm_restarted();
        else if (cfg.reregister)
            for (std::size_t i = 0; i < hosts.size(); ++i)
                timers.start(cfg.reregister_at[i], [h = hosts[i].get()] { h->sm_restarted(); });
        if (cfg.probe_join_at)
            timers.start(*cfg.probe_join_at,
                         [&hosts, &r] { hosts.front()->probe_join([&r](double s) { r.probe_join_s = s; }); });
    };
    timers.start(std::chrono::ceil<Duration>(setup_end - timers.now()), restart);

    TimePoint due;
    while (driver->next(due) && (t0 ? due <= *t0 + cfg.cap : due <= setup_limit))
        driver->step();
    if (!t0)
        throw std::runtime_error("setup: " + std::to_string(tally.joined) + " of " + std::to_string(r.memberships) +
                                 " joins succeeded, " + std::to_string(tally.join_failed) + " failed");
    r.wall_rejoin_s = duration<double>(WallClock::now() - wall1).count();
    r.events = driver->started() - started0;

    r.restored = tally.restored;
    r.lost = tally.lost;
    r.done = tally.unsettled == 0 && tally.done_at;
    std::uint64_t back = 0;
    for (auto &h : hosts)
        back += h->restored_memberships();
    r.outstanding = r.memberships - back;
    r.completion_s = r.done ? seconds(*tally.done_at - *t0) : seconds(cfg.cap);
    r.first_restored_s = tally.first_restored ? seconds(*tally.first_restored - *t0) : 0;
    // The service time the SA really has: whole clock ticks (1/7000 s is 142 us, not 142.857).
    r.ideal_s = static_cast<double>(r.memberships) * seconds(sa_cfg.set_service);

    SimSaStats s = simsa.stats();
    r.sa_complete_s = s.target_reached ? seconds(*s.target_reached - *t0) : -1;
    r.sa_memberships = simsa.memberships();
    r.sa_sets = s.sets;
    r.sa_deletes = s.deletes;
    r.sa_gets = s.gets;
    r.sa_gets_dropped = s.gets_dropped;
    r.sa_served_sets = s.served_sets;
    r.sa_served_gets = s.served_gets;
    r.answers_after_timeout = s.answers_after_timeout;
    r.answers_dropped_late = s.answers_dropped_late;
    r.max_set_queue = s.max_set_queue;
    r.set_delay_p50 = percentile(s.set_delays, 0.50);
    r.set_delay_p99 = percentile(s.set_delays, 0.99);
    r.set_delay_max = s.set_delays.empty() ? 0 : *std::max_element(s.set_delays.begin(), s.set_delays.end());
    r.get_delay_max = s.get_delays.empty() ? 0 : *std::max_element(s.get_delays.begin(), s.get_delays.end());
    for (std::uint32_t n : s.set_arrivals_per_s)
        r.peak_set_arrivals = std::max(r.peak_set_arrivals, static_cast<double>(n));

    r.set_txns = tally.set_txns;
    r.set_ok = tally.set_ok;
    r.set_refused = tally.set_refused;
    r.set_timeouts = tally.set_timeouts;
    r.get_txns = tally.get_txns;
    r.get_timeouts = tally.get_timeouts;
    r.invalidations = tally.invalidations;
    r.audit_rejoins = tally.audit_rejoins;
    double sum = 0;
    for (auto &h : hosts) {
        DesResult::HostRejoin hr;
        hr.started_s = h->last_rejoin_start_s(*t0).value_or(0);
        if (const auto d = h->last_rejoin_s()) {
            r.host_rejoin_max_s = std::max(r.host_rejoin_max_s, *d);
            sum += *d;
            hr.length_s = *d;
        }
        const auto last = h->sample();
        hr.window = last.window;
        hr.srtt_ms = last.srtt_ms;
        r.host_rejoins.push_back(hr);
    }
    r.host_rejoin_mean_s = sum / static_cast<double>(hosts.size());
    r.smps = s.smps;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        const port::PollStats pnow = hosts[i]->poll_stats();
        const port::PollStats &pb = base_polls[i];
        r.sminfo_polls += pnow.sminfo_polls - pb.sminfo_polls;
        r.sminfo_timeouts += pnow.sminfo_failures - pb.sminfo_failures;
        r.portinfo_polls += pnow.portinfo_polls - pb.portinfo_polls;
        r.audits += pnow.audits - pb.audits;
    }
    for (std::size_t i = 0; i < hosts.size(); ++i) {
        const sa::TxnStats now = hosts[i]->txn_stats();
        const sa::TxnStats &b = base[i];
        r.txn.sent += now.sent - b.sent;
        r.txn.retransmits += now.retransmits - b.retransmits;
        r.txn.send_errors += now.send_errors - b.send_errors;
        r.txn.timeouts += now.timeouts - b.timeouts;
        r.txn.bounces += now.bounces - b.bounces;
        r.txn.responses += now.responses - b.responses;
        r.txn.late += now.late - b.late;
        r.txn.rejected += now.rejected - b.rejected;
        r.txn.unsolicited += now.unsolicited - b.unsolicited;
    }
    hosts.clear(); // before the SA and the clock they use
    r.wall_s = duration<double>(WallClock::now() - wall0).count();
    return r;
}

std::string describe_config(const DesConfig &cfg) {
    const auto &t = cfg.txn;
    std::string s = "transactions: " +
                    (t.congestion.enabled ? "congestion control (RTT target " + ms(t.congestion.rtt_target) + ") up to a window of "
                                          : std::string("fixed window ")) +
                    std::to_string(t.window) + ", " + std::to_string(t.max_tries) +
                    " tries, timeout " + ms(t.first_timeout) + " doubling to " + ms(t.max_timeout) + ", pacing " +
                    (t.pacing_rate ? fmt("%g", t.pacing_rate) + " MAD/s burst " + std::to_string(t.pacing_burst)
                                   : std::string("off")) +
                    (cfg.budget_fraction > 0
                         ? fmt(", fabric budget %g x the SA's Set rate shared by the hosts (per-port pacing and "
                               "re-join jitter from it)",
                               cfg.budget_fraction)
                         : std::string()) +
                    "; engine: re-join jitter " +
                    ms(std::chrono::duration_cast<milliseconds>(cfg.engine.rejoin_jitter)) + ", retry backoff " +
                    ms(std::chrono::duration_cast<milliseconds>(cfg.engine.retry_min)) + " doubling to " +
                    ms(std::chrono::duration_cast<milliseconds>(cfg.engine.retry_max)) + "; polls: ";
    if (cfg.polls)
        s += "SMInfoRecord every " + ms(cfg.monitor.sminfo_interval) + " (1 try of " +
             ms(cfg.monitor.sminfo_timeout) + "), audit " + fmt("%g", cfg.monitor.audit_per_second) + "/s, jitter " +
             std::to_string(cfg.monitor.jitter_percent) + " %";
    else
        s += "off";
    s += std::string("; the restart reaches the hosts by ") +
         (cfg.reregister ? (cfg.sminfo_shows_restart ? "CLIENT_REREGISTER, then their next SMInfoRecord poll"
                                                     : "CLIENT_REREGISTER")
                         : "their next SMInfoRecord poll");
    if (cfg.reregister && !cfg.reregister_at.empty()) {
        const auto [lo, hi] = std::minmax_element(cfg.reregister_at.begin(), cfg.reregister_at.end());
        s += fmt(" (each host at its own instant, %g to %g ms after t0)", seconds(*lo) * 1e3, seconds(*hi) * 1e3);
    }
    s += "; SA: Gets served at " + fmt("%g", cfg.get_rate > 0 ? cfg.get_rate : cfg.sa_rate) + "/s, dropped after " +
         (cfg.get_drop_after.count() ? fmt("%g s", seconds(cfg.get_drop_after)) : std::string("never")) +
         ", wire " + fmt("%g ms", seconds(cfg.wire_delay) * 1e3) + " each way" +
         (cfg.host_cost > Duration::zero() ? fmt(", each host %g us per MAD it receives", seconds(cfg.host_cost) * 1e6)
                                           : std::string()) +
         ", late answers " +
         (cfg.kernel_drops_late ? "dropped (ib_umad)" : "delivered (umad2sim)") + "; cap " +
         fmt("%g s", seconds(cfg.cap));
    return s;
}

std::string table_header() {
    return fmt("%5s %4s %5s | %-26s %7s %6s %8s | %9s %8s %8s %8s | %-22s | %-15s | %7s", "hosts", "memb", "SA/s",
               "done at (virtual)", "ideal s", "x ideal", "SA all s", "Sets/memb", "failed", "retrans", "late",
               "SA queue p50/p99/max s", "Gets (dropped)", "wall s");
}

std::string table_row(const DesConfig &cfg, const DesResult &r) {
    const std::string done = r.done ? fmt("%.1f s", r.completion_s)
                                    : fmt("not done at %g s (%.1f %%)", seconds(cfg.cap), 100.0 * r.fraction_done());
    const std::string ratio = r.done ? fmt("%.2f", r.completion_s / r.ideal_s) : std::string("-");
    const std::string sa_all = r.sa_complete_s >= 0 ? fmt("%.1f", r.sa_complete_s) : std::string("never");
    const std::string delays = fmt("%.2f/%.2f/%.1f", r.set_delay_p50, r.set_delay_p99, r.set_delay_max);
    const std::string gets = fmt("%llu (%llu)", static_cast<unsigned long long>(r.sa_gets),
                                 static_cast<unsigned long long>(r.sa_gets_dropped));
    return fmt("%5u %4u %5g | %-26s %7.1f %6s %8s | %9.2f %8llu %8llu %8llu | %-22s | %-15s | %7.1f", cfg.hosts, cfg.groups,
               cfg.sa_rate, done.c_str(), r.ideal_s, ratio.c_str(), sa_all.c_str(), r.sets_per_membership(),
               static_cast<unsigned long long>(r.set_timeouts), static_cast<unsigned long long>(r.txn.retransmits),
               static_cast<unsigned long long>(r.txn.late), delays.c_str(), gets.c_str(), r.wall_s);
}

} // namespace mcastd::des
