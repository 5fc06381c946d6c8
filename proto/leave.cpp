// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `leave`, both ways: the daemon's strict decoder and the client's encoder. Its result is
// empty (envelope.cpp writes it).
#include "codec.hpp"

namespace mcastd::proto::codec {

using json_check::ObjectReader;

Leave decode_leave_request(const ObjectReader &in) {
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

void write_request(JsonWriter &w, const Leave &l) {
    if (l.membership)
        w.member("membership", *l.membership);
    if (l.join)
        w.member("join", *l.join);
}

} // namespace mcastd::proto::codec
