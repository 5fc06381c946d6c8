#include "fabric_des.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

#include "common/gid.hpp"
#include "core/engine.hpp"
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
    std::uint64_t sminfo_polls = 0, sminfo_timeouts = 0;
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

private:
    SaService &inner_;
    Tally &tally_;
};

// One host: one port, one client holding `groups` memberships, and the daemon's engine, SA
// client and transaction layer over its SimSa endpoint.
class Host final : private MembershipEventSink {
public:
    Host(std::uint32_t index, const DesConfig &cfg, Timers &timers, SimSa &sa, Tally &tally)
        : cfg_(cfg), timers_(timers), tally_(tally), index_(index),
          txns_(sa.endpoint(sa.add_host(gid_of(index))), timers, txn_config(cfg, index)), client_(txns_),
          counting_(client_, tally), engine_(engine_config(cfg, index), counting_, timers),
          rng_(splitmix(cfg.seed ^ (0x5eedULL << 32) ^ index)) {
        txns_.set_sa_address(0, kSaAddress);
        engine_.set_event_sink(this);
        port_ = engine_.add_port("mlx5_0", 1, gid_of(index), true);
        client_id_ = engine_.add_client(ClientInfo{static_cast<pid_t>(1000 + index), 0, 0, "des"});
    }
    ~Host() override { stop_polls(); }
    Host(const Host &) = delete;
    Host &operator=(const Host &) = delete;

    static Gid gid_of(std::uint32_t index) { return make_gid(kSubnetPrefix, 0x100000ULL + index + 1); }

    void join_all(unsigned groups) {
        for (unsigned g = 0; g < groups; ++g) {
            JoinRequest r;
            r.device = "mlx5_0";
            r.port = 1;
            r.mgid = make_gid(kMgidPrefix, g + 1);
            r.join_state = join::full;
            engine_.join(client_id_, r, [this](const JoinResult &res) {
                ++(res.error ? tally_.join_failed : tally_.joined);
            });
        }
    }

    // What the daemon does when the port reports a ClientReregister or the SM restarted
    // (Service::port_invalidated): the engine re-joins every group after its jitter.
    void sm_restarted() { engine_.invalidate_port(port_, "SM restart (client reregister)"); }

    void start_polls() {
        if (!cfg_.polls)
            return;
        polling_ = true;
        const auto &m = cfg_.monitor;
        // Hosts have been up for a while: each poll is somewhere in its period.
        arm_sminfo(uniform(Duration(m.sminfo_interval)));
        if (m.audit_per_second > 0)
            arm_audit(uniform(audit_interval()));
    }
    void stop_polls() {
        polling_ = false;
        timers_.cancel(sminfo_timer_);
        timers_.cancel(audit_timer_);
        sminfo_timer_ = audit_timer_ = 0;
    }

    bool settled() const {
        const auto ports = engine_.ports();
        return !ports.empty() && !ports.front().rejoining;
    }
    sa::TxnStats txn_stats() const { return txns_.total_stats(); }

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

    void membership_event(ClientId, MembershipId, const MembershipEvent &ev) override {
        if (ev.kind == MembershipEvent::Kind::restored) {
            ++tally_.restored;
            if (!tally_.first_restored)
                tally_.first_restored = timers_.now();
            tally_.last_restored = timers_.now();
        } else {
            ++tally_.lost;
        }
    }

    // The port monitor's schedule (port_poller.hpp): every delay jittered by jitter_percent.
    Duration jittered(Duration base) {
        const double j = cfg_.monitor.jitter_percent / 100.0;
        std::uniform_real_distribution<double> d(1.0 - j, 1.0 + j);
        return std::chrono::duration_cast<Duration>(base * d(rng_));
    }
    Duration uniform(Duration max) {
        std::uniform_int_distribution<std::int64_t> d(0, std::max<std::int64_t>(max.count() - 1, 0));
        return Duration(d(rng_));
    }
    Duration audit_interval() const {
        return std::chrono::duration_cast<Duration>(duration<double>(1.0 / cfg_.monitor.audit_per_second));
    }

    void arm_sminfo(Duration delay) {
        sminfo_timer_ = timers_.start(delay, [this] {
            sminfo_timer_ = 0;
            poll_sminfo();
        });
    }
    void poll_sminfo() {
        const auto &m = cfg_.monitor;
        ++tally_.sminfo_polls;
        client_.get_sm_info(port_, sa::SmInfoQuery::by_lid(kSaAddress.dlid), sa::TryPolicy::single(m.sminfo_timeout),
                            [this](const sa::SmInfoResult &r) {
                                const auto &mc = cfg_.monitor;
                                if (!r.ok()) {
                                    ++tally_.sminfo_timeouts;
                                    sminfo_backoff_ = sminfo_backoff_.count()
                                                          ? std::min(sminfo_backoff_ * 2, Duration(mc.sminfo_interval))
                                                          : Duration(mc.sminfo_retry);
                                    if (polling_)
                                        arm_sminfo(jittered(sminfo_backoff_));
                                    return;
                                }
                                const bool recovered = sminfo_backoff_.count() != 0;
                                sminfo_backoff_ = Duration{0};
                                if (!polling_)
                                    return;
                                if (recovered) // PortRules: the first success after failures audits now
                                    engine_.audit_next(port_);
                                arm_sminfo(jittered(Duration(mc.sminfo_interval)));
                            });
    }
    void arm_audit(Duration delay) {
        audit_timer_ = timers_.start(delay, [this] {
            audit_timer_ = 0;
            engine_.audit_next(port_);
            if (polling_)
                arm_audit(jittered(audit_interval()));
        });
    }

