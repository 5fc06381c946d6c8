// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Reads of the engine's groups for listings (Engine::groups, Engine::groups_from): in GroupKey
// order from a cursor, through the ports' ordered indexes, so a page of a `list` costs what it
// reads however many groups the daemon holds. Internal to daemon/core.
#pragma once

#include <cstddef>
#include <optional>

#include "core/engine_state.hpp"

namespace mcastd::core {

// Engine::groups_from (engine.hpp says what it reads).
GroupRead read_groups(const EngineState &s, const std::optional<GroupCursor> &from, std::size_t max_members,
                      std::optional<ClientId> only);

// Engine::group: one group with every member (or none), or nullopt (no such group, or MGID zero).
std::optional<GroupView> read_group(const EngineState &s, PortIndex port, const Gid &mgid, bool with_members);
// Engine::member: one membership, or nullopt.
std::optional<MemberView> read_member(const EngineState &s, MembershipId id);

} // namespace mcastd::core
