// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "core/absent_mgids.hpp"

namespace mcastd {

void AbsentMgids::seen_absent(const Gid &mgid, TimePoint now) {
    forget(mgid); // seen again: it moves to the young end
    expire(now);
    if (capacity_ == 0)
        return;
    while (by_mgid_.size() >= capacity_) {
        by_mgid_.erase(order_.front().mgid);
        order_.pop_front();
    }
    order_.push_back(Seen{mgid, now});
    by_mgid_.emplace(mgid, std::prev(order_.end()));
}

bool AbsentMgids::recently_absent(const Gid &mgid, TimePoint now) const {
    auto it = by_mgid_.find(mgid);
    return it != by_mgid_.end() && now - it->second->when < memory_;
}

void AbsentMgids::forget(const Gid &mgid) {
    auto it = by_mgid_.find(mgid);
    if (it == by_mgid_.end())
        return;
    order_.erase(it->second);
    by_mgid_.erase(it);
}

void AbsentMgids::clear() {
    order_.clear();
    by_mgid_.clear();
}

// Entries are in the order they were seen, so the expired ones are a prefix.
void AbsentMgids::expire(TimePoint now) {
    while (!order_.empty() && now - order_.front().when >= memory_) {
        by_mgid_.erase(order_.front().mgid);
        order_.pop_front();
    }
}

} // namespace mcastd