    const DesConfig &cfg_;
    Timers &timers_;
    Tally &tally_;
    std::uint32_t index_;
    sa::MadTransactions txns_;
    sa::SaClient client_;
    CountingSa counting_;
    Engine engine_;
    PortIndex port_ = 0;
    ClientId client_id_ = 0;
    std::mt19937_64 rng_;
    bool polling_ = false;
    Timers::Id sminfo_timer_ = 0, audit_timer_ = 0;
    Duration sminfo_backoff_{0};
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

DesResult run_des(const DesConfig &cfg) {
    if (cfg.hosts == 0 || cfg.groups == 0)
        throw std::invalid_argument("hosts and groups must be at least 1");
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

    // Setup: the fabric as it was before the restart. The SA serves at zero service time, so
    // the joins cost no virtual time and leave no queue behind.
    SimSaConfig instant = sa_cfg;
    instant.set_service = instant.get_service = Duration{0};
    instant.get_drop_after = Duration{0};
    instant.kernel_drops_late = false;
    SimSa simsa(timers, instant);

    Tally tally;
    std::vector<std::unique_ptr<Host>> hosts;
    hosts.reserve(cfg.hosts);
    for (std::uint32_t i = 0; i < cfg.hosts; ++i)
        hosts.push_back(std::make_unique<Host>(i, cfg, timers, simsa, tally));

    DesResult r;
    r.memberships = static_cast<std::uint64_t>(cfg.hosts) * cfg.groups;
    for (auto &h : hosts)
        h->join_all(cfg.groups);
    TimePoint due;
    while (tally.joined + tally.join_failed < r.memberships && driver->next(due))
        driver->step();
    while (driver->next(due)) // answers to nobody, if any
        driver->step();
    r.setup_joined = tally.joined;
    r.setup_failed = tally.join_failed;
    if (r.setup_joined != r.memberships)
        throw std::runtime_error("setup: " + std::to_string(r.setup_joined) + " of " +
                                 std::to_string(r.memberships) + " joins succeeded");

    // The SM restarts: the SA forgets everything and every port is told at once (one sweep's
    // ClientReregister), from here on at the SA's real service time.
    std::vector<sa::TxnStats> base;
    base.reserve(hosts.size());
    for (auto &h : hosts)
        base.push_back(h->txn_stats());
    tally = Tally{};
    simsa.set_config(sa_cfg);
    simsa.forget_all();
    simsa.reset_stats();
    simsa.watch_memberships(r.memberships);
    const TimePoint t0 = timers.now();
    const std::uint64_t started0 = driver->started();
    const auto wall1 = WallClock::now();
    for (auto &h : hosts)
        h->sm_restarted();
    for (auto &h : hosts)
        h->start_polls();

    // Until every membership is restored, then on (polls stopped) until the SA has served what
    // it still holds and the last answers are in: those late answers belong to the figures.
    const TimePoint end = t0 + cfg.cap;
    bool polls_on = true;
    while (driver->next(due) && due <= end) {
        driver->step();
        if (polls_on && tally.restored >= r.memberships) {
            polls_on = false;
            for (auto &h : hosts)
                h->stop_polls();
        }
    }
    r.wall_rejoin_s = duration<double>(WallClock::now() - wall1).count();
    r.events = driver->started() - started0;

    r.restored = tally.restored;
    r.lost = tally.lost;
    r.done = tally.restored >= r.memberships;
    r.completion_s = r.done && tally.last_restored ? seconds(*tally.last_restored - t0) : seconds(cfg.cap);
    r.first_restored_s = tally.first_restored ? seconds(*tally.first_restored - t0) : 0;
    r.ideal_s = static_cast<double>(r.memberships) / cfg.sa_rate;

    SimSaStats s = simsa.stats();
    r.sa_complete_s = s.target_reached ? seconds(*s.target_reached - t0) : -1;
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
    r.sminfo_polls = tally.sminfo_polls;
    r.sminfo_timeouts = tally.sminfo_timeouts;
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
    std::string s = "transactions: window " + std::to_string(t.window) + ", " + std::to_string(t.max_tries) +
                    " tries, timeout " + ms(t.first_timeout) + " doubling to " + ms(t.max_timeout) + ", pacing " +
                    (t.pacing_rate ? std::to_string(t.pacing_rate) + " MAD/s burst " + std::to_string(t.pacing_burst)
                                   : std::string("off")) +
                    "; engine: re-join jitter " +
                    ms(std::chrono::duration_cast<milliseconds>(cfg.engine.rejoin_jitter)) + ", retry backoff " +
                    ms(std::chrono::duration_cast<milliseconds>(cfg.engine.retry_min)) + " doubling to " +
                    ms(std::chrono::duration_cast<milliseconds>(cfg.engine.retry_max)) + "; polls: ";
    if (cfg.polls)
        s += "SMInfo every " + ms(cfg.monitor.sminfo_interval) + " (1 try of " + ms(cfg.monitor.sminfo_timeout) +
             "), audit " + fmt("%g", cfg.monitor.audit_per_second) + "/s";
    else
        s += "off";
    s += "; SA: Gets served at " + fmt("%g", cfg.get_rate > 0 ? cfg.get_rate : cfg.sa_rate) + "/s, dropped after " +
         (cfg.get_drop_after.count() ? fmt("%g s", seconds(cfg.get_drop_after)) : std::string("never")) +
         ", wire " + fmt("%g ms", seconds(cfg.wire_delay) * 1e3) + " each way, late answers " +
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
