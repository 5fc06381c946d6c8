// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `evict`, both ways: the daemon's strict decoder and the client's encoder of the request, and
// its result {"released": N, "disconnected": M}.
#include "codec.hpp"

namespace mcastd::proto {

using json_check::ObjectReader;

namespace codec {

Evict decode_evict_request(const ObjectReader &in) {
    in.require_only({"uid", "membership", "disconnect"}, kEnvelopeKeys);
    Evict e;
    // (uid_t)-1 means "no id" to the kernel: no caller has it.
    e.uid = in.uint_as<uid_t>("uid", 0, 0xfffffffe);
    e.membership = in.uint("membership", 0, UINT64_MAX);
    if (e.uid && e.membership)
        in.fail("membership", "uid and membership exclude each other");
    if (!e.uid && !e.membership)
        in.fail("uid", "required key is missing (or membership: one membership's id)");
    e.disconnect = in.boolean("disconnect").value_or(false);
    if (e.disconnect && !e.uid)
        in.fail("disconnect", "goes with uid: a membership has no connection of its own to close");
    return e;
}

void write_request(JsonWriter &w, const Evict &e) {
    if (e.uid)
        w.member("uid", std::uint64_t{*e.uid});
    if (e.membership)
        w.member("membership", *e.membership);
    if (e.disconnect)
        w.member("disconnect", true);
}

void write_result(JsonWriter &w, const EvictResult &r) {
    w.member("released", r.released);
    w.member("disconnected", r.disconnected);
}

} // namespace codec

std::variant<EvictResult, Error> decode_evict_result(const json_check::json &result) {
    return codec::decode_value<EvictResult>(result, [](const ObjectReader &in) {
        // `disconnected` is absent from a daemon older than `disconnect`.
        return EvictResult{in.required_uint("released", 0, UINT64_MAX),
                           in.uint("disconnected", 0, UINT64_MAX).value_or(0)};
    });
}

} // namespace mcastd::proto
