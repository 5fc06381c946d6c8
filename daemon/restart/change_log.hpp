// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The change log: what changed in the restart state since its file was last written, one JSON
// line per change after a header (doc/architecture.md §9). The state file (saved_state.hpp) is
// written whole only now and then (a compaction, restart/keeper.hpp says when); in between,
// each change costs a line of its own size, not a rewrite of everything the daemon holds.
//
// A line says what a thing is now, not what was done to it (a group's bits, a session, a
// membership; a removal), so a line replayed over a state that already has it changes nothing,
// and the lines of one key need only be in order among themselves. A Set about to go out is a
// line too (the sets log of earlier releases): its bits are added as uncertain.
//
// The header names the state file's generation the log follows (SavedState::generation): a
// log of an older generation is covered by the file (a crash between a compaction's two
// renames left it) and is dropped. Value types and their JSON form only; no I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "restart/saved_state.hpp"

namespace mcastd::restart {

inline constexpr std::string_view kLogFormatName = "rdma-mcastd-log";
inline constexpr unsigned kLogFormatVersion = 1;

// A port as the state names it: its groups are this GID's.
struct PortKey {
    std::string device;
    std::uint8_t port = 0;
    Gid port_gid{};
    auto operator<=>(const PortKey &) const = default;
};

// A group's bits now; neither held nor uncertain: the state no longer has it.
struct GroupChange {
    PortKey port;
    SavedGroup group;
    bool operator==(const GroupChange &) const = default;
};
// A session now, without its memberships (each is a change of its own).
struct SessionChange {
    SavedSession session;
    bool operator==(const SessionChange &) const = default;
};
struct SessionGone {
    std::uint64_t id = 0;
    bool operator==(const SessionGone &) const = default;
};
struct MembershipChange {
    std::uint64_t session = 0;
    SavedMembership membership;
    bool operator==(const MembershipChange &) const = default;
};
struct MembershipGone {
    std::uint64_t id = 0;
    bool operator==(const MembershipGone &) const = default;
};
struct NextSession {
    std::uint64_t next = 1;
    bool operator==(const NextSession &) const = default;
};
// The RoCE section, whole (it is small: a host's IGMP/MLD memberships).
struct RoceChange {
    roce::KeptRoce roce;
    bool operator==(const RoceChange &) const = default;
};
// A kernel membership about to be added on a stored socket (written before the kernel is
// asked, as a Set is before its answer is read).
struct RoceAdding {
    roce::KeptAdding adding;
    bool operator==(const RoceAdding &) const = default;
};

using Change = std::variant<SavedSet, GroupChange, SessionChange, SessionGone, MembershipChange, MembershipGone,
                            NextSession, RoceChange, RoceAdding>;

struct ChangeLog {
    std::string boot_id;
    std::string daemon;
    std::uint64_t generation = 0; // of the state file it follows
    std::vector<Change> changes;
    std::vector<std::string> skipped; // one sentence per line that could not be read ("line 3: ...")
};

// The header line and a change's line, each with its '\n'.
std::string encode_log_header(std::string_view boot_id, std::string_view daemon, std::uint64_t generation);
std::string encode_change(const Change &c);
// The log, or why its header cannot be trusted. A later line that cannot be read (a torn last
// line) is skipped and named in `skipped`.
std::variant<ChangeLog, std::string> decode_log(std::string_view text);

// Applies `changes` in order to `state`. A membership whose session is gone goes with it.
void replay(SavedState &state, std::span<const Change> changes);

} // namespace mcastd::restart
