// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The engine's entry points. Each holds an Entry, so the callbacks, events and notes a call
// causes run once it is done (engine_state.hpp). The work itself is in the member book, the
// group state machine and the port re-join (see engine.hpp).
#include "core/engine.hpp"

#include <algorithm>
#include <variant>

#include "common/port_name.hpp"
#include "core/engine_state.hpp"
#include "core/group_read.hpp"
#include "core/join_rules.hpp"
#include "core/members.hpp"
#include "core/port_rejoin.hpp"

namespace mcastd {

using namespace core;

struct Engine::Impl {
    Impl(EngineConfig cfg, SaService &sa, Timers &timers)
        : state(std::move(cfg), sa, timers), book(state), machine(state, book, rejoiner),
          rejoiner(state, book, machine) {}

    ~Impl() {
        for (Port &p : state.ports) {
            p.groups.for_each([this](Group &g) { machine.abandon(g); });
            rejoiner.abandon(p);
        }
    }

    EngineState state;
    MemberBook book;
    GroupMachine machine; // holds a reference to `rejoiner`, used only once both exist
    PortRejoiner rejoiner;

    // The port a request names, or the error that names what exists.
    std::variant<PortIndex, Error> find_port(const JoinRequest &req) const {
        const auto &ports = state.ports;
        bool device_known = false;
        std::string known_ports;
        for (PortIndex pi = 0; pi < ports.size(); ++pi) {
            if (ports[pi].device != req.device)
                continue;
            device_known = true;
            if (ports[pi].num == req.port)
                return pi;
            known_ports += (known_ports.empty() ? "" : ", ") + std::to_string(ports[pi].num);
        }
        if (!device_known) {
            std::string names;
            for (const Port &p : ports)
                if (names.find(p.device) == std::string::npos)
                    names += (names.empty() ? "" : ", ") + p.device;
            return Error{Errc::no_such_device,
                         "no InfiniBand device '" + req.device + "' (devices: " + (names.empty() ? "none" : names) +
                             ")",
                         {}};
        }
        return Error{Errc::no_such_port,
                     req.device + " has no port " + std::to_string(req.port) + " (ports: " + known_ports + ")", {}};
    }

    // The group a join goes to: the port's group of that MGID, or a new one (MGID 0 always
    // makes a new one: the SA assigns its MGID).
    Group &group_for(PortIndex pi, const JoinRequest &req) {
        Port &port = state.ports[pi];
        if (!is_zero(req.mgid)) {
            auto [it, inserted] = port.by_mgid.try_emplace(req.mgid, 0);
            if (!inserted)
                return port.groups.at(it->second);
            Group &g = machine.create(pi, req.mgid);
            it->second = g.id;
            return g;
        }
        Group &g = machine.create(pi, kZeroGid);
        port.unassigned.insert(g.id);
        g.sa_assigned = true;
        g.sa.probed = true; // a group the SA creates for us cannot hold anyone's bits yet
        g.create_scope = req.scope.value_or(state.cfg.create.scope);
        return g;
    }

    MembershipId join(ClientId client, const JoinRequest &req, JoinCallback done, JoinGates gates) {
        ++state.stats.joins;
        if (!state.clients.count(client))
            return book.refuse(std::move(done), Error{Errc::internal, "unknown client " + std::to_string(client), {}});
        if (auto err = validate_request(req, state.cfg))
            return book.refuse(std::move(done), std::move(*err));
        auto found = find_port(req);
        if (auto *err = std::get_if<Error>(&found))
            return book.refuse(std::move(done), std::move(*err));
        const PortIndex pi = std::get<PortIndex>(found);
        if (!state.ports[pi].active)
            return book.refuse(std::move(done),
                               Error{Errc::port_not_active, state.ports[pi].name + " is not active", {}});
        Group &g = group_for(pi, req);
        const MembershipId id = book.enqueue(client, g, req, std::move(done));
        state.members.at(id).gates = std::move(gates);
        // advance, not pump: the join may fail at once (a gate refusing before any SA work),
        // and a group left with nothing must go.
        machine.advance(pi, g.id);
        return id;
    }

