// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "roce/roce_backend.hpp"

#include <algorithm>

namespace mcastd::roce {

namespace {

Error invalid(std::string message) { return Error{Errc::invalid_argument, std::move(message), {}}; }

std::string type_text(GidType t) { return std::string(gid_type_name(t)); }

bool is_v4_gid(const Gid &gid) { return IpAddress{gid}.is_v4(); }

} // namespace

std::variant<RoceGroup, Error> resolve_group(const Gid &mgid, const RoceJoin *roce, GidType default_type) {
    // The type the join asks for, if any (a pointer: GCC 12 misreads a copied optional here).
    const GidType *asked = roce && roce->gid_type ? &*roce->gid_type : nullptr;
    if (asked && *asked != GidType::roce_v1 && *asked != GidType::roce_v2)
        return invalid("gid_type " + type_text(*asked) + " is not a RoCE GID type (roce_v1 or roce_v2)");
    RoceGroup g;
    if (roce && roce->group) {
        g.ip = *roce->group;
        if (!is_multicast_group(g.ip))
            return invalid(format_ip(g.ip) + " is not an IP multicast group (224.0.0.0/4 or ff00::/8)");
        g.type = asked ? *asked : default_type;
        g.mgid = roce_mgid(g.ip, g.type);
        if (!is_zero(mgid) && mgid != g.mgid)
            return invalid("mgid " + format_gid(mgid) + " is not the group " + format_ip(g.ip) + ", whose MGID on " +
                           type_text(g.type) + " is " + format_gid(g.mgid));
        return g;
    }
    if (is_zero(mgid))
        return invalid("a join on a RoCE port names an IP multicast group or its MGID: there is no SA to assign one");
    const auto ip = roce_ip_group(mgid);
    if (!ip)
        return invalid("mgid " + format_gid(mgid) +
                       " names no IP multicast group (an IPv6 group ff00::/8, or an IPv4 group as ::ffff:a.b.c.d "
                       "on RoCE v2 or ff0e::ffff:a.b.c.d on RoCE v1)");
    g.ip = *ip;
    g.mgid = mgid;
    if (!ip->is_v4()) {
        g.type = asked ? *asked : default_type;
        return g;
    }
    // An IPv4 group's MGID says which RoCE version it is for.
    g.type = mgid == roce_mgid(*ip, GidType::roce_v2) ? GidType::roce_v2 : GidType::roce_v1;
    if (const GidType want = asked ? *asked : g.type; want != g.type)
        return invalid("mgid " + format_gid(mgid) + " is the group " + format_ip(*ip) + " on " + type_text(g.type) +
                       ", not on " + type_text(want));
    return g;
}

std::optional<RoceGid> source_gid(const std::vector<RoceGid> &gids, GidType type, const IpAddress &group) {
    const RoceGid *best = nullptr;
    bool best_matches = false;
    for (const RoceGid &e : gids) {
        if (e.type != type || e.netdev_gone)
            continue;
        const bool matches = is_v4_gid(e.gid) == group.is_v4();
        if (type == GidType::roce_v2 && !matches)
            continue; // a RoCE v2 packet's source address is of the group's family
        if (!best || (matches && !best_matches) || (matches == best_matches && e.index < best->index)) {
            best = &e;
            best_matches = matches;
        }
    }
    if (!best)
        return std::nullopt;
    return *best;
}

GidType RoceBackend::default_type(const std::optional<RocePort> &port) const {
    return port && port->default_type ? *port->default_type : GidType::roce_v2;
}

std::variant<Gid, Error> RoceBackend::group_of(PortIndex port, const JoinRequest &req) const {
    auto g = resolve_group(req.mgid, req.roce.get(), default_type(ports_.port(port)));
    if (Error *err = std::get_if<Error>(&g))
        return std::move(*err);
    const RoceGroup &group = std::get<RoceGroup>(g);
    if (rdma_cm_refuses(group.ip, group.type) && !options_.ipv6_on_roce_v2)
        return invalid("the IPv6 group " + format_ip(group.ip) +
                       " on a RoCE v2 GID would need an MLD membership, which rdma_cm refuses to make; "
                       "so does this daemon unless " + std::string(kRoceIpv6Key) +
                       " is true (or join it on roce_v1, or an IPv4 group)");
    return group.mgid;
}

std::variant<RoceBackend::Made, Error> RoceBackend::prepare(const FabricJoin &join) const {
    const auto port = ports_.port(join.port);
    if (!port)
        return Error{Errc::internal, "port " + std::to_string(join.port) + " is not a RoCE port the daemon knows", {}};
    // A re-join (no join's attachment) makes the group as it was made.
    const auto before = groups_.find({join.port, join.mgid});
    const RoceJoin *roce = join.roce.get();
    RoceJoin as_before;
    if (!roce && before != groups_.end()) {
        as_before.gid_type = before->second.group.type;
        roce = &as_before;
    }
    auto g = resolve_group(join.mgid, roce, default_type(port));
    if (Error *err = std::get_if<Error>(&g))
        return std::move(*err);
    Made made{std::get<RoceGroup>(g), {}};
    const auto source = source_gid(port->gids, made.group.type, made.group.ip);
    if (!source)
        return invalid(port->name + " has no " + type_text(made.group.type) + " GID" +
                       (made.group.type == GidType::roce_v2
                            ? std::string(" with an IP") + (made.group.ip.is_v4() ? "v4" : "v6") + " address"
                            : std::string()) +
                       " for the group " + format_ip(made.group.ip));
    made.source = *source;
    return made;
}

MembershipBackend::Id RoceBackend::make(const FabricJoin &join, Done done) {
    const Id id = next_++;
    auto made = prepare(join);
    if (Error *err = std::get_if<Error>(&made)) {
        done(FabricResult{std::move(*err), {}});
        return id;
    }
    const Made &m = std::get<Made>(made);
    const auto mtu = ports_.netdev_mtu(m.source.netdev);
    const std::uint8_t ib_mtu = mtu ? roce_mtu(*mtu) : 0;
    if (!ib_mtu) {
        done(FabricResult{Error{Errc::internal,
                                mtu ? "the MTU of " + m.source.netdev + " (" + std::to_string(*mtu) +
                                          " bytes) is too small for RoCE"
                                    : "cannot read the MTU of " + m.source.netdev,
                                {}},
                          {}});
        return id;
    }
    // The record as rdma_cm's cma_iboe_join_multicast makes it (doc/roce-multicast.md §1).
    const GroupParams &p = join.params;
    McRecord r;
    r.mgid = m.group.mgid;
    r.port_gid = m.source.gid;
    r.mlid = 0;
    r.qkey = p.qkey.value_or(options_.default_qkey);
    r.pkey = kRocePkey;
    r.mtu_selector = Selector::exactly;
    r.mtu = ib_mtu;
    r.rate_selector = Selector::exactly;
    r.rate = 0; // the port's current rate
    r.hop_limit = roce_hop_limit(m.group.ip, m.group.type);
    r.tclass = p.tclass.value_or(0);
    r.sl = p.sl.value_or(0);
    r.flow_label = p.flow_label.value_or(0);
    // What a RoCE client needs beyond InfiniBand's fields: which GID it sends from and where
    // the host's membership is held (the record's RoCE keys, proto/PROTOCOL.md).
    r.link_layer = LinkLayer::ethernet;
    r.gid_type = m.group.type;
    r.sgid_index = static_cast<std::uint8_t>(m.source.index);
    r.netdev = m.source.netdev;
    groups_.insert_or_assign({join.port, join.mgid}, m);
    done(FabricResult{std::nullopt, r});
    return id;
}

MembershipBackend::Id RoceBackend::drop(const FabricLeave &leave, Done done) {
    if (!leave.kept)
        groups_.erase({leave.port, leave.mgid}); // its members' kernel memberships went with them
    done(FabricResult{});
    return next_++;
}

std::optional<Error> RoceBackend::add_member(const FabricMember &member) {
    const auto made = groups_.find({member.port, member.mgid});
    if (made == groups_.end())
        return Error{Errc::internal, "group " + format_gid(member.mgid) + " was not made before its member joined", {}};
    const Made &m = made->second;
    const RoceJoin *roce = member.roce.get();
    // One MGID of an IPv6 group serves both RoCE versions; the group is sent from one type.
    if (roce && roce->gid_type && *roce->gid_type != m.group.type)
        return Error{Errc::conflict,
                     "the group " + format_ip(m.group.ip) + " is joined on " + type_text(m.group.type) + ", not " +
                         type_text(*roce->gid_type),
                     {}};
    if (!holds_ip_membership(member.bits))
        return std::nullopt; // a sender: no report (doc/roce-multicast.md §7)
    if (auto held = members_.find(member.id); held != members_.end()) {
        Held &h = held->second;
        if (!member.rejoin)
            return std::nullopt;
        // The source's netdev, looked up again (it may be another now); or the client's own.
        const std::string netdev = h.own_ifname ? h.netdev : m.source.netdev;
        auto now = kernel_.reassert(h.key, netdev, h.suspended);
        if (Error *err = std::get_if<Error>(&now))
            return std::move(*err); // still set aside, if it was: the engine ends it (remove_member)
        h.key = std::get<MembershipKey>(now);
        h.netdev = netdev;
        h.suspended = false;
        return std::nullopt;
    }
    if (!roce || roce->fd < 0)
        return invalid("a " + join_state_name(member.bits) + " join on a RoCE port hands over a UDP socket made in the "
                       "client's network namespace (SCM_RIGHTS), on which the daemon holds the group's " +
                       (m.group.ip.is_v4() ? "IGMP" : "MLD") + " membership");
    // The interface of the client's namespace: the one it named, else the source GID's netdev
    // by name (a container's interface may be named otherwise: doc/roce-multicast.md §7).
    const bool own_ifname = !roce->ifname.empty();
    const std::string &netdev = own_ifname ? roce->ifname : m.source.netdev;
    auto key = kernel_.acquire(roce->fd, netdev, m.group.ip,
                               own_ifname ? "" : "; a client whose network namespace names the interface otherwise "
                                                 "gives its name as ifname");
    if (Error *err = std::get_if<Error>(&key))
        return std::move(*err);
    members_.emplace(member.id, Held{std::get<MembershipKey>(key), netdev, member.port, member.mgid, false, own_ifname});
    return std::nullopt;
}

std::optional<Error> RoceBackend::remove_member(const FabricMember &member) {
    auto held = members_.find(member.id);
    if (held == members_.end())
        return std::nullopt;
    const Held h = held->second;
    members_.erase(held);
    return kernel_.release(h.key, h.suspended);
}

SourceCheck RoceBackend::check_source(PortIndex port, const Gid &mgid) const {
    const auto made = groups_.find({port, mgid});
    if (made == groups_.end())
        return {};
    const Made &m = made->second;
    const RoceGid &was = m.source;
    const std::string where = type_text(was.type) + " GID " + format_gid(was.gid) + " (index " +
                              std::to_string(was.index) + " on " + was.netdev + ")";
    const auto now_port = ports_.port(port);
    const std::optional<RoceGid> now =
        now_port ? source_gid(now_port->gids, m.group.type, m.group.ip) : std::nullopt;
    if (!m.sourced) // taken back with none
        return now ? SourceCheck{SourceCheck::State::moved, "a " + type_text(m.group.type) + " GID serves " +
                                                                format_ip(m.group.ip) + " again"}
                   : SourceCheck{SourceCheck::State::gone, "no " + type_text(m.group.type) + " GID serves " +
                                                               format_ip(m.group.ip) + " since the daemon restarted"};
    if (!now) {
        // Say which went: the address, or the netdev under it.
        const bool netdev_gone =
            now_port && std::any_of(now_port->gids.begin(), now_port->gids.end(), [&](const RoceGid &e) {
                return e.index == was.index && e.gid == was.gid && e.type == was.type && e.netdev_gone;
            });
        return {SourceCheck::State::gone,
                "the source " + where + (netdev_gone ? ": " + was.netdev + " is gone from the daemon's network "
                                                                          "namespace (removed, or moved to another)"
                                                     : " is gone from the GID table") +
                    ", and no other " + type_text(m.group.type) + " GID serves " + format_ip(m.group.ip)};
    }
    if (*now == was)
        return {};
    return {SourceCheck::State::moved, "the source of " + format_ip(m.group.ip) + " is now the " +
                                           type_text(now->type) + " GID " + format_gid(now->gid) + " (index " +
                                           std::to_string(now->index) + " on " + now->netdev + ")"};
}

void RoceBackend::suspend(PortIndex port, const Gid &mgid) {
    for (auto &[id, h] : members_)
        if (h.port == port && h.mgid == mgid && !h.suspended) {
            kernel_.suspend(h.key);
            h.suspended = true;
        }
}

KeptRoce RoceBackend::kept(const NameOf &name_of) const {
    KeptRoce out;
    for (const auto &[where, made] : groups_) {
        const auto [device, number] = name_of(where.first);
        std::optional<KeptSource> source;
        if (made.sourced)
            source = KeptSource{made.source.index, made.source.gid, made.source.netdev, made.source.ifindex,
                                made.source.mtu};
        out.groups.push_back(KeptGroup{device, number, where.second, made.group.type, std::move(source)});
    }
    std::map<MembershipKey, std::vector<std::uint64_t>> holders;
    for (const auto &[id, held] : members_)
        holders[held.key].push_back(id);
    out.sockets = kernel_.kept();
    for (KeptSocket &k : out.sockets)
        for (KeptMembership &m : k.memberships)
            if (auto h = holders.find(MembershipKey{k.netns, m.ifindex, m.group}); h != holders.end())
                m.members = h->second;
    return out;
}

Adoption RoceBackend::adopt(const KeptRoce &saved, std::map<std::uint64_t, int> stored, const PortOf &port_of,
                            const std::map<MembershipId, TakenBack> &adopted) {
    Adoption out;
    std::set<std::pair<PortIndex, Gid>, PortGidLess> taken_back; // the groups they are in
    std::set<std::uint64_t> aside;                  // those whose kernel membership was set aside
    for (const auto &[id, where] : adopted) {
        taken_back.emplace(where.port, where.mgid);
        if (where.set_aside)
            aside.insert(id);
    }
    for (const KeptGroup &g : saved.groups) {
        const auto pi = port_of(g.device, g.port);
        if (!pi)
            continue; // its port is not served now: the engine set its groups aside
        if (!taken_back.count({*pi, g.mgid}))
            continue; // nobody in it was taken back: nothing will make it again or leave it
        FabricJoin join;
        join.port = *pi;
        join.mgid = g.mgid;
        join.roce = std::make_shared<const RoceJoin>(std::nullopt, g.type, -1);
        auto group = resolve_group(g.mgid, join.roce.get(), g.type);
        if (const Error *err = std::get_if<Error>(&group)) {
            out.dropped.push_back("group " + format_gid(g.mgid) + " on " + g.device + "/" + std::to_string(g.port) +
                                  " is not taken back: " + err->message);
            continue;
        }
        // As it was made: the engine's check of every source after the adoption says whether
        // it moved or went meanwhile (its members then hear of it as of any change).
        if (g.source) {
            const KeptSource &k = *g.source;
            const RoceGid was{k.index, k.gid, g.type, k.netdev, false, k.ifindex, k.mtu};
            groups_.insert_or_assign({*pi, g.mgid}, Made{std::get<RoceGroup>(group), was, true});
            continue;
        }
        // A state that names no source (an older one, or a group waiting for one): from the
        // table as it is now; with no GID serving it, it waits for one.
        auto made = prepare(join);
        groups_.insert_or_assign({*pi, g.mgid}, std::holds_alternative<Made>(made)
                                                    ? std::get<Made>(made)
                                                    : Made{std::get<RoceGroup>(group), {}, false});
    }
    // Only the members the engine has again hold a membership.
    std::vector<KeptSocket> held = saved.sockets;
    for (KeptSocket &k : held)
        for (KeptMembership &m : k.memberships)
            std::erase_if(m.members, [&](std::uint64_t id) { return !adopted.count(id); });
    Adoption kernel = kernel_.adopt(held, std::move(stored), aside, saved.adding);
    out.adopted = kernel.adopted;
    out.remade = kernel.remade;
    out.dropped.insert(out.dropped.end(), kernel.dropped.begin(), kernel.dropped.end());
    out.lost = std::move(kernel.lost);
    for (const KeptSocket &k : held)
        for (const KeptMembership &m : k.memberships) {
            const MembershipKey key{k.netns, m.ifindex, m.group};
            if (!kernel_.holders(key))
                continue; // not held now: its members hold nothing here (a leave has nothing to drop)
            for (std::uint64_t id : m.members) {
                const TakenBack &where = adopted.at(id);
                // A netdev other than its group's source's was the client's choice (ifname).
                const auto made = groups_.find({where.port, where.mgid});
                const bool own_ifname =
                    made != groups_.end() && made->second.sourced && made->second.source.netdev != m.netdev;
                members_.insert_or_assign(id, Held{key, m.netdev, where.port, where.mgid, where.set_aside, own_ifname});
            }
        }
    return out;
}

} // namespace mcastd::roce
