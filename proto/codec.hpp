// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Internal to the codec (PROTOCOL.md): what one message family's source file needs from
// another's. The codec is one file per family, each with both sides of that family:
//
//   envelope.cpp  request and reply envelopes, ERROR, too-large, decode_incoming, op names
//   hello.cpp, join.cpp, leave.cpp, list.cpp, status.cpp, evict.cpp   one request and its result
//   events.cpp    restored, lost and monitor events, and the monitor request
//   record.cpp    RECORD, GIDs, join states, selectors, MTUs: values several families share
//
// envelope.cpp dispatches to the families' functions declared here. Adding a key to a reply
// touches protocol.hpp (its type), its family's file (both sides), and PROTOCOL.md.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "common/json_check.hpp"
#include "common/json_writer.hpp"
#include "protocol.hpp"

namespace mcastd::proto::codec {

// ---- envelope.cpp: requests, replies, ERROR ----

// The keys every request has beside its op's own.
inline constexpr std::array<std::string_view, 2> kEnvelopeKeys{"id", "op"};
// Room for a join reply (~330 bytes) without growing; list and status grow as they must.
inline constexpr std::size_t kTypicalMessage = 512;

void write_failure(JsonWriter &w, const Failure &f);
Failure read_failure(const json_check::ObjectReader &in);

Error malformed(const json_check::FieldError &e);

// Runs one of the client's decoders, turning its FieldError into an Error.
template <class T, class F> std::variant<T, Error> decoding(F f) {
    try {
        return f();
    } catch (const json_check::FieldError &e) {
        return malformed(e);
    } catch (const std::bad_alloc &) {
        return Error{Errc::internal, "out of memory decoding a message from rdma-mcastd",
                     std::nullopt};
    }
}

// Runs a client decoder on the object `doc`.
template <class T, class Decode>
std::variant<T, Error> decode_value(const json_check::json &doc, Decode decode) {
    return decoding<T>([&] { return decode(json_check::ObjectReader(doc, "")); });
}

// For each element of the array at `key` (required), with its pointer.
template <class F>
void for_each_element(const json_check::ObjectReader &in, std::string_view key, F f) {
    const json_check::json &arr = json_check::check_array(in.required(key), in.pointer(key));
    const std::string base = in.pointer(key);
    std::size_t i = 0;
    for (const auto &v : arr)
        f(v, json_check::pointer_to(base, i++));
}

// An empty result (leave, monitor) writes nothing inside "result".
inline void write_result(JsonWriter &, const Empty &) {}

// ---- one message family each: its request's decoder (the daemon's, strict) and writer (the
// client's), its result's writer (the daemon's); the client's result decoders are public ----

// hello.cpp
Hello decode_hello_request(const json_check::ObjectReader &in);
void write_request(JsonWriter &w, const Hello &h);
void write_result(JsonWriter &w, const HelloResult &r);

// join.cpp
Join decode_join_request(const json_check::ObjectReader &in);
void write_request(JsonWriter &w, const Join &j);
void write_result(JsonWriter &w, const JoinResult &r);

// leave.cpp
Leave decode_leave_request(const json_check::ObjectReader &in);
void write_request(JsonWriter &w, const Leave &l);

// list.cpp
List decode_list_request(const json_check::ObjectReader &in);
void write_request(JsonWriter &w, const List &l);
void write_result(JsonWriter &w, const ListResult &r);

// status.cpp
Status decode_status_request(const json_check::ObjectReader &in);
void write_request(JsonWriter &w, const Status &s);
void write_result(JsonWriter &w, const StatusResult &r);

// evict.cpp
Evict decode_evict_request(const json_check::ObjectReader &in);
void write_request(JsonWriter &w, const Evict &e);
void write_result(JsonWriter &w, const EvictResult &r);

// events.cpp: the monitor request, and the events. `name` is the "event" key.
Monitor decode_monitor_request(const json_check::ObjectReader &in);
void write_request(JsonWriter &w, const Monitor &m);
// nullopt: an event this version does not know.
std::optional<Event> read_event(const json_check::ObjectReader &in, std::string_view name);

// ---- record.cpp: values several families share ----

inline constexpr std::array<std::string_view, 4> kJoinStateNames{
    "full", "nonmember", "sendonly-nonmember", "sendonly-full"};

// RECORD and the values inside it. Encoders are the daemon's (server -> client); readers are
// the client's, tolerant of unknown keys and strict on the known ones.
void write_record(JsonWriter &w, const McRecord &r);
// {"full": n, "nonmember": n, "sendonly-nonmember": n, "sendonly-full": n}: a count per
// JoinState bit (list's `counts`, status's per-port `memberships`).
template <class T> void write_join_state_counts(JsonWriter &w, const std::array<T, 4> &counts) {
    w.begin_object();
    for (std::size_t i = 0; i < counts.size(); ++i)
        w.member(kJoinStateNames[i], counts[i]);
    w.end_object();
}
template <class T>
std::array<T, 4> read_join_state_counts(const json_check::ObjectReader &in, std::string_view key) {
    const json_check::ObjectReader counts(in.required(key), in.pointer(key));
    std::array<T, 4> out{};
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<T>(counts.required_uint(kJoinStateNames[i], 0, std::numeric_limits<T>::max()));
    return out;
}
void write_gid(JsonWriter &w, const Gid &g);
void write_join_state(JsonWriter &w, std::uint8_t bits);

McRecord read_record(const json_check::ObjectReader &in);
// "link_layer" (RECORD, and a `list` port): written always; absent (an older daemon) reads as
// InfiniBand.
void write_link_layer(JsonWriter &w, LinkLayer layer);
LinkLayer read_link_layer(const json_check::ObjectReader &in);
// RoCE's "gid_type", "sgid_index" and "netdev" (a RoCE RECORD; a `list` group and a `monitor`
// event about a RoCE group): written together; read all three, or (optional) none.
void write_roce_source(JsonWriter &w, const RoceSource &s);
RoceSource read_roce_source(const json_check::ObjectReader &in);
std::optional<RoceSource> read_optional_roce_source(const json_check::ObjectReader &in);
Gid read_gid(const json_check::ObjectReader &in, std::string_view key);
std::uint8_t read_join_state(const json_check::ObjectReader &in, std::string_view key);

} // namespace mcastd::proto::codec
