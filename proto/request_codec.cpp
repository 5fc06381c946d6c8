// Requests' bodies: the daemon's strict decoders (every rule of PROTOCOL.md, each violation an
// invalid-argument naming its field) and the client's encoders. envelope.cpp dispatches here.
#include "codec.hpp"
#include "join_decoder.hpp"

namespace mcastd::proto::codec {

using json_check::json;
using json_check::ObjectReader;

Monitor decode_monitor_request(const ObjectReader &in) {
    in.require_only({"enable"}, kEnvelopeKeys);
    return Monitor{in.boolean("enable").value_or(true)};
}

Join decode_join_request(const ObjectReader &in) { return Join{decode_join(in, kEnvelopeKeys)}; }

List decode_list_request(const ObjectReader &in) {
    in.require_only({}, kEnvelopeKeys);
    return List{};
}

Status decode_status_request(const ObjectReader &in) {
    in.require_only({}, kEnvelopeKeys);
    return Status{};
}

void write_request(JsonWriter &w, const Join &j) {
    const JoinRequest &r = j.request;
    w.member("device", std::string_view(r.device));
    w.member("port", r.port);
    if (is_zero(r.mgid)) {
        w.member("create", true);
    } else {
        w.key("mgid");
        write_gid(w, r.mgid);
    }
    if (r.scope)
        w.member("scope", *r.scope);
    w.key("join_state");
    write_join_state(w, r.join_state);
    const GroupParams &p = r.params;
    if (p.qkey)
        w.member("qkey", *p.qkey);
    if (p.pkey)
        w.member("pkey", *p.pkey);
    if (p.sl)
        w.member("sl", *p.sl);
    if (p.tclass)
        w.member("traffic_class", *p.tclass);
    if (p.flow_label)
        w.member("flow_label", *p.flow_label);
    if (p.hop_limit)
        w.member("hop_limit", *p.hop_limit);
    if (p.mtu) {
        w.member("mtu", mtu_bytes(p.mtu->value));
        if (p.mtu->selector != Selector::exactly)
            w.member("mtu_selector", selector_name(p.mtu->selector));
    }
    if (p.rate) {
        w.member("rate", p.rate->value);
        if (p.rate->selector != Selector::exactly)
            w.member("rate_selector", selector_name(p.rate->selector));
    }
}

void write_request(JsonWriter &, const List &) {}

void write_request(JsonWriter &, const Status &) {}

void write_request(JsonWriter &w, const Monitor &m) { w.member("enable", m.enable); }

} // namespace mcastd::proto::codec
