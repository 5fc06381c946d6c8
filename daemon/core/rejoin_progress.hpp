// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The pure bookkeeping of a port's re-join and audit: how far a re-join is, and which group the
// audit asks about next. No engine state, no clock of their own: the caller passes the time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/gid.hpp"
#include "core/timers.hpp"

namespace mcastd {

// A port's re-join of its groups: what `status` shows of it, and when it is over. Groups are
// marked (the SA may have lost their bits) and done (re-set, or nothing left to re-set) one by
// one; the re-join is over once it is not waiting for its start (the jitter) and no group of
// the port is still marked. O(1) per call: a port may hold 100,000 groups.
class RejoinProgress {
public:
    // A group of the port was marked for re-join, or is no longer marked.
    void group_marked() { ++pending_; }
    void group_done() {
        if (pending_)
            --pending_;
    }
    std::size_t pending() const { return pending_; }

    // A re-join for `why` starts at `now` (the groups it covers are already marked). One that
    // starts while another runs continues it: same start, the larger group count.
    void start(TimePoint now, std::string why);
    // Ends the re-join if it runs, its start is not pending (`starting`) and no group is
    // marked. Returns how long it took when this call ended it.
    std::optional<Duration> finish(TimePoint now, bool starting);

    bool running() const { return running_; }
    const std::string &reason() const { return reason_; }
    const std::optional<TimePoint> &started() const { return started_; }
    const std::optional<TimePoint> &finished() const { return finished_; }
    std::size_t groups() const { return groups_; } // groups the latest re-join covered
    // Re-joins started since the port was added (a start that continues one that runs is not
    // another): what `status` and the metrics count.
    std::uint64_t count() const { return count_; }

private:
    bool running_ = false;
    std::string reason_;
    std::optional<TimePoint> started_, finished_;
    std::size_t groups_ = 0;
    std::size_t pending_ = 0;
    std::uint64_t count_ = 0;
};

// The audit goes round a port's groups in MGID order, one Get at a time: the first group after
// `cursor` that `eligible` accepts, wrapping around to the start (the cursor's own group comes
// last). `groups` maps MGID to the caller's group handle.
template <class Handle, class Pred>
std::optional<Handle> next_to_audit(const GidMap<Handle> &groups, const Gid &cursor, Pred eligible) {
    for (auto it = groups.upper_bound(cursor); it != groups.end(); ++it)
        if (eligible(it->second))
            return it->second;
    for (auto it = groups.begin(); it != groups.end() && !(cursor < it->first); ++it)
        if (eligible(it->second))
            return it->second;
    return std::nullopt;
}

} // namespace mcastd
