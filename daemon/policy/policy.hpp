// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The access policy (config `access`, config/README.md "Access policy"): who may use the
// daemon, which groups each caller may join or create and how, and how many. One policy for
// every transport: the socket and D-Bus identify callers by the kernel's or the bus's
// credentials and both ask admit() before a join reaches the engine.
//
// Pure: no I/O, no clock. User and group names are resolved to ids when the config is read;
// the caller's cgroup path is read by the transport (frontend/caller.hpp).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "common/gid.hpp"
#include "common/record.hpp"
#include "common/request.hpp"

namespace mcastd::policy {

// "ff15:a:1::/48": the MGIDs whose first `length` bits are those of `prefix`.
struct MgidPrefix {
    Gid prefix{};
    unsigned length = 128;
    bool contains(const Gid &mgid) const;
    std::string text() const; // as written in the config, normalised
    bool operator==(const MgidPrefix &) const = default;
};
// Parses "ff15:a:1::/48" or a whole MGID ("ff15::1" is /128). Returns why not on failure.
std::variant<MgidPrefix, std::string> parse_mgid_prefix(std::string_view text);

// "239.1.0.0/16" or "ff3e::/16": the IP multicast groups whose first `length` bits (of the IPv4
// address's 32, or the IPv6 address's 128) are those of `prefix`. An IPv4 prefix is kept in the
// IPv4-mapped form (common/roce_address.hpp's IpAddress), its length counted in IPv4 bits.
struct IpPrefix {
    IpAddress prefix{};
    unsigned length = 128;
    bool contains(const IpAddress &group) const;
    std::string text() const; // as written in the config, normalised
    bool operator==(const IpPrefix &) const = default;
};
// Parses "239.1.0.0/16", "ff3e::/16" or a whole group ("239.1.2.3" is /32, "ff3e::1" /128): a
// multicast prefix (224.0.0.0/4, ff00::/8) with no bits set past its length. Returns why not.
std::variant<IpPrefix, std::string> parse_ip_prefix(std::string_view text);

// Which creates a rule allows: a group named by the caller's MGID, one the SA assigns an
// MGID to, or both.
enum class Create : std::uint8_t { none = 0, mgid = 1, sa_assigned = 2, any = 3 };

// Labels `list` shows for memberships no configured rule admitted; rule names may not take them.
inline constexpr std::string_view kRootLabel = "root";         // uid 0: always allowed
inline constexpr std::string_view kAnyLabel = "any";           // no rules configured
inline constexpr std::string_view kStaticLabel = "static";     // the daemon's own static groups
inline constexpr std::string_view kRestoredLabel = "restored"; // from a state file that did not say
inline constexpr std::string_view kDenyLabel = "default-deny"; // rules exist and none matches
inline constexpr std::string_view kReservedLabels[] = {kRootLabel, kAnyLabel, kStaticLabel, kRestoredLabel,
                                                       kDenyLabel};

struct Rule {
    std::string name; // errors and `list` name it so: its "name", else "access.rules[N]"

    // Who. Every key given must match; a rule with none matches every caller.
    std::vector<uid_t> uids{};        // "users"
    std::vector<gid_t> gids{};        // "groups": the primary group or a supplementary one
    std::vector<std::string> units{}; // "units": a component of the caller's cgroup path
    std::vector<std::string> cgroups{}; // "cgroups": the path or one of its ancestors

    // What. A list left empty allows anything.
    // The groups. Either list given, a group must be in one of them: its MGID in `mgids`, or, for
    // a join on an Ethernet (RoCE) port, its IP group in `ips` (doc/architecture.md §11).
    std::vector<MgidPrefix> mgids{};      // MGIDs the caller names (not SA-assigned ones)
    std::vector<IpPrefix> ips{};          // IP groups of RoCE joins, by their MGID's mapping
    std::vector<std::uint16_t> pkeys{};   // compared on the low 15 bits, as the SA does
    std::uint8_t join_states = join::all; // JoinState bits a join may ask for
    Create create = Create::none;
    bool controlled_qkeys = false; // Q_Keys with the high bit set (the kernel asks CAP_NET_RAW)

    // The per-uid quotas of the callers this rule admits; unset: access.quotas'.
    std::optional<std::size_t> memberships_per_uid{}, creates_per_uid{};

