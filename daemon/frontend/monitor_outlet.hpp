// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// MonitorOutlet: the daemon's activity (every engine note) as `monitor` events, for the sessions
// that asked (proto/PROTOCOL.md, "monitor"). A join costs nothing extra while nobody monitors.
// How many monitors a uid may have is its account's (accounts.hpp); what a monitor that does not
// read is owed is its transport's, which drops events beyond a small backlog and says how many
// (proto::dropped_monitor_event).
#pragma once

#include <unordered_set>

#include "core/engine.hpp"
#include "proto/protocol.hpp"

namespace mcastd {
class Service;
}

namespace mcastd::frontend {

class ClientSession;

class MonitorOutlet {
public:
    explicit MonitorOutlet(const Service &service) : service_(service) {}

    void subscribe(ClientSession &s) { subscribers_.insert(&s); }
    void unsubscribe(ClientSession &s) { subscribers_.erase(&s); }
    bool subscribed(const ClientSession &s) const { return subscribers_.count(const_cast<ClientSession *>(&s)); }

    // One note to every subscriber.
    void deliver(const EngineNote &note);

private:
    const Service &service_;
    std::unordered_set<ClientSession *> subscribers_;
};

} // namespace mcastd::frontend
