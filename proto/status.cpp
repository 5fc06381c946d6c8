// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `status`, both ways: the request (it has no keys of its own) and its result, the daemon's
// ports, their SMs and re-joins, its counters and each uid's usage against its quotas (the
// daemon's encoder, the client's decoder).
#include "codec.hpp"

#include <algorithm>
#include <cstdio>

namespace mcastd::proto {

using codec::for_each_element;
using json_check::json;
using json_check::ObjectReader;

namespace codec {

Status decode_status_request(const ObjectReader &in) {
    in.require_only({}, kEnvelopeKeys);
    return Status{};
}

void write_request(JsonWriter &, const Status &) {}

// ---- the result: the daemon writes ----

namespace {

// A GUID as status shows it: "0x" and 16 hex digits, "0x0002c90300000001".
std::string guid_text(std::uint64_t guid) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(guid));
    return buf;
}

// `key`: the value, or null when there is none.
template <class T> void write_nullable(JsonWriter &w, std::string_view key, const std::optional<T> &v) {
    w.key(key);
    if (v)
        w.value(*v);
    else
        w.null();
}

void write_port_status(JsonWriter &w, const PortStatus &p) {
    w.begin_object();
    w.member("device", std::string_view(p.device));
    w.member("port", p.port);
    w.member("state", std::string_view(p.state));
    w.member("lid", p.lid);
    w.member("sm_lid", p.sm_lid);
    w.member("sm_sl", p.sm_sl);
    w.key("port_gid");
    write_gid(w, p.port_gid);
    w.member("link_layer", std::string_view(p.link_layer));
    w.member("rate_gbps", p.rate_gbps);
    w.member("groups", p.groups);
    w.member("mtu", p.mtu);
    w.key("sm_guid");
    if (p.sm_guid)
        w.value(std::string_view(guid_text(*p.sm_guid)));
    else
        w.null();
    write_nullable(w, "sm_act_count", p.sm_act_count);
    w.member("rejoining", p.rejoining);
    w.key("last_rejoin");
    if (const auto &r = p.last_rejoin) {
        w.begin_object();
        w.member("reason", std::string_view(r->reason));
        w.member("started_ago_s", r->started_ago_s);
        write_nullable(w, "duration_s", r->duration_s);
        w.member("groups", r->groups);
        w.end_object();
    } else {
        w.null();
    }
    w.member("max_groups", p.max_groups);
    if (const auto &c = p.sa) {
        w.key("sa");
        w.begin_object();
        w.member("window", c->window);
        w.member("slow_start", c->slow_start);
        write_nullable(w, "srtt_ms", c->srtt_ms);
        write_nullable(w, "timeout_ms", c->timeout_ms);
        w.end_object();
    }
    w.key("memberships");
    write_join_state_counts(w, p.memberships);
    w.member("rejoins", p.rejoins);
    w.end_object();
}

void write_user_usage(JsonWriter &w, const UserUsage &u) {
    w.begin_object();
    w.member("uid", std::uint64_t{u.uid});
    w.member("user", std::string_view(u.user));
    w.member("memberships", u.memberships);
    w.member("memberships_quota", u.memberships_quota);
    w.member("creates", u.creates);
    w.member("creates_quota", u.creates_quota);
    w.member("flagged", u.flagged);
    w.member("clients", u.clients);
    w.member("clients_quota", u.clients_quota);
    w.member("monitors", u.monitors);
    w.member("monitors_quota", u.monitors_quota);
    w.member("queued_bytes", u.queued_bytes);
    w.member("queued_bytes_quota", u.queued_bytes_quota);
    w.member("groups_per_port", u.groups_per_port);
    w.member("groups_per_port_quota", u.groups_per_port_quota);
    w.member("sa_tokens", u.sa_tokens);
    w.member("sa_mads_per_second", u.sa_mads_per_second);
    w.end_object();
}

} // namespace

void write_result(JsonWriter &w, const StatusResult &r) {
    w.member("daemon", std::string_view(r.daemon));
    w.member("protocol", r.protocol);
    w.member("uptime_s", r.uptime_s);
    w.member("clients", r.clients);
    w.key("ports");
    w.begin_array();
    for (const PortStatus &p : r.ports)
        write_port_status(w, p);
    w.end_array();
    const Counters &c = r.counters;
    w.key("counters");
    w.begin_object();
    w.member("sa_mads_sent", c.sa_mads_sent);
    w.member("sa_retransmits", c.sa_retransmits);
    w.member("sa_timeouts", c.sa_timeouts);
    w.member("sa_bounces", c.sa_bounces);
    w.member("joins", c.joins);
    w.member("joins_local", c.joins_local);
    w.member("joins_failed", c.joins_failed);
    w.member("leaves", c.leaves);
    w.member("sa_sets", c.sa_sets);
    w.member("sa_deletes", c.sa_deletes);
    w.member("sa_gets", c.sa_gets);
    w.member("sa_responses", c.sa_responses);
    w.member("sa_late", c.sa_late);
    w.member("sa_amplification", c.sa_amplification);
    w.member("restored", c.restored);
    w.member("lost", c.lost);
    w.end_object();
    w.key("users");
    w.begin_array();
    for (const UserUsage &u : r.users)
        write_user_usage(w, u);
    w.end_array();
    w.key("refused");
    w.begin_object();
    for (const RefusalCount &n : r.refused)
        w.member(n.reason, n.count);
    w.end_object();
}

} // namespace codec