    void release(MembershipId id, bool tell) {
        Group &g = book.release(id, tell);
        machine.advance(g.port, g.id);
    }
};

std::string describe(const EngineNote &n, const std::string &port) {
    if (!n.message.empty())
        return n.message;
    const std::string group = "group " + format_gid(n.mgid) + " on " + port;
    switch (n.kind) {
    case EngineNote::Kind::joined:
        return "joined " + group + " as " + join_state_name(n.join_state) + (n.local ? " (answered locally)" : "");
    case EngineNote::Kind::left: return "left " + group;
    case EngineNote::Kind::restored: return n.changed ? "record of " + group + " changed" : group + " holds again";
    case EngineNote::Kind::sa_left: return "deleted " + join_state_name(n.join_state) + " from " + group;
    default: return group;
    }
}

// ---- public interface ----

Engine::Engine(EngineConfig cfg, SaService &sa, Timers &timers)
    : impl_(std::make_unique<Impl>(std::move(cfg), sa, timers)) {}

Engine::~Engine() = default;

void Engine::set_event_sink(MembershipEventSink *sink) { impl_->state.sink = sink; }
void Engine::set_observer(EngineObserver observer) { impl_->state.observer = std::move(observer); }
void Engine::set_state_lost_listener(std::function<void(PortIndex)> fn) {
    impl_->state.state_lost = std::move(fn);
}
void Engine::set_delete_meter(std::function<void(uid_t)> meter) { impl_->state.delete_meter = std::move(meter); }

PortIndex Engine::add_port(std::string device, std::uint8_t port, const Gid &port_gid, bool active) {
    Port p;
    p.name = port_name(device, port);
    p.device = std::move(device);
    p.num = port;
    p.port_gid = port_gid;
    p.active = active;
    impl_->state.ports.push_back(std::move(p));
    return static_cast<PortIndex>(impl_->state.ports.size() - 1);
}

void Engine::set_port_active(PortIndex port, bool active, const std::string &why) {
    Entry e(impl_->state);
    impl_->state.ports.at(port);
    impl_->rejoiner.set_active(port, active, why);
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

void Engine::adopt_group(PortIndex port, const Gid &mgid, std::uint8_t held, std::uint8_t unsure,
                         const std::optional<McRecord> &record) {
    Entry e(impl_->state);
    Port &p = impl_->state.ports.at(port);
    auto [it, inserted] = p.by_mgid.try_emplace(mgid, 0);
    if (!inserted)
        return; // adopted twice: the first one stands
    p.absent.forget(mgid);
    Group &g = impl_->machine.create(port, mgid);
    it->second = g.id;
    g.sa.held = held;
    g.sa.uncertain = static_cast<std::uint8_t>(unsure & ~held);
    g.sa.probed = true; // what the port held besides the daemon's bits was learned before
    if (record) {
        g.sa.record = *record;
        g.sa.record.port_gid = p.port_gid;
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
    count_bits(g.count, bits, +1);
    g.settled.insert(id);
    c->second.members.insert(id);
    s.next_member = std::max(s.next_member, id + 1);
    return true;
}

void Engine::end_adoption() {
    Entry e(impl_->state);
    for (PortIndex pi = 0; pi < impl_->state.ports.size(); ++pi) {
        std::vector<GroupId> ids;
        impl_->state.ports[pi].groups.for_each([&](Group &g) { ids.push_back(g.id); });
        for (GroupId id : ids)
            impl_->machine.advance(pi, id);
    }
}

std::vector<PortView> Engine::ports() const {
    std::vector<PortView> out;
    const auto &ports = impl_->state.ports;
    for (PortIndex i = 0; i < ports.size(); ++i) {
        const Port &p = ports[i];
        const RejoinProgress &r = p.rejoin;
        out.push_back(PortView{i, p.device, p.num, p.port_gid, p.active, r.running(), r.reason(), r.started(), r.finished(),
                               r.groups(), p.groups.size(), r.count()});
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

GroupRead Engine::groups_from(const std::optional<GroupCursor> &from, std::size_t max_members,
                              std::optional<ClientId> only) const {
    return read_groups(impl_->state, from, max_members, only);
}

const EngineStats &Engine::stats() const { return impl_->state.stats; }

bool Engine::idle() const { return impl_->state.busy == 0; }

void Engine::when_idle(std::function<void()> fn) {
    Entry e(impl_->state);
    impl_->state.idle_waiters.push_back(std::move(fn));
}

} // namespace mcastd
