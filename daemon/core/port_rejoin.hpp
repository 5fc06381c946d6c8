// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The port re-join and audit: what happens to all of a port's groups when the SA may have lost
// them (SM restart, LID change, port down and back, ...), and the audit that asks the SA about
// one group at a time. Marks the groups, pauses for the jitter, lets each group re-join through
// the group state machine, and says when the port's re-join is over (rejoin_progress.hpp keeps
// that account in O(1) per group).
#pragma once

#include <string>

#include "core/backend_machine.hpp"
#include "core/group_machine.hpp"

namespace mcastd::core {

class PortRejoiner final : public PortHooks {
public:
    PortRejoiner(EngineState &s, MemberBook &book, GroupMachine &machine, BackendMachine &backends)
        : s_(s), book_(book), machine_(machine), backends_(backends) {}

    // What moves the port's groups on: the SA's machine, or its backend's.
    GroupDriver &driver(PortIndex port) {
        return s_.ports[port].backend ? static_cast<GroupDriver &>(backends_) : machine_;
    }

    // The port became usable or not (PortFacts::usable). Going down tells every member `lost`
    // (with `why`) and keeps the memberships; coming back re-joins them. Not on a backend's
    // port, whose memberships outlive the link (membership_backend.hpp).
    void usable_changed(PortIndex port, const std::string &why);
    // A backend port's sources changed (Engine::sources_changed): groups whose source is gone
    // are suspended, those served again or from elsewhere re-made after the jitter.
    void sources_changed(PortIndex port, const std::string &why);
    // The SA may have lost every membership of the port: re-join them all after the jitter.
    // The one place a whole port's re-join starts, whoever found the loss (the port's event
    // sources through Engine::invalidate_port, or an audit): it tells the memberships-gone
    // listener, once.
    void invalidate(PortIndex port, const std::string &why);
    // Sends the audit's Get for the next group of the port in MGID order (SA ports only: a
    // backend's memberships are the daemon's own, nothing to audit).
    void audit(PortIndex port);
    // Stops the port's re-join pause (the engine is going away).
    void abandon(Port &p);

    // PortHooks
    void group_rejoined(PortIndex port) override { finish(port); }
    void port_state_lost(PortIndex port, const std::string &why) override { invalidate(port, why); }

private:
    void start(PortIndex port, const std::string &why);
    void arm(PortIndex port);
    void finish(PortIndex port);

    EngineState &s_;
    MemberBook &book_;
    GroupMachine &machine_;
    BackendMachine &backends_;
};

} // namespace mcastd::core
