// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `list`'s cursor as it travels (PROTOCOL.md: `after`, `next`): opaque to clients, to the daemon
// a GroupCursor written as "<port index>,<MGID>,<unassigned handle>,<membership id or ->",
// e.g. "0,ff15::1:2,0,17". At most 92 bytes, well within proto::kMaxCursorBytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/engine.hpp"

namespace mcastd {

std::string format_cursor(const GroupCursor &c);
// nullopt for anything format_cursor() does not write.
std::optional<GroupCursor> parse_cursor(std::string_view text);

} // namespace mcastd
