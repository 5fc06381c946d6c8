// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "convert.hpp"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "common/device_name.hpp"
#include "common/join_bounds.hpp"
#include "common/named_group.hpp"
#include "common/roce_address.hpp"

namespace rdmamcast::detail {

namespace {

// The layouts of rdmamcast_join_params; a caller compiled against one passes its size forever,
// so they are pinned here. V1 ends at reserved0; V2 adds name; V3 (1.6) ip and gid_type; V4
// (1.6) ifname.
constexpr std::size_t kJoinParamsSizeV1 = 56;
constexpr std::size_t kJoinParamsSizeV2 = 64;
constexpr std::size_t kJoinParamsSizeV3 = 80;
constexpr std::size_t kJoinParamsSizeV4 = 88;
static_assert(sizeof(rdmamcast_join_params) == kJoinParamsSizeV4);
static_assert(offsetof(rdmamcast_join_params, ifname) == kJoinParamsSizeV3);
static_assert(offsetof(rdmamcast_join_params, mgid) == 20);
static_assert(offsetof(rdmamcast_join_params, name) == kJoinParamsSizeV1);
static_assert(offsetof(rdmamcast_join_params, ip) == kJoinParamsSizeV2);
static_assert(offsetof(rdmamcast_join_params, gid_type) == 72 && sizeof(rdmamcast_gid_type) == 4);
// The record is fixed (ABI.md): RoCE's fields (1.6) took reserved space, every other offset
// and the size and alignment stay as they were.
static_assert(sizeof(rdmamcast_record) == 88 && alignof(rdmamcast_record) == 8);
static_assert(offsetof(rdmamcast_record, join_state) == 53);
static_assert(offsetof(rdmamcast_record, link_layer) == 54 && offsetof(rdmamcast_record, gid_type) == 55);
static_assert(offsetof(rdmamcast_record, sgid_index) == 56 && offsetof(rdmamcast_record, dmac) == 58);
static_assert(offsetof(rdmamcast_record, ip) == 64 && offsetof(rdmamcast_record, reserved) == 80);
// The C enums are the common ones (common/roce_address.hpp), value for value.
static_assert(RDMAMCAST_LINK_LAYER_INFINIBAND == static_cast<int>(mcastd::LinkLayer::infiniband) &&
              RDMAMCAST_LINK_LAYER_ETHERNET == static_cast<int>(mcastd::LinkLayer::ethernet));
static_assert(RDMAMCAST_GID_TYPE_IB == static_cast<int>(mcastd::GidType::ib) &&
              RDMAMCAST_GID_TYPE_ROCE_V1 == static_cast<int>(mcastd::GidType::roce_v1) &&
              RDMAMCAST_GID_TYPE_ROCE_V2 == static_cast<int>(mcastd::GidType::roce_v2));
static_assert(sizeof(rdmamcast_event) == 16 + 256);
// The 1.3 completions fit in the union's reserved space: the event keeps its size.
static_assert(sizeof(rdmamcast_event_joined) <= sizeof(rdmamcast_event::reserved));
static_assert(sizeof(rdmamcast_event_join_error) <= sizeof(rdmamcast_event::reserved));
static_assert(std::is_standard_layout_v<ListHolder> && std::is_standard_layout_v<StatusHolder>);

// An older C++ wrapper reads an event type it does not know as a monitor event and follows its
// string pointers: in a reconnected event, those bytes must be the zeroed reserved words.
template <std::size_t Offset> constexpr bool in_reconnected_reserved() {
    constexpr std::size_t r0 = offsetof(rdmamcast_event_reconnected, reserved0);
    constexpr std::size_t r1 = offsetof(rdmamcast_event_reconnected, reserved1);
    constexpr std::size_t n = sizeof(rdmamcast_event_reconnected::reserved0);
    static_assert(sizeof(rdmamcast_event_reconnected::reserved1) == n);
    return (Offset >= r0 && Offset + sizeof(void *) <= r0 + n) ||
           (Offset >= r1 && Offset + sizeof(void *) <= r1 + n);
}
static_assert(in_reconnected_reserved<offsetof(rdmamcast_event_monitor, kind_name)>());
static_assert(in_reconnected_reserved<offsetof(rdmamcast_event_monitor, device)>());
static_assert(in_reconnected_reserved<offsetof(rdmamcast_event_monitor, comm)>());
static_assert(in_reconnected_reserved<offsetof(rdmamcast_event_monitor, message)>());

std::string hex(unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", v);
    return buf;
}

constexpr std::uint32_t kKnownJoinFlags =
    RDMAMCAST_JOIN_CREATE | RDMAMCAST_JOIN_SCOPE | RDMAMCAST_JOIN_QKEY | RDMAMCAST_JOIN_PKEY |
    RDMAMCAST_JOIN_SL | RDMAMCAST_JOIN_TRAFFIC_CLASS | RDMAMCAST_JOIN_FLOW_LABEL |
    RDMAMCAST_JOIN_HOP_LIMIT | RDMAMCAST_JOIN_MTU | RDMAMCAST_JOIN_RATE | RDMAMCAST_JOIN_IP |
    RDMAMCAST_JOIN_GID_TYPE;

std::optional<mcastd::Selector> selector_from_c(std::uint8_t s) {
    switch (s) {
    case RDMAMCAST_SELECTOR_EXACTLY: return mcastd::Selector::exactly;
    case RDMAMCAST_SELECTOR_GREATER: return mcastd::Selector::greater;
    case RDMAMCAST_SELECTOR_LESS: return mcastd::Selector::less;
    case RDMAMCAST_SELECTOR_BEST: return mcastd::Selector::best;
    default: return std::nullopt;
    }
}

// IB device names are short ASCII identifiers (IB_DEVICE_NAME_MAX is 64). Checking here gives
// a clear message and keeps bytes that are not UTF-8 out of the JSON encoder.
bool valid_device_name(const char *name) {
    if (!name || !*name)
        return false;
    std::size_t n = 0;
    for (const char *c = name; *c; ++c, ++n)
        if (n >= 63 || *c <= ' ' || *c > '~')
            return false;
    return true;
}

void copy_gid(std::uint8_t (&dst)[16], const mcastd::Gid &src) {
    std::memcpy(dst, src.data(), 16);
}

rdmamcast_monitor_kind monitor_kind(std::string_view kind) {
    static constexpr std::pair<std::string_view, rdmamcast_monitor_kind> kinds[] = {
        {"joined", RDMAMCAST_MONITOR_JOINED},   {"left", RDMAMCAST_MONITOR_LEFT},
        {"join-failed", RDMAMCAST_MONITOR_JOIN_FAILED}, {"deleted", RDMAMCAST_MONITOR_DELETED},
        {"lost", RDMAMCAST_MONITOR_LOST},       {"restored", RDMAMCAST_MONITOR_RESTORED},
        {"warning", RDMAMCAST_MONITOR_WARNING},
    };
    for (const auto &[name, k] : kinds)
        if (name == kind)
            return k;
    return RDMAMCAST_MONITOR_OTHER;
}

} // namespace

int join_request_from_c(const rdmamcast_join_params *p, mcastd::proto::Join &out,
                        ErrorState &error) {
    auto invalid = [&](std::string field, std::string message) {
        return error.set(RDMAMCAST_E_INVALID_ARGUMENT, -EINVAL, "join: " + message,
                         std::move(field));
    };
    if (!p)
        return invalid("", "no parameters");
    if (p->size < kJoinParamsSizeV1)
        return invalid("", "rdmamcast_join_params.size is " + std::to_string(p->size) +
                               "; initialise it with RDMAMCAST_JOIN_PARAMS_INIT");
    // A newer caller's extra fields are fine as long as it left them unset (the kernel's
    // copy_struct_from_user rule): then they cannot mean anything we would ignore.
    const auto *bytes = reinterpret_cast<const unsigned char *>(p);
    for (std::size_t i = sizeof(*p); i < p->size; ++i)
        if (bytes[i] != 0)
            return error.set(RDMAMCAST_E_ABI, -E2BIG,
                             "join: struct rdmamcast_join_params is " + std::to_string(p->size) +
                                 " bytes in this program and " + std::to_string(sizeof(*p)) +
                                 " in librdmamcast " + rdmamcast_version() +
                                 ", and the program sets fields past those it knows: it was "
                                 "built against a newer librdmamcast, and needs it");
    if (p->flags & ~kKnownJoinFlags)
        return error.set(RDMAMCAST_E_INVALID_ARGUMENT, -EOPNOTSUPP,
                         "join: unknown flags " + hex(p->flags & ~kKnownJoinFlags));

    if (!valid_device_name(p->device))
        return invalid("/device", "device must be a device name such as mlx5_0");
    if (p->port < 1 || p->port > 254)
        return invalid("/port", "port " + std::to_string(p->port) + " is outside 1..254");
    std::uint8_t js =
        p->join_state ? p->join_state : std::uint8_t{RDMAMCAST_JOIN_STATE_FULL};
    if (js > 0xf || (js & (js - 1)) != 0)
        return invalid("/join_state", "join_state " + hex(js) +
                                          " is not exactly one JoinState bit");

    mcastd::proto::Join join;
    mcastd::JoinRequest &r = join.request;
    r.device = p->device;
    r.port = p->port;
    r.join_state = js;
    // A caller compiled against V1 has no name field, one compiled against V2 no ip and
    // gid_type: those bytes are not its.
    const char *name = p->size >= kJoinParamsSizeV2 ? p->name : nullptr;
    const bool v3 = p->size >= kJoinParamsSizeV3;
    if ((p->flags & (RDMAMCAST_JOIN_IP | RDMAMCAST_JOIN_GID_TYPE)) && !v3)
        return invalid("", "RDMAMCAST_JOIN_IP and RDMAMCAST_JOIN_GID_TYPE need the ip and gid_type fields, "
                           "which a struct rdmamcast_join_params of " + std::to_string(p->size) + " bytes has not");
    if (v3 && p->reserved1 != 0)
        return error.set(RDMAMCAST_E_ABI, -E2BIG, "join: rdmamcast_join_params.reserved1 is not zero");
    if (v3 && p->ip && !(p->flags & RDMAMCAST_JOIN_IP))
        return invalid("/ip", "ip is set but RDMAMCAST_JOIN_IP is not");
    if (p->flags & RDMAMCAST_JOIN_IP) {
        if (!p->ip)
            return invalid("/ip", "RDMAMCAST_JOIN_IP without ip");
        if (name || (p->flags & RDMAMCAST_JOIN_CREATE))
            return invalid("/ip", std::string("ip and ") + (name ? "name" : "RDMAMCAST_JOIN_CREATE") +
                                      " exclude each other");
        if (!std::all_of(std::begin(p->mgid), std::end(p->mgid), [](std::uint8_t b) { return b == 0; }))
            return invalid("/ip", "ip and mgid exclude each other (the daemon maps the IP group to its mgid)");
        const std::string_view text = p->ip;
        auto ip = text.size() < 64 ? mcastd::parse_ip(text) : std::nullopt;
        if (!ip)
            return invalid("/ip", "ip \"" + std::string(text.substr(0, 64)) + "\" is not an IPv4 or IPv6 address");
        if (!mcastd::is_multicast_group(*ip))
            return invalid("/ip", "ip " + mcastd::format_ip(*ip) +
                                      " is not an IP multicast group (224.0.0.0/4 or ff00::/8)");
        join.ip = ip;
    }
    if (p->flags & RDMAMCAST_JOIN_GID_TYPE) {
        if (p->gid_type != RDMAMCAST_GID_TYPE_ROCE_V1 && p->gid_type != RDMAMCAST_GID_TYPE_ROCE_V2)
            return invalid("/gid_type", "gid_type " + std::to_string(static_cast<int>(p->gid_type)) +
                                            " is not RDMAMCAST_GID_TYPE_ROCE_V1 or _V2");
        join.gid_type = static_cast<mcastd::GidType>(p->gid_type);
    }
    if (p->size >= kJoinParamsSizeV4 && p->ifname) {
        const std::string_view text = p->ifname;
        if (auto why = mcastd::interface_name_problem(text.substr(0, 64)))
            return invalid("/ifname", "ifname " + *why);
        join.ifname = text;
    }
    if (join.ip) {
        // The group is the IP one; the MGID stays zero for the daemon to fill in.
    } else if (name) {
        if (p->flags & RDMAMCAST_JOIN_CREATE)
            return invalid("/name", "name and RDMAMCAST_JOIN_CREATE exclude each other");
        mcastd::Gid zero_check{};
        std::memcpy(zero_check.data(), p->mgid, 16);
        if (!mcastd::is_zero(zero_check))
            return invalid("/name", "name and mgid exclude each other (the daemon maps the name to its mgid)");
        if (auto why = mcastd::group_name_problem(name))
            return invalid("/name", "the group name " + *why);
        r.name = name;
    } else if (p->flags & RDMAMCAST_JOIN_CREATE) {
        r.mgid = mcastd::kZeroGid;
    } else {
        std::memcpy(r.mgid.data(), p->mgid, 16);
        if (mcastd::is_zero(r.mgid))
            return invalid("/mgid", "mgid is all zero; set RDMAMCAST_JOIN_CREATE to create a group, or name a "
                                    "named group");
    }
    if (p->flags & RDMAMCAST_JOIN_SCOPE) {
        if (!(p->flags & RDMAMCAST_JOIN_CREATE))
            return invalid("/scope", "scope applies only with RDMAMCAST_JOIN_CREATE");
        r.scope = p->scope;
    }
    auto &g = r.params;
    if (p->flags & RDMAMCAST_JOIN_QKEY)
        g.qkey = p->qkey;
    if (p->flags & RDMAMCAST_JOIN_PKEY)
        g.pkey = p->pkey;
    if (p->flags & RDMAMCAST_JOIN_SL)
        g.sl = p->sl;
    if (p->flags & RDMAMCAST_JOIN_TRAFFIC_CLASS)
        g.tclass = p->traffic_class;
    if (p->flags & RDMAMCAST_JOIN_FLOW_LABEL)
        g.flow_label = p->flow_label;
    if (p->flags & RDMAMCAST_JOIN_HOP_LIMIT)
        g.hop_limit = p->hop_limit;
    if (p->flags & RDMAMCAST_JOIN_MTU) {
        auto mtu = mcastd::proto::mtu_enum_from_bytes(p->mtu);
        if (!mtu)
            return invalid("/mtu", "mtu " + std::to_string(p->mtu) +
                                       " is not one of 256, 512, 1024, 2048, 4096");
        auto sel = selector_from_c(p->mtu_selector);
        if (!sel)
            return invalid("/mtu_selector", "mtu_selector " + std::to_string(p->mtu_selector) +
                                                " is not an rdmamcast_selector");
        g.mtu = mcastd::Selected{*sel, *mtu};
    }
    if (p->flags & RDMAMCAST_JOIN_RATE) {
        auto sel = selector_from_c(p->rate_selector);
        if (!sel)
            return invalid("/rate_selector", "rate_selector " + std::to_string(p->rate_selector) +
                                                 " is not an rdmamcast_selector");
        g.rate = mcastd::Selected{*sel, p->rate};
    }
    // The bounds every front checks, in the daemon's wording.
    if (auto no = mcastd::join_field_problem(r))
        return invalid("/" + no->field, no->describe());
    out = std::move(join);
    return 0;
}

rdmamcast_record record_to_c(const mcastd::McRecord &r) {
    rdmamcast_record c{};
    copy_gid(c.mgid, r.mgid);
    copy_gid(c.port_gid, r.port_gid);
    c.qkey = r.qkey;
    c.flow_label = r.flow_label;
    c.mtu = mcastd::mtu_bytes(r.mtu);
    c.mlid = r.mlid;
    c.pkey = r.pkey;
    c.sl = r.sl;
    c.rate = r.rate;
    c.traffic_class = r.tclass;
    c.hop_limit = r.hop_limit;
    c.scope = r.scope;
    c.join_state = r.join_state;
    c.link_layer = static_cast<std::uint8_t>(r.link_layer);
    c.gid_type = static_cast<std::uint8_t>(r.gid_type);
    if (r.link_layer == mcastd::LinkLayer::ethernet) {
        // The IP group and the MAC follow from the MGID, as the daemon derived them.
        c.sgid_index = r.sgid_index;
        const mcastd::Mac mac = mcastd::roce_dmac(r.mgid);
        std::memcpy(c.dmac, mac.data(), sizeof c.dmac);
        if (auto ip = mcastd::roce_ip_group(r.mgid))
            std::memcpy(c.ip, ip->bytes.data(), sizeof c.ip);
    }
    return c;
}

std::uint32_t changed_to_c(std::uint64_t fields) {
    namespace f = mcastd::field;
    static constexpr std::pair<std::uint64_t, std::uint32_t> map[] = {
        {f::mlid, RDMAMCAST_FIELD_MLID},
        {f::mgid, RDMAMCAST_FIELD_MGID},
        {f::port_gid, RDMAMCAST_FIELD_PORT_GID},
        {f::qkey, RDMAMCAST_FIELD_QKEY},
        {f::pkey, RDMAMCAST_FIELD_PKEY},
        {f::sl, RDMAMCAST_FIELD_SL},
        {f::mtu | f::mtu_selector, RDMAMCAST_FIELD_MTU},
        {f::rate | f::rate_selector, RDMAMCAST_FIELD_RATE},
        {f::flow_label, RDMAMCAST_FIELD_FLOW_LABEL},
        {f::tclass, RDMAMCAST_FIELD_TRAFFIC_CLASS},
        {f::hop_limit, RDMAMCAST_FIELD_HOP_LIMIT},
        {f::scope, RDMAMCAST_FIELD_SCOPE},
        {f::join_state, RDMAMCAST_FIELD_JOIN_STATE},
        {f::sgid_index, RDMAMCAST_FIELD_SGID_INDEX},
        {f::netdev, RDMAMCAST_FIELD_NETDEV},
    };
    std::uint32_t out = 0;
    for (const auto &[from, to] : map)
        if (fields & from)
            out |= to;
    return out;
}

namespace {

void reconnected_to_c(const Reconnected &r, rdmamcast_event &ev, Arena &arena) {
    ev.type = RDMAMCAST_EVENT_RECONNECTED;
    auto &c = ev.reconnected;
    c.resumed = r.resumed ? 1 : 0;
    c.gap_ms = r.gap_ms;
    c.kept = arena.values(r.kept);
    c.num_kept = r.kept.size();
    c.lost = arena.values(r.lost);
    c.num_lost = r.lost.size();
}

} // namespace

void event_to_c(const QueuedEvent &queued, rdmamcast_event &ev, Arena &arena) {
    ev = rdmamcast_event{};
    if (const auto *r = std::get_if<Reconnected>(&queued)) {
        reconnected_to_c(*r, ev, arena);
        return;
    }
    if (const auto *j = std::get_if<JoinCompletion>(&queued)) {
        if (j->result) {
            ev.type = RDMAMCAST_EVENT_JOINED;
            ev.membership = j->result->membership;
            ev.joined.context = j->context;
            ev.joined.join_id = j->join_id;
            ev.joined.record = record_to_c(j->result->record);
        } else {
            ev.type = RDMAMCAST_EVENT_JOIN_ERROR;
            ev.join_error.context = j->context;
            ev.join_error.join_id = j->join_id;
            // The error's strings live in its ErrorState, which the arena now keeps.
            ev.join_error.error = *arena.adopt(j->error)->get();
        }
        return;
    }
    const auto &event = std::get<mcastd::proto::Event>(queued);
    if (const auto *r = std::get_if<mcastd::proto::RestoredEvent>(&event)) {
        ev.type = RDMAMCAST_EVENT_RESTORED;
        ev.membership = r->membership;
        ev.restored.record = record_to_c(r->record);
        ev.restored.changed = changed_to_c(r->changed);
    } else if (const auto *l = std::get_if<mcastd::proto::LostEvent>(&event)) {
        ev.type = RDMAMCAST_EVENT_LOST;
        ev.membership = l->membership;
        ev.lost.code = to_c_errc(l->why.error.code);
        ev.lost.code_name = arena.str(std::string(mcastd::errc_name(l->why.error.code)));
        ev.lost.message = arena.str(l->why.error.message);
        if (l->why.error.sa_status) {
            ev.lost.has_sa_status = true;
            ev.lost.sa_status = *l->why.error.sa_status;
        }
    } else {
        const auto &m = std::get<mcastd::proto::MonitorEvent>(event);
        ev.type = RDMAMCAST_EVENT_MONITOR;
        auto &c = ev.monitor;
        c.kind = monitor_kind(m.kind);
        c.kind_name = arena.str(m.kind);
        c.device = arena.str(m.device);
        c.port = m.port;
        copy_gid(c.mgid, m.mgid);
        c.mlid = m.mlid;
        c.join_state = m.join_state;
        c.pid = static_cast<std::int32_t>(m.pid);
        c.uid = static_cast<std::uint32_t>(m.uid);
        c.comm = arena.str(m.comm);
        c.message = arena.str(m.message);
        if (m.sa_status) {
            c.has_sa_status = true;
            c.sa_status = *m.sa_status;
        }
        if (m.roce) {
            c.gid_type = static_cast<std::uint8_t>(m.roce->gid_type);
            c.sgid_index = m.roce->sgid_index;
            c.netdev = arena.str(m.roce->netdev);
        }
    }
}

rdmamcast_group_list *list_to_c(const mcastd::proto::ListResult &list) {
    auto arena = std::make_unique<Arena>();
    auto holder = std::make_unique<ListHolder>();
    holder->pub = rdmamcast_group_list{};
    auto &pub = holder->pub;
    pub.num_ports = list.ports.size();
    pub.ports = arena->array<rdmamcast_port_groups>(list.ports.size());
    for (std::size_t i = 0; i < list.ports.size(); ++i) {
        const auto &p = list.ports[i];
        auto *cp = arena->make<rdmamcast_port_groups>();
        cp->device = arena->str(p.device);
        cp->port = p.port;
        copy_gid(cp->port_gid, p.port_gid);
        cp->link_layer = mcastd::link_layer_name(p.link_layer); // static storage
        cp->num_groups = p.groups.size();
        cp->groups = arena->array<rdmamcast_group>(p.groups.size());
        for (std::size_t j = 0; j < p.groups.size(); ++j) {
            const auto &g = p.groups[j];
            auto *cg = arena->make<rdmamcast_group>();
            copy_gid(cg->mgid, g.mgid);
            cg->qkey = g.qkey;
            cg->mlid = g.mlid;
            cg->held = g.held;
            cg->foreign = g.foreign;
            cg->busy = g.busy;
            for (std::size_t b = 0; b < 4; ++b)
                cg->counts[b] = g.counts[b];
            if (g.roce) {
                cg->gid_type = static_cast<std::uint8_t>(g.roce->gid_type);
                cg->sgid_index = g.roce->sgid_index;
                cg->netdev = arena->str(g.roce->netdev);
            }
            cg->num_members = g.members.size();
            cg->members = arena->array<rdmamcast_member>(g.members.size());
            for (std::size_t k = 0; k < g.members.size(); ++k) {
                const auto &m = g.members[k];
                auto *cm = arena->make<rdmamcast_member>();
                cm->membership = m.membership;
                cm->pid = static_cast<std::int32_t>(m.pid);
                cm->uid = static_cast<std::uint32_t>(m.uid);
                cm->join_state = m.join_state;
                cm->state = arena->str(m.state);
                cm->comm = arena->str(m.comm);
                cm->rule = arena->str(m.rule);
                cm->created = m.created;
                cm->flagged = m.flagged.empty() ? nullptr : arena->str(m.flagged);
                cm->name = m.name.empty() ? nullptr : arena->str(m.name);
                cg->members[k] = cm;
            }
            cp->groups[j] = cg;
        }
        pub.ports[i] = cp;
    }
    holder->arena = arena.release();
    return &holder.release()->pub;
}

rdmamcast_daemon_status *status_to_c(const mcastd::proto::StatusResult &status) {
    auto arena = std::make_unique<Arena>();
    auto holder = std::make_unique<StatusHolder>();
    holder->pub = rdmamcast_daemon_status{};
    auto &pub = holder->pub;
    pub.daemon = arena->str(status.daemon);
    pub.protocol = status.protocol;
    pub.uptime_s = status.uptime_s;
    pub.clients = status.clients;
    auto *counters = arena->make<rdmamcast_counters>();
    const auto &c = status.counters;
    *counters = rdmamcast_counters{c.sa_mads_sent, c.sa_retransmits, c.sa_timeouts, c.sa_bounces,
                                   c.joins,        c.joins_local,    c.joins_failed, c.leaves,
                                   c.sa_responses, c.sa_late,        c.sa_amplification,
                                   c.sa_sets,      c.sa_deletes,     c.sa_gets,
                                   c.restored,     c.lost};
    pub.counters = counters;
    pub.num_ports = status.ports.size();
    pub.ports = arena->array<rdmamcast_port_status>(status.ports.size());
    for (std::size_t i = 0; i < status.ports.size(); ++i) {
        const auto &p = status.ports[i];
        auto *cp = arena->make<rdmamcast_port_status>();
        cp->device = arena->str(p.device);
        cp->port = p.port;
        cp->sm_sl = p.sm_sl;
        cp->lid = p.lid;
        cp->sm_lid = p.sm_lid;
        cp->state = arena->str(p.state);
        cp->link_layer = arena->str(p.link_layer);
        copy_gid(cp->port_gid, p.port_gid);
        cp->rate_gbps = p.rate_gbps;
        cp->groups = p.groups;
        cp->mtu = p.mtu;
        cp->sm_known = p.sm_guid.has_value();
        cp->sm_guid = p.sm_guid.value_or(0);
        cp->sm_act_count = p.sm_act_count.value_or(0);
        cp->rejoining = p.rejoining;
        if (const auto &r = p.last_rejoin) {
            auto *cr = arena->make<rdmamcast_rejoin>();
            cr->reason = arena->str(r->reason);
            cr->started_ago_s = r->started_ago_s;
            cr->finished = r->duration_s.has_value();
            cr->duration_s = r->duration_s.value_or(0);
            cr->groups = r->groups;
            cp->last_rejoin = cr;
        }
        cp->max_groups = p.max_groups;
        if (const auto &w = p.sa) {
            auto *cs = arena->make<rdmamcast_port_sa>();
            cs->window = w->window;
            cs->slow_start = w->slow_start;
            cs->has_srtt = w->srtt_ms.has_value();
            cs->srtt_ms = w->srtt_ms.value_or(0);
            cs->has_timeout = w->timeout_ms.has_value();
            cs->timeout_ms = w->timeout_ms.value_or(0);
            cp->sa = cs;
        }
        std::copy(p.memberships.begin(), p.memberships.end(), cp->memberships);
        cp->rejoins = p.rejoins;
        pub.ports[i] = cp;
    }
    pub.num_users = status.users.size();
    pub.users = arena->array<rdmamcast_user_usage>(status.users.size());
    for (std::size_t i = 0; i < status.users.size(); ++i) {
        const auto &u = status.users[i];
        auto *cu = arena->make<rdmamcast_user_usage>();
        cu->uid = static_cast<std::uint32_t>(u.uid);
        cu->user = arena->str(u.user);
        cu->memberships = u.memberships;
        cu->memberships_quota = u.memberships_quota;
        cu->creates = u.creates;
        cu->creates_quota = u.creates_quota;
        cu->flagged = u.flagged;
        cu->clients = u.clients;
        cu->clients_quota = u.clients_quota;
        cu->monitors = u.monitors;
        cu->monitors_quota = u.monitors_quota;
        cu->queued_bytes = u.queued_bytes;
        cu->queued_bytes_quota = u.queued_bytes_quota;
        cu->groups_per_port = u.groups_per_port;
        cu->groups_per_port_quota = u.groups_per_port_quota;
        cu->sa_tokens = u.sa_tokens;
        cu->sa_mads_per_second = u.sa_mads_per_second;
        pub.users[i] = cu;
    }
    pub.num_refused = status.refused.size();
    pub.refused = arena->array<rdmamcast_refusal>(status.refused.size());
    for (std::size_t i = 0; i < status.refused.size(); ++i) {
        auto *cr = arena->make<rdmamcast_refusal>();
        cr->reason = arena->str(status.refused[i].reason);
        cr->count = status.refused[i].count;
        pub.refused[i] = cr;
    }
    holder->arena = arena.release();
    return &holder.release()->pub;
}

void free_list(rdmamcast_group_list *list) {
    if (!list)
        return;
    auto *holder = reinterpret_cast<ListHolder *>(list);
    delete holder->arena;
    delete holder;
}

void free_status(rdmamcast_daemon_status *status) {
    if (!status)
        return;
    auto *holder = reinterpret_cast<StatusHolder *>(status);
    delete holder->arena;
    delete holder;
}

} // namespace rdmamcast::detail
