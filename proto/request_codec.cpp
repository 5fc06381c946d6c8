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

void write_request(JsonWriter &w, const Monitor &m) { w.member("enable", m.enable); }

} // namespace mcastd::proto::codec
