// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SIGHUP: which changed keys of the configuration a reload applies while the daemon runs, and
// which wait for a restart (Daemon::reload applies the plan).
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace mcastd {

// The top-level config keys a reload applies live; every other changed key needs a restart.
inline constexpr const char *kLiveKeys[] = {"log_level", "limits", "access", "static_groups"};

struct ReloadPlan {
    std::vector<std::string> live;    // changed keys applied now
    std::vector<std::string> restart; // changed keys that take effect at the next start
};

// The changed top-level keys of `next` against `running`, in file order.
ReloadPlan plan_reload(const config::DaemonConfig &running, const config::DaemonConfig &next);

} // namespace mcastd
