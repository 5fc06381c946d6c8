// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "restart/state_mirror.hpp"

#include <tuple>

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
            const GroupKey key{PortKey{m.device, m.port, gid == gid_of.end() ? Gid{} : gid->second}, m.mgid};
            members_.insert_or_assign(m.id, Member{MembershipChange{s.id, m}, key});
            group_members_[key].insert(m.id);
            session_members_[s.id].insert(m.id);
        }
    }
    next_session_ = state.next_session;
    roce_ = state.roce;
}

void StateMirror::forget_member(std::uint64_t id) {
    const auto it = members_.find(id);
    if (it == members_.end())
        return;
    if (auto g = group_members_.find(it->second.group); g != group_members_.end() && g->second.erase(id) &&
                                                        g->second.empty())
        group_members_.erase(g);
    if (auto s = session_members_.find(it->second.saved.session);
        s != session_members_.end() && s->second.erase(id) && s->second.empty())
        session_members_.erase(s);
    members_.erase(it);
}

void StateMirror::group(const PortKey &port, const Gid &mgid, const std::optional<SavedGroup> &now,
                        std::vector<MembershipChange> members, std::vector<Change> &out) {
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
    std::set<std::uint64_t> now_ids;
    for (MembershipChange &m : members) {
        const std::uint64_t id = m.membership.id;
        now_ids.insert(id);
        const auto it = members_.find(id);
        if (it != members_.end() && it->second.saved == m && it->second.group == key)
            continue;
        out.push_back(m);
        forget_member(id);
        group_members_[key].insert(id);
        session_members_[m.session].insert(id);
        members_.insert_or_assign(id, Member{std::move(m), key});
    }
    if (auto was = group_members_.find(key); was != group_members_.end())
        for (const std::uint64_t id : std::set<std::uint64_t>(was->second))
            if (!now_ids.count(id)) {
                out.push_back(MembershipGone{id});
                forget_member(id);
            }
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
        out.push_back(SessionGone{it->first});
        if (auto m = session_members_.find(it->first); m != session_members_.end())
            for (const std::uint64_t id : std::set<std::uint64_t>(m->second))
                forget_member(id); // the replay drops them with their session
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
