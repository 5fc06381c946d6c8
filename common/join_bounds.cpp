// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/join_bounds.hpp"

#include <cstdio>

#include "common/record.hpp"

namespace mcastd {

namespace {

std::optional<JoinFieldProblem> outside(const char *field, std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
    if (v >= lo && v <= hi)
        return std::nullopt;
    return JoinFieldProblem{field, std::to_string(v) + " out of range [" + std::to_string(lo) + ", " +
                                       std::to_string(hi) + "]"};
}

} // namespace

std::optional<JoinFieldProblem> join_field_problem(const JoinRequest &r) {
    using namespace join_bounds;
    if (r.join_state == 0 || (r.join_state & ~join::all)) {
        char bits[8];
        std::snprintf(bits, sizeof bits, "0x%x", static_cast<unsigned>(r.join_state));
        return JoinFieldProblem{"join_state", std::string(bits) + " is not a non-empty set of the bits 0x1-0x8"};
    }
    if (r.scope)
        if (auto no = outside("scope", *r.scope, kScopeMin, kScopeMax))
            return no;
    const GroupParams &p = r.params;
    if (p.sl)
        if (auto no = outside("sl", *p.sl, 0, kSlMax))
            return no;
    if (p.flow_label)
        if (auto no = outside("flow_label", *p.flow_label, 0, kFlowLabelMax))
            return no;
    if (p.mtu)
        if (auto no = outside("mtu", p.mtu->value, kMtuEnumMin, kMtuEnumMax))
            return JoinFieldProblem{"mtu", "enum " + no->reason + " (256 to 4096 bytes)"};
    if (p.rate && rate_mbps(p.rate->value) == 0)
        return JoinFieldProblem{"rate", std::to_string(p.rate->value) + " is not an IBA rate"};
    return std::nullopt;
}

} // namespace mcastd
