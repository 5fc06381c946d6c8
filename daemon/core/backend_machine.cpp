// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "core/backend_machine.hpp"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/join_rules.hpp"

namespace mcastd::core {

namespace {

std::uint8_t bits_of(unsigned b) { return static_cast<std::uint8_t>(b & join::all); }

} // namespace

void BackendMachine::pump(Group &g) {
    while (!g.op && step(g)) {
    }
}

bool BackendMachine::step(Group &g) {
    const bool usable = s_.usable(g.port);
    if (g.rejoin && !g.wanted() && g.queue.empty())
        finish_rejoin(g, 0); // its members left while it waited: what it held goes (reconcile)
    if (g.rejoin) {
        // The re-join comes first; joins queued meanwhile wait for it. It needs a usable port
        // and the end of the port's jitter.
        if (!usable || s_.ports[g.port].rejoin_timer)
            return false;
        // A group whose source is gone waits for it (sources_changed); joins of it fail.
        if (const SourceCheck c = backend(g).check_source(g.port, g.mgid); c.state == SourceCheck::State::gone) {
            const Error why{Errc::port_not_active, s_.name(g.port) + ": " + c.why, {}};
            while (!g.queue.empty())
                book_.fail(g, g.queue.front(), why);
            return false;
        }
        if (const std::uint8_t missing = normalize(bits_of(g.wanted() & ~cover(g.sa.held))))
            return make(g, missing, 0);
        finish_rejoin(g, 0);
    }
    while (!g.queue.empty()) {
        const MembershipId id = g.queue.front();
        const Member &m = s_.members.at(id);
        if (!usable) {
            book_.fail(g, id, Error{Errc::port_not_active, s_.name(g.port) + " is not active", {}});
            continue;
        }
        if (g.sa.have_record)
            if (auto why = mismatch(m.params, g.sa.record)) {
                book_.fail(g, id, Error{Errc::conflict, "cannot join " + s_.where(g) + ": " + *why, {}});
                continue;
            }
        const std::uint8_t need = bits_of(m.bits & ~cover(g.sa.held));
        if (!need && g.sa.have_record) {
            if (!attach(g, id))
                continue; // the backend refused the member: its join failed
            g.queue.pop_front();
            book_.activate(g, id);
            continue;
        }
        // The bits it adds; none when only the record is missing (an adopted group).
        return make(g, normalize(need), id);
    }
    return reconcile(g);
}

// With no joins waiting: drop what nobody needs, make what members need and the fabric does
// not hold (bits adopted as uncertain after a restart).
bool BackendMachine::reconcile(Group &g) {
    const std::uint8_t want = g.wanted();
    if (const std::uint8_t extra = bits_of((g.sa.held | g.sa.uncertain) & ~want))
        return drop(g, extra);
    if (const std::uint8_t missing = normalize(bits_of(want & ~cover(g.sa.held))); missing && s_.usable(g.port))
        return make(g, missing, 0);
    g.changer.reset(); // in line with its members: what a change caused is done
    return false;
}

bool BackendMachine::make(Group &g, std::uint8_t bits, MembershipId member) {
    FabricJoin j;
    j.port = g.port;
    j.mgid = g.mgid;
    j.bits = bits;
    j.held = g.sa.held;
    j.rejoin = g.rejoin;
    if (member) {
        Member &m = s_.members.at(member);
        m.sent = true; // not a local answer
        j.params = m.params;
        j.roce = m.roce;
    }
    Op op;
    op.kind = Op::Kind::make;
    op.bits = bits;
    op.member = member;
    return start(g, std::move(op), [this, &g, &j](MembershipBackend::Done done) {
        return backend(g).make(j, std::move(done));
    });
}

bool BackendMachine::drop(Group &g, std::uint8_t bits) {
    const FabricLeave l{g.port, g.mgid, bits, bits_of(g.sa.held & ~bits)};
    Op op;
    op.kind = Op::Kind::drop;
    op.bits = bits;
    op.leaver = g.changer;
    return start(g, std::move(op), [this, &g, &l](MembershipBackend::Done done) {
        return backend(g).drop(l, std::move(done));
    });
}

bool BackendMachine::start(Group &g, Op op, const Call &call) {
    op.epoch = s_.ports[g.port].epoch;
    g.op = std::move(op);
    ++s_.outstanding;
    // An answer given inside the call waits until the call has returned: the group is then
    // consistent, and the caller goes on with it (it is not advanced from in here, where it
    // could be destroyed under the caller).
    struct Early {
        bool inside = true;
        std::optional<FabricResult> result;
    };
    auto early = std::make_shared<Early>();
    Group *grp = &g; // never destroyed while an operation is in flight (in_progress())
    const MembershipBackend::Id id = call([this, grp, early](const FabricResult &r) {
        if (early->inside)
            early->result = r;
        else
            on_answer(*grp, r);
    });
    early->inside = false;
    if (!early->result) {
        g.op->txn = id;
        return false;
    }
    const Op done = std::move(*g.op);
    g.op.reset();
    --s_.outstanding;
    apply(g, done, *early->result);
    return true;
}

void BackendMachine::on_answer(Group &g, const FabricResult &r) {
    Entry e(s_);
    const Op op = std::move(*g.op);
    g.op.reset();
    --s_.outstanding;
    apply(g, op, r);
    advance(g.port, g.id);
}

void BackendMachine::apply(Group &g, const Op &op, const FabricResult &r) {
    if (op.kind == Op::Kind::make)
        on_made(g, op, r);
    else
        on_dropped(g, op, r);
}

void BackendMachine::on_made(Group &g, const Op &op, const FabricResult &r) {
    if (op.epoch != s_.ports[g.port].epoch)
        return; // made before the fabric lost the port's memberships: gone with them
    if (r.error) {
        if (op.member) {
            if (s_.members.count(op.member))
                book_.fail(g, op.member, *r.error);
            return;
        }
        // A re-join (or repair) the backend refuses: whoever needs those bits has lost them.
        book_.lose_unserved(g, cover(g.sa.held), *r.error);
        return; // the re-join ends with the members the held bits still serve
    }
    McRecord rec = r.record;
    rec.join_state = bits_of(g.sa.held | op.bits); // exactly what the port holds now
    // The GID the backend sends from (on RoCE an entry of the GID table of the group's type),
    // else the port's.
    const Gid source = is_zero(rec.port_gid) ? s_.port_gid(g.port) : rec.port_gid;
    const auto a = g.sa.set_answered(rec, op.bits, true, source, s_.ports[g.port].epoch);
    if (g.rejoin && !op.member) {
        reattach(g);
        finish_rejoin(g, a.changed);
    }
    else if (a.changed)
        book_.tell_restored(g, a.changed);
}

bool BackendMachine::attach(Group &g, MembershipId id) {
    Member &m = s_.members.at(id);
    if (auto err = backend(g).add_member(FabricMember{g.port, g.mgid, id, m.bits, m.roce, false})) {
        book_.fail(g, id, std::move(*err));
        return false;
    }
    m.attached = true;
    m.roce.reset(); // what the backend keeps it kept; the client's descriptor may close
    return true;
}

void BackendMachine::reattach(Group &g) {
    std::vector<std::pair<MembershipId, Error>> refused;
    for (MembershipId id : g.settled) {
        Member &m = s_.members.at(id);
        if (m.state != MemberState::active)
            continue;
        if (auto err = backend(g).add_member(FabricMember{g.port, g.mgid, id, m.bits, m.roce, true}))
            refused.emplace_back(id, std::move(*err));
        else
            m.attached = true;
    }
    for (auto &[id, why] : refused)
        book_.lose(g, id, why);
}

void BackendMachine::on_dropped(Group &g, const Op &op, const FabricResult &r) {
    // Whatever the answer, the engine holds the bits for nobody any more.
    g.sa.held = bits_of(g.sa.held & ~op.bits);
    g.sa.uncertain = bits_of(g.sa.uncertain & ~op.bits);
    if (r.error) {
        s_.note_group(EngineNote::Kind::warning, g, op.bits, 0,
                      "leave of " + join_state_name(op.bits) + " from " + s_.where(g) + ": " + r.error->message);
    } else {
        EngineNote n = EngineState::group_note(EngineNote::Kind::deleted, g, op.bits, 0);
        n.client_info = op.leaver; // who made the drop due, when a leave did
        s_.note(std::move(n));
    }
    // Nothing held and nobody here: the next join gets the record afresh.
    if (g.sa.nothing_of_ours() && g.settled.empty())
        g.sa.forget();
}

void BackendMachine::mark_rejoin(Group &g) {
    // What was held is to be made again: uncertain, as on an SA's port, so that the restart
    // state keeps the group (and its members) while it waits, and a drop lets it go for good.
    g.sa.sa_may_have_lost();
    if (g.wanted())
        set_rejoin(g, true);
}

void BackendMachine::abandon(Group &g) { // no retry timer here: a backend's refusal is final
    if (g.op) {
        backend(g).cancel(g.op->txn);
        g.op.reset();
        --s_.outstanding;
    }
}

} // namespace mcastd::core
