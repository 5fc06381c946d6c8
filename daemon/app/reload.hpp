// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SIGHUP: one table (reload_keys(), in reload.cpp) says for every top-level key of the config
// file whether a reload applies it while the daemon runs, and how, or keeps the running value
// until a restart. apply_reload walks it; Daemon::reload hands it the daemon's parts.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace mcastd {

// The running daemon's parts a reload changes: one call for each live key that changed, with the
// new value. The Daemon implements it; a test records the calls.
class LiveParts {
public:
    virtual ~LiveParts() = default;
    virtual void set_log_level(const std::string &level) = 0;
    // `limits`, and the journal's per-uid rate of routine lines (limits.log_routine_*).
    virtual void set_limits(const frontend::Limits &limits, const logging::RoutineLimits &log) = 0;
    virtual void set_access(const policy::Policy &access) = 0; // also reviews what is held
    virtual void set_static_groups(const std::vector<JoinRequest> &groups) = 0;
};

// One row of the table: a top-level key and what a reload does when it changed.
struct ReloadKey {
    const char *key;
    // Whether the key differs between two configs as their files wrote them (without_fabric).
    bool (*differs)(const config::DaemonConfig &a, const config::DaemonConfig &b);
    // Copies the key's value from one config into another.
    void (*copy)(const config::DaemonConfig &from, config::DaemonConfig &to);
    // Hands the key's new value to the running daemon. Null: the key keeps its running value,
    // in the daemon and in the config in force, until a restart.
    void (*apply)(LiveParts &parts, const config::DaemonConfig &next);
    bool live() const { return apply != nullptr; }
};

// Every top-level key of the file, in file order.
std::span<const ReloadKey> reload_keys();

struct ReloadPlan {
    std::vector<std::string> live;    // changed keys applied now
    std::vector<std::string> restart; // changed keys that keep their running value until a restart
};

// The changed top-level keys of `next` against `running`, in file order.
ReloadPlan plan_reload(const config::DaemonConfig &running, const config::DaemonConfig &next);

struct Reloaded {
    // What the daemon runs with from now on: `running` with the live keys of `next` (and its
    // origin). A key that waits for a restart keeps its running value here, so the next reload
    // of the same file names it again.
    config::DaemonConfig in_force;
    ReloadPlan plan;
};

// A reload of `next` over `running`: each live key that changed is handed to `parts`, in file
// order.
Reloaded apply_reload(const config::DaemonConfig &running, const config::DaemonConfig &next, LiveParts &parts);

} // namespace mcastd
