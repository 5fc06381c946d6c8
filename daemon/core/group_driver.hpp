// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What moves a port's groups on, whichever way the port's memberships are made at the fabric:
// at the SA (group_machine.hpp) or through a MembershipBackend (backend_machine.hpp). The
// engine's entry points and the port re-join (port_rejoin.hpp) ask the port's driver; the
// parts both drivers share (a group's life and end, the re-join's accounting) are here.
#pragma once

#include <cstdint>
#include <string>

#include "core/engine_state.hpp"
#include "core/members.hpp"

namespace mcastd::core {

// What a group tells its port (port_rejoin.hpp).
class PortHooks {
public:
    // A group of the port finished its re-join: the port's may be over too.
    virtual void group_rejoined(PortIndex port) = 0;
    // An audit found a full-type membership gone: the SA has probably lost the whole port.
    virtual void port_state_lost(PortIndex port, const std::string &why) = 0;

protected:
    ~PortHooks() = default;
};

// A new group of `port` (not yet in by_mgid unless the caller puts it there).
Group &create_group(EngineState &s, PortIndex port, const Gid &mgid);

class GroupDriver {
public:
    GroupDriver(EngineState &s, MemberBook &book, PortHooks &hooks) : s_(s), book_(book), hooks_(hooks) {}

    // Moves a group on after anything happened to it, and forgets it once nothing is left.
    // The one place a group is destroyed: callers must not touch it afterwards.
    void advance(PortIndex port, GroupId id);
    // Runs the group once: answers or asks the fabric for the joins it queues, else brings
    // what the fabric holds in line with the members. Never destroys it.
    virtual void pump(Group &g) = 0;
    // The fabric may have lost this group's bits: if members want anything, the group is
    // made again before anything else happens (after the port's jitter).
    virtual void mark_rejoin(Group &g) = 0;
    // Drops the group's fabric operation and retry timer (the engine is going away).
    virtual void abandon(Group &g) = 0;

protected:
    ~GroupDriver() = default;

    void set_rejoin(Group &g, bool on);
    // The group's re-join is over: its members hear `restored` with what changed.
    void finish_rejoin(Group &g, std::uint64_t changed);
    void maybe_destroy(Group &g);

    EngineState &s_;
    MemberBook &book_;
    PortHooks &hooks_;
};

} // namespace mcastd::core
