#include "views.hpp"

#include "port/port_info.hpp"

namespace mcastd {

proto::ListResult list_view(const Service &service) {
    const Engine &engine = service.engine();
    proto::ListResult out;
    for (const PortView &p : engine.ports())
        out.ports.push_back(proto::PortGroups{p.device, p.port, p.port_gid, {}});
    for (const GroupView &g : engine.groups()) {
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
            if (const ClientInfo *c = engine.client_info(m.client)) {
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

proto::StatusResult status_view(const Service &service, const StatusExtras &extras) {
    const Engine &engine = service.engine();
    proto::StatusResult out;
    out.daemon = extras.daemon;
    out.uptime_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - extras.started).count();
    out.clients = extras.clients;
    std::vector<std::uint64_t> groups(service.ports().size(), 0);
    for (const GroupView &g : engine.groups())
        ++groups.at(g.port);
    const auto engine_ports = engine.ports();
    for (PortIndex i = 0; i < service.ports().size(); ++i) {
        const port::PortAttributes &a = service.ports()[i];
        proto::PortStatus ps;
        ps.device = a.device;
        ps.port = a.port_num;
        ps.state = engine_ports[i].active ? "ACTIVE" : port::port_state_name(a.state);
        ps.lid = a.lid;
        ps.sm_lid = a.sm_lid;
        ps.sm_sl = a.sm_sl;
        ps.port_gid = a.port_gid();
        ps.link_layer = a.link_layer;
        ps.rate_gbps = a.rate_gbps;
        ps.groups = groups[i];
        out.ports.push_back(std::move(ps));
    }
    const EngineStats &e = engine.stats();
    const sa::TxnStats t = service.transactions().total_stats();
    out.counters = proto::Counters{t.sent, t.retransmits, t.timeouts, t.bounces,
                                   e.joins, e.joins_local, e.joins_failed, e.leaves};
    return out;
}

std::string status_line(const Service &service) {
    const auto ports = service.engine().ports();
    std::size_t active = 0, rejoining = 0;
    for (const PortView &p : ports) {
        active += p.active;
        rejoining += p.rejoining;
    }
    const std::size_t groups = service.engine().groups().size();
    std::string s = std::to_string(active) + "/" + std::to_string(ports.size()) + " ports active, " +
                    std::to_string(groups) + (groups == 1 ? " group, " : " groups, ") +
                    std::to_string(service.clients()) + (service.clients() == 1 ? " client" : " clients");
    if (rejoining)
        s += ", " + std::to_string(rejoining) + (rejoining == 1 ? " port" : " ports") + " re-joining";
    return s;
}

} // namespace mcastd
