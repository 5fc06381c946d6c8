// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "core/port_rejoin.hpp"

#include <algorithm>
#include <vector>

namespace mcastd::core {

namespace {

// The port's groups by handle, in memory order: advancing one may destroy it or others.
std::vector<GroupId> group_ids(const Port &p) {
    std::vector<GroupId> ids;
    ids.reserve(p.groups.size());
    p.groups.for_each([&ids](const Group &g) { ids.push_back(g.id); });
    return ids;
}

} // namespace

void PortRejoiner::usable_changed(PortIndex pi, const std::string &why) {
    Port &p = s_.ports[pi];
    if (p.backend)
        return; // the host's memberships outlive the link: queued joins go on (or fail) as it allows
    const bool active = s_.usable(pi);
    p.absent.clear(); // the SA's groups may have changed meanwhile
    if (active) {
        start(pi, why.empty() ? "port back" : why);
        return;
    }
    // The SA drops a port's memberships when its link goes down: members are told, and stay
    // counted for the re-join when it comes back. Joins still waiting cannot go on.
    ++p.epoch;
    abandon(p);
    const Error down{Errc::port_not_active, s_.name(pi) + " is down" + (why.empty() ? "" : ": " + why), {}};
    for (GroupId id : group_ids(p)) {
        Group &g = p.groups.at(id);
        driver(pi).mark_rejoin(g);
        book_.suspend(g, down);
        const std::vector<MembershipId> waiting(g.queue.begin(), g.queue.end());
        for (MembershipId m : waiting)
            if (!g.op || g.op->member != m)
                book_.fail(g, m, down);
    }
}

void PortRejoiner::sources_changed(PortIndex pi, const std::string &why) {
    Port &p = s_.ports[pi];
    if (!p.backend)
        return;
    MembershipBackend &backend = *p.backend;
    bool remake = false;
    for (GroupId id : group_ids(p)) {
        Group &g = p.groups.at(id);
        const SourceCheck c = backend.check_source(pi, g.mgid);
        if (g.rejoin) {
            remake = remake || c.state != SourceCheck::State::gone; // waiting for its source
            continue;
        }
        if (c.state == SourceCheck::State::same || !g.sa.have_record || g.in_progress())
            continue; // not made from a source yet (the next make reads the table afresh)
        if (c.state == SourceCheck::State::moved) {
            driver(pi).mark_rejoin(g); // made again from where it is served now
            remake = true;
            continue;
        }
        // Its members' memberships are gone at the fabric until a source serves it again.
        backend.suspend(pi, g.mgid);
        driver(pi).mark_rejoin(g);
        const Error lost{Errc::port_not_active, s_.name(pi) + ": " + c.why, {}};
        book_.suspend(g, lost);
        const std::vector<MembershipId> waiting(g.queue.begin(), g.queue.end());
        for (MembershipId m : waiting)
            book_.fail(g, m, lost);
    }
    if (remake)
        start(pi, why);
}

void PortRejoiner::invalidate(PortIndex pi, const std::string &why) {
    Port &p = s_.ports[pi];
    ++p.epoch;
    p.absent.clear(); // a new SM, or a lost state: what the old one said is absent says nothing
    p.groups.for_each([&driver = driver(pi)](Group &g) { driver.mark_rejoin(g); });
    // The log and `monitor` events name the port already.
    s_.note(EngineNote{EngineNote::Kind::warning, pi, {}, 0, 0, 0, {},
                       (p.backend ? "the memberships of " + s_.name(pi) + " are gone"
                                  : "the SA may have lost the memberships of " + s_.name(pi)) +
                           " (" + why + "); re-joining"});
    s_.port_memberships_gone(pi);
    start(pi, why);
}

void PortRejoiner::start(PortIndex pi, const std::string &why) {
    s_.ports[pi].rejoin.start(s_.timers.now(), why);
    arm(pi);
}

// Starts (or restarts) the port's re-join after the jitter, if the port is usable.
void PortRejoiner::arm(PortIndex pi) {
    Port &p = s_.ports[pi];
    if (!s_.usable(pi))
        return;
    if (p.rejoin_timer)
        s_.timers.cancel(p.rejoin_timer);
    else
        ++s_.outstanding;
    const auto max = std::max<std::int64_t>(s_.cfg.rejoin_jitter.count(), 0);
    const Duration pause{max ? std::uniform_int_distribution<std::int64_t>(0, max)(s_.rng) : 0};
    p.rejoin_timer = s_.timers.start(pause, [this, pi] {
        Entry e(s_);
        s_.ports[pi].rejoin_timer = 0;
        --s_.outstanding;
        for (GroupId id : group_ids(s_.ports[pi]))
            driver(pi).advance(pi, id);
        finish(pi);
    });
}

void PortRejoiner::finish(PortIndex pi) {
    Port &p = s_.ports[pi];
    const auto took = p.rejoin.finish(s_.timers.now(), p.rejoin_timer != 0);
    if (!took)
        return;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*took);
    s_.note(EngineNote{EngineNote::Kind::warning, pi, {}, 0, 0, 0, {},
                       "re-joined " + std::to_string(p.rejoin.groups()) + " group(s) on " + s_.name(pi) + " in " +
                           std::to_string(ms.count()) + " ms (" + p.rejoin.reason() + ")"});
}

void PortRejoiner::audit(PortIndex pi) {
    Port &p = s_.ports[pi];
    if (!s_.usable(pi) || p.backend)
        return;
    // The next group after the cursor that holds something and is idle.
    const auto pick = next_to_audit(p.by_mgid, p.audit_cursor, [&p](GroupId id) {
        const Group &g = p.groups.at(id);
        return !g.in_progress() && !g.rejoin && g.sa.have_record && g.wanted() &&
               ((g.sa.held | g.sa.foreign) & g.wanted());
    });
    if (!pick)
        return;
    Group &g = p.groups.at(*pick);
    p.audit_cursor = g.mgid;
    machine_.start_audit(g);
}

void PortRejoiner::abandon(Port &p) {
    if (!p.rejoin_timer)
        return;
    s_.timers.cancel(p.rejoin_timer);
    p.rejoin_timer = 0;
    --s_.outstanding;
}

} // namespace mcastd::core
