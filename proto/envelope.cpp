// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The envelopes of PROTOCOL.md's messages, both ways, and the dispatch to each family's file:
// a request's {"id", "op", ...} (the daemon's strict decoder, the client's encoder), a reply's
// {"id", "ok", "result" | "error"} and the ERROR object (the daemon's encoder, the client's
// decoder), the too-large answer, and what a client reads (a reply or an event).
#include "codec.hpp"

#include "common/sa_status.hpp"

namespace mcastd::proto {

using json_check::FieldError;
using json_check::json;
using json_check::ObjectReader;

std::string_view op_name(const Request &request) {
    static constexpr std::string_view names[] = {"hello",  "join",    "leave", "list",
                                                 "status", "monitor", "evict"};
    static_assert(std::size(names) == std::variant_size_v<Request>);
    return names[request.index()];
}

// ---- requests: the daemon decodes ----

namespace {

Request decode_body(const ObjectReader &in, std::string_view op) {
    if (op == "join")
        return codec::decode_join_request(in);
    if (op == "leave")
        return codec::decode_leave_request(in);
    if (op == "hello")
        return codec::decode_hello_request(in);
    if (op == "list")
        return codec::decode_list_request(in);
    if (op == "status")
        return codec::decode_status_request(in);
    if (op == "monitor")
        return codec::decode_monitor_request(in);
    if (op == "evict")
        return codec::decode_evict_request(in);
    in.fail("op", json_check::describe_string(op) +
                      " is not an op (hello, join, leave, list, status, monitor or evict)");
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
        if (!parsed.value().is_object())
            return bad(std::nullopt, {},
                       "a request is a JSON object, not " +
                           json_check::describe_value(parsed.value()));
        const ObjectReader in(parsed.value(), "");
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

// ---- requests: the client encodes ----

std::string encode_request(std::uint64_t id, const Request &request) {
    std::string out;
    out.reserve(256);
    JsonWriter w(out);
    w.begin_object();
    w.member("id", id);
    w.member("op", op_name(request));
    std::visit([&w](const auto &r) { codec::write_request(w, r); }, request);
    w.end_object();
    return out;
}

// ---- replies: the daemon encodes ----

std::string encode_reply(std::uint64_t id, const Result &result) {
    std::string out;
    out.reserve(codec::kTypicalMessage);
    JsonWriter w(out);
    w.begin_object();
    w.member("id", id);
    w.member("ok", true);
    w.key("result");
    w.begin_object();
    std::visit([&w](const auto &r) { codec::write_result(w, r); }, result);
    w.end_object();
    w.end_object();
    return out;
}

std::string encode_error(std::optional<std::uint64_t> id, const Failure &failure) {
    std::string out;
    out.reserve(codec::kTypicalMessage);
    JsonWriter w(out);
    w.begin_object();
    w.key("id");
    if (id)
        w.value(*id);
    else
        w.null();
    w.member("ok", false);
    w.key("error");
    codec::write_failure(w, failure);
    w.end_object();
    return out;
}

Failure too_large(std::size_t size, std::size_t limit) {
    return Failure{Error{Errc::too_large,
                         "the message of " + std::to_string(size) + " bytes exceeds the limit of " +
                             std::to_string(limit) + " bytes",
                         std::nullopt},
                   {},
                   {}};
}

std::string encode_too_large(std::size_t size, std::size_t limit) {
    return encode_error(std::nullopt, too_large(size, limit));
}

// ---- replies and events: the client decodes ----

namespace {

// Reads the envelope of `doc`; a reply keeps the document for its result.
Incoming read_incoming(json_check::Document &doc) {
    const ObjectReader in(doc.root(), "");
    if (auto name = in.string("event")) {
        if (auto event = codec::read_event(in, *name))
            return std::move(*event);
        return UnknownEvent{std::string(*name)};
    }
    Reply r;
    const json &id = in.required("id");
    if (!id.is_null())
        r.id = json_check::check_uint(id, in.pointer("id"), 0, kMaxId);
    if (in.required_boolean("ok")) {
        const json *result = in.object("result");
        if (!result)
            in.fail("result", "required key is missing");
        r.body = json_check::OwnedValue(std::move(doc), *result);
    } else {
        r.body = codec::read_failure(ObjectReader(in.required("error"), in.pointer("error")));
    }
    return r;
}

} // namespace

std::variant<Incoming, Error> decode_incoming(std::string_view message) {
    return codec::decoding<Incoming>([&] {
        auto parsed = json_check::parse(message);
        if (parsed.syntax_error)
            throw FieldError({}, "not valid JSON: " + *parsed.syntax_error);
        if (parsed.duplicate)
            throw *parsed.duplicate;
        return read_incoming(parsed.document);
    });
}

namespace codec {

// ---- ERROR, both ways ----

void write_failure(JsonWriter &w, const Failure &f) {
    w.begin_object();
    w.member("code", errc_name(f.error.code));
    w.member("message", std::string_view(f.error.message));
    if (!f.field.empty())
        w.member("field", std::string_view(f.field));
    if (f.error.sa_status) {
        w.member("sa_status", *f.error.sa_status);
        w.member("sa_status_name", std::string_view(sa_status_name(*f.error.sa_status)));
    }
    if (const auto &p = f.error.policy) {
        if (!p->rule.empty())
            w.member("rule", std::string_view(p->rule));
        if (!p->quota.empty()) {
            w.member("quota", std::string_view(p->quota));
            w.member("limit", p->limit);
        }
    }
    if (!f.versions.empty() || f.error.code == Errc::unsupported_version) {
        w.key("versions");
        w.begin_array();
        for (unsigned v : f.versions)
            w.value(v);
        w.end_array();
    }
    w.end_object();
}

Failure read_failure(const ObjectReader &in) {
    Failure f{Error{Errc::internal, {}, std::nullopt}, {}, {}};
    const auto code = in.required_string("code");
    f.error.message = in.required_string("message");
    if (auto c = errc_from_name(code)) {
        f.error.code = *c;
    } else {
        // A code this library does not know yet: keep the daemon's words, and its code name.
        f.error.message = "(" + std::string(code) + ") " + f.error.message;
    }
    if (auto field = in.string("field"))
        f.field = *field;
    f.error.sa_status = in.uint_as<std::uint16_t>("sa_status", 0, 0xffff);
    (void)in.string("sa_status_name"); // derived from sa_status
    // The access policy's keys; a daemon older than the policy sends none of them.
    auto rule = in.string("rule");
    auto quota = in.string("quota");
    auto limit = in.uint("limit", 0, UINT64_MAX);
    if (rule || quota || limit)
        f.error.policy = PolicyRef{std::string(rule.value_or("")), std::string(quota.value_or("")),
                                   limit.value_or(0)};
    if (const auto *versions = in.array("versions")) {
        std::size_t i = 0;
        for (const auto &v : *versions)
            f.versions.push_back(static_cast<unsigned>(json_check::check_uint(
                v, json_check::pointer_to(in.pointer("versions"), i++), 0, 0xffffffff)));
    }
    return f;
}

// ---- what the client's decoders share ----

Error malformed(const FieldError &e) {
    return Error{Errc::invalid_argument, "malformed message from rdma-mcastd: " + e.describe(),
                 std::nullopt};
}

} // namespace codec
} // namespace mcastd::proto