// ---- the result: the client reads ----

namespace {

// A required key that is null (nullopt) or guid_text()'s form.
std::optional<std::uint64_t> read_nullable_guid(const ObjectReader &in, std::string_view key) {
    const json &v = in.required(key);
    if (v.is_null())
        return std::nullopt;
    const auto text = json_check::check_string(v, in.pointer(key));
    const auto hex_digit = [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    };
    bool ok = text.size() == 18 && text.substr(0, 2) == "0x";
    for (std::size_t i = 2; ok && i < text.size(); ++i)
        ok = hex_digit(text[i]);
    if (!ok)
        in.fail(key, json_check::describe_value(v) + " is not a GUID (\"0x\" and 16 hex digits)");
    return std::stoull(std::string(text.substr(2)), nullptr, 16);
}

double required_number(const ObjectReader &in, std::string_view key) {
    if (auto v = in.number(key))
        return *v;
    in.fail(key, "required key is missing");
}

// A required key whose value may be null (nullopt).
std::optional<std::uint64_t> nullable_uint(const ObjectReader &in, std::string_view key,
                                           std::uint64_t hi) {
    if (in.required(key).is_null())
        return std::nullopt;
    return in.uint(key, 0, hi);
}

std::optional<double> nullable_number(const ObjectReader &in, std::string_view key) {
    if (in.required(key).is_null())
        return std::nullopt;
    return in.number(key);
}

std::optional<RejoinStatus> read_last_rejoin(const ObjectReader &port) {
    const json &v = port.required("last_rejoin");
    if (v.is_null())
        return std::nullopt;
    const ObjectReader in(v, port.pointer("last_rejoin"));
    RejoinStatus r;
    r.reason = in.required_string("reason");
    r.started_ago_s = required_number(in, "started_ago_s");
    r.duration_s = nullable_number(in, "duration_s");
    r.groups = in.required_uint("groups", 0, UINT64_MAX);
    return r;
}

StatusResult read_status(const ObjectReader &in) {
    StatusResult r;
    r.daemon = in.required_string("daemon");
    r.protocol = static_cast<unsigned>(in.required_uint("protocol", 0, UINT32_MAX));
    r.uptime_s = required_number(in, "uptime_s");
    r.clients = in.required_uint("clients", 0, UINT64_MAX);
    for_each_element(in, "ports", [&](const json &v, const std::string &ptr) {
        const ObjectReader p(v, ptr);
        PortStatus s;
        s.device = p.required_string("device");
        s.port = static_cast<std::uint8_t>(p.required_uint("port", 0, 255));
        s.state = p.required_string("state");
        s.lid = static_cast<std::uint16_t>(p.required_uint("lid", 0, 0xffff));
        s.sm_lid = static_cast<std::uint16_t>(p.required_uint("sm_lid", 0, 0xffff));
        s.sm_sl = static_cast<std::uint8_t>(p.required_uint("sm_sl", 0, 15));
        s.port_gid = codec::read_gid(p, "port_gid");
        s.link_layer = p.required_string("link_layer");
        s.rate_gbps = required_number(p, "rate_gbps");
        s.groups = p.required_uint("groups", 0, UINT64_MAX);
        s.mtu = static_cast<std::uint32_t>(p.required_uint("mtu", 0, 4096));
        s.sm_guid = read_nullable_guid(p, "sm_guid");
        if (auto n = nullable_uint(p, "sm_act_count", UINT32_MAX))
            s.sm_act_count = static_cast<std::uint32_t>(*n);
        s.rejoining = p.required_boolean("rejoining");
        s.last_rejoin = read_last_rejoin(p);
        s.max_groups = p.uint("max_groups", 0, UINT64_MAX).value_or(0); // absent: older daemon
        if (const json *sa = p.object("sa")) { // absent: congestion control off, or older
            const ObjectReader c(*sa, p.pointer("sa"));
            SaCongestion cc;
            cc.window = required_number(c, "window");
            cc.slow_start = c.required_boolean("slow_start");
            cc.srtt_ms = nullable_number(c, "srtt_ms");
            cc.timeout_ms = nullable_number(c, "timeout_ms");
            s.sa = cc;
        }
        if (p.has("memberships")) // absent from an older daemon
            s.memberships = codec::read_join_state_counts<std::uint64_t>(p, "memberships");
        s.rejoins = p.uint("rejoins", 0, UINT64_MAX).value_or(0);
        r.ports.push_back(std::move(s));
    });
    const ObjectReader c(in.required("counters"), in.pointer("counters"));
    Counters &n = r.counters;
    n.sa_mads_sent = c.required_uint("sa_mads_sent", 0, UINT64_MAX);
    n.sa_retransmits = c.required_uint("sa_retransmits", 0, UINT64_MAX);
    n.sa_timeouts = c.required_uint("sa_timeouts", 0, UINT64_MAX);
    n.sa_bounces = c.required_uint("sa_bounces", 0, UINT64_MAX);
    n.joins = c.required_uint("joins", 0, UINT64_MAX);
    n.joins_local = c.required_uint("joins_local", 0, UINT64_MAX);
    n.joins_failed = c.required_uint("joins_failed", 0, UINT64_MAX);
    n.leaves = c.required_uint("leaves", 0, UINT64_MAX);
    n.sa_sets = c.uint("sa_sets", 0, UINT64_MAX).value_or(0);
    n.sa_deletes = c.uint("sa_deletes", 0, UINT64_MAX).value_or(0);
    n.sa_gets = c.uint("sa_gets", 0, UINT64_MAX).value_or(0);
    n.sa_responses = c.uint("sa_responses", 0, UINT64_MAX).value_or(0);
    n.sa_late = c.uint("sa_late", 0, UINT64_MAX).value_or(0);
    n.sa_amplification = c.number("sa_amplification").value_or(0);
    n.restored = c.uint("restored", 0, UINT64_MAX).value_or(0);
    n.lost = c.uint("lost", 0, UINT64_MAX).value_or(0);
    // Absent from a daemon older than the access policy; an entry, once there, is complete.
    if (in.has("users"))
        for_each_element(in, "users", [&](const json &v, const std::string &ptr) {
            const ObjectReader u(v, ptr);
            UserUsage usage;
            usage.uid = static_cast<uid_t>(u.required_uint("uid", 0, UINT32_MAX));
            usage.user = u.required_string("user");
            usage.memberships = u.required_uint("memberships", 0, UINT64_MAX);
            usage.memberships_quota = u.required_uint("memberships_quota", 0, UINT64_MAX);
            usage.creates = u.required_uint("creates", 0, UINT64_MAX);
            usage.creates_quota = u.required_uint("creates_quota", 0, UINT64_MAX);
            usage.flagged = u.required_uint("flagged", 0, UINT64_MAX);
            // The shares are absent from a daemon older than them.
            usage.clients = u.uint("clients", 0, UINT64_MAX).value_or(0);
            usage.clients_quota = u.uint("clients_quota", 0, UINT64_MAX).value_or(0);
            usage.monitors = u.uint("monitors", 0, UINT64_MAX).value_or(0);
            usage.monitors_quota = u.uint("monitors_quota", 0, UINT64_MAX).value_or(0);
            usage.queued_bytes = u.uint("queued_bytes", 0, UINT64_MAX).value_or(0);
            usage.queued_bytes_quota = u.uint("queued_bytes_quota", 0, UINT64_MAX).value_or(0);
            usage.groups_per_port = u.uint("groups_per_port", 0, UINT64_MAX).value_or(0);
            usage.groups_per_port_quota = u.uint("groups_per_port_quota", 0, UINT64_MAX).value_or(0);
            usage.sa_tokens = u.number("sa_tokens").value_or(0);
            usage.sa_mads_per_second = u.uint("sa_mads_per_second", 0, UINT64_MAX).value_or(0);
            r.users.push_back(std::move(usage));
        });
    if (const json *refused = in.object("refused")) { // absent from an older daemon
        const ObjectReader counts(*refused, in.pointer("refused"));
        for (const json &item : *refused)
            r.refused.push_back(RefusalCount{std::string(item.key()),
                                             counts.required_uint(item.key(), 0, UINT64_MAX)});
        // In key order, whatever order the daemon wrote them in.
        std::sort(r.refused.begin(), r.refused.end(),
                  [](const RefusalCount &x, const RefusalCount &y) { return x.reason < y.reason; });
    }
    return r;
}

} // namespace

std::variant<StatusResult, Error> decode_status_result(const json_check::json &result) {
    return codec::decode_value<StatusResult>(result, read_status);
}

} // namespace mcastd::proto
