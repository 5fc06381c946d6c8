// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "app/reload.hpp"

#include <tuple>

namespace mcastd {
namespace {

using config::DaemonConfig;
using Apply = void (*)(LiveParts &, const DaemonConfig &);

// A row from the fields that hold the key (a captureless lambda returning std::tie of them): the
// same fields are compared and copied, so the two cannot disagree.
template <class Fields> constexpr ReloadKey row(const char *key, Fields, Apply apply = nullptr) {
    return {key, [](const DaemonConfig &a, const DaemonConfig &b) { return Fields{}(a) != Fields{}(b); },
            [](const DaemonConfig &from, DaemonConfig &to) { Fields{}(to) = Fields{}(from); }, apply};
}

// The table. What waits for a restart, and why:
//   socket, socket_group  the listener is bound (or was passed by systemd) once
//   ports, sa, monitor    the SA stack and the port event sources are built with them
//   groups                allow_*_mgids and create are the engine's, fixed when it is built;
//                         names must keep meaning the groups they mean while the daemon holds them;
//                         roce_ipv6 is the RoCE backend's, fixed when it is built
//   retry, rejoin         the engine's and the static groups' pacing, fixed when built
//   fabric                applied over sa and rejoin (apply_fabric), which wait too
//   dbus                  the bus connection is made once
//   restart               read only when the daemon starts and takes a previous instance's state
constexpr ReloadKey kKeys[] = {
    row("socket", [](auto &c) { return std::tie(c.socket); }),
    row("socket_group", [](auto &c) { return std::tie(c.socket_group, c.socket_gid); }),
    row("log_level", [](auto &c) { return std::tie(c.log_level); },
        [](LiveParts &p, const DaemonConfig &c) { p.set_log_level(c.log_level); }),
    row("ports", [](auto &c) { return std::tie(c.host.ports); }),
    row("sa", [](auto &c) { return std::tie(c.host.sa); }),
    row("groups", [](auto &c) {
        return std::tie(c.engine.allow_ipoib_mgids, c.engine.allow_rdma_cm_mgids, c.engine.owned_prefixes,
                        c.engine.create, c.names, c.roce);
    }),
    row("retry", [](auto &c) { return std::tie(c.engine.retry_min, c.engine.retry_max); }),
    row("rejoin", [](auto &c) { return std::tie(c.engine.rejoin_jitter); }),
    row("monitor", [](auto &c) { return std::tie(c.host.monitor); }),
    row("fabric", [](auto &c) { return std::tie(c.fabric); }),
    row("limits", [](auto &c) { return std::tie(c.limits, c.log_routine); },
        [](LiveParts &p, const DaemonConfig &c) { p.set_limits(c.limits, c.log_routine); }),
    row("access", [](auto &c) { return std::tie(c.access); },
        [](LiveParts &p, const DaemonConfig &c) { p.set_access(c.access); }),
    row("dbus", [](auto &c) { return std::tie(c.dbus); }),
    row("restart", [](auto &c) { return std::tie(c.restart); }),
    row("static_groups", [](auto &c) { return std::tie(c.static_groups); },
        [](LiveParts &p, const DaemonConfig &c) { p.set_static_groups(c.static_groups); }),
};

} // namespace

std::span<const ReloadKey> reload_keys() { return kKeys; }

ReloadPlan plan_reload(const DaemonConfig &running, const DaemonConfig &next) {
    struct Nothing final : LiveParts {
        void set_log_level(const std::string &) override {}
        void set_limits(const frontend::Limits &, const logging::RoutineLimits &) override {}
        void set_access(const policy::Policy &) override {}
        void set_static_groups(const std::vector<JoinRequest> &) override {}
    } nothing;
    return apply_reload(running, next, nothing).plan;
}

Reloaded apply_reload(const DaemonConfig &running, const DaemonConfig &next, LiveParts &parts) {
    // Every row compares and copies what the files wrote; the budget is applied again over the
    // result, so the values in force follow the fabric, sa and rejoin in force.
    Reloaded r{config::without_fabric(running), {}};
    const DaemonConfig file = config::without_fabric(next);
    for (const ReloadKey &k : kKeys) {
        if (!k.differs(r.in_force, file))
            continue;
        if (!k.live()) {
            r.plan.restart.emplace_back(k.key);
            continue;
        }
        k.copy(file, r.in_force);
        k.apply(parts, file);
        r.plan.live.emplace_back(k.key);
    }
    r.in_force.origin = next.origin;
    config::apply_fabric(r.in_force);
    return r;
}

} // namespace mcastd
