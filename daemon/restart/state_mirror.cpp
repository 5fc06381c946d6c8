// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "restart/state_mirror.hpp"

#include <algorithm>
#include <vector>

namespace mcastd::restart {

void StateMirror::reset(const SavedState &state) {
    *this = StateMirror{};
    for (const SavedPort &p : state.ports)
        for (const SavedGroup &g : p.groups)
            groups_.emplace(GroupKey{PortKey{p.device, p.port, p.port_gid}, g.mgid}, g);
    for (const SavedSession &s : state.sessions) {
        SavedSession head = s;
        head.memberships.clear();
        sessions_.emplace(s.id, std::move(head));
    }
    next_session_ = state.next_session;
    roce_ = state.roce;
}

void StateMirror::group(const PortKey &port, const Gid &mgid, const std::optional<SavedGroup> &now,
                        std::vector<Change> &out) {
    const GroupKey key{port, mgid};
    if (auto old = groups_.find(key); now) {
        if (old == groups_.end() || old->second != *now) {
            out.push_back(GroupChange{port, *now});
            groups_.insert_or_assign(key, *now);
        }
    } else if (old != groups_.end()) {
        out.push_back(GroupChange{port, SavedGroup{mgid, 0, 0, std::nullopt}}); // no bits: gone
        groups_.erase(old);
    }
}

void StateMirror::sessions(std::vector<SavedSession> heads, std::vector<Change> &out) {
    // Sorted ids, not a std::set: this runs for every session at each flush after any session
    // changed, and a set cost an allocation per session.
    std::vector<std::uint64_t> now_ids;
    now_ids.reserve(heads.size());
    for (const SavedSession &s : heads)
        now_ids.push_back(s.id);
    std::sort(now_ids.begin(), now_ids.end());
    for (SavedSession &s : heads) {
        const auto it = sessions_.find(s.id);
        if (it != sessions_.end() && it->second == s)
            continue;
        out.push_back(SessionChange{s});
        sessions_.insert_or_assign(s.id, std::move(s));
    }
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (std::binary_search(now_ids.begin(), now_ids.end(), it->first)) {
            ++it;
            continue;
        }
        // Its memberships go with it at the replay; the engine's leaves say so for each too.
        out.push_back(SessionGone{it->first});
        it = sessions_.erase(it);
    }
}

void StateMirror::next_session(std::uint64_t next, std::vector<Change> &out) {
    if (next == next_session_)
        return;
    next_session_ = next;
    out.push_back(NextSession{next});
}

void StateMirror::roce(roce::KeptRoce now, std::vector<Change> &out) {
    if (now == roce_)
        return;
    roce_ = std::move(now);
    out.push_back(RoceChange{roce_});
}

} // namespace mcastd::restart
