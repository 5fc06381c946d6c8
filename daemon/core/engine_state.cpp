// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "core/engine_state.hpp"

namespace mcastd::core {

std::string EngineState::where(const Group &g) const {
    return (g.sa_assigned && is_zero(g.mgid) ? std::string("new group") : "group " + format_gid(g.mgid)) + " on " +
           name(g.port);
}

McRecord EngineState::member_record(const Group &g, const Member &m) const {
    McRecord r = g.sa.record;
    if (!ports[g.port].backend) // a backend's record names the GID it sends from
        r.port_gid = port_gid(g.port);
    r.join_state = m.bits;
    r.proxy_join = false;
    return r;
}

void EngineState::note(EngineNote n) {
    if (!observer)
        return;
    if (auto c = n.client ? clients.find(n.client) : clients.end(); c != clients.end())
        n.client_info = c->second.info;
    deferred.emplace_back(std::move(n));
}

EngineNote EngineState::group_note(EngineNote::Kind kind, const Group &g, std::uint8_t bits, ClientId client) {
    EngineNote n{kind, g.port, g.mgid, g.sa.record.mlid, bits, client, {}, {}};
    n.roce = roce_source(g.sa.record);
    return n;
}

void EngineState::note_group(EngineNote::Kind kind, const Group &g, std::uint8_t bits, ClientId client,
                             std::string msg, std::optional<std::uint16_t> status) {
    EngineNote n = group_note(kind, g, bits, client);
    n.sa_status = status;
    n.message = std::move(msg);
    note(std::move(n));
}

void EngineState::event(ClientId client, MembershipId id, MembershipEvent ev) {
    ++(ev.kind == MembershipEvent::Kind::restored ? stats.restored : stats.lost);
    if (sink)
        deferred.emplace_back(Event{client, id, std::move(ev)});
}

void EngineState::flush() {
    ++depth; // callbacks that re-enter must not flush recursively
    for (std::size_t i = 0; i < deferred.size(); ++i) {
        Output out = std::move(deferred[i]); // a callback may queue more, moving the vector
        if (auto *r = std::get_if<Reply>(&out)) {
            if (r->done)
                r->done(r->result);
        } else if (auto *e = std::get_if<Event>(&out)) {
            if (sink)
                sink->membership_event(e->client, e->id, e->ev);
        } else if (auto *l = std::get_if<MembershipsGone>(&out)) {
            if (memberships_gone)
                memberships_gone(l->port);
        } else if (auto *d = std::get_if<DebtSent>(&out)) {
            if (debt_meter)
                debt_meter(d->uid);
        } else if (observer) {
            observer(std::get<EngineNote>(out));
        }
    }
    deferred.clear();
    --depth;
    if (!idle_waiters.empty() && outstanding == 0) {
        auto waiters = std::move(idle_waiters);
        idle_waiters.clear();
        for (auto &fn : waiters)
            fn();
    }
}

} // namespace mcastd::core
