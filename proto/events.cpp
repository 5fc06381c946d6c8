// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Events, both ways: restored, lost and monitor (the daemon's encoder, the client's decoder),
// the record keys a restored event's `changed` lists, and the monitor request that asks for
// monitor events (the daemon's strict decoder, the client's encoder).
#include "codec.hpp"

namespace mcastd::proto {

using codec::for_each_element;
using json_check::json;
using json_check::ObjectReader;

namespace {

// Record key names of field:: bits, in the order `changed` lists them: "mlid" first (the one
// that forces a client to detach and re-attach), then the RECORD table's order.
struct FieldName {
    std::uint64_t bits;
    std::string_view name;
};
constexpr std::uint64_t kMtuBits = field::mtu | field::mtu_selector;
constexpr std::uint64_t kRateBits = field::rate | field::rate_selector;
constexpr std::array<FieldName, 16> kChangedNames{{
    {field::mlid, "mlid"},
    {field::mgid, "mgid"},
    {field::port_gid, "port_gid"},
    {field::qkey, "qkey"},
    {field::pkey, "pkey"},
    {field::sl, "sl"},
    {kMtuBits, "mtu"},
    {kRateBits, "rate"},
    {kRateBits, "rate_gbps"},
    {field::flow_label, "flow_label"},
    {field::tclass, "traffic_class"},
    {field::hop_limit, "hop_limit"},
    {field::scope, "scope"},
    {field::join_state, "join_state"},
    {field::sgid_index, "sgid_index"},
    {field::netdev, "netdev"},
}};

} // namespace

std::vector<std::string> changed_field_names(std::uint64_t fields) {
    std::vector<std::string> out;
    for (const auto &f : kChangedNames)
        if (fields & f.bits)
            out.emplace_back(f.name);
    return out;
}

std::uint64_t changed_fields_from_names(const std::vector<std::string> &names) {
    std::uint64_t bits = 0;
    for (const auto &n : names)
        for (const auto &f : kChangedNames)
            if (f.name == n) // the value bit, not the selector's: what a record key shows
                bits |= f.bits == kMtuBits    ? field::mtu
                        : f.bits == kRateBits ? field::rate
                                              : f.bits;
    return bits;
}

// ---- the monitor request ----

namespace codec {

Monitor decode_monitor_request(const ObjectReader &in) {
    in.require_only({"enable"}, kEnvelopeKeys);
    return Monitor{in.boolean("enable").value_or(true)};
}

void write_request(JsonWriter &w, const Monitor &m) { w.member("enable", m.enable); }

} // namespace codec

// ---- events: the daemon writes ----

namespace {

struct EventWriter {
    JsonWriter &w;

    void operator()(const RestoredEvent &e) const {
        w.member("event", "restored");
        w.member("membership", e.membership);
        w.key("record");
        codec::write_record(w, e.record);
        w.key("changed");
        w.begin_array();
        for (const auto &f : kChangedNames)
            if (e.changed & f.bits)
                w.value(f.name);
        w.end_array();
    }
    void operator()(const LostEvent &e) const {
        w.member("event", "lost");
        w.member("membership", e.membership);
        w.key("error");
        codec::write_failure(w, e.why);
    }
    void operator()(const MonitorEvent &e) const {
        w.member("event", "monitor");
        w.member("kind", std::string_view(e.kind));
        w.member("device", std::string_view(e.device));
        w.member("port", e.port);
        w.key("mgid");
        codec::write_gid(w, e.mgid);
        w.member("mlid", e.mlid);
        w.key("join_state");
        codec::write_join_state(w, e.join_state);
        w.member("pid", std::int64_t{e.pid});
        w.member("uid", std::uint64_t{e.uid});
        w.member("comm", std::string_view(e.comm));
        w.member("message", std::string_view(e.message));
        if (e.sa_status)
            w.member("sa_status", *e.sa_status);
        if (e.dropped)
            w.member("dropped", *e.dropped);
        if (e.roce)
            codec::write_roce_source(w, *e.roce);
    }
    void operator()(const StoppingEvent &e) const {
        w.member("event", "stopping");
        w.member("message", std::string_view(e.message));
    }
};

} // namespace

MonitorEvent dropped_monitor_event(std::uint64_t count) {
    MonitorEvent e;
    e.kind = "dropped";
    e.dropped = count;
    e.message = "dropped " + std::to_string(count) +
                " monitor event(s) this client did not read in time (config limits.max_monitor_queued_bytes)";
    return e;
}

std::string encode_event(const Event &event) {
    std::string out;
    out.reserve(codec::kTypicalMessage);
    JsonWriter w(out);
    w.begin_object();
    std::visit(EventWriter{w}, event);
    w.end_object();
    return out;
}

// ---- events: the client reads ----

std::optional<Event> codec::read_event(const ObjectReader &in, std::string_view name) {
    if (name == "restored") {
        RestoredEvent e;
        e.membership = in.required_uint("membership", 0, UINT64_MAX);
        e.record = codec::read_record(ObjectReader(in.required("record"), in.pointer("record")));
        std::vector<std::string> names;
        for_each_element(in, "changed", [&](const json &v, const std::string &ptr) {
            names.emplace_back(json_check::check_string(v, ptr));
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
        e.dropped = in.uint("dropped", 0, UINT64_MAX);
        e.roce = codec::read_optional_roce_source(in);
        return e;
    }
    if (name == "stopping")
        return StoppingEvent{std::string(in.required_string("message"))};
    return std::nullopt; // a newer daemon's event (PROTOCOL.md, "Versioning")
}

} // namespace mcastd::proto
