// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "views.hpp"

#include <cstdio>

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
// Two decimals at most, without trailing zeros: 16, 0.5, 1.35.
std::string fmt_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    std::string out(buf);
    while (out.back() == '0')
        out.pop_back();
    if (out.back() == '.')
        out.pop_back();
    return out;
}

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
std::optional<double> ms(const std::optional<Duration> &d) {
    return d ? std::optional<double>(ms(*d)) : std::nullopt;
}

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

double amplification(const SaCounters &t) {
    const std::uint64_t ended = t.responses + t.timeouts;
    return ended ? static_cast<double>(t.sent) / static_cast<double>(ended) : 0;
}

proto::StatusResult status_view(const Service &service, const StatusExtras &extras) {
    proto::StatusResult out;
    out.daemon = extras.daemon;
    // The engine's times come from the loop's timers, which read this same clock.
    const TimePoint now = Clock::now();
    out.uptime_s = seconds(now - extras.started);
    out.clients = extras.clients;
    const auto engine_ports = service.port_views();
    for (PortIndex i = 0; i < service.ports().size(); ++i) {
        out.ports.push_back(port_status(service.ports()[i], engine_ports[i], service.sm(i), now));
        if (const auto cc = service.sa_congestion(i))
            out.ports.back().sa = proto::SaCongestion{cc->window, cc->slow_start, ms(cc->srtt), ms(cc->timeout)};
    }
    const EngineStats &e = service.stats();
    const SaCounters t = service.sa_counters();
    out.counters = proto::Counters{t.sent,    t.retransmits,  t.timeouts,   t.bounces,   e.joins,
                                   e.joins_local, e.joins_failed, e.leaves, e.sa_sets, e.sa_deletes,
                                   e.sa_gets, t.responses, t.late, amplification(t)};
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
    // The smallest learned SA window: the port the SA is slowest to answer.
    std::optional<double> window;
    for (PortIndex i = 0; i < ports.size(); ++i)
        if (const auto cc = service.sa_congestion(i); cc && (!window || cc->window < *window))
            window = cc->window;
    if (window)
        s += ", SA window " + fmt_number(*window);
    if (const double a = amplification(service.sa_counters()); a > kAmplificationWarning)
        s += ", SA amplification " + fmt_number(a);
    return s;
}

} // namespace mcastd
