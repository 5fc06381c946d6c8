// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "reload.hpp"

#include <algorithm>
#include <string_view>

namespace mcastd {

ReloadPlan plan_reload(const config::DaemonConfig &a, const config::DaemonConfig &b) {
    const EngineConfig &ea = a.engine, &eb = b.engine;
    const std::pair<const char *, bool> changed[] = {
        {"socket", a.socket != b.socket},
        {"socket_group", a.socket_group != b.socket_group || a.socket_gid != b.socket_gid},
        {"log_level", a.log_level != b.log_level},
        {"ports", a.host.ports != b.host.ports},
        {"sa", !(a.host.sa == b.host.sa)},
        {"groups", ea.allow_ipoib_mgids != eb.allow_ipoib_mgids || ea.allow_rdma_cm_mgids != eb.allow_rdma_cm_mgids ||
                       !(ea.create == eb.create) || !(a.names == b.names)},
        {"retry", ea.retry_min != eb.retry_min || ea.retry_max != eb.retry_max},
        {"rejoin", ea.rejoin_jitter != eb.rejoin_jitter},
        {"monitor", !(a.host.monitor == b.host.monitor)},
        {"fabric", a.fabric != b.fabric},
        {"limits", !(a.limits == b.limits) || !(a.log_routine == b.log_routine)},
        {"access", !(a.access == b.access)},
        {"static_groups", a.static_groups != b.static_groups},
        {"dbus", a.dbus.enabled != b.dbus.enabled},
        {"restart", a.restart != b.restart},
    };
    ReloadPlan plan;
    for (const auto &[key, differs] : changed) {
        if (!differs)
            continue;
        const bool live = std::find_if(std::begin(kLiveKeys), std::end(kLiveKeys), [&](const char *k) {
                              return std::string_view(k) == key;
                          }) != std::end(kLiveKeys);
        (live ? plan.live : plan.restart).emplace_back(key);
    }
    return plan;
}

} // namespace mcastd
