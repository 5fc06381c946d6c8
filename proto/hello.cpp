// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `hello`, both ways: the request (the daemon's strict decoder, the client's encoder) and its
// result (the daemon's encoder, the client's decoder).
#include "codec.hpp"

#include "common/utf8.hpp"

#include <algorithm>

namespace mcastd::proto {

using json_check::json;
using json_check::ObjectReader;

namespace codec {
namespace {

std::size_t utf8_length(std::string_view s) {
    std::size_t n = 0;
    for (char c : s)
        n += (static_cast<unsigned char>(c) & 0xC0) != 0x80; // count lead bytes only
    return n;
}

SessionTicket read_ticket(const ObjectReader &in, std::string_view key) {
    const ObjectReader t(in.required(key), in.pointer(key));
    t.require_only({"session", "token"}, {});
    SessionTicket out;
    out.id = t.required_uint("session", 1, kMaxId);
    const std::string_view token = t.required_string("token");
    if (!is_session_token(token))
        t.fail("token", "must be " + std::to_string(kTokenChars) + " lowercase hex digits");
    out.token = token;
    return out;
}

void write_ticket(JsonWriter &w, std::string_view key, const SessionTicket &t) {
    w.key(key);
    w.begin_object();
    w.member("session", t.id);
    w.member("token", std::string_view(t.token));
    w.end_object();
}

} // namespace

Hello decode_hello_request(const ObjectReader &in) {
    in.require_only({"versions", "client", "resume"}, kEnvelopeKeys);
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
        // It goes into log lines as it is: the rule of group names (no control characters).
        if (auto why = text_problem(*client))
            in.fail("client", "the client name " + *why);
        h.client = *client;
    }
    if (in.has("resume"))
        h.resume = read_ticket(in, "resume");
    return h;
}

void write_request(JsonWriter &w, const Hello &h) {
    w.key("versions");
    w.begin_array();
    for (unsigned v : h.versions)
        w.value(v);
    w.end_array();
    if (!h.client.empty())
        w.member("client", std::string_view(h.client));
    if (h.resume)
        write_ticket(w, "resume", *h.resume);
}

void write_result(JsonWriter &w, const HelloResult &r) {
    w.member("version", r.version);
    w.member("daemon", std::string_view(r.daemon));
    if (r.session)
        write_ticket(w, "session", *r.session);
    if (r.resumed) {
        w.member("resumed", *r.resumed);
        w.key("memberships");
        w.begin_array();
        for (std::uint64_t m : r.memberships)
            w.value(m);
        w.end_array();
    }
}

} // namespace codec

bool is_session_token(std::string_view t) {
    return t.size() == kTokenChars &&
           std::all_of(t.begin(), t.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::variant<HelloResult, Error> decode_hello_result(const json_check::json &result) {
    return codec::decode_value<HelloResult>(result, [](const ObjectReader &in) {
        HelloResult r;
        r.version = static_cast<unsigned>(in.required_uint("version", 0, UINT32_MAX));
        r.daemon = in.required_string("daemon");
        if (in.has("session"))
            r.session = codec::read_ticket(in, "session");
        r.resumed = in.boolean("resumed");
        if (r.resumed)
            codec::for_each_element(in, "memberships", [&](const json &v, const std::string &ptr) {
                r.memberships.push_back(json_check::check_uint(v, ptr, 0, UINT64_MAX));
            });
        return r;
    });
}

} // namespace mcastd::proto