    bool operator==(const Rule &) const = default;
};

// 0 is "no quota". Why the defaults: config/README.md "Quotas".
struct Quotas {
    std::size_t memberships_per_uid = 4096;
    std::size_t creates_per_uid = 64;
    std::size_t groups_per_port = 1024;        // the host's, root's joins included
    std::size_t groups_per_port_per_uid = 256; // one uid's share of them
    // One uid's SA MADs (probes, Sets, Deletes its requests cost): a token bucket. 0: none.
    std::size_t sa_mads_per_second = 50;
    std::size_t sa_mads_burst = 200;
    bool operator==(const Quotas &) const = default;
};

// Who is asking, as the transport learned it (never as the caller says). An id the transport
// could not attest is kUnknownUid or kUnknownGid, which nothing matches.
struct Caller {
    uid_t uid = kUnknownUid;
    gid_t gid = kUnknownGid;       // the primary gid; kUnknownGid where only `groups` is known
    std::span<const gid_t> groups; // supplementary (on D-Bus: every gid the bus gives)
    std::string_view cgroup;       // "/user.slice/user-1000.slice/session-2.scope"; "" unknown
    // Why the transport could not attest the cgroup ("" when it could): a rule with `units` or
    // `cgroups` cannot be judged then, and a join that reaches one is refused with this reason.
    std::string_view cgroup_unattested{};
};

struct Policy {
    // Who may use the daemon at all (empty lists: anyone who reached it). root always may.
    std::vector<uid_t> allow_uids;
    std::vector<gid_t> allow_gids;
    // What they may join, first match wins. None: everything, as before rules existed.
    std::vector<Rule> rules;
    Quotas quotas;

    bool admits(const Caller &c) const;
    // The first rule that matches the caller; nullptr when none does, or when the search
    // reaches a rule that needs the caller's cgroup and the transport could not attest it.
    const Rule *match(const Caller &c) const;
    // That rule: the first whose other keys match the caller and which has `units` or
    // `cgroups`, when the caller's cgroup is not attested; nullptr otherwise. The decision
    // depends on the cgroup from there on.
    const Rule *needs_cgroup(const Caller &c) const;
    // The per-uid quotas that hold for the caller (its rule's, else access.quotas'; none for
    // root). groups_per_port is the host's and always access.quotas'.
    Quotas quotas_for(const Caller &c) const;
    bool operator==(const Policy &) const = default;
};

// A join as the rules see it, before the SA is asked.
struct JoinAsk {
    Gid mgid{}; // all zero: a create with an SA-assigned MGID
    // The MGID is in the named groups' prefix (groups.names) and the join names it by `mgid`, not
    // by its name: refused unless the rule lists it in `mgids` (nobody squats a name's group).
    bool names_prefix_by_mgid = false;
    std::uint8_t join_state = join::full;
    std::optional<std::uint16_t> pkey;
    std::optional<std::uint32_t> qkey;
    std::uint32_t create_qkey = 0; // what a create uses when the join asserts no Q_Key
    // On an Ethernet (RoCE) port: the IP group the MGID stands for (roce_ip_group), however the
    // join named it (an "ip", or the MGID itself). Unset on InfiniBand ports: `ips` never match.
    std::optional<IpAddress> ip{};
    bool by_ip = false; // the join named its group by "ip": a refusal names that field
};

// A refusal: the error (denied, with PolicyRef) and the request field at fault ("/mgid").
struct Refusal {
    Error error;
    std::string field;
};

// What a caller's join may do under the policy in force.
struct Admission {
    std::string rule; // what `list` shows: the rule's name, or one of the labels above
    // The rule's one P_Key, which the daemon asserts for a join that named none: the SA then
    // refuses a group of another P_Key.
    std::optional<std::uint16_t> assert_pkey;
    // Why this join may not create its group, if it may not (the SA is asked first: the
    // group may exist).
    std::optional<Refusal> no_create;
    std::size_t memberships_quota = 0, creates_quota = 0; // 0: none
    bool controlled_qkeys = true; // may the group's Q_Key be controlled
    std::vector<std::uint16_t> pkeys; // the group's P_Key must be one of these (empty: any)
};

std::variant<Admission, Refusal> admit(const Policy &policy, const Caller &caller, const JoinAsk &ask);

// After the SA answered: the group's record against what the admission allowed (P_Key and
// controlled Q_Key, which a join of an existing group learns only now).
std::optional<Refusal> check_record(const Admission &a, const McRecord &record);

// The ask's `ip` for a group on a port of `link_layer`: the IP group of `mgid` on Ethernet.
std::optional<IpAddress> ip_group_on(LinkLayer link_layer, const Gid &mgid);

// Would the policy admit this membership's join now (with the group's P_Key and Q_Key as
// asserted)? For a reload: why not, or nullopt. The record's link_layer says whether its MGID
// is an IP group's. `sa_assigned`: the join asked the SA for an
// MGID, so it is judged as that create, not by the MGID it got.
std::optional<std::string> review(const Policy &policy, const Caller &caller, std::uint8_t join_state,
                                  const McRecord &record, bool sa_assigned, bool names_prefix_by_mgid = false);

// "0x8001"
std::string pkey_text(std::uint16_t pkey);

// Why a caller the allow lists (access.allow_uids, access.allow_gids) do not admit is refused:
// one sentence for every transport.
std::string not_admitted(uid_t uid);

// Why a caller whose identity cannot be attested is refused (never judged by what the daemon
// could not read): "cannot identify the caller: " and `why`. One sentence for every transport.
std::string unidentified(std::string_view why);

} // namespace mcastd::policy
