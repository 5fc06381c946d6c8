// What the daemon sends: results and events, key for key as PROTOCOL.md shows them. This is the
// daemon's hot path (every join answers with a RECORD), so it writes text directly
// (json_writer.hpp) into one string reserved for a typical message.
#include "codec.hpp"

namespace mcastd::proto {

namespace codec {
namespace {

} // namespace

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
