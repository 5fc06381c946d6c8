// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The membership log: one record per engine note ("mlx5_0/1: joined group ff15::1 as full"),
// carrying the note's structured fields (logging/fields.hpp) into the journal. The notes about
// a client are routine and go through its uid's rate limit (logging/routine_limiter.hpp); the
// others (a port's or a group's warnings) are always written.
#pragma once

#include <string>

#include "core/engine.hpp"
#include "logging/routine_limiter.hpp"

namespace mcastd {
class Service;
}

namespace mcastd::logging {

// An observer for Service::add_observer(); `service` names the ports, and it and `limiter`
// must outlive it.
EngineObserver membership_log(const Service &service, RoutineLimiter &limiter);

// The summary of one uid's folded lines: a warning with MESSAGE_ID routine-folded,
// CLIENT_UID and FOLDED_LINES. `user` is the uid's name ("" when it has none).
void log_folded(const FoldSummary &summary, const std::string &user);

} // namespace mcastd::logging
