// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sa/tenant_queue.hpp"

#include <algorithm>

namespace mcastd::sa {

void TenantQueue::pop_front() {
    const std::uint32_t tenant = turn_.front();
    turn_.pop_front();
    auto &q = by_tenant_.at(tenant);
    q.pop_front();
    --size_;
    if (q.empty())
        by_tenant_.erase(tenant);
    else
        turn_.push_back(tenant);
}

void TenantQueue::push_back(std::uint32_t tenant, Id id) {
    auto &q = by_tenant_[tenant];
    if (q.empty())
        turn_.push_back(tenant);
    q.push_back(id);
    ++size_;
}

void TenantQueue::push_front(std::uint32_t tenant, Id id) {
    auto &q = by_tenant_[tenant];
    if (!q.empty())
        turn_.erase(std::find(turn_.begin(), turn_.end(), tenant));
    turn_.push_front(tenant);
    q.push_front(id);
    ++size_;
}

bool TenantQueue::erase(std::uint32_t tenant, Id id) {
    const auto t = by_tenant_.find(tenant);
    if (t == by_tenant_.end())
        return false;
    auto &q = t->second;
    const auto it = std::find(q.begin(), q.end(), id);
    if (it == q.end())
        return false;
    q.erase(it);
    --size_;
    if (q.empty()) {
        by_tenant_.erase(tenant);
        turn_.erase(std::find(turn_.begin(), turn_.end(), tenant));
    }
    return true;
}

void TenantQueue::clear() {
    by_tenant_.clear();
    turn_.clear();
    size_ = 0;
}

} // namespace mcastd::sa
