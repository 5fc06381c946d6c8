// Requests: the daemon's strict decoder (every rule of PROTOCOL.md, each violation an
// invalid-argument naming its field) and the client's encoder.
#include <array>

#include "join_decoder.hpp"
#include "json_writer.hpp"
#include "protocol.hpp"
#include "codec.hpp"

namespace mcastd::proto {

using json_check::FieldError;
using json_check::json;
using json_check::ObjectReader;

namespace {

constexpr std::array<std::string_view, 2> kEnvelopeKeys{"id", "op"};

std::size_t utf8_length(std::string_view s) {
    std::size_t n = 0;
    for (char c : s)
        n += (static_cast<unsigned char>(c) & 0xC0) != 0x80; // count lead bytes only
    return n;
}

Hello decode_hello(const ObjectReader &in) {
    in.require_only({"versions", "client"}, kEnvelopeKeys);
    Hello h;
    const json &versions = json_check::check_array(in.required("versions"), in.pointer("versions"));
    if (versions.empty())
        in.fail("versions", "must list at least one version");
    h.versions.reserve(versions.size());
    std::size_t i = 0;
    for (const auto &v : versions)
        h.versions.push_back(static_cast<unsigned>(json_check::check_uint(
            v, json_check::pointer_to(in.pointer("versions"), i++), 0, 0xffffffff)));
    if (auto client = in.string("client")) {
        if (utf8_length(*client) > kMaxClientName)
            in.fail("client", "longer than " + std::to_string(kMaxClientName) + " characters");
        h.client = *client;
    }
    return h;
}

Leave decode_leave(const ObjectReader &in) {
    in.require_only({"membership", "join"}, kEnvelopeKeys);
    Leave l;
    l.membership = in.uint("membership", 0, UINT64_MAX);
    l.join = in.uint("join", 0, kMaxId);
    if (l.membership && l.join)
        in.fail("join", "membership and join exclude each other");
    if (!l.membership && !l.join)
        in.fail("membership", "required key is missing (or join: the id of a pending join)");
    return l;
}

Monitor decode_monitor(const ObjectReader &in) {
    in.require_only({"enable"}, kEnvelopeKeys);
    return Monitor{in.boolean("enable").value_or(true)};
}

Request decode_body(const ObjectReader &in, std::string_view op) {
    if (op == "join")
        return Join{decode_join(in, kEnvelopeKeys)};
    if (op == "leave")
        return decode_leave(in);
    if (op == "hello")
        return decode_hello(in);
    if (op == "list" || op == "status") {
        in.require_only({}, kEnvelopeKeys);
        return op == "list" ? Request{List{}} : Request{Status{}};
    }
    if (op == "monitor")
        return decode_monitor(in);
    in.fail("op", json_check::describe_value(json(op)) +
                      " is not an op (hello, join, leave, list, status or monitor)");
}

BadRequest bad(std::optional<std::uint64_t> id, std::string field, std::string message) {
    return BadRequest{id, Failure{Error{Errc::invalid_argument, std::move(message), std::nullopt},
                                  std::move(field), {}}};
}

} // namespace

std::variant<RequestEnvelope, BadRequest> decode_request(std::string_view message) {
    std::optional<std::uint64_t> id; // known as soon as it is read: every later error gets it
    try {
        auto parsed = json_check::parse(message);
        if (parsed.syntax_error)
            return bad(std::nullopt, {}, "not valid JSON: " + *parsed.syntax_error);
        if (!parsed.value.is_object())
            return bad(std::nullopt, {},
                       "a request is a JSON object, not " +
                           json_check::describe_value(parsed.value));
        const ObjectReader in(parsed.value, "");
        // A duplicated id is ambiguous; any other duplicate still lets us answer the right id.
        if (parsed.duplicate && parsed.duplicate->pointer == "/id")
            throw *parsed.duplicate;
        id = in.required_uint("id", 0, kMaxId);
        if (parsed.duplicate)
            throw *parsed.duplicate;
        const auto op = in.required_string("op");
        return RequestEnvelope{*id, decode_body(in, op)};
    } catch (const FieldError &e) {
        return bad(id, e.pointer, e.describe());
    } catch (const std::bad_alloc &) {
        return BadRequest{id, Failure{Error{Errc::internal, "out of memory decoding the request",
                                            std::nullopt},
                                      {}, {}}};
    }
}

// ---- encoding (client side) ----

namespace {

struct BodyWriter {
    JsonWriter &w;

    void operator()(const Hello &h) const {
        w.key("versions");
        w.begin_array();
        for (unsigned v : h.versions)
            w.value(v);
        w.end_array();
        if (!h.client.empty())
            w.member("client", std::string_view(h.client));
    }
    void operator()(const Join &j) const {
        const JoinRequest &r = j.request;
        w.member("device", std::string_view(r.device));
        w.member("port", r.port);
        if (is_zero(r.mgid)) {
            w.member("create", true);
        } else {
            w.key("mgid");
            codec::write_gid(w, r.mgid);
        }
        if (r.scope)
            w.member("scope", *r.scope);
        w.key("join_state");
        codec::write_join_state(w, r.join_state);
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
    void operator()(const Leave &l) const {
        if (l.membership)
            w.member("membership", *l.membership);
        if (l.join)
            w.member("join", *l.join);
    }
    void operator()(const List &) const {}
    void operator()(const Status &) const {}
    void operator()(const Monitor &m) const { w.member("enable", m.enable); }
};

} // namespace

std::string encode_request(std::uint64_t id, const Request &request) {
    std::string out;
    out.reserve(256);
    JsonWriter w(out);
    w.begin_object();
    w.member("id", id);
    w.member("op", op_name(request));
    std::visit(BodyWriter{w}, request);
    w.end_object();
    return out;
}

} // namespace mcastd::proto
