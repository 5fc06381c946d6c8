// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "service/views.hpp"

#include <cstdio>

#include "common/record.hpp"
#include "common/roce_address.hpp"
#include "service/list_cursor.hpp"
#include "port/port_attributes.hpp"

namespace mcastd {

namespace {

// Members one read of the engine asks for: about a page's worth (a member takes 150 to 250
// bytes encoded), so a page costs a read or two and reads little it does not send.
constexpr std::size_t kReadMembers = 256;

proto::GroupInfo group_info(const GroupView &g) {
    proto::GroupInfo gi;
    gi.mgid = g.mgid;
    gi.mlid = g.have_record ? g.record.mlid : 0;
    gi.qkey = g.have_record ? g.record.qkey : 0;
    gi.busy = g.busy;
    gi.held = g.held;
    gi.foreign = g.foreign;
    gi.counts = g.counts;
    if (g.have_record)
        gi.roce = roce_source(g.record);
    return gi;
}

proto::MemberInfo member_info(const Service &service, const MemberView &m, const MemberNotes &notes) {
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
    if (notes)
        notes(m, mi);
    return mi;
}

// A page as it grows, and its encoded size when it has a limit.
class Page {
public:
    Page(std::size_t limit, proto::ListResult &out) : limit_(limit), out_(out) {
        if (limit_)
            bytes_ = size_.envelope();
    }
    void add_port(proto::PortGroups p) {
        out_.ports.push_back(std::move(p));
        if (limit_)
            bytes_ += size_.port(out_.ports.back()) + (out_.ports.size() > 1);
    }
    // Adds a group with its first member (a group goes in with one or not at all), or without
    // any when it has none; false when that does not fit.
    bool add_group(PortIndex port, proto::GroupInfo g, std::optional<proto::MemberInfo> first) {
        auto &groups = out_.ports.at(port).groups;
        if (!take(limit_ ? size_.group(g) + !groups.empty() + (first ? size_.member(*first) : 0) : 0))
            return false;
        groups.push_back(std::move(g));
        if (first)
            groups.back().members.push_back(std::move(*first));
        return true;
    }
    // Adds a member to the group added last; false when it does not fit.
    bool add_member(PortIndex port, proto::MemberInfo m) {
        if (!take(limit_ ? size_.member(m) + 1 : 0))
            return false;
        out_.ports.at(port).groups.back().members.push_back(std::move(m));
        return true;
    }

private:
    // The page's first addition goes in whatever its size.
    bool take(std::size_t n) {
        if (limit_ && !empty_ && bytes_ + n > limit_)
            return false;
        bytes_ += n;
        empty_ = false;
        return true;
    }

    std::size_t limit_;
    proto::ListResult &out_;
    proto::ListReplySize size_;
    std::size_t bytes_ = 0;
    bool empty_ = true;
};

} // namespace

proto::ListResult list_view(const Service &service, const ListQuery &q, const MemberNotes &notes) {
    proto::ListResult out;
    Page page(q.page_bytes, out);
    for (const port::RegisteredPort &p : service.ports())
        page.add_port(proto::PortGroups{p.device(), p.number(), p.gid(), {}, p.link_layer});
    std::optional<GroupCursor> at = q.after; // after what the page holds
    std::optional<GroupKey> open;            // the page's last group, when a read stopped inside it
    for (;;) {
        GroupRead read = service.group_views_from(at, kReadMembers, q.only);
        for (std::size_t i = 0; i < read.groups.size(); ++i) {
            const GroupView &g = read.groups[i];
            const GroupKey key = key_of(g);
            const bool whole =
                i + 1 < read.groups.size() || !read.next || !read.next->member || read.next->group != key;
            // The read before stopped inside this group: its members go on in the same one.
            bool first = open != key;
            open = whole ? std::nullopt : std::optional(key);
            bool fits = true;
            for (auto m = g.members.begin(); fits && m != g.members.end(); ++m) {
                proto::MemberInfo mi = member_info(service, *m, notes);
                fits = first ? page.add_group(g.port, group_info(g), std::move(mi))
                             : page.add_member(g.port, std::move(mi));
                if (fits)
                    at = GroupCursor{key, m->id};
                first = false;
            }
            if (g.members.empty())
                fits = page.add_group(g.port, group_info(g), std::nullopt);
            if (!fits) {
                out.next = format_cursor(*at);
                return out;
            }
            if (whole)
                at = GroupCursor{key, std::nullopt};
        }
        if (!read.next)
            return out;
        at = read.next;
    }
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

using mcastd::in_ms;
std::optional<double> in_ms(const std::optional<Duration> &d) {
    return d ? std::optional<double>(mcastd::in_ms(*d)) : std::nullopt;
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

namespace {

// An Ethernet port has no PortInfo: its MTU is what its RoCE records carry, the largest IB MTU
// that fits the netdev of its first RoCE GID whose netdev is there (0: none known yet).
std::uint8_t roce_port_mtu(const port::PortAttributes &a) {
    for (const port::GidEntry &e : a.gids)
        if (is_roce(e.type) && !e.netdev_gone && e.mtu)
            return roce_mtu(e.mtu);
    return 0;
}

} // namespace

proto::PortStatus port_status(const port::RegisteredPort &port, const PortView &engine_port, TimePoint now) {
    const port::PortAttributes &a = port.attributes;
    const port::SmView &sm = port.sm;
    proto::PortStatus ps;
    ps.device = a.device;
    ps.port = a.port_num;
    ps.state = port.usable ? "ACTIVE" : port::port_state_name(a.state);
    ps.lid = a.lid;
    ps.sm_lid = a.sm_lid;
    ps.sm_sl = a.sm_sl;
    ps.port_gid = a.port_gid();
    ps.link_layer = a.link_layer;
    ps.rate_gbps = a.rate_gbps;
    ps.groups = engine_port.groups;
    ps.mtu = mtu_bytes(port.link_layer == LinkLayer::ethernet ? roce_port_mtu(a) : a.mtu);
    if (sm.known) {
        ps.sm_guid = sm.guid;
        ps.sm_act_count = sm.act_count;
    }
    ps.rejoining = engine_port.rejoining;
    ps.last_rejoin = last_rejoin(engine_port, now);
    ps.rejoins = engine_port.rejoins;
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
        out.ports.push_back(port_status(service.ports().at(i), engine_ports[i], now));
        if (const auto cc = service.sa_congestion(i))
            out.ports.back().sa = proto::SaCongestion{cc->window, cc->slow_start, in_ms(cc->srtt), in_ms(cc->timeout)};
        out.ports.back().memberships = service.port_memberships(i);
    }
    const EngineStats &e = service.stats();
    const SaCounters t = service.sa_counters();
    out.counters = proto::Counters{t.sent,    t.retransmits,  t.timeouts,   t.bounces,   e.joins,
                                   e.joins_local, e.joins_failed, e.leaves, e.sa_sets, e.sa_deletes,
                                   e.sa_gets, t.responses, t.late, amplification(t), e.restored, e.lost};
    return out;
}

std::string status_line(const Service &service) {
    // Called for every STATUS= update: counts only, never the groups' full views.
    const auto ports = service.port_views();
    std::size_t active = 0, rejoining = 0, groups = 0;
    for (const port::RegisteredPort &p : service.ports())
        active += p.usable;
    for (const PortView &p : ports) {
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
