// What the daemon sends: results and events, key for key as PROTOCOL.md shows them. This is the
// daemon's hot path (every join answers with a RECORD), so it writes text directly
// (json_writer.hpp) into one string reserved for a typical message.
#include "codec.hpp"

namespace mcastd::proto {

namespace codec {
namespace {

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
    w.key("sm_act_count");
    if (p.sm_act_count)
        w.value(*p.sm_act_count);
    else
        w.null();
    w.member("rejoining", p.rejoining);
    w.key("last_rejoin");
    if (const auto &r = p.last_rejoin) {
        w.begin_object();
        w.member("reason", std::string_view(r->reason));
        w.member("started_ago_s", r->started_ago_s);
        w.key("duration_s");
        if (r->duration_s)
            w.value(*r->duration_s);
        else
            w.null();
        w.member("groups", r->groups);
        w.end_object();
    } else {
        w.null();
    }
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
    w.end_object();
}

} // namespace codec

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
        for (const auto &f : codec::kChangedNames)
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
    }
};

} // namespace

std::string encode_event(const Event &event) {
    std::string out;
    out.reserve(codec::kTypicalMessage);
    JsonWriter w(out);
    w.begin_object();
    std::visit(EventWriter{w}, event);
    w.end_object();
    return out;
}

} // namespace mcastd::proto
