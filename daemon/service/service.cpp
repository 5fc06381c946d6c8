// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "service/service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/port_name.hpp"


namespace mcastd {

Service::Service(const EngineConfig &cfg, SaService &sa, Timers &timers)
    : tap_(sa), engine_(cfg, ports_, tap_, timers), create_qkey_(cfg.create.qkey) {
    engine_.set_event_sink(this);
    engine_.set_memberships_gone_listener([this](PortIndex port) { memberships_gone(port); });
    engine_.set_observer([this](const EngineNote &n) {
        for (const auto &o : observers_)
            o(n);
        changed();
    });
}

Service::~Service() = default;

PortIndex Service::add_port(const port::PortAttributes &p, bool usable) {
    // Refused before the registry has it: every registered port is served.
    if (const LinkLayer ll = link_layer_from(p.link_layer); !engine_.serves(ll))
        throw std::invalid_argument(no_backend_for(mcastd::port_name(p.device, p.port_num), ll));
    const PortIndex index = ports_.add(p, usable);
    engine_.add_port(index);
    return index;
}

port::GidTableChange Service::gid_table(PortIndex port, std::vector<port::GidEntry> entries) {
    port::GidTableChange change = port::diff_gid_tables(ports_.at(port).attributes.gids, entries);
    ports_.set_gids(port, std::move(entries));
    if (change.empty())
        return change;
    // The RoCE memberships sent from it learn whether their source went, came back or moved.
    if (ports_.link_layer(port) != LinkLayer::infiniband)
        engine_.sources_changed(port, "GID table: " + port::describe(change));
    changed();
    return change;
}

void Service::port_usable(PortIndex port, bool usable, const std::string &why) {
    spdlog::log(usable ? spdlog::level::info : spdlog::level::warn, "{}: {}", port_name(*this, port),
                usable ? "usable" : why);
    if (ports_.set_usable(port, usable))
        engine_.port_usable_changed(port, why);
    changed();
}

void Service::port_invalidated(PortIndex port, port::Trigger trigger, const std::string &why) {
    spdlog::warn("{}: {} ({}); re-joining its groups", port_name(*this, port), why, port::trigger_name(trigger));
    engine_.invalidate_port(port, why);
    changed();
}

void Service::memberships_gone(PortIndex port) {
    tell_listeners([port](PortListener &l) { l.memberships_gone(port); });
}

void Service::sa_moved(PortIndex port, std::uint16_t sm_lid, std::uint8_t sm_sl) {
    ports_.set_sa(port, sm_lid, sm_sl);
    spdlog::info("{}: the SA is at LID {} SL {}", port_name(*this, port), sm_lid, sm_sl);
    tell_listeners([port](PortListener &l) { l.sa_route_changed(port); });
}

void Service::pkey_table(PortIndex port, const std::vector<std::uint16_t> &pkeys) {
    ports_.set_pkeys(port, pkeys);
    tell_listeners([port](PortListener &l) { l.sa_route_changed(port); });
}

void Service::sm_seen(PortIndex port, std::uint16_t lid, std::uint64_t guid, std::uint32_t act_count) {
    ports_.set_sm(port, port::SmView{lid, guid, act_count, true});
}

void Service::port_info(PortIndex port, std::uint16_t lid, std::uint8_t state, std::uint8_t mtu) {
    ports_.set_port_info(port, lid, state, mtu);
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

MembershipId Service::join(ClientId client, const JoinRequest &req, JoinCallback done, JoinGates gates) {
    return engine_.join(client, req, std::move(done), std::move(gates));
}

std::optional<Error> Service::leave(ClientId client, MembershipId id) { return engine_.leave(client, id); }

std::vector<MembershipId> Service::memberships_of(ClientId client) const {
    std::vector<MembershipId> out;
    for (const GroupView &g : engine_.groups())
        for (const MemberView &m : g.members)
            if (m.client == client)
                out.push_back(m.id);
    std::sort(out.begin(), out.end());
    return out;
}

SaService::TxnId Service::SaTap::submit(const SaRequest &req, Callback done) {
    if (muted)
        return ~TxnId{0} - muted_ids++; // never answered: the process is about to end
    if (req.method == SaMethod::set && on_set)
        on_set(req);
    if (!on_group || is_zero(req.record.mgid))
        return inner.submit(req, std::move(done));
    // What the transaction does to the group's bits is known once the engine has its answer.
    on_group(req.port, req.record.mgid);
    return inner.submit(req, [this, port = req.port, mgid = req.record.mgid, done = std::move(done)](const SaResult &r) {
        done(r);
        if (on_group)
            on_group(port, mgid);
    });
}

void Service::SaTap::cancel(TxnId id) { inner.cancel(id); } // a muted id is unknown there: a no-op

void Service::membership_event(ClientId client, MembershipId id, const MembershipEvent &ev) {
    if (auto it = sinks_.find(client); it != sinks_.end() && it->second)
        it->second->membership_event(client, id, ev);
}

std::string port_name(const Service &service, PortIndex port) { return port::port_name(service.ports(), port); }

} // namespace mcastd
