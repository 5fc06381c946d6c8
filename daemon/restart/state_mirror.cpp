// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "restart/state_mirror.hpp"

#include <algorithm>
#include <set>

namespace mcastd::restart {

void StateMirror::reset(const SavedState &state) {
    *this = StateMirror{};
    std::map<std::pair<std::string, std::uint8_t>, Gid> gid_of;
    for (const SavedPort &p : state.ports) {
        gid_of.emplace(std::pair{p.device, p.port}, p.port_gid);
        for (const SavedGroup &g : p.groups)
            groups_.emplace(GroupKey{PortKey{p.device, p.port, p.port_gid}, g.mgid}, g);
    }
    for (const SavedSession &s : state.sessions) {
        SavedSession head = s;
        head.memberships.clear();
        sessions_.emplace(s.id, std::move(head));
        for (const SavedMembership &m : s.memberships) {
            const auto gid = gid_of.find(std::pair{m.device, m.port});
            members_[GroupKey{PortKey{m.device, m.port, gid == gid_of.end() ? Gid{} : gid->second}, m.mgid}].push_back(
                m.id);
        }
    }
    for (auto &[key, ids] : members_)
        std::sort(ids.begin(), ids.end());
    next_session_ = state.next_session;
    roce_ = state.roce;
}

std::vector<std::size_t> StateMirror::group(const PortKey &port, const Gid &mgid, const std::optional<SavedGroup> &now,
                                            const std::vector<std::uint64_t> &ids, std::vector<Change> &out) {
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
    // Both lists in id order: one merge finds what came and what went.
    std::vector<std::size_t> added;
    const auto was = members_.find(key);
    static const std::vector<std::uint64_t> none;
    const std::vector<std::uint64_t> &old_ids = was == members_.end() ? none : was->second;
    std::size_t i = 0, j = 0;
    while (i < ids.size() || j < old_ids.size()) {
        if (j == old_ids.size() || (i < ids.size() && ids[i] < old_ids[j])) {
            added.push_back(i++);
        } else if (i == ids.size() || old_ids[j] < ids[i]) {
            out.push_back(MembershipGone{old_ids[j++]});
        } else {
            ++i;
            ++j;
        }
    }
    if (ids.empty()) {
        if (was != members_.end())
            members_.erase(was);
    } else if (was == members_.end()) {
        members_.emplace(key, ids);
    } else if (!added.empty() || ids.size() != old_ids.size()) {
        was->second = ids;
    }
    return added;
}

void StateMirror::sessions(std::vector<SavedSession> heads, std::vector<Change> &out) {
    std::set<std::uint64_t> now_ids;
    for (SavedSession &s : heads) {
        now_ids.insert(s.id);
        const auto it = sessions_.find(s.id);
        if (it != sessions_.end() && it->second == s)
            continue;
        out.push_back(SessionChange{s});
        sessions_.insert_or_assign(s.id, std::move(s));
    }
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (now_ids.count(it->first)) {
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
