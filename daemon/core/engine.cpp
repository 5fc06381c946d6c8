// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The engine's entry points. Each holds an Entry, so the callbacks, events and notes a call
// causes run once it is done (engine_state.hpp). The work itself is in the member book, the
// group state machine and the port re-join (see engine.hpp).
#include "core/engine.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <variant>

#include "core/backend_machine.hpp"
#include "core/engine_state.hpp"
#include "core/group_read.hpp"
#include "core/join_rules.hpp"
#include "core/members.hpp"
#include "core/port_rejoin.hpp"

namespace mcastd {

using namespace core;

struct Engine::Impl {
    Impl(EngineConfig cfg, const PortFacts &ports, SaService &sa, Timers &timers)
        : state(std::move(cfg), ports, sa, timers), book(state), machine(state, book, rejoiner),
          backends(state, book, rejoiner), rejoiner(state, book, machine, backends) {}

    ~Impl() {
        for (PortIndex pi = 0; pi < state.ports.size(); ++pi) {
            state.ports[pi].groups.for_each([this, pi](Group &g) { driver(pi).abandon(g); });
            rejoiner.abandon(state.ports[pi]);
        }
    }

    EngineState state;
    MemberBook book;
    GroupMachine machine;    // the SA's ports; holds a reference to `rejoiner`, used only once both exist
    BackendMachine backends; // the ports of a membership backend; the same
    PortRejoiner rejoiner;
    std::map<LinkLayer, MembershipBackend *> backend_of; // Engine::set_backend

    GroupDriver &driver(PortIndex pi) { return rejoiner.driver(pi); }

    // The group a join goes to: the port's group of that MGID, or a new one (MGID 0 always
    // makes a new one: the SA assigns its MGID).
    Group &group_for(PortIndex pi, const JoinRequest &req) {
        Port &port = state.ports[pi];
        if (!is_zero(req.mgid)) {
            auto [it, inserted] = port.by_mgid.try_emplace(req.mgid, 0);
            if (!inserted)
                return port.groups.at(it->second);
            Group &g = create_group(state, pi, req.mgid);
            it->second = g.id;
            return g;
        }
        Group &g = create_group(state, pi, kZeroGid);
        port.unassigned.insert(g.id);
        g.sa_assigned = true;
        g.sa.probed = true; // a group the SA creates for us cannot hold anyone's bits yet
        g.create_scope = req.scope.value_or(state.cfg.create.scope);
        return g;
    }

    // The port a request names, when this engine serves it.
    std::optional<PortIndex> served(const JoinRequest &req) const {
        auto found = state.facts.find(req.device, req.port);
        if (found && *found >= state.ports.size())
            found.reset(); // in the registry, not served by this engine yet
        return found;
    }

    // The group a join names on port `pi` (Engine::group_of).
    std::variant<Gid, Error> group_on(PortIndex pi, const JoinRequest &req) const {
        if (MembershipBackend *backend = state.ports[pi].backend)
            return backend->group_of(pi, req);
        if (req.roce && req.roce->group) // else its zero MGID would read as a create
            return Error{Errc::invalid_argument,
                         state.name(pi) + " is an InfiniBand port: an IP multicast group names a group on RoCE ports only",
                         {}};
        return req.mgid;
    }

