// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "core/group_read.hpp"

#include <algorithm>
#include <tuple>
#include <vector>

namespace mcastd::core {

namespace {

bool unassigned(const Group &g) { return g.sa_assigned && is_zero(g.mgid); }

GroupKey group_key(const Group &g) { return GroupKey{g.port, g.mgid, unassigned(g) ? g.id : 0}; }

// The group's header: everything but its members.
GroupView header(const Group &g) {
    GroupView v;
    v.port = g.port;
    v.mgid = g.mgid;
    v.unassigned = unassigned(g) ? g.id : 0;
    v.have_record = g.sa.have_record;
    v.record = g.sa.record;
    v.held = g.sa.held;
    v.foreign = g.sa.foreign;
    v.uncertain = g.sa.uncertain;
    if (g.op && (g.op->kind == Op::Kind::join_set || g.op->kind == Op::Kind::repair_set || g.op->kind == Op::Kind::del))
        v.uncertain = static_cast<std::uint8_t>(v.uncertain | g.op->bits);
    v.counts = g.count;
    v.busy = g.op.has_value();
    return v;
}

MemberView member_view(const EngineState &s, MembershipId id) {
    const Member &m = s.members.at(id);
    MemberView mv{id, m.client, m.bits, MemberView::State::pending, m.params};
    if (m.state == MemberState::active)
        mv.state = m.suspended ? MemberView::State::lost : MemberView::State::active;
    if (m.state == MemberState::lost)
        mv.state = MemberView::State::lost;
    return mv;
}

// The port's group with key `k`, if it still exists.
const Group *find(const Port &p, const GroupKey &k) {
    if (k.unassigned)
        return p.unassigned.count(k.unassigned) ? p.groups.find(k.unassigned) : nullptr;
    const auto it = p.by_mgid.find(k.mgid);
    return it == p.by_mgid.end() ? nullptr : p.groups.find(it->second);
}

// The port's first group after `k` in key order (its first when `k` is unset). The keys of
// by_mgid are (MGID, 0), those of `unassigned` (0, handle): an MGID-0 group in by_mgid would
// come before the unassigned ones, every other MGID after them.
const Group *first_after(const Port &p, const std::optional<GroupKey> &k) {
    const auto a = k ? p.by_mgid.upper_bound(k->mgid) : p.by_mgid.begin();
    const auto b = !k                 ? p.unassigned.begin()
                   : is_zero(k->mgid) ? p.unassigned.upper_bound(k->unassigned)
                                      : p.unassigned.end();
    const bool a_ok = a != p.by_mgid.end(), b_ok = b != p.unassigned.end();
    if (a_ok && (!b_ok || is_zero(a->first)))
        return p.groups.find(a->second);
    if (b_ok)
        return p.groups.find(*b);
    return nullptr;
}

// Adds the group's members after `after` to `v`, in id order, at most `room` of them. Returns
// true when more are left. Settled members are in an ordered set; the queue (joins waiting for
// the SA, a handful) is sorted here.
bool read_members(const EngineState &s, const Group &g, std::optional<MembershipId> after, std::size_t room,
                  GroupView &v) {
    auto settled = after ? g.settled.upper_bound(*after) : g.settled.begin();
    std::vector<MembershipId> queued;
    for (MembershipId id : g.queue)
        if (!after || id > *after)
            queued.push_back(id);
    std::sort(queued.begin(), queued.end());
    auto q = queued.begin();
    while (settled != g.settled.end() || q != queued.end()) {
        if (v.members.size() == room)
            return true;
        const bool from_settled = q == queued.end() || (settled != g.settled.end() && *settled < *q);
        v.members.push_back(member_view(s, from_settled ? *settled++ : *q++));
    }
    return false;
}

GroupRead read_all(const EngineState &s, const std::optional<GroupCursor> &from, std::size_t max_members) {
    GroupRead out;
    PortIndex pi = from ? from->group.port : 0;
    if (pi >= s.ports.size())
        return out;
    const Group *g = nullptr;
    std::optional<MembershipId> after; // set while `g` is the group the cursor stopped in
    if (from && from->member && (g = find(s.ports[pi], from->group)))
        after = from->member;
    if (!g)
        g = first_after(s.ports[pi], from ? std::optional(from->group) : std::nullopt);
    std::size_t used = 0;
    for (;;) {
        while (!g && ++pi < s.ports.size())
            g = first_after(s.ports[pi], std::nullopt);
        if (!g) {
            out.next.reset(); // nothing is left
            return out;
        }
        if (used == max_members)
            return out; // `next` is after the last group read
        const GroupKey key = group_key(*g);
        GroupView v = header(*g);
        const bool more = read_members(s, *g, after, max_members - used, v);
        // A group the cursor stopped in with no member left after it was listed already.
        if (!after || !v.members.empty()) {
            used += std::max<std::size_t>(v.members.size(), 1);
            out.groups.push_back(std::move(v));
        }
        if (more) {
            out.next = GroupCursor{key, out.groups.back().members.back().id};
            return out;
        }
        out.next = GroupCursor{key, std::nullopt};
        g = first_after(s.ports[pi], key);
        after.reset();
    }
}

// Only `client`'s memberships: its own are walked (bounded by its limits), not every group.
GroupRead read_own(const EngineState &s, const std::optional<GroupCursor> &from, std::size_t max_members,
                   ClientId client) {
    GroupRead out;
    const auto c = s.clients.find(client);
    if (c == s.clients.end())
        return out;
    struct Item {
        GroupKey key;
        MembershipId id;
        const Group *group;
    };
    const auto before = [](const Item &a, const Item &b) { return std::tie(a.key, a.id) < std::tie(b.key, b.id); };
    std::vector<Item> items;
    for (MembershipId id : c->second.members) {
        const Member &m = s.members.at(id);
        const Group *g = s.ports[m.port].groups.find(m.group);
        if (!g)
            continue;
        const Item item{group_key(*g), id, g};
        if (from && (from->member ? std::tie(item.key, item.id) <= std::tie(from->group, *from->member)
                                  : item.key <= from->group))
            continue;
        items.push_back(item);
    }
    const bool more = items.size() > max_members;
    if (more) {
        std::nth_element(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(max_members), items.end(), before);
        items.resize(max_members);
    }
    std::sort(items.begin(), items.end(), before);
    for (const Item &item : items) {
        if (out.groups.empty() || key_of(out.groups.back()) != item.key)
            out.groups.push_back(header(*item.group));
        out.groups.back().members.push_back(member_view(s, item.id));
    }
    if (more)
        out.next = GroupCursor{items.back().key, items.back().id};
    return out;
}

} // namespace

std::optional<GroupView> read_group(const EngineState &s, PortIndex port, const Gid &mgid, bool with_members) {
    if (port >= s.ports.size() || is_zero(mgid))
        return std::nullopt;
    const Group *g = find(s.ports[port], GroupKey{port, mgid, 0});
    if (!g)
        return std::nullopt;
    GroupView v = header(*g);
    if (with_members)
        read_members(s, *g, std::nullopt, SIZE_MAX, v);
    return v;
}

std::optional<MemberView> read_member(const EngineState &s, MembershipId id) {
    if (!s.members.count(id))
        return std::nullopt;
    return member_view(s, id);
}

GroupRead read_groups(const EngineState &s, const std::optional<GroupCursor> &from, std::size_t max_members,
                      std::optional<ClientId> only) {
    max_members = std::max<std::size_t>(max_members, 1); // a read always gets somewhere
    return only ? read_own(s, from, max_members, *only) : read_all(s, from, max_members);
}

} // namespace mcastd::core
