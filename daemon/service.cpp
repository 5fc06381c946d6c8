#include "service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

#include "common/sa_status.hpp"
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

bool wanted(const std::vector<std::string> &names, const port::PortAttributes &p) {
    if (names.empty())
        return p.is_infiniband();
    const std::string full = p.device + "/" + std::to_string(p.port_num);
    return std::find(names.begin(), names.end(), p.device) != names.end() ||
           std::find(names.begin(), names.end(), full) != names.end();
}

} // namespace

Service::Service(runtime::EventLoop &loop, ServiceConfig cfg)
    : loop_(loop), transport_(loop), txns_(transport_, loop.timers(), cfg.sa), sa_client_(txns_),
      engine_(cfg.engine, sa_client_, loop.timers()),
      monitor_(txns_, sa_client_, loop.timers(), *this, cfg.monitor) {
    // MadTransactions already receives what the transport reads.
    engine_.set_event_sink(this);
    engine_.set_observer([this](const EngineNote &n) {
        for (const auto &o : observers_)
            o(n);
        changed();
    });
    monitor_.set_note_sink([this](PortIndex port, const port::Note &n) {
        using L = port::Note::Level;
        const auto level = n.level == L::error     ? spdlog::level::err
                         : n.level == L::warning ? spdlog::level::warn
                         : n.level == L::info    ? spdlog::level::info
                                                 : spdlog::level::debug;
        spdlog::log(level, "{}: {}", port_name(*this, port), n.text);
    });
    // A moved P_Key index moves the SA MADs' P_Key index with it.
    monitor_.set_pkey_listener([this](PortIndex port, const std::vector<std::uint16_t> &table) {
        ports_.at(port).pkeys = table;
        if (ports_[port].sm_lid)
            txns_.set_sa_address(port, sa_address_of(ports_[port]));
    });
    open_ports(cfg.ports);
    // Verbs async events exist on real hardware only (none under the simulator).
    port::VerbsEvents::Hooks hooks;
    hooks.lookup = [this](std::string_view dev, std::uint8_t num) -> std::optional<PortIndex> {
        for (PortIndex i = 0; i < ports_.size(); ++i)
            if (ports_[i].device == dev && ports_[i].port_num == num)
                return i;
        return std::nullopt;
    };
    hooks.on_event = [this](PortIndex port, port::VerbsEvent ev) { monitor_.on_verbs_event(port, ev); };
    hooks.on_fatal = [this](const std::string &dev) {
        for (PortIndex i = 0; i < ports_.size(); ++i)
            if (ports_[i].device == dev)
                engine_.set_port_active(i, false, dev + " reported a fatal error");
    };
    hooks.note = [](const port::Note &n) { spdlog::info("verbs: {}", n.text); };
    verbs_ = std::make_unique<port::VerbsEvents>(loop_, std::move(hooks));
    verbs_->open();
}

Service::~Service() {
    // The loop has finished: nothing may arm a timer now, so drop the MADs in flight first,
    // before the monitor's cancels could admit queued ones.
    txns_.abandon_all();
    verbs_.reset();
    for (PortIndex i = 0; i < ports_.size(); ++i)
        monitor_.stop(i);
    transport_.close_all();
}

void Service::refresh_port(PortIndex port, std::function<void()> done) {
    monitor_.poll_now(port, std::move(done));
}

void Service::port_usable(PortIndex port, bool usable, const std::string &why) {
    spdlog::log(usable ? spdlog::level::info : spdlog::level::warn, "{}: {}", port_name(*this, port),
                usable ? "usable" : why);
    engine_.set_port_active(port, usable, why);
    changed();
}

void Service::port_invalidated(PortIndex port, port::Trigger trigger, const std::string &why) {
    spdlog::warn("{}: {} ({}); re-joining its groups", port_name(*this, port), why, port::trigger_name(trigger));
    engine_.invalidate_port(port, why);
    changed();
}

void Service::sa_moved(PortIndex port, std::uint16_t sm_lid, std::uint8_t sm_sl) {
    port::PortAttributes &p = ports_.at(port);
    p.sm_lid = sm_lid;
    p.sm_sl = sm_sl;
    spdlog::info("{}: the SA is at LID {} SL {}", port_name(*this, port), sm_lid, sm_sl);
    if (sm_lid)
        txns_.set_sa_address(port, sa_address_of(p));
    else
        txns_.clear_sa_address(port);
}

void Service::sm_seen(PortIndex port, std::uint16_t lid, std::uint64_t guid, std::uint32_t act_count) {
    sms_.at(port) = SmView{lid, guid, act_count, true};
}

void Service::port_info(PortIndex port, std::uint16_t lid, std::uint8_t state, std::uint8_t mtu) {
    port::PortAttributes &p = ports_.at(port);
    p.lid = lid;
    p.state = state;
    p.mtu = mtu;
}

void Service::audit_due(PortIndex port) { engine_.audit_next(port); }

ClientId Service::add_client(ClientInfo info, MembershipEventSink *sink) {
    const ClientId id = engine_.add_client(std::move(info));
    sinks_[id] = sink;
    changed();
    return id;
}

void Service::remove_client(ClientId client) {
    engine_.remove_client(client);
    sinks_.erase(client);
    changed();
}

void Service::add_observer(EngineObserver observer) { observers_.push_back(std::move(observer)); }

void Service::membership_event(ClientId client, MembershipId id, const MembershipEvent &ev) {
    if (auto it = sinks_.find(client); it != sinks_.end() && it->second)
        it->second->membership_event(client, id, ev);
}

std::string port_name(const Service &service, PortIndex port) {
    const auto &ports = service.ports();
    return port < ports.size() ? ports[port].device + "/" + std::to_string(ports[port].port_num) : "?";
}

void Service::open_ports(const std::vector<std::string> &names) {
    port::Discovery found = port::discover_ports();
    for (const Error &e : found.errors)
        spdlog::warn("port discovery: {}", e.message);
    for (const std::string &name : names) {
        const bool exists = std::any_of(found.ports.begin(), found.ports.end(), [&](const auto &p) {
            return p.device == name || p.device + "/" + std::to_string(p.port_num) == name;
        });
        if (!exists)
            throw std::runtime_error("configured port '" + name + "' does not exist");
    }
    for (const port::PortAttributes &p : found.ports) {
        if (!wanted(names, p)) {
            spdlog::info("{}/{}: skipped ({} link layer or not configured)", p.device, p.port_num,
                         p.link_layer);
            continue;
        }
        const auto index = static_cast<PortIndex>(ports_.size());
        transport_.open_port(index, p.device, p.port_num);
        // Until the first PortInfo answer, trust the (possibly stale) sysfs view.
        const bool usable = p.is_active() && p.sm_lid != 0;
        const PortIndex in_engine = engine_.add_port(p.device, p.port_num, p.port_gid(), usable);
        if (in_engine != index)
            throw std::logic_error("port index mismatch between engine and transport");
        if (p.sm_lid)
            txns_.set_sa_address(index, sa_address_of(p));
        spdlog::info("{}/{}: {} LID {} SM LID {} PortGID {}", p.device, p.port_num,
                     port::port_state_name(p.state), p.lid, p.sm_lid, format_gid(p.port_gid()));
        ports_.push_back(p);
        sms_.push_back(SmView{});
        monitor_.start(index, port::PolledPort{p.device, p.port_num, p.pkeys});
    }
    if (ports_.empty())
        throw std::runtime_error("no usable InfiniBand port found");
}

} // namespace mcastd