    MembershipId join(ClientId client, const JoinRequest &req, JoinCallback done, JoinGates gates) {
        ++state.stats.joins;
        if (!state.clients.count(client))
            return book.refuse(std::move(done), Error{Errc::internal, "unknown client " + std::to_string(client), {}});
        const auto found = served(req);
        MembershipBackend *backend = found ? state.ports[*found].backend : nullptr;
        auto group = found ? group_on(*found, req) : std::variant<Gid, Error>(req.mgid);
        if (auto *err = std::get_if<Error>(&group))
            return book.refuse(std::move(done), std::move(*err));
        // The MGID rules are the SA's; a backend judged its groups itself (group_of).
        if (auto err = backend ? validate_fields(req) : validate_request(req, state.cfg))
            return book.refuse(std::move(done), std::move(*err));
        if (!found)
            return book.refuse(std::move(done), state.facts.not_found(req.device, req.port));
        const PortIndex pi = *found;
        if (!state.usable(pi))
            return book.refuse(std::move(done), Error{Errc::port_not_active, state.name(pi) + " is not active", {}});
        JoinRequest resolved;
        const JoinRequest *ask = &req;
        if (backend) {
            resolved = req;
            resolved.mgid = std::get<Gid>(group);
            resolved.scope.reset();
            ask = &resolved;
            gates = {}; // no SA: nothing is created, probed or sent there
        }
        Group &g = group_for(pi, *ask);
        const MembershipId id = book.enqueue(client, g, *ask, std::move(done));
        state.members.at(id).gates = std::make_unique<JoinGates>(std::move(gates));
        // advance, not pump: the join may fail at once (a gate refusing before any SA work),
        // and a group left with nothing must go.
        driver(pi).advance(pi, g.id);
        return id;
    }

