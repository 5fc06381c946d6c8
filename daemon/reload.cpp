#include "reload.hpp"

#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

namespace mcastd {

ReloadPlan plan_reload(const config::DaemonConfig &a, const config::DaemonConfig &b) {
    const EngineConfig &ea = a.service.engine, &eb = b.service.engine;
    const std::pair<const char *, bool> changed[] = {
        {"socket", a.socket != b.socket},
        {"log_level", a.log_level != b.log_level},
        {"ports", a.service.ports != b.service.ports},
        {"sa", !(a.service.sa == b.service.sa)},
        {"groups", ea.allow_ipoib_mgids != eb.allow_ipoib_mgids || ea.allow_rdma_cm_mgids != eb.allow_rdma_cm_mgids ||
                       !(ea.create == eb.create)},
        {"retry", ea.retry_min != eb.retry_min || ea.retry_max != eb.retry_max},
        {"rejoin", ea.rejoin_jitter != eb.rejoin_jitter},
        {"monitor", !(a.service.monitor == b.service.monitor)},
        {"limits", !(a.limits == b.limits)},
        {"access", !(a.access == b.access)},
        {"static_groups", a.static_groups != b.static_groups},
        {"dbus", a.dbus.enabled != b.dbus.enabled},
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

bool reload_config(config::ConfigResult loaded, config::DaemonConfig &running, const LiveParts &parts) {
    if (const auto *err = std::get_if<Error>(&loaded)) {
        spdlog::error("reload refused, the running configuration stays: {}", err->message);
        return false;
    }
    auto next = std::get<config::DaemonConfig>(std::move(loaded));
    next.service.engine.seed = running.service.engine.seed; // random per start, not config
    const ReloadPlan plan = plan_reload(running, next);

    spdlog::set_level(spdlog::level::from_str(next.log_level));
    parts.server.set_limits(next.limits);
    parts.server.set_access(next.access);
    if (next.static_groups != running.static_groups) {
        // The new holder joins before the old one leaves, so a group in both files keeps its
        // count above zero and costs the SA nothing.
        auto fresh = std::make_unique<StaticGroups>(parts.service, parts.timers, next.static_groups,
                                                    running.service.engine.retry_min,
                                                    running.service.engine.retry_max);
        parts.statics = std::move(fresh);
    }
    // What the running engine, SA stack and ports were built with stays until a restart; the
    // stored config keeps those values so the next reload compares against what is in force.
    const config::DaemonConfig previous = running;
    running = std::move(next);
    running.socket = previous.socket;
    running.service = previous.service;
    running.dbus = previous.dbus;

    spdlog::info("configuration reloaded from {}; applied: {}", running.origin,
                 plan.live.empty() ? std::string("nothing changed") : fmt::format("{}", fmt::join(plan.live, ", ")));
    if (!plan.restart.empty())
        spdlog::warn("changed keys that take effect only after a restart: {}", fmt::join(plan.restart, ", "));
    return true;
}

} // namespace mcastd
