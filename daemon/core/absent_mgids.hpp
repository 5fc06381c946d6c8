// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The MGIDs a port's SA recently said do not exist (engine.hpp, kAbsentMemory): a join of one
// of them would most likely create its group, so a caller who may not create can be refused
// before any MAD. A value with no clock of its own: the caller passes the time.
#pragma once

#include <cstddef>
#include <list>
#include <map>

#include "common/gid.hpp"
#include "core/timers.hpp"

namespace mcastd {

class AbsentMgids {
public:
    // Remembers each MGID for `memory` after it was seen absent, at most `capacity` of them.
    AbsentMgids(Duration memory, std::size_t capacity) : memory_(memory), capacity_(capacity) {}

    // The SA said at `now` that `mgid` does not exist. Over capacity, the oldest is forgotten.
    void seen_absent(const Gid &mgid, TimePoint now);
    // Whether the SA said so within the memory before `now`.
    bool recently_absent(const Gid &mgid, TimePoint now) const;
    // The group exists (the engine created or learned of it): forget it at once.
    void forget(const Gid &mgid);
    void clear();
    std::size_t size() const { return by_mgid_.size(); }

private:
    struct Seen {
        Gid mgid;
        TimePoint when;
    };
    void expire(TimePoint now);

    Duration memory_;
    std::size_t capacity_;
    std::list<Seen> order_; // oldest first
    GidMap<std::list<Seen>::iterator> by_mgid_;
};

} // namespace mcastd
