// What a client reads: replies and events from the daemon. Tolerant of keys it does not know
// (a newer daemon may add some), strict about the types and ranges of those it does, and
// never throwing: a malformed message is an Error the client can log and drop.
#include "codec.hpp"

namespace mcastd::proto {

using codec::for_each_element;
using json_check::FieldError;
using json_check::json;
using json_check::ObjectReader;

namespace {

std::string owned(std::string_view s) { return std::string(s); }

// ---- results ----

} // namespace

// ---- events ----

Event codec::read_event(const ObjectReader &in, std::string_view name) {
    if (name == "restored") {
        RestoredEvent e;
        e.membership = in.required_uint("membership", 0, UINT64_MAX);
        e.record = codec::read_record(ObjectReader(in.required("record"), in.pointer("record")));
        std::vector<std::string> names;
        for_each_element(in, "changed", [&](const json &v, const std::string &ptr) {
            names.push_back(owned(json_check::check_string(v, ptr)));
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
        return e;
    }
    in.fail("event", json_check::describe_value(json(name)) + " is not an event of protocol 1");
}

} // namespace mcastd::proto