    void release(MembershipId id, bool tell) {
        Group &g = book.release(id, tell);
        driver(g.port).advance(g.port, g.id);
    }
};

std::variant<Gid, Error> Engine::group_of(const JoinRequest &req) const {
    const auto found = impl_->served(req);
    return found ? impl_->group_on(*found, req) : std::variant<Gid, Error>(req.mgid);
}

std::string no_backend_for(const std::string &port, LinkLayer link_layer) {
    return port + " is an " + link_layer_name(link_layer) + " port, and no membership backend serves " +
           link_layer_name(link_layer) + " ports";
}

std::string describe(const EngineNote &n, const std::string &port) {
    if (!n.message.empty())
        return n.message;
    // A RoCE group says where it is sent from: "on rxe0/1 (veth1, roce_v2 GID 1)".
    const std::string group = "group " + format_gid(n.mgid) + " on " + port +
                              (n.roce ? " (" + n.roce->netdev + ", " + std::string(gid_type_name(n.roce->gid_type)) +
                                            " GID " + std::to_string(n.roce->sgid_index) + ")"
                                      : "");
    switch (n.kind) {
    case EngineNote::Kind::joined:
        return "joined " + group + " as " + join_state_name(n.join_state) + (n.local ? " (answered locally)" : "");
    case EngineNote::Kind::left: return "left " + group;
    case EngineNote::Kind::restored: return n.changed ? "record of " + group + " changed" : group + " holds again";
    case EngineNote::Kind::deleted: return "deleted " + join_state_name(n.join_state) + " from " + group;
    default: return group;
    }
}

// ---- public interface ----

Engine::Engine(EngineConfig cfg, const PortFacts &ports, SaService &sa, Timers &timers)
    : impl_(std::make_unique<Impl>(std::move(cfg), ports, sa, timers)) {}

Engine::~Engine() = default;

void Engine::set_event_sink(MembershipEventSink *sink) { impl_->state.sink = sink; }
void Engine::set_observer(EngineObserver observer) { impl_->state.observer = std::move(observer); }
void Engine::set_memberships_gone_listener(std::function<void(PortIndex)> fn) {
    impl_->state.memberships_gone = std::move(fn);
}
void Engine::set_debt_meter(std::function<void(uid_t)> meter) { impl_->state.debt_meter = std::move(meter); }

void Engine::set_backend(LinkLayer link_layer, MembershipBackend &backend) {
    if (link_layer == LinkLayer::infiniband)
        throw std::logic_error("engine: InfiniBand memberships are made at the SA, not by a backend");
    impl_->backend_of[link_layer] = &backend;
}

bool Engine::serves(LinkLayer link_layer) const {
    return link_layer == LinkLayer::infiniband || impl_->backend_of.count(link_layer);
}

void Engine::add_port(PortIndex port) {
    auto &ports = impl_->state.ports;
    if (port != ports.size())
        throw std::logic_error("engine: port " + std::to_string(port) + " added out of order (next is " +
                               std::to_string(ports.size()) + ")");
    const LinkLayer ll = impl_->state.facts.link_layer(port);
    if (!serves(ll))
        throw std::invalid_argument(no_backend_for(impl_->state.name(port), ll));
    ports.emplace_back().backend = ll == LinkLayer::infiniband ? nullptr : impl_->backend_of.at(ll);
}

void Engine::port_usable_changed(PortIndex port, const std::string &why) {
    Entry e(impl_->state);
    impl_->state.ports.at(port);
    impl_->rejoiner.usable_changed(port, why);
}

void Engine::sources_changed(PortIndex port, const std::string &why) {
    Entry e(impl_->state);
    impl_->state.ports.at(port);
    impl_->rejoiner.sources_changed(port, why);
}

void Engine::invalidate_port(PortIndex port, const std::string &why) {
    Entry e(impl_->state);
    impl_->state.ports.at(port);
    impl_->rejoiner.invalidate(port, why);
}

void Engine::audit_next(PortIndex port) {
    Entry e(impl_->state);
    impl_->state.ports.at(port);
    impl_->rejoiner.audit(port);
}

ClientId Engine::add_client(ClientInfo info) {
    const ClientId id = impl_->state.next_client++;
    impl_->state.clients[id].info = std::move(info);
    return id;
}

void Engine::remove_client(ClientId client) {
    Entry e(impl_->state);
    auto &clients = impl_->state.clients;
    auto it = clients.find(client);
    if (it == clients.end())
        return;
    const std::vector<MembershipId> ids(it->second.members.begin(), it->second.members.end());
    for (MembershipId id : ids)
        impl_->release(id, false);
    clients.erase(client);
}

const ClientInfo *Engine::client_info(ClientId client) const {
    auto it = impl_->state.clients.find(client);
    return it == impl_->state.clients.end() ? nullptr : &it->second.info;
}

MembershipId Engine::join(ClientId client, const JoinRequest &req, JoinCallback done, JoinGates gates) {
    Entry e(impl_->state);
    return impl_->join(client, req, std::move(done), std::move(gates));
}

bool Engine::has_group(PortIndex port, const Gid &mgid) const {
    return port < impl_->state.ports.size() && impl_->state.ports[port].by_mgid.count(mgid);
}

std::size_t Engine::group_count(PortIndex port) const {
    return port < impl_->state.ports.size() ? impl_->state.ports[port].groups.size() : 0;
}

std::optional<Error> Engine::leave(ClientId client, MembershipId id) {
    Entry e(impl_->state);
    auto it = impl_->state.members.find(id);
    if (it == impl_->state.members.end() || it->second.client != client)
        return Error{Errc::not_found, "no membership " + std::to_string(id) + " for this client", {}};
    impl_->release(id, true);
    return std::nullopt;
}

void Engine::adopt_group(PortIndex port, const Gid &mgid, std::uint8_t held, std::uint8_t uncertain,
                         const std::optional<McRecord> &record) {
    Entry e(impl_->state);
    Port &p = impl_->state.ports.at(port);
    auto [it, inserted] = p.by_mgid.try_emplace(mgid, 0);
    if (!inserted)
        return; // adopted twice: the first one stands
    p.absent.forget(mgid);
    Group &g = create_group(impl_->state, port, mgid);
    it->second = g.id;
    g.sa.held = held;
    g.sa.uncertain = static_cast<std::uint8_t>(uncertain & ~held);
    g.sa.probed = true; // what the port held besides the daemon's bits was learned before
    if (record) {
        g.sa.record = *record;
        if (!p.backend) // an SA's record names the port; a backend's, the GID it sends from
            g.sa.record.port_gid = impl_->state.port_gid(port);
        g.sa.have_record = true;
        g.sa.record_epoch = p.epoch;
    }
}

bool Engine::adopt_member(ClientId client, MembershipId id, PortIndex port, const Gid &mgid, std::uint8_t bits,
                          const GroupParams &params) {
    EngineState &s = impl_->state;
    auto c = s.clients.find(client);
    if (c == s.clients.end() || port >= s.ports.size() || s.members.count(id))
        return false;
    Port &p = s.ports[port];
    auto it = p.by_mgid.find(mgid);
    if (it == p.by_mgid.end())
        return false;
    Group &g = p.groups.at(it->second);
    if (bits & ~cover(static_cast<std::uint8_t>(g.sa.held | g.sa.uncertain)))
        return false; // the daemon never set what this member claims
    Member &m = s.members[id];
    m.client = client;
    m.port = port;
    m.group = g.id;
    m.bits = bits;
    m.params = params;
    m.state = MemberState::active;
    m.sent = true;
    // A backend's port: the backend took the member back with its state (RoceBackend::adopt),
    // and hears of its end as of any other's.
    m.attached = p.backend != nullptr;
    count_bits(g.count, bits, +1);
    g.settled.insert(id);
    c->second.members.insert(id);
    s.next_member = std::max(s.next_member, id + 1);
    return true;
}

void Engine::end_adoption() {
    Entry e(impl_->state);
    EngineState &s = impl_->state;
    for (PortIndex pi = 0; pi < s.ports.size(); ++pi) {
        std::vector<GroupId> ids;
        s.ports[pi].groups.for_each([&](Group &g) {
            ids.push_back(g.id);
            // On a backend's port, uncertain bits are a group the previous instance was making
            // again (its source gone, or the port's memberships lost): its members were told
            // `lost` then, and hear `restored` when it is made again.
            if (s.ports[pi].backend && g.sa.uncertain) {
                for (MembershipId id : g.settled)
                    s.members.at(id).suspended = true;
                impl_->driver(pi).mark_rejoin(g);
            }
        });
        for (GroupId id : ids)
            impl_->driver(pi).advance(pi, id);
        // A source that went while no instance watched: its groups are suspended now.
        if (s.ports[pi].backend)
            impl_->rejoiner.sources_changed(pi, "the daemon restarted");
    }
}

std::vector<PortView> Engine::ports() const {
    std::vector<PortView> out;
    const auto &ports = impl_->state.ports;
    for (PortIndex i = 0; i < ports.size(); ++i) {
        const Port &p = ports[i];
        const RejoinProgress &r = p.rejoin;
        out.push_back(PortView{i, r.running(), r.reason(), r.started(), r.finished(), r.groups(), p.groups.size(), r.count()});
    }
    return out;
}

PortMemberships Engine::memberships(PortIndex port) const {
    PortMemberships out{};
    impl_->state.ports.at(port).groups.for_each([&](const Group &g) {
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] += g.count[i];
    });
    return out;
}

std::vector<GroupView> Engine::groups() const {
    return read_groups(impl_->state, std::nullopt, SIZE_MAX, std::nullopt).groups;
}

std::optional<GroupView> Engine::group(PortIndex port, const Gid &mgid, bool with_members) const {
    return read_group(impl_->state, port, mgid, with_members);
}

std::optional<MemberView> Engine::member(MembershipId id) const { return read_member(impl_->state, id); }

GroupRead Engine::groups_from(const std::optional<GroupCursor> &from, std::size_t max_members,
                              std::optional<ClientId> only) const {
    return read_groups(impl_->state, from, max_members, only);
}

const EngineStats &Engine::stats() const { return impl_->state.stats; }

bool Engine::idle() const { return impl_->state.outstanding == 0; }

void Engine::when_idle(std::function<void()> fn) {
    Entry e(impl_->state);
    impl_->state.idle_waiters.push_back(std::move(fn));
}

} // namespace mcastd
