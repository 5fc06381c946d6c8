#include "service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

#include "core/sa_status.hpp"
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
      engine_(cfg.engine, sa_client_, loop.timers()) {
    open_ports(cfg.ports); // MadTransactions already receives what the transport reads
    for (PortIndex i = 0; i < ports_.size(); ++i)
        refresh_port(i);
    engine_.set_event_sink(this);
    engine_.set_observer([this](const EngineNote &n) {
        for (const auto &o : observers_)
            o(n);
    });
}

void Service::refresh_port(PortIndex port, std::function<void()> done) {
    const port::SmpBuf req = port::encode_portinfo_get(0, ports_.at(port).port_num);
    txns_.submit(port, req, sa::Route::local_smp, [this, port, done = std::move(done)](const sa::TxnOutcome &out) {
        const std::string where = port_name(*this, port);
        if (out.kind != sa::TxnOutcome::Kind::response) {
            spdlog::warn("{}: PortInfo query: {}", where, out.detail);
        } else {
            auto reply = port::decode_portinfo_reply(out.response);
            if (auto *err = std::get_if<port::SmpError>(&reply))
                spdlog::warn("{}: PortInfo query: {}", where, err->message);
            else
                apply_portinfo(port, std::get<port::PortInfoReply>(reply).info);
        }
        if (done)
            done();
    });
}

void Service::apply_portinfo(PortIndex port, const port::PortInfo &info) {
    port::PortAttributes &p = ports_.at(port);
    const bool sa_moved = info.master_sm_lid != p.sm_lid || info.master_sm_sl != p.sm_sl;
    p.lid = info.lid;
    p.sm_lid = info.master_sm_lid;
    p.sm_sl = info.master_sm_sl;
    p.state = info.port_state;
    p.mtu = info.neighbor_mtu;
    if (sa_moved && p.sm_lid) {
        spdlog::info("{}: the SA is at LID {} SL {}", port_name(*this, port), p.sm_lid, p.sm_sl);
        txns_.set_sa_address(port, sa_address_of(p));
    }
    engine_.set_port_active(port, p.is_active() && p.sm_lid != 0);
}

ClientId Service::add_client(ClientInfo info, EventSink *sink) {
    const ClientId id = engine_.add_client(std::move(info));
    sinks_[id] = sink;
    return id;
}

void Service::remove_client(ClientId client) {
    engine_.remove_client(client);
    sinks_.erase(client);
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

Service::~Service() { transport_.close_all(); }

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
        const bool usable = p.is_active() && p.sm_lid != 0;
        const PortIndex in_engine = engine_.add_port(p.device, p.port_num, p.port_gid(), usable);
        if (in_engine != index)
            throw std::logic_error("port index mismatch between engine and transport");
        if (p.sm_lid)
            txns_.set_sa_address(index, sa_address_of(p));
        spdlog::info("{}/{}: {} LID {} SM LID {} PortGID {}", p.device, p.port_num,
                     port::port_state_name(p.state), p.lid, p.sm_lid, format_gid(p.port_gid()));
        ports_.push_back(p);
    }
    if (ports_.empty())
        throw std::runtime_error("no usable InfiniBand port found");
}

EngineObserver log_observer(const Service &service) {
    return [&service](const EngineNote &n) {
        const bool warn = n.kind == EngineNote::Kind::warning || n.kind == EngineNote::Kind::lost;
        const auto level = warn ? spdlog::level::warn : spdlog::level::info;
        if (!spdlog::should_log(level))
            return; // the sentence is only built for a log that keeps it
        const std::string where = port_name(service, n.port);
        spdlog::log(level, "{}: {}{}", where, n.kind == EngineNote::Kind::join_failed ? "join failed: " : "",
                    describe(n, where));
    };
}

} // namespace mcastd
