// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// StateMirror: what the restart state on disk says now of its groups and sessions (the state
// file and its change log replayed), keyed, so that a change costs a comparison with what is
// there and a line for what differs (change_log.hpp), not a walk of everything the daemon holds.
// It keeps nothing per membership: the mirror must not double what the daemon holds. The
// keeper (keeper.hpp) resets it from each state file it writes and feeds it what changed since.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "restart/change_log.hpp"

namespace mcastd::restart {

class StateMirror {
public:
    // What the state file `state` says (a compaction just wrote it).
    void reset(const SavedState &state);

    // Group `mgid` of `port` now has the bits `now` (nullopt: the state keeps none of it):
    // appends to `out` a line when the disk says otherwise. Memberships are lines of their
    // own, written as they come and go (keeper.hpp): a saved membership never changes.
    void group(const PortKey &port, const Gid &mgid, const std::optional<SavedGroup> &now, std::vector<Change> &out);
    // The sessions are now `heads` (without memberships): a line for each that came, changed
    // or went (O(sessions)). A session that went takes its memberships with it.
    void sessions(std::vector<SavedSession> heads, std::vector<Change> &out);
    void next_session(std::uint64_t next, std::vector<Change> &out);
    void roce(roce::KeptRoce now, std::vector<Change> &out);
    bool has_session(std::uint64_t id) const { return sessions_.count(id) != 0; }

private:
    using GroupKey = std::pair<PortKey, Gid>;

    std::map<GroupKey, SavedGroup> groups_;
    std::map<std::uint64_t, SavedSession> sessions_;
    std::uint64_t next_session_ = 1;
    roce::KeptRoce roce_;
};

} // namespace mcastd::restart
