// SIGHUP: the configuration re-read while the daemon runs. A file that does not parse or
// validate is refused with the error that names the key; the running configuration stays.
// A good one is applied where that is safe while running (log_level, limits, access,
// static_groups); every other changed key is named in the log as waiting for a restart.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/timers.hpp"
#include "server/socket_server.hpp"
#include "service.hpp"
#include "static_groups.hpp"

namespace mcastd {

// The top-level config keys a reload applies live, and those that need a restart.
inline constexpr const char *kLiveKeys[] = {"log_level", "limits", "access", "static_groups"};
inline constexpr const char *kRestartKeys[] = {"socket", "ports", "sa", "groups", "retry", "rejoin", "monitor"};

struct ReloadPlan {
    std::vector<std::string> live;    // changed keys applied now
    std::vector<std::string> restart; // changed keys that take effect at the next start
};

// The changed top-level keys of `next` against `running`, in file order.
ReloadPlan plan_reload(const config::DaemonConfig &running, const config::DaemonConfig &next);

// What a reload may touch while running.
struct LiveParts {
    Service &service;
    Timers &timers;
    server::SocketServer &server;
    std::unique_ptr<StaticGroups> &statics;
};

// Applies `loaded` (the new file, command-line overrides already applied) and makes it the
// running config, or logs why it is refused and leaves `running` alone. Returns whether it
// was applied.
bool reload_config(config::ConfigResult loaded, config::DaemonConfig &running, const LiveParts &parts);

} // namespace mcastd
