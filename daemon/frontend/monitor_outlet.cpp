// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/monitor_outlet.hpp"

#include <vector>

#include "common/port_name.hpp"
#include "frontend/client_session.hpp"
#include "service/service.hpp"

namespace mcastd::frontend {

namespace {

const char *note_kind(EngineNote::Kind k) {
    switch (k) {
    case EngineNote::Kind::joined: return "joined";
    case EngineNote::Kind::left: return "left";
    case EngineNote::Kind::join_failed: return "join-failed";
    case EngineNote::Kind::deleted: return "deleted";
    case EngineNote::Kind::lost: return "lost";
    case EngineNote::Kind::restored: return "restored";
    case EngineNote::Kind::warning: return "warning";
    }
    return "warning";
}

} // namespace

void MonitorOutlet::deliver(const EngineNote &n) {
    if (subscribers_.empty())
        return;
    proto::MonitorEvent ev;
    ev.kind = note_kind(n.kind);
    if (const port::RegisteredPort *p = service_.ports().get(n.port)) {
        ev.device = p->device();
        ev.port = p->number();
    }
    ev.mgid = n.mgid;
    ev.mlid = n.mlid;
    ev.join_state = n.join_state;
    if (n.client_info) { // the client may be gone already ("left" after its disconnect)
        ev.pid = n.client_info->pid;
        ev.uid = n.client_info->uid;
        ev.comm = n.client_info->comm;
    }
    ev.message = describe(n, port_name(ev.device, ev.port));
    ev.sa_status = n.sa_status;
    ev.roce = n.roce;
    // A copy: delivering may make a transport drop a session.
    const std::vector<ClientSession *> to(subscribers_.begin(), subscribers_.end());
    for (ClientSession *s : to)
        if (subscribers_.count(s))
            s->monitor_event(ev);
}

} // namespace mcastd::frontend
