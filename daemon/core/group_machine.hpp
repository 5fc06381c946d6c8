// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The group state machine: one SA transaction in flight per group, and after every answer the
// group is pumped: queued joins are answered locally or get one Set, then the held bits are
// reconciled with what the members need (level-triggered: the decision looks only at the
// state, never at how it got there).
//
// The decisions come from the pure join rules (join_rules.hpp) and SaKnowledge::reconcile();
// this file sends what they decide, applies what the SA answers, and keeps the member book
// (members.hpp) in step.
#pragma once

#include <string>

#include "core/engine_state.hpp"
#include "core/group_driver.hpp"
#include "core/join_rules.hpp"
#include "core/members.hpp"

namespace mcastd::core {

// The groups of a port whose memberships live at the SA (InfiniBand).
class GroupMachine final : public GroupDriver {
public:
    using GroupDriver::GroupDriver;

    // Runs the group once: answers or sends for the joins it queues, else reconciles its bits.
    // Never destroys it (a join just queued there keeps it anyway).
    void pump(Group &g) override;

    // The SA may have lost this group's bits: what was held becomes uncertain (a Set confirms
    // it), and if members want anything the group is re-set before anything else happens.
    void mark_rejoin(Group &g) override;
    // Audits the group: a Get of the port's membership.
    void start_audit(Group &g);
    // Drops the group's SA transaction and retry timer (the engine is going away).
    void abandon(Group &g) override;

private:
    void reconcile(Group &g);
    bool rejoin_step(Group &g);

    void submit(Group &g, Op op, SaRequest req);
    // `req`, SA work that brings `g` in line after a client changed what it needs: charged to
    // that client's uid (the debt meter) and sent in its uid's turn at the SA.
    SaRequest owed_by_changer(const Group &g, SaRequest req);
    void start_probe(Group &g, bool resync);
    // A new group in an owned prefix: the member's Set alone, no probe before it.
    enum class Owned : std::uint8_t { probe, sent, refused };
    Owned try_owned_set(Group &g, MembershipId id);
    // In an owned prefix, a group where another agent on the port holds bits takes no join.
    bool refused_foreign_in_owned(Group &g, MembershipId id);
    void start_exact_probe(Group &g, Op op);
    // The member's create gate, when its Set would create the group: why it may not.
    std::optional<Error> ask_create(Group &g, MembershipId id);
    // The member's would_create gate, before a first probe of an MGID the port's SA recently
    // said was absent: why it may not.
    std::optional<Error> ask_would_create(Group &g, MembershipId id);
    // The member's sa gate, before a transaction sent on its behalf: why it may not.
    std::optional<Error> ask_sa(MembershipId id, SaMethod method);
    // Fails the queued member `id` with `no`, if set. True when it did.
    bool refused(Group &g, MembershipId id, std::optional<Error> no);
    // Before a join's probe that follows another (op: the one answered): asks the head join's
    // sa gate. False when it refused (the join failed).
    bool may_probe_on(Group &g, const Op &op);
    void start_join_set(Group &g, MembershipId id, std::uint8_t bits);
    void start_refresh(Group &g);
    void schedule_retry(Group &g);

    void on_result(Group &g, const SaResult &r);
    void finish_probe(Group &g, const Op &op, std::uint8_t stored);
    void probe_failed(Group &g, const Op &op, const SaResult &r);
    // The group that goes on: another one when an SA-assigned MGID was merged into it (rekey).
    Group &on_join_set(Group &g, const Op &op, const SaResult &r);
    void refuse_assigned(Group &g, const Op &op, const SaResult &r, const AssignedMgidRefusal &no);
    // An SA-assigned group that turned out to be one the port already has: merged into it.
    Group &rekey(Group &g);
    void on_repair_set(Group &g, const Op &op, const SaResult &r);
    void on_delete(Group &g, const Op &op, const SaResult &r);
    void on_refresh(Group &g, const SaResult &r);
    void on_audit(Group &g, const SaResult &r);
    void adopt_set_answer(Group &g, const McRecord &resp, std::uint8_t bits, bool trusted, bool ends_rejoin);
};

// "the SA did not answer after 6 tries", for errors and warnings.
std::string timeout_text(const SaResult &r);

// A join the SA left unanswered: sa_timeout, "join of group ff15::1 on mlx5_0/1: the SA did not
// answer after 6 tries". One wording whichever step (Set, probe, refresh) went unanswered.
Error join_timeout(const std::string &where, const SaResult &r);

} // namespace mcastd::core
