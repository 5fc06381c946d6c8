// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sa/tenant_queue.hpp"

#include <algorithm>

namespace mcastd::sa {

void TenantQueue::pop_front() {
    const std::uint32_t tenant = turn_.front();
    turn_.pop_front();
    auto &q = by_tenant_.at(tenant);
    tenant_of_.erase(q.front());
    q.pop_front();
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
    tenant_of_[id] = tenant;
}

void TenantQueue::push_front(std::uint32_t tenant, Id id) {
    auto &q = by_tenant_[tenant];
    if (!q.empty())
        turn_.erase(std::find(turn_.begin(), turn_.end(), tenant));
    turn_.push_front(tenant);
    q.push_front(id);
    tenant_of_[id] = tenant;
}

bool TenantQueue::erase(Id id) {
    const auto it = tenant_of_.find(id);
    if (it == tenant_of_.end())
        return false;
    const std::uint32_t tenant = it->second;
    tenant_of_.erase(it);
    auto &q = by_tenant_.at(tenant);
    q.erase(std::find(q.begin(), q.end(), id));
    if (q.empty()) {
        by_tenant_.erase(tenant);
        turn_.erase(std::find(turn_.begin(), turn_.end(), tenant));
    }
    return true;
}

void TenantQueue::clear() {
    by_tenant_.clear();
    turn_.clear();
    tenant_of_.clear();
}

} // namespace mcastd::sa
