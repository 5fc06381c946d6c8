// Internal to the codec (PROTOCOL.md): what one message family's source file needs from
// another's. The JSON forms of values that several messages share (RECORD, ERROR, GIDs, join
// states) and the tables behind the public vocabulary functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/json_check.hpp"
#include "json_writer.hpp"
#include "protocol.hpp"

namespace mcastd::proto::codec {

// Record key names of field:: bits, in the order `changed` lists them: "mlid" first (the one
// that forces a client to detach and re-attach), then the RECORD table's order.
struct FieldName {
    std::uint64_t bits;
    std::string_view name;
};
inline constexpr std::uint64_t kMtuBits = field::mtu | field::mtu_selector;
inline constexpr std::uint64_t kRateBits = field::rate | field::rate_selector;
inline constexpr std::array<FieldName, 14> kChangedNames{{
    {field::mlid, "mlid"},
    {field::mgid, "mgid"},
    {field::port_gid, "port_gid"},
    {field::qkey, "qkey"},
    {field::pkey, "pkey"},
    {field::sl, "sl"},
    {kMtuBits, "mtu"},
    {kRateBits, "rate"},
    {kRateBits, "rate_gbps"},
    {field::flow_label, "flow_label"},
    {field::tclass, "traffic_class"},
    {field::hop_limit, "hop_limit"},
    {field::scope, "scope"},
    {field::join_state, "join_state"},
}};

inline constexpr std::array<std::string_view, 4> kJoinStateNames{
    "full", "nonmember", "sendonly-nonmember", "sendonly-full"};

// ---- record.cpp: RECORD and the values inside it ----
// Encoders are the daemon's (server -> client); readers are the client's, tolerant of unknown
// keys and strict on the known ones.
void write_record(JsonWriter &w, const McRecord &r);
void write_failure(JsonWriter &w, const Failure &f);
void write_gid(JsonWriter &w, const Gid &g);
void write_join_state(JsonWriter &w, std::uint8_t bits);
// A GUID as status shows it: "0x" and 16 hex digits, "0x0002c90300000001".
std::string guid_text(std::uint64_t guid);

McRecord read_record(const json_check::ObjectReader &in);
Failure read_failure(const json_check::ObjectReader &in);
Gid read_gid(const json_check::ObjectReader &in, std::string_view key);
std::uint8_t read_join_state(const json_check::ObjectReader &in, std::string_view key);
// A required key that is null (nullopt) or guid_text()'s form.
std::optional<std::uint64_t> read_nullable_guid(const json_check::ObjectReader &in,
                                                std::string_view key);

} // namespace mcastd::proto::codec
