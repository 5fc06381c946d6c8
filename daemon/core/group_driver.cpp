// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "core/group_driver.hpp"

namespace mcastd::core {

Group &create_group(EngineState &s, PortIndex port, const Gid &mgid) {
    Group &g = s.ports[port].groups.create();
    g.port = port;
    g.mgid = mgid;
    return g;
}

void GroupDriver::advance(PortIndex port, GroupId id) {
    Group *g = s_.find_group(port, id);
    if (!g)
        return;
    pump(*g);
    maybe_destroy(*g);
}

void GroupDriver::maybe_destroy(Group &g) {
    if (g.in_progress() || !g.queue.empty() || !g.settled.empty() || !g.sa.nothing_of_ours())
        return;
    Port &p = s_.ports[g.port];
    if (auto it = p.by_mgid.find(g.mgid); it != p.by_mgid.end() && it->second == g.id)
        p.by_mgid.erase(it);
    p.unassigned.erase(g.id);
    if (p.backend)
        p.backend->forget(g.port, g.mgid);
    if (g.rejoin) {
        // Its members left while it waited: nothing to re-join, and maybe the port is done.
        set_rejoin(g, false);
        hooks_.group_rejoined(g.port);
    }
    p.groups.erase(g.id);
}

void GroupDriver::set_rejoin(Group &g, bool on) {
    if (g.rejoin == on)
        return;
    g.rejoin = on;
    RejoinProgress &progress = s_.ports[g.port].rejoin;
    on ? progress.group_marked() : progress.group_done();
}

void GroupDriver::finish_rejoin(Group &g, std::uint64_t changed) {
    set_rejoin(g, false);
    book_.tell_restored(g, changed);
    hooks_.group_rejoined(g.port);
}

} // namespace mcastd::core
