// What a client reads: replies and events from the daemon. Tolerant of keys it does not know
// (a newer daemon may add some), strict about the types and ranges of those it does, and
// never throwing: a malformed message is an Error the client can log and drop.
#include "codec.hpp"

namespace mcastd::proto {

using codec::for_each_element;
using json_check::FieldError;
using json_check::json;
using json_check::ObjectReader;

namespace {

std::string owned(std::string_view s) { return std::string(s); }

// ---- results ----

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
        s.sm_guid = codec::read_nullable_guid(p, "sm_guid");
        if (auto n = nullable_uint(p, "sm_act_count", UINT32_MAX))
            s.sm_act_count = static_cast<std::uint32_t>(*n);
        if (auto b = p.boolean("rejoining"))
            s.rejoining = *b;
        else
            p.fail("rejoining", "required key is missing");
        s.last_rejoin = read_last_rejoin(p);
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
    return r;
}

} // namespace

// ---- events ----

Event codec::read_event(const ObjectReader &in, std::string_view name) {
    if (name == "restored") {
        RestoredEvent e;
        e.membership = in.required_uint("membership", 0, UINT64_MAX);
        e.record = codec::read_record(ObjectReader(in.required("record"), in.pointer("record")));
        std::vector<std::string> names;
        for_each_element(in, "changed", [&](const json &v, const std::string &ptr) {
            names.push_back(owned(json_check::check_string(v, ptr)));
        });
        e.changed = changed_fields_from_names(names);
        return e;
    }
    if (name == "lost") {
        LostEvent e;
        e.membership = in.required_uint("membership", 0, UINT64_MAX);
        e.why = codec::read_failure(ObjectReader(in.required("error"), in.pointer("error")));
        return e;
    }
    if (name == "monitor") {
        MonitorEvent e;
        e.kind = in.required_string("kind");
        e.device = in.required_string("device");
        e.port = static_cast<std::uint8_t>(in.required_uint("port", 0, 255));
        e.mgid = codec::read_gid(in, "mgid");
        e.mlid = static_cast<std::uint16_t>(in.required_uint("mlid", 0, 0xffff));
        e.join_state = codec::read_join_state(in, "join_state");
        e.pid = static_cast<pid_t>(in.required_uint("pid", 0, INT32_MAX));
        e.uid = static_cast<uid_t>(in.required_uint("uid", 0, UINT32_MAX));
        e.comm = in.required_string("comm");
        e.message = in.required_string("message");
        e.sa_status = in.uint_as<std::uint16_t>("sa_status", 0, 0xffff);
        return e;
    }
    in.fail("event", json_check::describe_value(json(name)) + " is not an event of protocol 1");
}

std::variant<StatusResult, Error> decode_status_result(std::string_view result_json) {
    return codec::decode_object<StatusResult>(result_json, read_status);
}

} // namespace mcastd::proto
