// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastd's configuration file (config/README.md, rdma-mcastd.json(5)): strict JSON with
// comments, read once at start.
//
// Strict the way ISC Kea is: an unknown key, a wrong type, a value out of range or a duplicate
// key is an error that names the file and the key's JSON pointer, e.g.
//   /etc/rdma-mcastd/rdma-mcastd.json: /sa/timeout_ms: 0 out of range [1, 60000]
// A typo never silently falls back to a default.
//
// DaemonConfig holds each module's own config struct (the engine's EngineConfig, HostPorts'
// HostPortsConfig, the client sessions' Limits, the access policy), filled in, so the Daemon hands
// them over as they are. Only their headers are used: this library links none of those modules.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "common/named_group.hpp"
#include "common/request.hpp"
#include "core/engine_config.hpp"
#include "policy/policy.hpp"
#include "roce/roce_options.hpp"
#include "frontend/limits.hpp"
#include "host/host_ports.hpp"
#include "logging/routine_limiter.hpp"
#include "sa/fabric_budget.hpp"

namespace mcastd::config {

inline constexpr const char *kDefaultPath = "/etc/rdma-mcastd/rdma-mcastd.json";
inline constexpr const char *kDefaultSocket = "/run/rdma-mcastd.sock";

// The names "log_level" accepts, lowest first; spdlog::level::from_str() reads each of them.
inline constexpr std::string_view kLogLevels[] = {"trace", "debug",    "info", "warning",
                                                  "error", "critical", "off"};

// The D-Bus transport. When the system bus cannot be reached the daemon warns and serves the
// socket only; `enabled: false` does not try.
struct DbusConfig {
    bool enabled = true;
    bool operator==(const DbusConfig &) const = default;
};

// Across a restart or crash of the daemon (doc/architecture.md §9): how long the memberships
// of a client that lost its connection wait for it to resume its session before they are
// released (and deleted at the SA when nobody else holds them).
struct RestartConfig {
    std::chrono::milliseconds grace{5000};
    bool operator==(const RestartConfig &) const = default;
};

// sa.max_rate's default, SA MADs per second per port (config/README.md says why). The daemon's
// own, set here where the config is built: sa::TransactionConfig stays unpaced for whoever builds
// one without a config (the SA layer's unit tests, the sim tier's engine driver).
inline constexpr double kDefaultSaMaxRate = 1000;

inline HostPortsConfig default_host_config() {
    HostPortsConfig host;
    host.sa.pacing_rate = kDefaultSaMaxRate;
    return host;
}

// The prefixes the engine owns: those listed (groups.owned_prefixes), and the named groups'
// prefix while names are enabled (only the daemon makes MGIDs there, by the names' hash),
// listed or not.
inline std::vector<NamePrefix> owned_prefixes(std::vector<NamePrefix> listed, const NamedGroups &names) {
    if (names.enabled && std::find(listed.begin(), listed.end(), names.prefix) == listed.end())
        listed.push_back(names.prefix);
    return listed;
}

// The engine's defaults, with what the default names own (names are enabled by default): the
// parser sets owned_prefixes from groups.owned_prefixes and groups.names.
inline EngineConfig default_engine_config() {
    EngineConfig engine;
    engine.owned_prefixes = owned_prefixes({}, NamedGroups{});
    return engine;
}

// The group that may use the socket the daemon binds itself (without socket activation, where
// rdma-mcastd.socket's SocketGroup= decides): root:<group> 0660, as the socket unit makes it.
inline constexpr const char *kDefaultSocketGroup = "rdma-mcast";

struct DaemonConfig {
    std::string socket = kDefaultSocket;
    // "socket_group": a name or gid; "" for root alone. The gid is resolved when the config is
    // read: an unknown name is an error when the file names it, and a warning (root alone) when
    // it is the default and the host has no such group.
    std::string socket_group = kDefaultSocketGroup;
    std::optional<gid_t> socket_gid;
    std::string log_level = "info"; // one of kLogLevels
    EngineConfig engine = default_engine_config(); // "groups", "retry", "rejoin"
    NamedGroups names;              // "groups.names": how a join's name maps to its MGID
    // "groups.roce_ipv6", and groups.create.qkey as the Q_Key of a RoCE group (filled with
    // engine.create by the parser).
    roce::RoceOptions roce;
    HostPortsConfig host = default_host_config(); // "ports", "sa", "monitor"
    // "fabric", already applied to host.sa's pacing and engine.rejoin_jitter (apply_fabric).
    sa::FabricBudget fabric;
    // What the file wrote for those two, before the budget: a reload compares and keeps these
    // (without_fabric), so a changed budget alone is not a changed "sa" or "rejoin". A config
    // made by hand sets host.sa and engine, then calls apply_fabric.
    struct Written {
        double sa_max_rate = kDefaultSaMaxRate;
        Duration rejoin_jitter = EngineConfig{}.rejoin_jitter;
        bool operator==(const Written &) const = default;
    } written;
    frontend::Limits limits;
    logging::RoutineLimits log_routine; // "limits.log_routine_burst", "limits.log_routine_per_minute"
    policy::Policy access;          // "access": allow lists, rules, quotas
    DbusConfig dbus;
    RestartConfig restart;
    std::vector<JoinRequest> static_groups;
    // Where the restart state is kept: --state-dir, or $RUNTIME_DIRECTORY under systemd; not a
    // key of the file. Empty: nowhere (a restart or crash then loses every membership).
    std::string state_dir;
    // Where this came from, for the log: the file's path, or "built-in defaults (no <path>)".
    std::string origin;

    bool operator==(const DaemonConfig &) const = default;
};

// host.sa.pacing_rate and engine.rejoin_jitter hold what the file wrote (sa.max_rate,
// rejoin.jitter_ms): records them in `written` and applies `fabric` over them, which gives the
// values in force. The parser calls it last; a reload calls it on the config it puts in force.
void apply_fabric(DaemonConfig &c);
// The inverse: `c` with host.sa.pacing_rate and engine.rejoin_jitter as the file wrote them.
DaemonConfig without_fabric(DaemonConfig c);

using ConfigResult = std::variant<DaemonConfig, Error>;

// Parses a config document. `origin` names it in errors (normally the file's path). Errors are
// Errc::invalid_argument with the message "<origin>: <pointer>: <reason>"; never throws
// anything but std::bad_alloc.
ConfigResult parse_config(std::string_view text, std::string_view origin);

// Reads and parses the file at `path`. When it does not exist, that is an error if the
// operator named it (`path_is_default` false), and the built-in defaults if it is only the
// default path: a fresh install needs no config. Read errors are Errc::internal with errno's
// text.
ConfigResult load_config(const std::string &path, bool path_is_default);

} // namespace mcastd::config
