// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The config's "access" section: who may use the daemon (allow lists), what each caller may join
// (rules) and how much (quotas). config/README.md "Access policy" documents every key.
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/json_check.hpp"
#include "config/readers.hpp"
#include "proto/protocol.hpp"

namespace mcastd::config::detail {

using json_check::FieldError;
using json_check::json;
using json_check::ObjectReader;

namespace {

// (uid_t)-1 and (gid_t)-1 mean "no id" to the kernel.
constexpr std::uint64_t kMaxId = 0xfffffffe;
constexpr std::size_t kMaxName = 64;
constexpr std::uint64_t kMaxQuota = 10000000;

// getpwnam_r / getgrnam_r with a buffer that grows: some NSS modules need more than sysconf says.
template <class Entry, class Lookup> std::optional<Entry> lookup(const std::string &name, Lookup fn) {
    std::vector<char> buf(1024);
    for (;;) {
        Entry e{};
        Entry *found = nullptr;
        const int r = fn(name.c_str(), &e, buf.data(), buf.size(), &found);
        if (r == ERANGE && buf.size() < (1u << 20)) {
            buf.resize(buf.size() * 2);
            continue;
        }
        return found ? std::optional<Entry>(e) : std::nullopt;
    }
}

} // namespace

std::optional<gid_t> group_id(const std::string &name) {
    const auto g = lookup<group>(name, ::getgrnam_r);
    return g ? std::optional<gid_t>(g->gr_gid) : std::nullopt;
}

namespace {

// The ids of a "users" or "groups" list: a number is an id, a string a name the host knows.
template <class Id>
std::vector<Id> read_ids(const ObjectReader &in, std::string_view key, bool groups) {
    std::vector<Id> out;
    each_element(in, key, [&](const json &v, const std::string &ptr) {
        Id id = 0;
        if (v.is_string()) {
            const std::string name(v.string());
            if (groups) {
                const auto g = group_id(name);
                if (!g)
                    throw FieldError(ptr, "no group \"" + name + "\" on this host (getgrnam)");
                id = static_cast<Id>(*g);
            } else {
                const auto p = lookup<passwd>(name, ::getpwnam_r);
                if (!p)
                    throw FieldError(ptr, "no user \"" + name + "\" on this host (getpwnam)");
                id = static_cast<Id>(p->pw_uid);
            }
        } else if (v.is_number_integer()) {
            id = static_cast<Id>(json_check::check_uint(v, ptr, 0, kMaxId));
        } else {
            throw FieldError(ptr, json_check::describe_value(v) + std::string(" is neither a ") +
                                      (groups ? "gid nor a group name" : "uid nor a user name"));
        }
        out.push_back(id);
    });
    return out;
}

std::vector<std::string> read_strings(const ObjectReader &in, std::string_view key,
                                      void (*check)(std::string_view, const std::string &)) {
    std::vector<std::string> out;
    each_element(in, key, [&](const json &v, const std::string &ptr) {
        const std::string_view s = json_check::check_string(v, ptr);
        check(s, ptr);
        out.emplace_back(s);
    });
    return out;
}

// A unit name as it appears in a cgroup path: "slurmstepd.scope", "tenant-a.slice".
void check_unit(std::string_view s, const std::string &ptr) {
    const auto dot = s.rfind('.');
    const std::string_view suffix = dot == s.npos ? std::string_view() : s.substr(dot);
    if (dot == 0 || s.find('/') != s.npos || (suffix != ".service" && suffix != ".scope" && suffix != ".slice"))
        throw FieldError(ptr, json_check::describe_string(s) +
                                  " is not a unit name ending in .service, .scope or .slice");
}

// A cgroup v2 path as /proc/PID/cgroup shows it: absolute, no trailing '/' (but "/" itself).
void check_cgroup(std::string_view s, const std::string &ptr) {
    if (s.empty() || s.front() != '/' || (s.size() > 1 && s.back() == '/') || s.find("//") != s.npos)
        throw FieldError(ptr, json_check::describe_string(s) +
                                  " is not a cgroup path such as \"/system.slice/tenant-a.slice\"");
}

std::uint8_t read_join_states(const ObjectReader &in) {
    const json *list = in.array("join_states");
    if (!list)
        return join::all;
    if (list->empty())
        in.fail("join_states", "is empty, which would allow nothing; leave the key out to allow every join state");
    std::uint8_t bits = 0;
    each_element(in, "join_states", [&](const json &v, const std::string &ptr) {
        const auto bit = proto::join_state_from_name(json_check::check_string(v, ptr));
        if (!bit)
            throw FieldError(ptr, json_check::describe_value(v) +
                                      " is not a join state (full, nonmember, sendonly-nonmember, sendonly-full)");
        bits |= *bit;
    });
    return bits;
}

policy::Create read_create(const ObjectReader &in) {
    const json *v = in.find("create");
    if (!v)
        return policy::Create::none;
    if (v->is_boolean())
        return v->boolean() ? policy::Create::any : policy::Create::none;
    if (v->is_string() && v->string() == "mgid")
        return policy::Create::mgid;
    if (v->is_string() && v->string() == "sa-assigned")
        return policy::Create::sa_assigned;
    in.fail("create", json_check::describe_value(*v) + " is not true, false, \"mgid\" or \"sa-assigned\"");
}

policy::Rule read_rule(const ObjectReader &in, std::size_t index, const std::vector<policy::Rule> &before) {
    in.require_only({"name", "users", "groups", "units", "cgroups", "mgids", "ips", "pkeys", "join_states", "create",
                     "controlled_qkeys", "memberships_per_uid", "creates_per_uid"});
    policy::Rule r;
    if (auto name = in.string("name")) {
        if (name->empty() || name->size() > kMaxName)
            in.fail("name", "must be 1 to " + std::to_string(kMaxName) + " bytes");
        if (std::find(std::begin(policy::kReservedLabels), std::end(policy::kReservedLabels), *name) !=
            std::end(policy::kReservedLabels))
            in.fail("name", "\"" + std::string(*name) + "\" is what list shows for memberships no rule admitted");
        for (std::size_t j = 0; j < before.size(); ++j)
            if (before[j].name == *name)
                in.fail("name", "\"" + std::string(*name) + "\" is already the name of /access/rules/" +
                                    std::to_string(j));
        r.name = *name;
    } else {
        r.name = "access.rules[" + std::to_string(index) + "]";
    }
    r.uids = read_ids<uid_t>(in, "users", false);
    r.gids = read_ids<gid_t>(in, "groups", true);
    r.units = read_strings(in, "units", check_unit);
    r.cgroups = read_strings(in, "cgroups", check_cgroup);
    each_element(in, "mgids", [&](const json &v, const std::string &ptr) {
        auto p = policy::parse_mgid_prefix(json_check::check_string(v, ptr));
        if (auto *why = std::get_if<std::string>(&p))
            throw FieldError(ptr, *why);
        r.mgids.push_back(std::get<policy::MgidPrefix>(p));
    });
    each_element(in, "ips", [&](const json &v, const std::string &ptr) {
        auto p = policy::parse_ip_prefix(json_check::check_string(v, ptr));
        if (auto *why = std::get_if<std::string>(&p))
            throw FieldError(ptr, *why);
        r.ips.push_back(std::get<policy::IpPrefix>(p));
    });
    each_element(in, "pkeys",
                 [&](const json &v, const std::string &ptr) { r.pkeys.push_back(pkey_value(v, ptr)); });
    r.join_states = read_join_states(in);
    r.create = read_create(in);
    if (auto v = in.boolean("controlled_qkeys"))
        r.controlled_qkeys = *v;
    if (auto v = in.uint("memberships_per_uid", 0, kMaxQuota))
        r.memberships_per_uid = *v;
    if (auto v = in.uint("creates_per_uid", 0, kMaxQuota))
        r.creates_per_uid = *v;
    return r;
}

} // namespace

policy::Policy read_access(const ObjectReader &root) {
    policy::Policy p;
    const auto in = section(root, "access");
    if (!in)
        return p;
    in->require_only({"allow_uids", "allow_gids", "rules", "quotas"});
    p.allow_uids = read_ids<uid_t>(*in, "allow_uids", false);
    p.allow_gids = read_ids<gid_t>(*in, "allow_gids", true);
    if (const json *rules = in->array("rules")) {
        std::size_t i = 0;
        for (const json &v : *rules) {
            p.rules.push_back(read_rule(ObjectReader(v, json_check::pointer_to(in->pointer("rules"), i)), i, p.rules));
            ++i;
        }
    }
    if (const auto q = section(*in, "quotas")) {
        q->require_only({"memberships_per_uid", "creates_per_uid", "groups_per_port", "groups_per_port_per_uid",
                         "sa_mads_per_second", "sa_mads_burst"});
        if (auto v = q->uint("memberships_per_uid", 0, kMaxQuota))
            p.quotas.memberships_per_uid = *v;
        if (auto v = q->uint("creates_per_uid", 0, kMaxQuota))
            p.quotas.creates_per_uid = *v;
        // No fabric has more than 16,383 MLIDs (0xC000-0xFFFE).
        if (auto v = q->uint("groups_per_port", 0, 16383))
            p.quotas.groups_per_port = *v;
        if (auto v = q->uint("groups_per_port_per_uid", 0, 16383))
            p.quotas.groups_per_port_per_uid = *v;
        // At most the port-wide cap (sa.max_rate's range): a uid's share cannot exceed the port.
        if (auto v = q->uint("sa_mads_per_second", 0, 100000))
            p.quotas.sa_mads_per_second = *v;
        if (auto v = q->uint("sa_mads_burst", 1, kMaxQuota))
            p.quotas.sa_mads_burst = *v;
    }
    return p;
}

} // namespace mcastd::config::detail
