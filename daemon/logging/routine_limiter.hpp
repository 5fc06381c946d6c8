// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rate limit of routine membership lines, per uid (config limits.log_routine_burst and
// limits.log_routine_per_minute, rdma-mcastd(8) LOGGING).
//
// Every engine note about a client is one journal line, so a join/leave loop would otherwise
// write as fast as the SA answers, until journald's own rate limit (per service, not per uid)
// drops lines at random, the refusals and evictions that matter among them. So each uid has a
// token bucket: `burst` lines at once, refilled at `per_minute`; a line the bucket refuses is
// folded, i.e. counted by kind, and a summary line says how many and of what kind.
//
// What is folded, and what never is:
//   - routine: the notes that carry a client (joined, left, join failed, deleted at the SA
//     after that client's leave, lost, restored). The membership log asks admit() for those.
//   - NEVER folded: notes without a client (a port's or a group's warnings, SA trouble), and
//     everything logging/policy_log.hpp writes (refused joins, flagged memberships,
//     evictions). They do not go through the limiter at all: they are what a flood would
//     hide, and the policy bounds how often a client can cause them.
//   - root (uid 0) has a bucket like any uid: a loop run as root floods the journal just the
//     same, and the summary still says what root did. The daemon's own static groups are
//     root's too; a config with more than `burst` of them logs the rest as one summary.
//
// A uid's summary is written when the uid's flood is over (the bucket admits its next line
// and nothing was folded for one refill interval: the summary comes first, so the journal
// reads in order), or at the latest kMaxFoldedFor after its first folded line (a timer on the
// daemon's Timers, armed only while something is folded), and for every uid at stop (flush()).
// So a sustained loop writes 2 lines/s (the defaults) and one summary every 10 s.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "core/engine.hpp"
#include "core/timers.hpp"

namespace mcastd::logging {

// The config's limits.log_routine_*: a job's start or end logs its joins in full (up to 50 at
// once), a loop is cut to 2 lines/s per uid.
struct RoutineLimits {
    std::size_t burst = 50;
    std::size_t per_minute = 120;
    bool operator==(const RoutineLimits &) const = default;
};

// The longest a folded line waits for its summary.
inline constexpr Duration kMaxFoldedFor = std::chrono::seconds(10);

inline constexpr std::size_t kNoteKinds = static_cast<std::size_t>(EngineNote::Kind::warning) + 1;

// What one uid's summary says: how many lines were folded, per kind, over how long (from the
// first folded line to the summary).
struct FoldSummary {
    uid_t uid = 0;
    std::uint64_t folded = 0;
    std::array<std::uint64_t, kNoteKinds> by_kind{}; // indexed by EngineNote::Kind
    Duration over{0};
};

// "uid 1001 (bob): 4,950 routine membership lines folded in the last 10 s (joined 2,475, left
// 2,475)"; `user` is the uid's name, "" when it has none.
std::string describe(const FoldSummary &summary, const std::string &user);

class RoutineLimiter {
public:
    // Writes one summary (the daemon: logging::log_folded()).
    using Summarize = std::function<void(const FoldSummary &)>;

    RoutineLimiter(Timers &timers, RoutineLimits limits, Summarize summarize);
    ~RoutineLimiter();
    RoutineLimiter(const RoutineLimiter &) = delete;
    RoutineLimiter &operator=(const RoutineLimiter &) = delete;

    // Whether a routine line about a client of `uid` is written now; false: it was folded
    // (counted under `kind`). A summary due for `uid` is written first.
    bool admit(uid_t uid, EngineNote::Kind kind);

    // A reload: buckets keep their level, capped at the new burst.
    void set_limits(const RoutineLimits &limits);
    const RoutineLimits &limits() const { return limits_; }

    // Summarizes every uid with folded lines (at stop).
    void flush();

    // Uids with folded lines not summarized yet.
    std::size_t folding() const;

private:
    struct Bucket {
        double tokens = 0;
        TimePoint filled{}; // when `tokens` was last brought up to date
        std::uint64_t folded = 0;
        std::array<std::uint64_t, kNoteKinds> by_kind{};
        TimePoint first_fold{}, last_fold{};
    };

    void refill(Bucket &b, TimePoint now) const;
    void summarize(uid_t uid, Bucket &b, TimePoint now);
    void arm();
    void on_timer();

    Timers &timers_;
    RoutineLimits limits_;
    Summarize summarize_;
    std::map<uid_t, Bucket> buckets_;
    Timers::Id timer_ = 0;
};

} // namespace mcastd::logging
