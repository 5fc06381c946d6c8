// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA transactions waiting at one rank of a port (for a window slot, or for a pacing token),
// served round robin by tenant: the uid whose request caused them (SaRequest::tenant; 0 for the
// daemon's own work), each tenant's in FIFO order. So one user's burst of probes waits behind
// itself, not in front of every other user's next join: a port's SA window and pacing are shared
// fairly, whatever one user asks for (doc/architecture.md §12).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>

namespace mcastd::sa {

class TenantQueue {
public:
    using Id = std::uint64_t;

    bool empty() const { return turn_.empty(); }
    std::size_t size() const { return size_; }
    // The next transaction in turn; only when !empty().
    Id front() const { return by_tenant_.at(turn_.front()).front(); }
    // Takes front(): its tenant's turn passes to the next tenant.
    void pop_front();
    // Behind its tenant's own.
    void push_back(std::uint32_t tenant, Id id);
    // Ahead of everything: its tenant's turn comes next, and it is first among its own (a
    // transaction that had to give its place back).
    void push_front(std::uint32_t tenant, Id id);
    // Wherever it waits among its tenant's; false when it does not. The caller knows the
    // tenant (the transaction carries it), so no index from Id to tenant is kept: that was a
    // hash node per transaction queued.
    bool erase(std::uint32_t tenant, Id id);
    // Every waiting transaction, tenant by tenant in turn order, each tenant's first to last.
    template <class F> void for_each(F f) const {
        for (const std::uint32_t tenant : turn_)
            for (const Id id : by_tenant_.at(tenant))
                f(id);
    }
    void clear();

private:
    std::unordered_map<std::uint32_t, std::deque<Id>> by_tenant_;
    std::deque<std::uint32_t> turn_; // tenants with something waiting, the next first
    std::size_t size_ = 0;
};

} // namespace mcastd::sa
