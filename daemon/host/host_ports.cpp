// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "host/host_ports.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

#include "common/port_name.hpp"
#include "logging/gid_log.hpp"
#include "logging/sa_log.hpp"
#include "service/views.hpp"
#include "port/port_discovery.hpp"

namespace mcastd {

sa::MadAddress sa_address_of(const port::PortAttributes &p) {
    sa::MadAddress a;
    a.dlid = p.sm_lid;
    a.dqp = 1;
    a.sl = p.sm_sl;
    a.qkey = 0x80010000; // the well-known QP1 Q_Key
    // The kernel's SA client uses the index holding 0xFFFF (index 0 when absent).
    a.pkey_index = port::pkey_index_or_default(p.pkeys);
    return a;
}

namespace {

bool named(const std::vector<std::string> &names, const port::PortAttributes &p) {
    return std::find(names.begin(), names.end(), p.device) != names.end() ||
           std::find(names.begin(), names.end(), port_name(p.device, p.port_num)) != names.end();
}

bool wanted(const std::vector<std::string> &names, const port::PortAttributes &p) {
    return names.empty() || named(names, p);
}

} // namespace

HostPorts::HostPorts(runtime::EventLoop &loop, HostPortsConfig cfg)
    : HostPorts(loop, cfg, port::host_port_source(cfg.sysfs_root)) {}

HostPorts::HostPorts(runtime::EventLoop &loop, HostPortsConfig cfg, std::unique_ptr<port::PortSource> source)
    : loop_(loop), cfg_(std::move(cfg)), source_(std::move(source)), transport_(loop),
      txns_(transport_, loop.timers(), cfg_.sa),
      sa_client_(txns_), sa_load_(kAmplificationWarning, kSaLoadMinTransactions),
      rng_(cfg_.monitor.seed ? *cfg_.monitor.seed : std::random_device{}()) {
    // Fails here, before any port is opened, on a config the poller refuses.
    if (auto why = port::check_monitor_config(cfg_.monitor))
        throw std::invalid_argument("config monitor: " + *why);
}

HostPorts::~HostPorts() {
    // Nothing may arm a timer now (the loop has finished): drop the MADs in flight first,
    // before the poller's cancels (its destructor stops every port) could admit queued ones.
    // The service may be gone already: nothing here may touch it.
    loop_.timers().cancel(sa_load_timer_);
    for (const auto &[port, timer] : watches_)
        loop_.timers().cancel(timer);
    txns_.abandon_all();
    poller_.reset(); // its sink and registry, the service's, may be gone: it stops without them
    verbs_.reset();
    transport_.close_all();
}

void HostPorts::open(Service &service) {
    service_ = &service;
    service.set_sa_counters([this] {
        const sa::TxnStats t = txns_.total_stats();
        return SaCounters{t.sent, t.retransmits, t.timeouts, t.bounces, t.responses, t.late};
    });
    service.set_sa_congestion([this](PortIndex port) -> std::optional<SaPortCongestion> {
        const sa::CongestionWindow *cc = txns_.congestion(port);
        if (!cc)
            return std::nullopt;
        const auto first = cfg_.sa.first_timeout;
        return SaPortCongestion{cc->window(), cc->slow_start(), cc->srtt(),
                                cc->rto() ? std::optional<Duration>(cc->try_timeout(0, first, cfg_.sa.max_timeout, first))
                                          : std::nullopt};
    });
    // An audit that found the port's state gone re-joins it as port_invalidated() does: the
    // window starts again, and the port rules take a new SMInfo baseline.
    // SA MADs go where the registry says the port's SM is now.
    txns_.set_sa_route([&service](PortIndex port) -> std::optional<sa::MadAddress> {
        const port::RegisteredPort *p = service.ports().get(port);
        if (!p || !p->attributes.sm_lid)
            return std::nullopt;
        return sa_address_of(p->attributes);
    });
    // The event sources tell the Service what they observe; it decides.
    poller_ = std::make_unique<port::PortPoller>(txns_, sa_client_, loop_.timers(), service.ports(), service,
                                                 cfg_.monitor);
    // A P_Key table re-read (after PKEY_CHANGE) asks the same source discovery did.
    poller_->set_pkey_reader([this](const port::RegisteredPort &p) -> std::variant<std::vector<std::uint16_t>, Error> {
        auto r = source_->read_port(p.device(), p.number());
        if (auto *e = std::get_if<Error>(&r))
            return std::move(*e);
        return std::move(std::get<port::PortAttributes>(r).pkeys);
    });
    poller_->set_note_sink([this](PortIndex port, const port::Note &n) {
        using L = port::Note::Level;
        const auto level = n.level == L::error     ? spdlog::level::err
                         : n.level == L::warning ? spdlog::level::warn
                         : n.level == L::info    ? spdlog::level::info
                                                 : spdlog::level::debug;
        spdlog::log(level, "{}: {}", port_name(*service_, port), n.text);
    });
    service.add_port_listener(*this);
    open_ports();
    watch_verbs();
    watch_sa_load();
}

void HostPorts::watch_sa_load() {
    sa_load_timer_ = loop_.timers().start(kSaLoadInterval, [this] {
        if (const auto c = sa_load_.sample(txns_.total_stats()))
            logging::log_sa_load({c->amplified, c->ratio, c->sent, c->ended, c->retransmits, c->late,
                                  static_cast<unsigned>(std::chrono::duration_cast<std::chrono::seconds>(kSaLoadInterval).count())});
        watch_sa_load();
    });
}

void HostPorts::open_ports() {
    port::Discovery found = source_->discover();
    for (const Error &e : found.errors)
        spdlog::warn("port discovery: {}", e.message);
    for (const std::string &name : cfg_.ports) {
        if (std::none_of(found.ports.begin(), found.ports.end(),
                         [&](const port::PortAttributes &p) { return named({name}, p); }))
            throw std::runtime_error("configured port '" + name + "' does not exist");
    }
    for (const port::PortAttributes &p : found.ports) {
        if (!wanted(cfg_.ports, p)) {
            spdlog::info("{}: skipped (not configured)", port_name(p.device, p.port_num));
            continue;
        }
        if (p.is_infiniband())
            open_infiniband(p);
        else
            open_ethernet(p);
    }
    if (service_->ports().empty())
        throw std::runtime_error("no usable RDMA port found (" + source_->name() + ")");
}

void HostPorts::open_infiniband(const port::PortAttributes &p) {
    const auto index = static_cast<PortIndex>(service_->ports().size());
    transport_.open_port(index, p.device, p.port_num);
    // Until the first PortInfo answer, trust the (possibly stale) sysfs view.
    if (service_->add_port(p, p.is_active() && p.sm_lid != 0) != index)
        throw std::logic_error("port index mismatch between the service and the transport");
    txns_.sa_route_changed(index);
    spdlog::info("{}: {} LID {} SM LID {} PortGID {}", port_name(p.device, p.port_num), port::port_state_name(p.state),
                 p.lid, p.sm_lid, format_gid(p.port_gid()));
    poller_->start(index);
}

// No SA, no SM, no LID: nothing to open, no MAD. Usable while ACTIVE; its state and GID table
// are watched (check_ethernet).
void HostPorts::open_ethernet(port::PortAttributes p) {
    port::annotate_netdevs(p.gids, netdevs_);
    const PortIndex index = service_->add_port(p, p.is_active());
    std::string gids;
    for (const port::GidEntry &e : p.gids)
        gids += (gids.empty() ? "" : ", ") + port::describe(e);
    spdlog::info("{}: {} Ethernet (RoCE), GID table: {}", port_name(p.device, p.port_num),
                 port::port_state_name(p.state), gids.empty() ? "empty" : gids);
    watch_ethernet(index);
}

void HostPorts::watch_ethernet(PortIndex port) {
    const auto every = std::chrono::duration_cast<Duration>(cfg_.monitor.portinfo_interval);
    const double j = cfg_.monitor.jitter_percent / 100.0;
    const Duration delay{static_cast<Duration::rep>(
        static_cast<double>(every.count()) * std::uniform_real_distribution<double>(1 - j, 1 + j)(rng_))};
    watches_[port] = loop_.timers().start(delay, [this, port] {
        watches_.erase(port);
        check_ethernet(port);
        watch_ethernet(port);
    });
}

void HostPorts::check_ethernet(PortIndex port) {
    const port::RegisteredPort *p = service_ ? service_->ports().get(port) : nullptr;
    if (!p || p->link_layer == LinkLayer::infiniband)
        return;
    // One read of the port, its GID table included.
    auto read = source_->read_port(p->device(), p->number());
    auto *attrs = std::get_if<port::PortAttributes>(&read);
    if (!attrs) {
        spdlog::warn("{}: {}", p->name, std::get<Error>(read).message);
        return;
    }
    // The link: only the port's state changes (the kernel keeps the memberships across a flap).
    if (attrs->is_active() != p->usable)
        service_->port_usable(port, attrs->is_active(), "the link is " + port::port_state_name(attrs->state));
    apply_gid_table(port, std::move(attrs->gids));
}

bool HostPorts::infiniband(PortIndex port) const {
    const port::RegisteredPort *p = service_ ? service_->ports().get(port) : nullptr;
    return p && p->link_layer == LinkLayer::infiniband;
}

std::variant<port::GidTableChange, Error> HostPorts::reread_gid_table(PortIndex port) {
    const port::RegisteredPort *p = service_ ? service_->ports().get(port) : nullptr;
    if (!p)
        return Error{Errc::no_such_port, "no port with index " + std::to_string(port), {}};
    auto read = source_->read_gid_table(p->device(), p->number());
    if (auto *e = std::get_if<Error>(&read))
        return std::move(*e);
    port::GidTable &table = std::get<port::GidTable>(read);
    for (const std::string &problem : table.problems)
        spdlog::warn("{}: {}", p->name, problem);
    return apply_gid_table(port, std::move(table.entries));
}

port::GidTableChange HostPorts::apply_gid_table(PortIndex port, std::vector<port::GidEntry> entries) {
    port::annotate_netdevs(entries, netdevs_);
    const port::RegisteredPort &p = service_->ports().at(port);
    const std::string device = p.device();
    const unsigned number = p.number();
    port::GidTableChange change = service_->gid_table(port, std::move(entries));
    logging::log_gid_change(device, number, change);
    return change;
}

// Verbs async events exist on real hardware only (none under the simulator).
void HostPorts::watch_verbs() {
    port::VerbsEvents::Hooks hooks;
    hooks.lookup = [this](std::string_view dev, std::uint8_t num) { return service_->ports().find(dev, num); };
    hooks.on_event = [this](PortIndex port, port::VerbsEvent ev) { poller_->on_verbs_event(port, ev); };
    hooks.on_fatal = [this](const std::string &dev) {
        for (PortIndex i : service_->ports().of_device(dev))
            service_->port_usable(i, false, dev + " reported a fatal error");
    };
    hooks.note = [](const port::Note &n) { spdlog::info("verbs: {}", n.text); };
    verbs_ = std::make_unique<port::VerbsEvents>(loop_, std::move(hooks));
    verbs_->open();
}

void HostPorts::refresh_port(PortIndex port, std::function<void()> done) {
    if (poller_)
        poller_->poll_now(port, std::move(done));
    else if (done)
        done();
}

void HostPorts::sa_route_changed(PortIndex port) {
    if (infiniband(port))
        txns_.sa_route_changed(port);
}

// Whatever found the loss (the port rules, or the engine's audit), once per re-join and before
// any of its Sets is submitted: every host is about to re-join at once, so the SA window starts
// again from one MAD, and the re-join covers any SM restart before it, so the next SMInfo
// sample is the new baseline (PortRules).
void HostPorts::memberships_gone(PortIndex port) {
    if (!infiniband(port))
        return; // a RoCE port has no SA window and no SMInfo baseline
    txns_.restart_congestion(port);
    poller_->on_memberships_gone(port);
}

} // namespace mcastd
