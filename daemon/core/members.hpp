// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The member book: who holds what in a group, and what each member is told. Counts members per
// JoinState bit as they become active, answers joins, and tells members `lost` or `restored`.
// It never talks to the SA: the group state machine decides, the book keeps the accounts.
#pragma once

#include "core/engine_state.hpp"

namespace mcastd::core {

class MemberBook {
public:
    explicit MemberBook(EngineState &s) : s_(s) {}

    // A new member queued in `g` (the join waits for pump()). Returns its id.
    MembershipId enqueue(ClientId client, Group &g, const JoinRequest &req, JoinCallback done);
    // A join refused before it reached a group: answered (later) with `err`.
    MembershipId refuse(JoinCallback done, Error err);

    // The queued member `id` joined: counted, noted, answered with the group's record.
    void activate(Group &g, MembershipId id);
    // Drops a member that never became active, telling its client why.
    void fail(Group &g, MembershipId id, Error err);
    // Fails the queue head and every queued join identical to it: they would send the same
    // request and get the same answer.
    void fail_head_and_identical(Group &g, MembershipId head, const Error &err);
    // An active member lost its membership (the SA refused to re-join it): uncounted.
    void lose(Group &g, MembershipId id, const Error &why);
    // Every active member whose bits `present` does not cover loses its membership.
    void lose_unserved(Group &g, std::uint8_t present, const Error &why);
    // Tells active members their membership is gone for now (port down) while keeping them
    // counted, so that the re-join brings them back.
    void suspend(Group &g, const Error &why);
    // Tells every active member its membership holds (again), and what changed.
    void tell_restored(Group &g, std::uint64_t changed);

    // Releases one membership (leave or client gone). `tell` says whether a pending join's
    // callback still gets its `cancelled` answer. Returns the group, which the caller must
    // advance: its bits may now be due for a Delete.
    Group &release(MembershipId id, bool tell);
    // Forgets a member: uncounted, out of its group's queue and its client's list.
    void erase(MembershipId id);

private:
    // The member's membership ends at its port's membership backend, if that holds it.
    void detach(Group &g, MembershipId id, Member &m);
    void reply(Member &m, MembershipId id, std::optional<Error> err, const McRecord &rec);

    EngineState &s_;
};

} // namespace mcastd::core
