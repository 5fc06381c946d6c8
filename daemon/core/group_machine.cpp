// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "core/group_machine.hpp"

#include <utility>

#include "common/sa_status.hpp"
#include "core/join_rules.hpp"

namespace mcastd::core {

namespace {

constexpr std::uint8_t kFullish = join::full | join::send_only_full;

Op op_of(Op::Kind kind, std::uint8_t bits = 0) {
    Op op;
    op.kind = kind;
    op.bits = bits;
    return op;
}

Op join_op(std::uint8_t bits, MembershipId member, bool create) {
    Op op = op_of(Op::Kind::join_set, bits);
    op.member = member;
    op.create = create;
    return op;
}

bool is_probe(Op::Kind k) {
    return k == Op::Kind::probe_group || k == Op::Kind::probe_member || k == Op::Kind::probe_exact ||
           k == Op::Kind::audit || k == Op::Kind::refresh;
}

} // namespace

std::string timeout_text(const SaResult &r) {
    return std::string("the SA ") +
           (r.bounced ? "was unreachable (requests came back undelivered)" : "did not answer") + " after " +
           std::to_string(r.tries) + (r.tries == 1 ? " try" : " tries");
}

Error join_timeout(const std::string &where, const SaResult &r) {
    return Error{Errc::sa_timeout, "join of " + where + ": " + timeout_text(r), {}};
}

// ---- groups ----

// An MGID-0 group learned its MGID. If the daemon already has a group of that MGID on the port
// (the SA handed an MGID out again: OpenSM's counter starts over when the SM restarts), they are
// one SA membership: fold this one into it, so that one count covers both groups' members and
// the last leave deletes everything either set.
Group &GroupMachine::rekey(Group &g) {
    Port &p = s_.ports[g.port];
    p.unassigned.erase(g.id);
    auto [it, inserted] = p.by_mgid.try_emplace(g.mgid, g.id);
    if (inserted)
        return g;
    Group &into = p.groups.at(it->second);
    into.sa.fold_in(g.sa);
    for (MembershipId id : g.queue) {
        s_.members.at(id).group = into.id;
        into.queue.push_back(id);
    }
    for (MembershipId id : g.settled) {
        Member &m = s_.members.at(id);
        m.group = into.id;
        if (m.state == MemberState::active)
            count_bits(into.count, m.bits, +1);
        into.settled.insert(id);
    }
    set_rejoin(g, false);
    p.groups.erase(g.id);
    return into;
}

void GroupMachine::abandon(Group &g) {
    if (g.op) {
        s_.sa.cancel(g.op->txn);
        g.op.reset();
        --s_.outstanding;
    }
    if (g.retry_timer) {
        s_.timers.cancel(g.retry_timer);
        g.retry_timer = 0;
        --s_.outstanding;
    }
}

// ---- re-join ----

void GroupMachine::mark_rejoin(Group &g) {
    g.sa.sa_may_have_lost();
    if (g.wanted())
        set_rejoin(g, true);
}

// One step of a group's re-join. Returns true when an SA transaction is now in flight.
bool GroupMachine::rejoin_step(Group &g) {
    const std::uint8_t missing = static_cast<std::uint8_t>(g.wanted() & ~g.sa.present());
    if (missing && g.sa.have_record) {
        submit(g, op_of(Op::Kind::repair_set, missing),
               repair_set(g.port, g.sa.record, s_.port_gid(g.port), missing));
        return true;
    }
    if (g.wanted() && g.sa.have_record) {
        // Another agent's bits serve the members (the kernel re-joined by itself): nothing to
        // set, but the group may have come back under another MLID. Ask for its record.
        start_refresh(g);
        return true;
    }
    finish_rejoin(g, 0);
    return false;
}

// ---- the state machine ----

void GroupMachine::pump(Group &g) {
    if (g.op) {
        // A join now waits for this re-join's transaction: it goes ahead of the other re-joins.
        if (g.op->background && !g.queue.empty()) {
            g.op->background = false;
            s_.sa.hasten(g.op->txn);
        }
        return;
    }
    const Port &port = s_.ports[g.port];
    if (g.rejoin) {
        // The re-join comes first; joins queued meanwhile wait for it. It needs a usable port,
        // the end of the port's jitter, and the end of any backoff.
        if (!s_.usable(g.port) || port.rejoin_timer || g.retry_timer || rejoin_step(g))
            return;
    }
    while (!g.queue.empty()) {
        const MembershipId id = g.queue.front();
        const Member &m = s_.members.at(id);
        if (refused_foreign_in_owned(g, id))
            continue;
        JoinStep step = next_join_step(g.sa, m.bits, m.params, s_.usable(g.port), port.epoch);
        switch (step.kind) {
        case JoinStep::Kind::conflict:
            book_.fail(g, id, Error{Errc::conflict, "cannot join " + s_.where(g) + ": " + step.why, {}});
            continue;
        case JoinStep::Kind::answer:
            g.queue.pop_front();
            book_.activate(g, id);
            continue;
        case JoinStep::Kind::refresh:
            if (refused(g, id, ask_sa(id, SaMethod::get)))
                continue;
            start_refresh(g); // the bits are there, the record may be old: ask first
            return;
        case JoinStep::Kind::port_down:
            book_.fail(g, id, Error{Errc::port_not_active, s_.name(g.port) + " is not active", {}});
            continue;
        case JoinStep::Kind::probe:
            switch (try_owned_set(g, id)) {
            case Owned::sent: return;
            case Owned::refused: continue;
            case Owned::probe: break;
            }
            if (refused(g, id, ask_would_create(g, id)) || refused(g, id, ask_sa(id, SaMethod::get)))
                continue;
            start_probe(g, false);
            return;
        case JoinStep::Kind::leak_hazard:
            book_.fail(g, id,
                       Error{Errc::conflict,
                             "cannot join " + s_.where(g) +
                                 " as full member: another agent on this port holds sendonly-full, and a full "
                                 "member beside it would leak the group's MLID at the SA when it leaves",
                             {}});
            continue;
        case JoinStep::Kind::set:
            // The create gate first: the sa gate's yes is then always followed by its Set.
            if (refused(g, id, ask_create(g, id)) || refused(g, id, ask_sa(id, SaMethod::set)))
                continue;
            start_join_set(g, id, step.bits);
            return;
        }
    }
    if (g.retry_timer)
        return;
    reconcile(g);
}

// With no joins waiting: bring the held bits in line with what active members need.
void GroupMachine::reconcile(Group &g) {
    const Port &port = s_.ports[g.port];
    const SaKnowledge::Step step = g.sa.reconcile(g.wanted(), port.epoch);
    if (step.kept_full_for_leak && !g.warned_leak_hazard) {
        g.warned_leak_hazard = true;
        s_.note_group(EngineNote::Kind::warning, g, join::full, 0,
                      "keeping full membership of " + s_.where(g) +
                          ": another agent holds sendonly-full, and deleting full now would leak the MLID at "
                          "the SA");
    }
    using K = SaKnowledge::Step::Kind;
    switch (step.kind) {
    case K::resync:
        start_probe(g, true);
        return;
    case K::repair:
        submit(g, op_of(Op::Kind::repair_set, step.bits),
               owed_by_changer(g, repair_set(g.port, g.sa.record, s_.port_gid(g.port), step.bits)));
        return;
    case K::remove: {
        Op op = op_of(Op::Kind::del, step.bits);
        op.leaver = g.changer;
        SaRequest del{g.port, SaMethod::del, member_record(g.mgid, s_.port_gid(g.port), step.bits), field::join_mask};
        submit(g, std::move(op), owed_by_changer(g, std::move(del)));
        return;
    }
    case K::refresh:
        start_refresh(g);
        return;
    case K::none:
        g.backoff = Duration{0};
        g.changer.reset(); // in line with its members: what a change caused is done
        return;
    }
}

// ---- SA work ----

SaRequest GroupMachine::owed_by_changer(const Group &g, SaRequest req) {
    if (g.changer) {
        s_.debt_sent(g.changer->account_uid());
        req.tenant = g.changer->account_uid() + 1;
    }
    return req;
}

void GroupMachine::submit(Group &g, Op op, SaRequest req) {
    // A re-join's transactions go behind the clients' at the SA, unless a join of this group
    // waits for the re-join to end (and pump() hastens the one in flight when a join comes).
    if (g.rejoin && g.queue.empty() && req.lane == SaLane::window) {
        req.lane = SaLane::background;
        req.tenant = 0; // background work is the daemon's own: one tenant
    }
    // A join's own work (its probes, a refresh it waits for, its Set) is its client's: tenants
    // take turns at the port's SA.
    const bool joins = op.kind == Op::Kind::probe_group || op.kind == Op::Kind::probe_member ||
                       op.kind == Op::Kind::probe_exact || op.kind == Op::Kind::join_set ||
                       op.kind == Op::Kind::refresh;
    if (joins && !op.resync && req.lane == SaLane::window && !g.queue.empty())
        if (const auto c = s_.clients.find(s_.members.at(g.queue.front()).client); c != s_.clients.end())
            req.tenant = c->second.info.account_uid() + 1;
    switch (req.method) {
    case SaMethod::get: ++s_.stats.sa_gets; break;
    case SaMethod::set: ++s_.stats.sa_sets; break;
    case SaMethod::del: ++s_.stats.sa_deletes; break;
    }
    op.epoch = s_.ports[g.port].epoch;
    op.background = req.lane == SaLane::background;
    // A group with a transaction in flight is never destroyed (maybe_destroy() waits for it,
    // the engine's destructor cancels it), so the answer may hold on to the group itself.
    Group *grp = &g;
    op.txn = s_.sa.submit(req, [this, grp](const SaResult &r) { on_result(*grp, r); });
    g.op = std::move(op);
    ++s_.outstanding;
}

// A join's first probe of a group with an explicit MGID is Get(MGID). A new group costs that Get
// and the Set that creates it (doc/architecture.md §5, "SA cost of a join"), and outside an
// owned prefix (try_owned_set) the Get cannot be cut:
//  - "no such group" is the one answer that proves, with no side effect, that no agent on this
//    port holds bits in the group (the foreign bits the daemon must never delete). A Set sent
//    first answers with the port's JoinState after it: bits another agent already held that
//    the Set carries too look exactly like the daemon's own, nothing afterwards can tell them
//    apart (untrusted Gets hide JoinState, the exact probe sees the union), and the leave would
//    delete them. Sending the Get along with the Set is no better: a Get that finds the group
//    comes too late to stop the Set.
//  - it is also how the daemon knows its Set creates the group: only then are the create
//    fields sent (on an existing group they would assert defaults the member never asked for;
//    without them a Set cannot create) and the member's CreateGate (the access policy's create
//    rules and quota) asked. No Set field fails on a join but passes on a create
//    (doc/sa-multicast.md §5.2, §7, §10), so no Set can say "create, or else do nothing".
//  - one Get cannot probe several groups: a Get matching more than one record fails with
//    ERR_TOO_MANY_RECORDS, and only an RMPP GetTable returns several (the SA agent registers
//    with rmpp_version 0, and umad2sim has no RMPP).
// (Another agent joining between the Get and the Set with a bit the Set carries too cannot be
// told apart either: that window, one SA round trip, is what an untrusted client has left.)
// When the group is absent that one Get is all: nobody holds bits in a group that does not
// exist, so neither the member probe nor the exact probes follow. A join of MGID 0 sends no
// probe at all: the SA creates a new group for its Set (engine.cpp).
void GroupMachine::start_probe(Group &g, bool resync) {
    Op op;
    op.resync = resync;
    const McRecord r = member_record(g.mgid, s_.port_gid(g.port), 0);
    if (!resync && !g.sa.have_record) {
        op.kind = Op::Kind::probe_group;
        submit(g, std::move(op), SaRequest{g.port, SaMethod::get, r, field::mgid});
    } else {
        op.kind = Op::Kind::probe_member;
        submit(g, std::move(op), SaRequest{g.port, SaMethod::get, r, field::mgid | field::port_gid});
    }
}

// Inside an owned prefix (EngineConfig::owned_prefixes) the probe's first job is void: the
// administrator vouches that no other agent on the host's ports joins there, and the named
// groups' MGIDs are made by the daemon alone. So a group the engine knows nothing of gets the
// member's Set alone, with the create fields ("join, or create if missing", as rdma_cm sends
// it: on an existing group they are assertions, which hold when every host creates with the
// same groups.create). The Set's answer checks the promise: bits it shows beyond the Set's are
// another agent's, and the group takes no join (refused_foreign_in_owned); the member's bits
// are then deleted again by reconcile(), since nobody wants them, the other agent's never
// (doc/architecture.md §5, "Owned prefixes").
// Whether the Set creates the group is not known, so the member must be one who may create:
// its create gate is asked (and charged) before it. One who may not is probed as anywhere
// else, since it may join a group that exists.
GroupMachine::Owned GroupMachine::try_owned_set(Group &g, MembershipId id) {
    if (g.sa_assigned || g.probe_owned || g.sa.probed || g.sa.have_record || !g.sa.nothing_of_ours() ||
        !s_.cfg.owns(g.mgid))
        return Owned::probe;
    Member &m = s_.members.at(id);
    JoinGates *gates = m.gates.get();
    if (gates && gates->would_create && gates->would_create())
        return Owned::probe;
    if (refused(g, id, gates && gates->create ? std::exchange(gates->create, nullptr)() : std::nullopt) ||
        refused(g, id, ask_sa(id, SaMethod::set)))
        return Owned::refused;
    g.sa.probed_foreign(0); // the prefix's promise; the Set's answer tells otherwise
    m.sent = true;
    Op op = join_op(normalize(m.bits), id, true);
    op.owned = true;
    submit(g, std::move(op),
           join_set(g.port, g.mgid, s_.port_gid(g.port), normalize(m.bits), m.params,
                    CreateFields{s_.cfg.create, std::nullopt}));
    return Owned::sent;
}

bool GroupMachine::refused_foreign_in_owned(Group &g, MembershipId id) {
    if (!g.sa.foreign || g.sa_assigned || !s_.cfg.owns(g.mgid))
        return false;
    book_.fail(g, id,
               Error{Errc::conflict,
                     "cannot join " + s_.where(g) + ": another agent on this port holds " +
                         join_state_name(g.sa.foreign) +
                         " there, in an MGID prefix the daemon owns (config groups.owned_prefixes or "
                         "groups.names.prefix); its bits are left alone and the daemon takes no member there",
                     {}});
    return true;
}

void GroupMachine::start_exact_probe(Group &g, Op op) {
    const std::uint8_t c = op.candidates.front();
    op.candidates.erase(op.candidates.begin());
    op.kind = Op::Kind::probe_exact;
    op.bits = c;
    submit(g, std::move(op),
           SaRequest{g.port, SaMethod::get, member_record(g.mgid, s_.port_gid(g.port), c),
                     field::mgid | field::port_gid | field::join_state});
}

// Only the first Set of an MGID-0 group creates it; later members join the MGID the SA
// assigned with their own asserted fields.
static bool creates(const Group &g) { return g.sa.absent || (g.sa_assigned && is_zero(g.mgid)); }

std::optional<Error> GroupMachine::ask_create(Group &g, MembershipId id) {
    JoinGates *gates = s_.members.at(id).gates.get();
    if (!creates(g) || !gates || !gates->create)
        return std::nullopt;
    // Asked once: a yes holds for the Sets this join may still need.
    return std::exchange(gates->create, nullptr)();
}

// Only before the Get(MGID) that opens a group's probing: a group the engine has no record of.
// Asked once: a yes holds for the probes this join may still need (its Set asks `create`).
std::optional<Error> GroupMachine::ask_would_create(Group &g, MembershipId id) {
    JoinGates *gates = s_.members.at(id).gates.get();
    if (!gates || !gates->would_create || g.sa.have_record ||
        !s_.ports[g.port].absent.recently_absent(g.mgid, s_.timers.now()))
        return std::nullopt;
    return std::exchange(gates->would_create, nullptr)();
}

std::optional<Error> GroupMachine::ask_sa(MembershipId id, SaMethod method) {
    const JoinGates *gates = s_.members.at(id).gates.get();
    return gates && gates->sa ? gates->sa(method) : std::nullopt;
}

bool GroupMachine::refused(Group &g, MembershipId id, std::optional<Error> no) {
    if (!no)
        return false;
    book_.fail(g, id, std::move(*no));
    return true;
}

bool GroupMachine::may_probe_on(Group &g, const Op &op) {
    if (op.resync || g.queue.empty())
        return true; // a re-sync is the group's own; a probe nobody waits for any more goes on
    const MembershipId head = g.queue.front();
    return !refused(g, head, ask_sa(head, SaMethod::get));
}

void GroupMachine::start_join_set(Group &g, MembershipId id, std::uint8_t bits) {
    Member &m = s_.members.at(id);
    const bool create = creates(g);
    std::optional<CreateFields> fields;
    if (create)
        fields.emplace(CreateFields{s_.cfg.create, g.sa_assigned ? std::optional(g.create_scope) : std::nullopt});
    m.sent = true;
    submit(g, join_op(bits, id, create),
           join_set(g.port, g.mgid, s_.port_gid(g.port), bits, m.params, fields));
}

// The group's record, asked for because the cached one predates the last invalidation (or a
// re-join that needs no Set wants the current one).
void GroupMachine::start_refresh(Group &g) {
    submit(g, op_of(Op::Kind::refresh),
           SaRequest{g.port, SaMethod::get, member_record(g.mgid, s_.port_gid(g.port), 0), field::mgid});
}

void GroupMachine::start_audit(Group &g) {
    submit(g, op_of(Op::Kind::audit),
           SaRequest{g.port, SaMethod::get, member_record(g.mgid, s_.port_gid(g.port), 0),
                     field::mgid | field::port_gid, SaLane::audit});
}

void GroupMachine::schedule_retry(Group &g) {
    g.backoff = g.backoff.count() ? std::min(g.backoff * 2, s_.cfg.retry_max) : s_.cfg.retry_min;
    const PortIndex port = g.port;
    const GroupId id = g.id;
    g.retry_timer = s_.timers.start(g.backoff, [this, port, id] {
        Entry e(s_);
        Group *grp = s_.find_group(port, id);
        if (!grp)
            return;
        grp->retry_timer = 0;
        --s_.outstanding;
        advance(port, id);
    });
    ++s_.outstanding;
}

// ---- answers ----

void GroupMachine::on_result(Group &group, const SaResult &r) {
    Entry e(s_);
    Group *g = &group;
    const PortIndex port = g->port;
    const GroupId id = g->id;
    Op op = std::move(*g->op);
    g->op.reset();
    --s_.outstanding;
    const bool answered = r.kind == SaResult::Kind::response;
    if (r.ok()) // the group exists (or did a moment ago): a join of it would not create it
        s_.ports[port].absent.forget(is_zero(g->mgid) ? r.record.mgid : g->mgid);
    if (op.epoch != s_.ports[port].epoch && is_probe(op.kind)) {
        advance(port, id); // a Get from before the SA lost everything says nothing: ask again
        return;
    }
    switch (op.kind) {
    case Op::Kind::audit:
        on_audit(*g, r);
        break;
    case Op::Kind::refresh:
        on_refresh(*g, r);
        break;
    case Op::Kind::probe_group:
        if (answered && r.status == 0) {
            g->sa.group_found(r.record, s_.port_gid(port), op.epoch);
            if (!may_probe_on(*g, op))
                break;
            start_probe(*g, false); // now: is this port a member?
            return;
        }
        if (answered && r.status == sa_status::no_records) {
            g->sa.absent = true;
            s_.ports[port].absent.seen_absent(g->mgid, s_.timers.now());
            finish_probe(*g, op, 0);
            break;
        }
        probe_failed(*g, op, r);
        break;
    case Op::Kind::probe_member:
        if (answered && r.status == sa_status::no_records) {
            finish_probe(*g, op, 0);
            break;
        }
        if (answered && r.status == 0) {
            if (!may_probe_on(*g, op))
                break;
            op.candidates = probe_candidates(g->sa, op.resync);
            start_exact_probe(*g, std::move(op));
            return;
        }
        probe_failed(*g, op, r);
        break;
    case Op::Kind::probe_exact:
        if (answered && r.status == 0) {
            finish_probe(*g, op, op.bits);
            break;
        }
        if (answered && r.status == sa_status::no_records && !op.candidates.empty()) {
            if (!may_probe_on(*g, op))
                break;
            start_exact_probe(*g, std::move(op));
            return;
        }
        probe_failed(*g, op, r);
        break;
    case Op::Kind::join_set:
        g = &on_join_set(*g, op, r);
        break;
    case Op::Kind::repair_set:
        on_repair_set(*g, op, r);
        break;
    case Op::Kind::del:
        on_delete(*g, op, r);
        break;
    case Op::Kind::make:
    case Op::Kind::drop:
        break; // a membership backend's (backend_machine.hpp), never an SA transaction's
    }
    advance(port, g->id);
}

void GroupMachine::finish_probe(Group &g, const Op &op, std::uint8_t stored) {
    if (op.resync) {
        g.sa.resynced(stored);
        return;
    }
    g.sa.probed_foreign(stored);
    if (stored)
        s_.note_group(EngineNote::Kind::warning, g, stored, 0,
                      "port already holds " + join_state_name(stored) + " in " + s_.where(g) +
                          " from another agent; those bits are left alone");
}

void GroupMachine::probe_failed(Group &g, const Op &op, const SaResult &r) {
    const bool timeout = r.kind == SaResult::Kind::timeout;
    const std::string why = timeout ? timeout_text(r)
                            : r.status == sa_status::no_records
                                ? std::string("no JoinState value matched (the membership changed while probing)")
                                : sa_status_describe(r.status);
    if (!op.resync && g.queue.empty())
        return; // the joins that wanted to know were withdrawn
    if (op.resync) {
        s_.note_group(EngineNote::Kind::warning, g, 0, 0,
                      "could not learn this port's membership of " + s_.where(g) + ": " + why + "; retrying");
        schedule_retry(g);
        return;
    }
    const Error err = timeout ? join_timeout(s_.where(g), r)
                      : r.status == sa_status::no_records
                          ? Error{Errc::internal, "join of " + s_.where(g) + ": " + why, {}}
                          : Error::sa(r.status, "join of " + s_.where(g) + " (membership probe)");
    book_.fail_head_and_identical(g, g.queue.front(), err);
}

// A Set answered: take the record, name bits another agent set meanwhile (trusted answers
// only), and tell the members: a re-set that `ends_rejoin` ends the group's re-join, otherwise
// members hear only of a changed record.
void GroupMachine::adopt_set_answer(Group &g, const McRecord &resp, std::uint8_t bits, bool trusted,
                                    bool ends_rejoin) {
    const Port &port = s_.ports[g.port];
    const SaKnowledge::SetAnswer a = g.sa.set_answered(resp, bits, trusted, s_.port_gid(g.port), port.epoch);
    if (a.others)
        s_.note_group(EngineNote::Kind::warning, g, a.others, 0,
                      "another agent set " + join_state_name(a.others) + " in " + s_.where(g) +
                          "; those bits are left alone");
    if (g.rejoin && ends_rejoin)
        finish_rejoin(g, a.changed);
    else if (a.changed)
        book_.tell_restored(g, a.changed);
}

Group &GroupMachine::on_join_set(Group &g, const Op &op, const SaResult &r) {
    const bool stale = op.epoch != s_.ports[g.port].epoch;
    if (r.ok()) {
        Group *gp = &g;
        if (g.sa_assigned && is_zero(g.mgid)) {
            // The SA named the group its Set created. One in which another agent on this port
            // holds bits is refused: the answer's JoinState mixes that agent's bits with the
            // Set's, and no Delete could tell them apart.
            Port &p = s_.ports[g.port];
            const auto same = p.by_mgid.find(r.record.mgid);
            const bool others = same != p.by_mgid.end() && p.groups.at(same->second).sa.foreign;
            if (auto no = refuse_assigned_mgid(r.record.mgid, others)) {
                refuse_assigned(g, op, r, *no);
                return g;
            }
            g.mgid = r.record.mgid;
            gp = &rekey(g);
        }
        adopt_set_answer(*gp, r.record, op.bits, !stale, false);
        if (stale)
            mark_rejoin(*gp); // answered before the SA lost everything: set it again
        return *gp;           // the member, if still queued, is answered by pump()
    }
    if (r.kind == SaResult::Kind::timeout) {
        // The Set may have reached the SA: its bits are uncertain until probed, and it may have
        // created the group under an MLID nobody told us.
        g.sa.set_unanswered(op.bits);
        if (s_.members.count(op.member))
            book_.fail_head_and_identical(
                g, op.member, join_timeout(s_.where(g), r));
        return g;
    }
    if (op.owned && r.status == sa_status::req_invalid) {
        // The lone Set's create fields may contradict a group that exists (created with other
        // values): learn the group as anywhere else, and join it with the member's own fields.
        // A create the SA refuses is refused again after the probe, and that answer is the join's.
        g.probe_owned = true;
        g.sa.probed = false;
        return g;
    }
    if (r.status == sa_status::insufficient_components && !op.create) {
        // The group does not exist (OpenSM wants the create fields): create it. The member
        // stays at the head of the queue and pump() sends the create.
        g.sa.absent = true;
        return g;
    }
    if (s_.members.count(op.member))
        book_.fail_head_and_identical(g, op.member, Error::sa(r.status, "join of " + s_.where(g)));
    return g;
}

// An SA-assigned MGID the daemon cannot take as its group (refuse_assigned_mgid): the join
// fails, and the bits its Set gave are deleted again only when they can be nobody else's.
// Bits left alone are not counted as the daemon's: neither a leave nor the restart state
// (which saves only what the engine counts) will ever delete them.
void GroupMachine::refuse_assigned(Group &g, const Op &op, const SaResult &r, const AssignedMgidRefusal &no) {
    const std::string what =
        "join of " + s_.where(g) + ": the SA assigned " + format_gid(r.record.mgid) + ", which " + no.why;
    s_.note(EngineNote{EngineNote::Kind::warning, g.port, r.record.mgid, r.record.mlid, op.bits, 0, {}, what});
    if (no.deletes) {
        // Counted like any bits the daemon set, so that reconcile() deletes them as nobody
        // needs them (probing first if the answer predates an invalidation). The group stays
        // out of by_mgid: no join can name such an MGID.
        g.mgid = r.record.mgid;
        adopt_set_answer(g, r.record, op.bits, op.epoch == s_.ports[g.port].epoch, false);
    }
    if (s_.members.count(op.member))
        book_.fail(g, op.member, Error{Errc::internal, what, {}});
}

void GroupMachine::on_repair_set(Group &g, const Op &op, const SaResult &r) {
    if (op.epoch != s_.ports[g.port].epoch) {
        // Sent before the SA lost the port's memberships: whatever it did is gone or unknown.
        // The group is already marked for re-join.
        g.sa.set_outdated(op.bits);
        return;
    }
    if (r.ok()) {
        g.backoff = Duration{0};
        adopt_set_answer(g, r.record, op.bits, true, true);
        return;
    }
    if (r.kind == SaResult::Kind::timeout) {
        g.sa.set_unanswered(op.bits);
        s_.note_group(EngineNote::Kind::warning, g, op.bits, 0,
                      "re-join of " + join_state_name(op.bits) + " in " + s_.where(g) + ": " + timeout_text(r) +
                          "; retrying");
        schedule_retry(g);
        return;
    }
    // The SA refuses the bits these members need: they have lost the membership.
    book_.lose_unserved(g, g.sa.present(), Error::sa(r.status, "re-join of " + s_.where(g)));
    // Members served by bits the SA did not refuse (another agent's) carry on with the
    // re-join: pump() fetches the group's record for them and tells them.
    if (g.rejoin && !g.wanted()) {
        set_rejoin(g, false);
        hooks_.group_rejoined(g.port);
    }
}

void GroupMachine::on_delete(Group &g, const Op &op, const SaResult &r) {
    if (op.epoch != s_.ports[g.port].epoch) {
        g.sa.delete_uncertain(op.bits);
        return;
    }
    if (r.ok()) {
        g.sa.deleted(op.bits, r.record.join_state);
        EngineNote n = EngineState::group_note(EngineNote::Kind::deleted, g, op.bits, 0);
        n.client_info = op.leaver; // who made the Delete due, when a leave did
        s_.note(std::move(n));
        // The port holds nothing here any more, so what the engine knew about the group may be
        // stale: a join queued behind the last Delete must see the SA afresh, and create the
        // group with its own parameters if it is gone. Lost members keep the last record they
        // were told.
        if (g.sa.nothing_of_ours() && !g.sa.foreign && g.settled.empty())
            g.sa.forget();
        g.backoff = Duration{0};
        return;
    }
    // Unanswered, or refused: the SA may or may not still hold these bits.
    g.sa.delete_uncertain(op.bits);
    // 0x0200 on a retransmitted Delete usually means an earlier try went through: re-sync at
    // once. Anything else waits for the backoff.
    if (r.kind == SaResult::Kind::response && r.status == sa_status::req_invalid && r.tries > 1)
        return;
    s_.note_group(EngineNote::Kind::warning, g, op.bits, 0,
                  "leave of " + join_state_name(op.bits) + " from " + s_.where(g) + ": " +
                      (r.kind == SaResult::Kind::timeout ? timeout_text(r) : sa_status_describe(r.status)) +
                      "; retrying",
                  r.kind == SaResult::Kind::response ? std::optional<std::uint16_t>(r.status) : std::nullopt);
    schedule_retry(g);
}

void GroupMachine::on_refresh(Group &g, const SaResult &r) {
    if (r.kind != SaResult::Kind::response || (r.status && r.status != sa_status::no_records)) {
        if (g.rejoin)
            schedule_retry(g);
        else if (!g.queue.empty())
            book_.fail_head_and_identical(
                g, g.queue.front(),
                r.kind == SaResult::Kind::response
                    ? Error::sa(r.status, "join of " + s_.where(g))
                    : join_timeout(s_.where(g), r));
        return;
    }
    if (r.status == sa_status::no_records) {
        // The group is gone: no one holds bits in it, whatever was believed. pump() sets (and
        // creates) what the members need; a re-join re-creates it from the old record.
        g.sa.group_gone(g.rejoin);
        return;
    }
    const std::uint64_t changed = g.sa.refreshed(r.record, s_.ports[g.port].epoch);
    if (g.rejoin)
        finish_rejoin(g, changed);
    else if (changed)
        book_.tell_restored(g, changed);
}

void GroupMachine::on_audit(Group &g, const SaResult &r) {
    if (r.kind != SaResult::Kind::response)
        return; // no answer: the next round asks again
    if (r.status == sa_status::no_records) {
        // A full-type membership goes away only with the SA's whole state for the port (an SM
        // restart whose ActCount did not fall, because the old SM had not run long; a port
        // flap between two PortInfo polls): the other groups are gone too, and one audit Get
        // at a time would take G / audit_per_second to find them. A non-member alone can lose
        // its group legitimately (the last full member left), so that re-joins just the group.
        if (g.sa.held & kFullish) {
            hooks_.port_state_lost(g.port, "the SA no longer holds this port's " + join_state_name(g.sa.held) +
                                               " membership of " + s_.where(g) +
                                               ", so it has probably lost them all");
            return;
        }
        s_.note_group(EngineNote::Kind::warning, g, g.sa.held, 0,
                      "the SA no longer holds this port's membership of " + s_.where(g) + "; re-joining");
        mark_rejoin(g);
        return; // pump() re-joins it
    }
    // Someone re-created the group (after an SM restart, say) with another MLID.
    if (r.status == 0 && g.sa.mlid_seen(r.record.mlid))
        book_.tell_restored(g, field::mlid);
}

} // namespace mcastd::core
