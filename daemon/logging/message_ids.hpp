// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The journal MESSAGE_IDs of rdma-mcastd's membership events, one per kind of event.
// Each was generated once with `systemd-id128 new` and must never change: operators filter
// on them (journalctl MESSAGE_ID=...), and systemd/rdma-mcastd.catalog explains each one.
#pragma once

#include <array>
#include <string_view>

#include "core/engine.hpp"

namespace mcastd::logging {

struct MessageId {
    std::string_view name; // what the event is, for tests and documentation
    std::string_view id;   // 32 lowercase hex digits
};

inline constexpr MessageId kJoined{"joined", "f60dd3c5b678467c99198b6d374ef909"};
inline constexpr MessageId kLeft{"left", "83e0ef8f164148318c04f6118aa4ac7a"};
inline constexpr MessageId kJoinFailed{"join-failed", "c559c617bded4f48b010f1ee8791182a"};
inline constexpr MessageId kDeleted{"deleted", "ab508f177aa34a83ae7d49657ffc1b9b"};
inline constexpr MessageId kLost{"lost", "85a99e51f97648d09901a0c421153839"};
inline constexpr MessageId kRestored{"restored", "a1807ecae75f4de08e789adecfda4df3"};
inline constexpr MessageId kWarning{"warning", "8d119520e6d844b7bd1a5cc3e97baf3b"};

// The access policy's (logging/policy_log.hpp): a join refused by a rule or quota, a membership
// the rules in force would refuse (after a reload), a membership an administrator evicted.
inline constexpr MessageId kPolicyRefused{"policy-refused", "003f78343973482aa022a520399c95b8"};
inline constexpr MessageId kPolicyFlagged{"policy-flagged", "08016cf88fea4193b218e78bf70449dd"};
inline constexpr MessageId kEvicted{"evicted", "a98f493d65814e21b3545c56e208e9a0"};

// The front door's (logging/policy_log.hpp): a client refused (the allow lists, its uid's share of
// client slots, no hello in time) and a client an administrator disconnected. Never folded.
inline constexpr MessageId kClientRefused{"client-refused", "a39612fb44dc4a2d9e16bd0c347dd412"};
inline constexpr MessageId kDisconnected{"disconnected", "9e75c999c0da4ff8ad800c6692a556c7"};

// The SA's load (logging/sa_log.hpp): SA MADs per transaction above the warning line.
inline constexpr MessageId kSaAmplified{"sa-amplified", "a713a90091b6414bba216606fd84915b"};

// A RoCE port's source addresses (logging/gid_log.hpp): a GID table entry, or its netdev, changed.
inline constexpr MessageId kRoceSource{"roce-source", "f5b59dbd83f543ada88c49fcfefb901b"};

// The routine membership lines of one uid folded by its rate limit (logging/routine_limiter.hpp).
inline constexpr MessageId kRoutineFolded{"routine-folded", "3f8e8305a1754468b12daa382eb87ecc"};

inline constexpr std::array kMessageIds{kJoined,        kLeft,          kJoinFailed,    kDeleted,
                                        kLost,          kRestored,      kWarning,       kPolicyRefused,
                                        kPolicyFlagged, kEvicted,       kClientRefused, kDisconnected,
                                        kSaAmplified,   kRoutineFolded, kRoceSource};

constexpr const MessageId &message_id(EngineNote::Kind kind) {
    switch (kind) {
    case EngineNote::Kind::joined: return kJoined;
    case EngineNote::Kind::left: return kLeft;
    case EngineNote::Kind::join_failed: return kJoinFailed;
    case EngineNote::Kind::deleted: return kDeleted;
    case EngineNote::Kind::lost: return kLost;
    case EngineNote::Kind::restored: return kRestored;
    case EngineNote::Kind::warning: return kWarning;
    }
    return kWarning;
}

} // namespace mcastd::logging
