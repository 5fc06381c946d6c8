// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "core/join_rules.hpp"

#include <algorithm>
#include <cstdio>

#include "common/join_bounds.hpp"

namespace mcastd {

namespace {

std::string hex(std::uint64_t v, int width) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%0*llx", width, static_cast<unsigned long long>(v));
    return buf;
}

std::string rate_text(std::uint8_t rate) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%g Gb/s (enum %u)", rate_mbps(rate) / 1000.0, rate);
    return buf;
}

const char *selector_text(Selector s) {
    switch (s) {
    case Selector::greater: return "greater than ";
    case Selector::less: return "less than ";
    case Selector::exactly: return "";
    case Selector::best: return "the best ";
    }
    return "";
}

// Writes the asserted fields into `r` and returns their component-mask bits.
std::uint64_t apply_params(McRecord &r, const GroupParams &p) {
    std::uint64_t mask = 0;
    if (p.qkey) { r.qkey = *p.qkey; mask |= field::qkey; }
    if (p.pkey) { r.pkey = *p.pkey; mask |= field::pkey; }
    if (p.sl) { r.sl = *p.sl; mask |= field::sl; }
    if (p.tclass) { r.tclass = *p.tclass; mask |= field::tclass; }
    if (p.flow_label) { r.flow_label = *p.flow_label; mask |= field::flow_label; }
    if (p.hop_limit) { r.hop_limit = *p.hop_limit; mask |= field::hop_limit; }
    if (p.mtu) {
        r.mtu_selector = p.mtu->selector;
        r.mtu = p.mtu->value;
        mask |= field::mtu_selector | field::mtu;
    }
    if (p.rate) {
        r.rate_selector = p.rate->selector;
        r.rate = p.rate->value;
        mask |= field::rate_selector | field::rate;
    }
    return mask;
}

} // namespace

KernelMgid kernel_mgid(const Gid &mgid) {
    switch (mgid_signature(mgid)) {
    case 0x401b:
    case 0x601b: return KernelMgid::ipoib;
    case 0x4001:
    case 0x6001: return KernelMgid::rdma_cm;
    default: return KernelMgid::none;
    }
}

const char *kernel_mgid_name(KernelMgid kind) {
    switch (kind) {
    case KernelMgid::ipoib: return "IPoIB";
    case KernelMgid::rdma_cm: return "rdma_cm";
    case KernelMgid::none: break;
    }
    return "no kernel";
}

std::optional<AssignedMgidRefusal> refuse_assigned_mgid(const Gid &mgid, bool another_agents) {
    if (mgid[0] != 0xff)
        return AssignedMgidRefusal{"is not a multicast GID (it must start with ff): its bits are deleted again, "
                                   "since no other agent can hold such a group",
                                   true};
    if (const KernelMgid kind = kernel_mgid(mgid); kind != KernelMgid::none)
        return AssignedMgidRefusal{std::string("has the ") + kernel_mgid_name(kind) +
                                       " signature: refused without a Delete, since the bits may be the kernel's",
                                   false};
    if (another_agents)
        return AssignedMgidRefusal{"is a group in which another agent on this port holds bits: refused without a "
                                   "Delete, since the bits may be that agent's",
                                   false};
    return std::nullopt;
}

std::optional<Error> validate_fields(const JoinRequest &r) {
    if (auto no = join_field_problem(r))
        return Error{Errc::invalid_argument, no->describe(), {}};
    return std::nullopt;
}

std::optional<Error> validate_request(const JoinRequest &r, const EngineConfig &cfg) {
    auto invalid = [](std::string m) { return Error{Errc::invalid_argument, std::move(m), {}}; };
    if (auto err = validate_fields(r))
        return err;
    if (is_zero(r.mgid)) {
        if (!(r.join_state & (join::full | join::send_only_full)))
            return invalid("creating a group needs the full or sendonly-full join state");
        return std::nullopt;
    }
    if (r.scope)
        return invalid("scope applies only when creating a group (MGID 0); an explicit MGID carries its own scope");
    if (r.mgid[0] != 0xff)
        return invalid("MGID " + format_gid(r.mgid) + " is not a multicast GID (it must start with ff)");
    const KernelMgid kind = kernel_mgid(r.mgid);
    const bool ipoib = kind == KernelMgid::ipoib;
    if ((ipoib && !cfg.allow_ipoib_mgids) || (kind == KernelMgid::rdma_cm && !cfg.allow_rdma_cm_mgids))
        return Error{Errc::denied,
                     "MGID " + format_gid(r.mgid) + " has the " + kernel_mgid_name(kind) + " signature " +
                         hex(mgid_signature(r.mgid), 4) +
                         "; the kernel shares these groups and a leave from this daemon would cut its members "
                         "off (allowed only with " + (ipoib ? "allow_ipoib_mgids" : "allow_rdma_cm_mgids") + ")",
                     {}};
    return std::nullopt;
}

