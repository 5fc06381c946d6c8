// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The bounds of a join's fields (join_state bits, scope, SL, flow label, MTU and rate enums),
// checked by every front that makes a join: the protocol decoder (the socket, D-Bus and the
// static groups of the config all decode through it), the client library and the engine. One
// checker, so that a field out of bounds is refused in one wording whichever way it came:
// "/sl: 16 out of range [0, 15]", the JSON reader's wording, naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/request.hpp"

namespace mcastd {

// Inclusive bounds the decoder also reads these fields with (so that a value too large for its
// type, or negative, is told the same range).
namespace join_bounds {
inline constexpr std::uint64_t kScopeMin = 1, kScopeMax = 15;
inline constexpr std::uint64_t kSlMax = 15;
inline constexpr std::uint64_t kFlowLabelMax = 0xfffff;
inline constexpr std::uint64_t kMtuEnumMin = 1, kMtuEnumMax = 5; // 256 .. 4096 bytes
} // namespace join_bounds

// A field out of its bounds: which one ("sl", as the protocol names it) and why
// ("16 out of range [0, 15]").
struct JoinFieldProblem {
    std::string field;
    std::string reason;

    // "/sl: 16 out of range [0, 15]"
    std::string describe() const { return "/" + field + ": " + reason; }
};

// The first field of `r` out of its bounds, or nullopt. Fields the join leaves unset are not
// judged; whether a field applies at all (a scope without create) is each front's rule.
std::optional<JoinFieldProblem> join_field_problem(const JoinRequest &r);

} // namespace mcastd
