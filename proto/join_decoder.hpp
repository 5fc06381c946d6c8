// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The keys of a join and their validators, in one place: the protocol's `join` request and the
// daemon config's `static_groups` entries are the same object (minus `id` and `op`), so an
// operator can paste one into the other and gets the same error for the same mistake.
// Defined in join.cpp, beside the rest of the join's codec.
#pragma once

#include <span>
#include <string_view>

#include "common/request.hpp"
#include "common/json_check.hpp"
#include "protocol.hpp"

namespace mcastd::proto {

// Decodes and validates the join keys of `in` (PROTOCOL.md, `join`), RoCE's "ip" and
// "gid_type" included: the protocol's join request. Any key that is neither a join key nor in
// `also_allowed` is an error. Throws json_check::FieldError naming the key.
Join decode_join_with_ip(const json_check::ObjectReader &in,
                         std::span<const std::string_view> also_allowed = {});

// The same for a reader whose result has no room for an IP group (the config's static_groups,
// D-Bus's Join): there "ip" and "gid_type" are unknown keys, like any other.
JoinRequest decode_join(const json_check::ObjectReader &in,
                        std::span<const std::string_view> also_allowed = {});

} // namespace mcastd::proto
