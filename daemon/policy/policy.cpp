// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "policy/policy.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>

namespace mcastd::policy {

namespace {

template <class T> bool has(const std::vector<T> &v, const T &x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The components of a cgroup path ("/a.slice/b.scope" -> "a.slice", "b.scope").
template <class F> bool any_component(std::string_view path, F f) {
    while (!path.empty()) {
        const auto slash = path.find('/');
        const std::string_view part = path.substr(0, slash);
        if (!part.empty() && f(part))
            return true;
        if (slash == path.npos)
            break;
        path.remove_prefix(slash + 1);
    }
    return false;
}

// `prefix` is `path` or one of its ancestors ("/" is everyone's).
bool under(std::string_view path, std::string_view prefix) {
    if (prefix == "/")
        return !path.empty();
    return path.substr(0, prefix.size()) == prefix && (path.size() == prefix.size() || path[prefix.size()] == '/');
}

// The keys the transport attests whenever it knows the caller at all: the uid and groups.
bool matches_ids(const Rule &r, const Caller &c) {
    if (!r.uids.empty() && !has(r.uids, c.uid))
        return false;
    if (!r.gids.empty() && !has(r.gids, c.gid) &&
        std::none_of(c.groups.begin(), c.groups.end(), [&](gid_t g) { return has(r.gids, g); }))
        return false;
    return true;
}

bool on_cgroup(const Rule &r) { return !r.units.empty() || !r.cgroups.empty(); }

bool matches(const Rule &r, const Caller &c) {
    if (!matches_ids(r, c))
        return false;
    if (!r.units.empty() && !any_component(c.cgroup, [&](std::string_view part) {
            return std::find(r.units.begin(), r.units.end(), part) != r.units.end();
        }))
        return false;
    if (!r.cgroups.empty() &&
        std::none_of(r.cgroups.begin(), r.cgroups.end(), [&](const std::string &p) { return under(c.cgroup, p); }))
        return false;
    return true;
}

bool controlled(std::uint32_t qkey) { return qkey & 0x80000000u; }

bool pkey_allowed(const std::vector<std::uint16_t> &pkeys, std::uint16_t pkey) {
    return pkeys.empty() || std::any_of(pkeys.begin(), pkeys.end(),
                                        [&](std::uint16_t p) { return (p & 0x7fff) == (pkey & 0x7fff); });
}

std::string list_text(const std::vector<std::uint16_t> &pkeys) {
    std::string out;
    for (std::uint16_t p : pkeys)
        out += (out.empty() ? "" : ", ") + pkey_text(p);
    return out;
}

// MGID or IP prefixes.
template <class Prefix> std::string list_text(const std::vector<Prefix> &prefixes) {
    std::string out;
    for (const Prefix &p : prefixes)
        out += (out.empty() ? "" : ", ") + p.text();
    return out;
}

// What a rule's group lists allow, for its refusals: "MGIDs in ff15::/16", "IP groups in
// 239.1.0.0/16", or both joined by "or".
std::string groups_text(const Rule &r) {
    std::string out;
    if (!r.mgids.empty())
        out = "MGIDs in " + list_text(r.mgids);
    if (!r.ips.empty())
        out += (out.empty() ? "" : " or ") + std::string("IP groups in ") + list_text(r.ips);
    return out;
}

bool group_allowed(const Rule &r, const JoinAsk &ask) {
    if (r.mgids.empty() && r.ips.empty())
        return true;
    if (std::any_of(r.mgids.begin(), r.mgids.end(), [&](const MgidPrefix &p) { return p.contains(ask.mgid); }))
        return true;
    return ask.ip && std::any_of(r.ips.begin(), r.ips.end(), [&](const IpPrefix &p) { return p.contains(*ask.ip); });
}

std::string states_text(std::uint8_t bits) {
    std::string out;
    for (std::uint8_t b = 1; b & join::all; b <<= 1)
        if (bits & b)
            out += (out.empty() ? "" : ", ") + join_state_name(b);
    return out;
}

std::string qkey_text(std::uint32_t qkey) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", qkey);
    return buf;
}

Refusal denied(const std::string &rule, std::string why, std::string field) {
    return Refusal{Error{Errc::denied, "rule \"" + rule + "\" (config access.rules) " + std::move(why), std::nullopt,
                         PolicyRef{rule, {}, 0}},
                   std::move(field)};
}

// A join by `mgid` inside the named groups' prefix: those MGIDs are the names' (whoever creates
// one first sets its Q_Key and P_Key for every host of the job), so a caller may name one
// directly only where a rule lists it in `mgids`.
Refusal names_prefix_refusal(const Gid &mgid, const std::string &rule) {
    return Refusal{Error{Errc::denied,
                         format_gid(mgid) +
                             " is in the named groups' prefix (config groups.names.prefix): join it by its name, or "
                             "list the prefix in an access rule's \"mgids\" to allow it by MGID",
                         std::nullopt, PolicyRef{rule, {}, 0}},
                   "/mgid"};
}

// The checks that depend on what the join names, not on the SA: the MGID, the join state,
// an asserted P_Key or Q_Key. Returns the refusal, or the reason a named-pkey rule needs one.
std::optional<Refusal> check_ask(const Rule &r, const JoinAsk &ask) {
    if (!is_zero(ask.mgid) && !group_allowed(r, ask))
        return denied(r.name, "allows " + groups_text(r) + " only, and " +
                                  (ask.ip ? format_ip(*ask.ip) + " (MGID " + format_gid(ask.mgid) + ")"
                                          : format_gid(ask.mgid)) +
                                  " is not in them",
                      ask.by_ip ? "/ip" : "/mgid");
    if (ask.join_state & ~r.join_states)
        return denied(r.name, "allows join states " + states_text(r.join_states) + " only, not " +
                                  join_state_name(ask.join_state),
                      "/join_state");
    if (ask.pkey && !pkey_allowed(r.pkeys, *ask.pkey))
        return denied(r.name, "allows P_Keys " + list_text(r.pkeys) + " only, not " + pkey_text(*ask.pkey), "/pkey");
    if (ask.qkey && controlled(*ask.qkey) && !r.controlled_qkeys)
        return denied(r.name, "does not allow controlled Q_Keys (" + qkey_text(*ask.qkey) +
                                  " has its high bit set, which the kernel reserves to CAP_NET_RAW)",
                      "/qkey");
    return std::nullopt;
}

// The first `bits` bits of two 16-byte addresses are equal.
bool same_first_bits(const std::array<std::uint8_t, 16> &a, const std::array<std::uint8_t, 16> &b, unsigned bits) {
    const unsigned whole = bits / 8, rest = bits % 8;
    if (!std::equal(a.begin(), a.begin() + whole, b.begin()))
        return false;
    if (!rest)
        return true;
    const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

// The number after a prefix's '/', in [min, max]; why not otherwise.
std::variant<unsigned, std::string> prefix_length(std::string_view len, unsigned min, unsigned max) {
    unsigned n = 0;
    auto [end, ec] = std::from_chars(len.data(), len.data() + len.size(), n);
    if (ec != std::errc() || end != len.data() + len.size() || len.empty() || (len.size() > 1 && len[0] == '0') ||
        n < min || n > max)
        return "the length after '/' must be a number in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    return n;
}

// `bytes` with every bit from `bit` on cleared: a prefix as it should have been written.
std::array<std::uint8_t, 16> cleared_from(std::array<std::uint8_t, 16> bytes, unsigned bit) {
    for (; bit < 128; ++bit)
        bytes[bit / 8] &= static_cast<std::uint8_t>(~(0x80u >> (bit % 8)));
    return bytes;
}

} // namespace

bool MgidPrefix::contains(const Gid &mgid) const { return same_first_bits(prefix, mgid, length); }

std::string MgidPrefix::text() const { return format_gid(prefix) + "/" + std::to_string(length); }

std::variant<MgidPrefix, std::string> parse_mgid_prefix(std::string_view text) {
    MgidPrefix p;
    const auto slash = text.find('/');
    const auto gid = parse_gid(text.substr(0, slash));
    if (!gid)
        return std::string("\"") + std::string(text.substr(0, slash)) + "\" is not an MGID in IPv6 text form";
    if ((*gid)[0] != 0xff)
        return format_gid(*gid) + " is not a multicast GID (it must start with ff)";
    p.prefix = *gid;
    if (slash != text.npos) {
        auto n = prefix_length(text.substr(slash + 1), 8, 128);
        if (auto *why = std::get_if<std::string>(&n))
            return std::move(*why);
        p.length = std::get<unsigned>(n);
    }
    // Bits after the prefix would be silently ignored: a typo in the address or the length.
    MgidPrefix trimmed = p;
    trimmed.prefix = cleared_from(p.prefix, p.length);
    if (trimmed.prefix != p.prefix)
        return format_gid(p.prefix) + " has bits set after its first " + std::to_string(p.length) + " (did you mean " +
               trimmed.text() + "?)";
    return p;
}

bool IpPrefix::contains(const IpAddress &group) const {
    // An IPv4 prefix's bits follow the 96 of ::ffff:0:0/96, which an IPv6 group never has.
    return same_first_bits(prefix.bytes, group.bytes, prefix.is_v4() ? 96 + length : length);
}

std::string IpPrefix::text() const { return format_ip(prefix) + "/" + std::to_string(length); }

std::variant<IpPrefix, std::string> parse_ip_prefix(std::string_view text) {
    IpPrefix p;
    const auto slash = text.find('/');
    const std::string_view addr = text.substr(0, slash);
    const auto ip = parse_ip(addr);
    if (!ip)
        return std::string("\"") + std::string(addr) + "\" is not an IPv4 or IPv6 address";
    p.prefix = *ip;
    const unsigned max = ip->is_v4() ? 32 : 128, min = ip->is_v4() ? 4 : 8; // 224.0.0.0/4, ff00::/8
    p.length = max;
    if (slash != text.npos) {
        auto n = prefix_length(text.substr(slash + 1), min, max);
        if (auto *why = std::get_if<std::string>(&n))
            return std::move(*why);
        p.length = std::get<unsigned>(n);
    }
    if (!is_multicast_group(*ip))
        return format_ip(*ip) + " is not an IP multicast group (224.0.0.0/4 or ff00::/8)";
    // Bits after the prefix would be silently ignored: a typo in the address or the length.
    IpPrefix trimmed = p;
    trimmed.prefix.bytes = cleared_from(p.prefix.bytes, (ip->is_v4() ? 96 : 0) + p.length);
    if (trimmed.prefix != p.prefix)
        return format_ip(p.prefix) + " has bits set after its first " + std::to_string(p.length) + " (did you mean " +
               trimmed.text() + "?)";
    return p;
}

std::optional<IpAddress> ip_group_on(LinkLayer link_layer, const Gid &mgid) {
    if (link_layer != LinkLayer::ethernet)
        return std::nullopt;
    return roce_ip_group(mgid);
}

std::string pkey_text(std::uint16_t pkey) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%04x", pkey);
    return buf;
}

std::string not_admitted(uid_t uid) {
    return "uid " + std::to_string(uid) +
           " is not allowed to use rdma-mcastd (config access.allow_uids, access.allow_gids)";
}

std::string unidentified(std::string_view why) { return "cannot identify the caller: " + std::string(why); }

bool Policy::admits(const Caller &c) const {
    if (c.uid == 0 || (allow_uids.empty() && allow_gids.empty()))
        return true;
    if (has(allow_uids, c.uid) || has(allow_gids, c.gid))
        return true;
    return std::any_of(c.groups.begin(), c.groups.end(), [&](gid_t g) { return has(allow_gids, g); });
}

const Rule *Policy::match(const Caller &c) const {
    for (const Rule &r : rules) {
        if (!c.cgroup_unattested.empty() && on_cgroup(r) && matches_ids(r, c))
            return nullptr; // needs_cgroup()
        if (matches(r, c))
            return &r;
    }
    return nullptr;
}

const Rule *Policy::needs_cgroup(const Caller &c) const {
    if (c.cgroup_unattested.empty())
        return nullptr;
    for (const Rule &r : rules) {
        if (!matches_ids(r, c))
            continue;
        if (on_cgroup(r))
            return &r;
        return nullptr; // matches on the uid and groups alone: the cgroup decides nothing
    }
    return nullptr;
}

namespace {

Quotas quotas_of(const Quotas &defaults, const Rule *r) {
    Quotas q = defaults;
    if (r) {
        q.memberships_per_uid = r->memberships_per_uid.value_or(q.memberships_per_uid);
        q.creates_per_uid = r->creates_per_uid.value_or(q.creates_per_uid);
    }
    return q;
}

} // namespace

Quotas Policy::quotas_for(const Caller &c) const {
    if (c.uid == 0) { // root has no per-uid quota, only the host's
        Quotas q{};
        q.memberships_per_uid = q.creates_per_uid = q.groups_per_port_per_uid = q.sa_mads_per_second =
            q.sa_mads_burst = 0;
        q.groups_per_port = quotas.groups_per_port;
        return q;
    }
    return quotas_of(quotas, match(c));
}

std::variant<Admission, Refusal> admit(const Policy &policy, const Caller &caller, const JoinAsk &ask) {
    Admission a;
    if (caller.uid == 0) {
        a.rule = kRootLabel;
        return a;
    }
    const Rule *r = policy.match(caller);
    const Quotas q = quotas_of(policy.quotas, r);
    a.memberships_quota = q.memberships_per_uid;
    a.creates_quota = q.creates_per_uid;
    if (policy.rules.empty()) {
        a.rule = kAnyLabel;
        if (ask.names_prefix_by_mgid)
            return names_prefix_refusal(ask.mgid, std::string(kAnyLabel));
        return a;
    }
    if (const Rule *blocked = policy.needs_cgroup(caller))
        return Refusal{Error{Errc::denied,
                             "cannot attest the caller's cgroup, which rule \"" + blocked->name +
                                 "\" (config access.rules) matches on: " + std::string(caller.cgroup_unattested),
                             std::nullopt, PolicyRef{blocked->name, {}, 0}},
                       {}};
    if (!r)
        return Refusal{Error{Errc::denied,
                             "no rule of the access policy (config access.rules) matches uid " +
                                 std::to_string(caller.uid) + ", so it may join nothing",
                             std::nullopt, PolicyRef{std::string(kDenyLabel), {}, 0}},
                       {}};
    if (auto refused = check_ask(*r, ask))
        return *refused;
    // check_ask() let the MGID through a prefix the rule lists; a rule that lists none does
    // not open the named groups' prefix.
    if (ask.names_prefix_by_mgid && r->mgids.empty())
        return names_prefix_refusal(ask.mgid, r->name);
    a.rule = r->name;
    a.controlled_qkeys = r->controlled_qkeys;
    a.pkeys = r->pkeys;
    if (!ask.pkey && r->pkeys.size() == 1)
        a.assert_pkey = r->pkeys.front();
    else if (!ask.pkey && !r->pkeys.empty())
        return denied(r->name, "allows several P_Keys (" + list_text(r->pkeys) + "): the join must name its P_Key",
                      "/pkey");
    const bool sa_assigned = is_zero(ask.mgid);
    const auto right = static_cast<std::uint8_t>(sa_assigned ? Create::sa_assigned : Create::mgid);
    if (!(static_cast<std::uint8_t>(r->create) & right))
        a.no_create = denied(r->name,
                             sa_assigned ? std::string("does not allow creating groups with an SA-assigned MGID")
                                         : "does not allow creating groups, and " + format_gid(ask.mgid) +
                                               " does not exist",
                             sa_assigned ? "/create" : "/mgid");
    else if (!ask.qkey && controlled(ask.create_qkey) && !r->controlled_qkeys)
        a.no_create = denied(r->name, "does not allow controlled Q_Keys, and a create would use the configured " +
                                          qkey_text(ask.create_qkey) + " (groups.create.qkey)",
                             "/qkey");
    if (sa_assigned && a.no_create)
        return *a.no_create; // an SA-assigned MGID is always a create
    return a;
}

std::optional<Refusal> check_record(const Admission &a, const McRecord &record) {
    if (!pkey_allowed(a.pkeys, record.pkey))
        return denied(a.rule, "allows P_Keys " + list_text(a.pkeys) + " only, and group " + format_gid(record.mgid) +
                                  " has " + pkey_text(record.pkey),
                      "/pkey");
    if (controlled(record.qkey) && !a.controlled_qkeys)
        return denied(a.rule, "does not allow controlled Q_Keys, and group " + format_gid(record.mgid) + " has " +
                                  qkey_text(record.qkey) + " (the kernel reserves those to CAP_NET_RAW)",
                      "/qkey");
    return std::nullopt;
}

std::optional<std::string> review(const Policy &policy, const Caller &caller, std::uint8_t join_state,
                                  const McRecord &record, bool sa_assigned, bool names_prefix_by_mgid) {
    JoinAsk ask;
    ask.mgid = sa_assigned ? kZeroGid : record.mgid;
    ask.ip = ip_group_on(record.link_layer, record.mgid);
    ask.names_prefix_by_mgid = names_prefix_by_mgid;
    ask.join_state = join_state;
    ask.pkey = record.pkey;
    ask.qkey = record.qkey;
    const auto out = admit(policy, caller, ask);
    if (const auto *no = std::get_if<Refusal>(&out))
        return no->error.message;
    return std::nullopt;
}

} // namespace mcastd::policy
