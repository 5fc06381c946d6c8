// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The joins waiting in one group, in arrival order: a vector with a moving head. It allocates
// nothing while empty (a port may hold 100,000 groups, nearly all with nothing queued), pushes
// and pops in O(1), and removes a withdrawn join from anywhere.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "common/request.hpp"

namespace mcastd::core {

class JoinQueue {
public:
    bool empty() const { return head_ == ids_.size(); }
    std::size_t size() const { return ids_.size() - head_; }
    MembershipId front() const { return ids_[head_]; }
    const MembershipId *begin() const { return ids_.data() + head_; }
    const MembershipId *end() const { return ids_.data() + ids_.size(); }

    void push_back(MembershipId id) { ids_.push_back(id); }
    void pop_front() {
        ++head_;
        settle();
    }
    // Removes `id` wherever it waits; false if it is not queued here.
    bool erase(MembershipId id) {
        auto it = std::find(ids_.begin() + static_cast<std::ptrdiff_t>(head_), ids_.end(), id);
        if (it == ids_.end())
            return false;
        ids_.erase(it);
        settle();
        return true;
    }

private:
    // Gives the memory back once empty; drops the popped prefix once it is most of the vector.
    void settle() {
        if (empty()) {
            std::vector<MembershipId>().swap(ids_);
            head_ = 0;
        } else if (head_ >= 16 && head_ * 2 >= ids_.size()) {
            ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(head_));
            head_ = 0;
        }
    }

    std::vector<MembershipId> ids_;
    std::size_t head_ = 0;
};

} // namespace mcastd::core
