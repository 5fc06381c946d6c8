#include "views.hpp"

#include "common/record.hpp"
#include "port/port_attributes.hpp"

namespace mcastd {

proto::ListResult list_view(const Service &service) {
    proto::ListResult out;
    for (const PortView &p : service.port_views())
        out.ports.push_back(proto::PortGroups{p.device, p.port, p.port_gid, {}});
    for (const GroupView &g : service.group_views()) {
        proto::GroupInfo gi;
        gi.mgid = g.mgid;
        gi.mlid = g.have_record ? g.record.mlid : 0;
        gi.qkey = g.have_record ? g.record.qkey : 0;
        gi.busy = g.busy;
        gi.held = g.held;
        gi.foreign = g.foreign;
        gi.counts = g.counts;
        for (const MemberView &m : g.members) {
            proto::MemberInfo mi;
            mi.membership = m.id;
            mi.join_state = m.join_state;
            mi.state = m.state == MemberView::State::active ? "active"
                     : m.state == MemberView::State::lost   ? "lost"
                                                            : "pending";
            if (const ClientInfo *c = service.client_info(m.client)) {
                mi.pid = c->pid;
                mi.uid = c->uid;
                mi.comm = c->comm;
            }
            gi.members.push_back(std::move(mi));
        }
        out.ports.at(g.port).groups.push_back(std::move(gi));
    }
    return out;
}

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The port's latest re-join as status shows it; nullopt if it never re-joined.
std::optional<proto::RejoinStatus> last_rejoin(const PortView &p, TimePoint now) {
    if (!p.rejoin_started)
        return std::nullopt;
    proto::RejoinStatus r;
    r.reason = p.rejoin_reason;
    r.started_ago_s = seconds(now - *p.rejoin_started);
    r.groups = p.rejoin_groups;
    if (!p.rejoining && p.rejoin_finished) {
        r.duration_s = seconds(*p.rejoin_finished - *p.rejoin_started);
    }
    return r;
}

} // namespace

proto::PortStatus port_status(const port::PortAttributes &a, const PortView &engine_port,
                              const Service::SmView &sm, TimePoint now) {
    proto::PortStatus ps;
    ps.device = a.device;
    ps.port = a.port_num;
    ps.state = engine_port.active ? "ACTIVE" : port::port_state_name(a.state);
    ps.lid = a.lid;
    ps.sm_lid = a.sm_lid;
    ps.sm_sl = a.sm_sl;
    ps.port_gid = a.port_gid();
    ps.link_layer = a.link_layer;
    ps.rate_gbps = a.rate_gbps;
    ps.groups = engine_port.groups;
    ps.mtu = mtu_bytes(a.mtu);
    if (sm.known) {
        ps.sm_guid = sm.guid;
        ps.sm_act_count = sm.act_count;
    }
    ps.rejoining = engine_port.rejoining;
    ps.last_rejoin = last_rejoin(engine_port, now);
    return ps;
}

proto::StatusResult status_view(const Service &service, const StatusExtras &extras) {
    proto::StatusResult out;
    out.daemon = extras.daemon;
    // The engine's times come from the loop's timers, which read this same clock.
    const TimePoint now = Clock::now();
    out.uptime_s = seconds(now - extras.started);
    out.clients = extras.clients;
    const auto engine_ports = service.port_views();
    for (PortIndex i = 0; i < service.ports().size(); ++i)
        out.ports.push_back(port_status(service.ports()[i], engine_ports[i], service.sm(i), now));
    const EngineStats &e = service.stats();
    const SaCounters t = service.sa_counters();
    out.counters = proto::Counters{t.sent,    t.retransmits,  t.timeouts,   t.bounces,   e.joins,
                                   e.joins_local, e.joins_failed, e.leaves, e.sa_sets, e.sa_deletes,
                                   e.sa_gets};
    return out;
}

std::string status_line(const Service &service) {
    // Called for every STATUS= update: counts only, never the groups' full views.
    const auto ports = service.port_views();
    std::size_t active = 0, rejoining = 0, groups = 0;
    for (const PortView &p : ports) {
        active += p.active;
        rejoining += p.rejoining;
        groups += p.groups;
    }
    std::string s = std::to_string(active) + "/" + std::to_string(ports.size()) + " ports active, " +
                    std::to_string(groups) + (groups == 1 ? " group, " : " groups, ") +
                    std::to_string(service.clients()) + (service.clients() == 1 ? " client" : " clients");
    if (rejoining)
        s += ", " + std::to_string(rejoining) + (rejoining == 1 ? " port" : " ports") + " re-joining";
    return s;
}

} // namespace mcastd