std::optional<std::string> mismatch(const GroupParams &p, const McRecord &g) {
    auto differs = [](const char *name, std::uint64_t group, std::uint64_t want, int width) {
        return std::string("the group has ") + name + " " + hex(group, width) + ", not " + hex(want, width);
    };
    if (p.qkey && *p.qkey != g.qkey) return differs("Q_Key", g.qkey, *p.qkey, 8);
    // P_Keys match on their 15-bit base; the top bit is the membership type.
    if (p.pkey && (*p.pkey & 0x7fff) != (g.pkey & 0x7fff))
        return differs("P_Key", g.pkey, *p.pkey, 4);
    if (p.sl && *p.sl != g.sl) return "the group has SL " + std::to_string(g.sl) + ", not " + std::to_string(*p.sl);
    if (p.tclass && *p.tclass != g.tclass) return differs("TClass", g.tclass, *p.tclass, 2);
    if (p.flow_label && *p.flow_label != g.flow_label)
        return differs("FlowLabel", g.flow_label, *p.flow_label, 5);
    if (p.hop_limit && *p.hop_limit != g.hop_limit)
        return "the group has HopLimit " + std::to_string(g.hop_limit) + ", not " + std::to_string(*p.hop_limit);
    if (p.mtu && !selector_matches(p.mtu->selector, p.mtu->value, g.mtu))
        return "the group has MTU " + std::to_string(mtu_bytes(g.mtu)) + ", not " + selector_text(p.mtu->selector) +
               std::to_string(mtu_bytes(p.mtu->value));
    if (p.rate && !selector_matches(p.rate->selector, p.rate->value, g.rate))
        return "the group has rate " + rate_text(g.rate) + ", not " + selector_text(p.rate->selector) +
               rate_text(p.rate->value);
    return std::nullopt;
}

JoinStep next_join_step(const SaKnowledge &sa, std::uint8_t member_bits, const GroupParams &params,
                        bool port_active, std::uint64_t epoch) {
    using K = JoinStep::Kind;
    const bool fresh = sa.fresh(epoch);
    if (fresh)
        if (auto why = mismatch(params, sa.record))
            return {K::conflict, 0, std::move(*why)};
    const std::uint8_t need = static_cast<std::uint8_t>(member_bits & ~sa.present());
    if (!need && fresh)
        return {K::answer, 0, {}};
    if (!need && sa.probed && port_active)
        return {K::refresh, 0, {}};
    if (!port_active)
        return {K::port_down, 0, {}};
    if (!sa.probed)
        return {K::probe, 0, {}};
    // Holding 0x1 beside another agent's 0x8 (or the reverse) would make a later Delete 0x1
    // pin the MLID forever (doc/sa-multicast.md §13).
    if ((need & join::full) && (sa.foreign & join::send_only_full))
        return {K::leak_hazard, 0, {}};
    return {K::set, normalize(need), {}};
}

McRecord member_record(const Gid &mgid, const Gid &port_gid, std::uint8_t bits) {
    McRecord r;
    r.mgid = mgid;
    r.port_gid = port_gid;
    r.join_state = bits;
    return r;
}

SaRequest join_set(PortIndex port, const Gid &mgid, const Gid &port_gid, std::uint8_t bits, const GroupParams &params,
                   const std::optional<CreateFields> &create) {
    McRecord r = member_record(mgid, port_gid, bits);
    std::uint64_t mask = field::join_mask | apply_params(r, params);
    if (create) {
        const auto &d = create->defaults;
        if (!(mask & field::qkey)) r.qkey = d.qkey;
        if (!(mask & field::pkey)) r.pkey = d.pkey;
        if (!(mask & field::sl)) r.sl = d.sl;
        if (!(mask & field::tclass)) r.tclass = d.tclass;
        if (!(mask & field::flow_label)) r.flow_label = d.flow_label;
        mask |= field::create_mask;
        if (create->scope) {
            r.scope = *create->scope;
            mask |= field::scope;
        }
    }
    return SaRequest{port, SaMethod::set, r, mask};
}

SaRequest repair_set(PortIndex port, const McRecord &cached, const Gid &port_gid, std::uint8_t bits) {
    McRecord r = cached;
    r.port_gid = port_gid;
    r.join_state = bits;
    r.mtu_selector = Selector::exactly;
    r.rate_selector = Selector::exactly;
    r.proxy_join = false;
    const std::uint64_t mask = field::create_mask | field::mtu_selector | field::mtu | field::rate_selector |
                               field::rate | field::hop_limit;
    return SaRequest{port, SaMethod::set, r, mask};
}

std::vector<std::uint8_t> probe_candidates(const SaKnowledge &sa, bool resync) {
    std::vector<std::uint8_t> c;
    auto add = [&c](std::uint8_t v) {
        if (v && std::find(c.begin(), c.end(), v) == c.end())
            c.push_back(v);
    };
    if (resync) {
        add(static_cast<std::uint8_t>(sa.held | sa.foreign | sa.uncertain));
        add(static_cast<std::uint8_t>(sa.held | sa.foreign));
        add(sa.foreign);
    }
    for (std::uint8_t v : {join::full, join::send_only_full, join::non_member, std::uint8_t(0x3),
                           join::send_only_non_member})
        add(v);
    for (std::uint8_t v = 1; v <= 15; ++v)
        add(v);
    return c;
}

} // namespace mcastd
