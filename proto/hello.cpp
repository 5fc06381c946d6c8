// `hello`, both ways: the request (the daemon's strict decoder, the client's encoder) and its
// result (the daemon's encoder, the client's decoder).
#include "codec.hpp"

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

} // namespace

Hello decode_hello_request(const ObjectReader &in) {
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

void write_request(JsonWriter &w, const Hello &h) {
    w.key("versions");
    w.begin_array();
    for (unsigned v : h.versions)
        w.value(v);
    w.end_array();
    if (!h.client.empty())
        w.member("client", std::string_view(h.client));
}

void write_result(JsonWriter &w, const HelloResult &r) {
    w.member("version", r.version);
    w.member("daemon", std::string_view(r.daemon));
}

} // namespace codec

std::variant<HelloResult, Error> decode_hello_result(std::string_view result_json) {
    return codec::decode_object<HelloResult>(result_json, [](const ObjectReader &in) {
        HelloResult r;
        r.version = static_cast<unsigned>(in.required_uint("version", 0, UINT32_MAX));
        r.daemon = in.required_string("daemon");
        return r;
    });
}

} // namespace mcastd::proto
