// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "core/members.hpp"

#include <algorithm>

namespace mcastd::core {

MembershipId MemberBook::enqueue(ClientId client, Group &g, const JoinRequest &req, JoinCallback done) {
    const MembershipId id = s_.next_member++;
    Member m;
    m.client = client;
    m.port = g.port;
    m.group = g.id;
    m.bits = req.join_state;
    m.params = req.params;
    if (s_.ports[g.port].backend) // the SA has no use for it: a client's socket is not held
        m.roce = req.roce;
    m.done = std::move(done);
    s_.members.emplace(id, std::move(m));
    s_.clients.at(client).members.insert(id);
    g.queue.push_back(id);
    return id;
}

MembershipId MemberBook::refuse(JoinCallback done, Error err) {
    const MembershipId id = s_.next_member++;
    ++s_.stats.joins_failed;
    s_.reply(std::move(done), JoinResult{id, std::move(err), {}});
    return id;
}

void MemberBook::reply(Member &m, MembershipId id, std::optional<Error> err, const McRecord &rec) {
    if (!m.done)
        return;
    s_.reply(std::move(m.done), JoinResult{id, std::move(err), rec});
    m.done = nullptr;
}

void MemberBook::activate(Group &g, MembershipId id) {
    Member &m = s_.members.at(id);
    m.state = MemberState::active;
    m.gates.reset(); // it joined: the gates and what they hold are no longer needed
    count_bits(g.count, m.bits, +1);
    g.settled.insert(id);
    if (!m.sent)
        ++s_.stats.joins_local;
    else if (auto c = s_.clients.find(m.client); c != s_.clients.end())
        g.changer = c->second.info; // its Set may have made bits redundant: their Delete is its doing
    // Routine notes carry no text: describe() makes it for the observers that print it, so a
    // join answered locally costs no string formatting.
    EngineNote n = EngineState::group_note(EngineNote::Kind::joined, g, m.bits, m.client);
    n.local = !m.sent;
    n.member = id;
    s_.note(std::move(n));
    reply(m, id, std::nullopt, s_.member_record(g, m));
}

void MemberBook::fail(Group &g, MembershipId id, Error err) {
    Member &m = s_.members.at(id);
    ++s_.stats.joins_failed;
    s_.note_group(EngineNote::Kind::join_failed, g, m.bits, m.client, err.message, err.sa_status);
    reply(m, id, std::move(err), {});
    erase(id);
}

void MemberBook::erase(MembershipId id) {
    auto it = s_.members.find(id);
    if (it == s_.members.end())
        return;
    Member &m = it->second;
    if (auto c = s_.clients.find(m.client); c != s_.clients.end())
        c->second.members.erase(id);
    if (Group *g = s_.find_group(m.port, m.group)) {
        detach(*g, id, m);
        if (m.state == MemberState::active)
            count_bits(g->count, m.bits, -1);
        g->settled.erase(id);
        g->queue.erase(id);
    }
    s_.members.erase(it);
}

void MemberBook::fail_head_and_identical(Group &g, MembershipId head, const Error &err) {
    auto hm = s_.members.find(head);
    if (hm == s_.members.end())
        return;
    const std::uint8_t bits = hm->second.bits;
    const GroupParams params = hm->second.params;
    std::vector<MembershipId> doomed;
    for (MembershipId id : g.queue) {
        const Member &m = s_.members.at(id);
        if (id == head || (m.bits == bits && m.params == params))
            doomed.push_back(id);
    }
    for (MembershipId id : doomed)
        fail(g, id, err);
}

void MemberBook::lose(Group &g, MembershipId id, const Error &why) {
    Member &m = s_.members.at(id);
    if (m.state != MemberState::active)
        return;
    count_bits(g.count, m.bits, -1);
    m.state = MemberState::lost;
    detach(g, id, m);
    s_.note_group(EngineNote::Kind::lost, g, m.bits, m.client, "lost " + s_.where(g) + ": " + why.message,
                  why.sa_status);
    s_.event(m.client, id, MembershipEvent{MembershipEvent::Kind::lost, s_.member_record(g, m), 0, why});
}

void MemberBook::detach(Group &g, MembershipId id, Member &m) {
    if (!m.attached)
        return;
    m.attached = false;
    MembershipBackend &backend = *s_.ports[g.port].backend;
    if (auto err = backend.remove_member(FabricMember{g.port, g.mgid, id, m.bits, nullptr, false}))
        s_.note_group(EngineNote::Kind::warning, g, m.bits, m.client,
                      "leave of " + join_state_name(m.bits) + " from " + s_.where(g) + ": " + err->message);
}

void MemberBook::lose_unserved(Group &g, std::uint8_t present, const Error &why) {
    std::vector<MembershipId> victims;
    for (MembershipId id : g.settled) {
        const Member &m = s_.members.at(id);
        if (m.state == MemberState::active && (m.bits & ~present))
            victims.push_back(id);
    }
    for (MembershipId id : victims)
        lose(g, id, why);
}

void MemberBook::suspend(Group &g, const Error &why) {
    for (MembershipId id : g.settled) {
        Member &m = s_.members.at(id);
        if (m.state != MemberState::active || m.suspended)
            continue;
        m.suspended = true;
        s_.note_group(EngineNote::Kind::lost, g, m.bits, m.client, "lost " + s_.where(g) + ": " + why.message);
        s_.event(m.client, id, MembershipEvent{MembershipEvent::Kind::lost, s_.member_record(g, m), 0, why});
    }
}

void MemberBook::tell_restored(Group &g, std::uint64_t changed) {
    for (MembershipId id : g.settled) {
        Member &m = s_.members.at(id);
        if (m.state != MemberState::active)
            continue;
        m.suspended = false;
        EngineNote n = EngineState::group_note(EngineNote::Kind::restored, g, m.bits, m.client);
        n.changed = changed; // routine: describe() words it
        s_.note(std::move(n));
        s_.event(m.client, id, MembershipEvent{MembershipEvent::Kind::restored, s_.member_record(g, m), changed, {}});
    }
}

Group &MemberBook::release(MembershipId id, bool tell) {
    Member &m = s_.members.at(id);
    Group &g = s_.group_of(m);
    ++s_.stats.leaves;
    if (m.state == MemberState::queued) {
        if (tell)
            reply(m, id, Error{Errc::cancelled, "the join was withdrawn before it completed", {}}, {});
        else
            m.done = nullptr;
    } else {
        EngineNote n = EngineState::group_note(EngineNote::Kind::left, g, m.bits, m.client);
        n.member = id;
        s_.note(std::move(n));
    }
    // An active member's release lowers what the group needs; a withdrawn join whose Set went
    // out leaves bits nobody needs. Either way a Delete may follow, and it is this client's.
    if (m.state == MemberState::active || (m.state == MemberState::queued && m.sent))
        if (auto c = s_.clients.find(m.client); c != s_.clients.end())
            g.changer = c->second.info;
    erase(id);
    return g;
}

} // namespace mcastd::core
