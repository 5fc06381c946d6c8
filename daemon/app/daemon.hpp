// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The Daemon: rdma-mcastd's parts, made in start order and destroyed in reverse, and what
// happens to them on SIGTERM (stop) and SIGHUP (reload). main() parses the command line,
// loads the config, sets up logging and runs the loop; everything else starts here:
//
//   ports    PortBackend: the host's ports and the SA stack over libibumad (HostPorts)
//   service  Service: the engine and what the daemon knows of each port, over ports' SA
//            (then the ports are opened into it: discovery, polls, verbs events)
//   log      the membership log (every engine note, with its journal fields; the routine
//            ones under a per-uid rate limit whose summaries outlive every other part)
//   notifier sd_notify: STATUS= follows the service
//   sessions the front door every client comes through (limits, access, monitor)
//   socket   the Unix-socket transport on the configured or activated listener
//   bus      the D-Bus transport, when the system bus can be reached
//   keeper   the restart state: written as things change, and what a previous instance left
//            taken back (restart/keeper.hpp); then the static groups join and the adoption
//            ends
//   statics  the config's static groups, held by the daemon's own session
#pragma once

#include <memory>
#include <string>

#include "config/config.hpp"
#include "dbus/dbus_server.hpp"
#include "frontend/sessions.hpp"
#include "logging/routine_limiter.hpp"
#include "app/membership_fd_store.hpp"
#include "host/port_backend.hpp"
#include "app/reload.hpp"
#include "restart/keeper.hpp"
#include "roce/linux_syscalls.hpp"
#include "roce/registry_roce_ports.hpp"
#include "roce/roce_backend.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/notifier.hpp"
#include "server/activation.hpp"
#include "server/socket_server.hpp"
#include "service/service.hpp"
#include "app/static_groups.hpp"

namespace mcastd {

class Daemon : private LiveParts {
public:
    // Starts every part and says READY=1. Throws std::exception naming what could not start
    // (a configured port, the socket); D-Bus failing to start only warns.
    Daemon(runtime::EventLoop &loop, config::DaemonConfig cfg, std::unique_ptr<PortBackend> ports,
           std::string name);
    ~Daemon();
    Daemon(const Daemon &) = delete;
    Daemon &operator=(const Daemon &) = delete;

    // Graceful stop (SIGTERM, SIGINT): no new clients, every client's memberships and the
    // static groups left, and the loop ends (exit code 0) once every Delete is answered, or
    // after the SA's timeout bound and one second more. `why` is for the log. Once; later
    // calls do nothing.
    void stop(const std::string &why);
    // A restart (SIGUSR2, the unit's RestartKillSignal=): no new clients, no more requests read
    // (they wait in their sockets), every SA transaction answered or given up on, then the
    // state written and the loop ended with no SA Delete and no connection closed: the next
    // instance takes everything back. Without a state directory it is a stop.
    void restart(const std::string &why);
    bool stopping() const { return stopping_; }

    // A reload (SIGHUP): `next` is the re-read config (command-line overrides applied) or the
    // error that refused it. Applies the keys reload.cpp's table makes live, names every other
    // changed key as waiting for a restart (config() keeps their running values), and keeps the
    // running config when `next` is an error. Returns whether it was applied; a daemon that is
    // stopping applies nothing.
    bool reload(config::ConfigResult next);

    const config::DaemonConfig &config() const { return cfg_; }
    Service &service() { return *service_; }
    frontend::Sessions &sessions() { return *sessions_; }
    server::SocketServer &socket_server() { return *server_; }
    const logging::RoutineLimiter &routine_limiter() const { return *routine_; }
    std::size_t static_groups_held() const { return statics_ ? statics_->held() : 0; }

private:
    runtime::EventLoop &loop_;
    config::DaemonConfig cfg_; // what is in force
    bool stopping_ = false;

    // Before the parts whose notes it counts: it outlives them, and its last summaries are
    // written when they are gone.
    std::unique_ptr<logging::RoutineLimiter> routine_;
    // In start order.
    std::unique_ptr<PortBackend> ports_;
    // The service manager's fd store (null without one), shared by the client connections and
    // the RoCE membership sockets; declared before the backend, which removes its sockets from
    // it as it ends.
    std::shared_ptr<server::FdStore> fd_store_;
    std::unique_ptr<MembershipFdStore> membership_store_;
    // Ethernet (RoCE) ports' memberships: made right after the Service (their view of the
    // ports is its registry), before any port is added; declared before it because the
    // engine's backend must outlive the engine. Its kernel memberships end with it, unless a
    // restart handed them over (the fd store keeps their sockets).
    std::unique_ptr<roce::LinuxSyscalls> roce_syscalls_;
    std::unique_ptr<roce::RegistryRocePorts> roce_ports_;
    std::unique_ptr<roce::RoceBackend> roce_;
    std::unique_ptr<Service> service_;
    std::unique_ptr<runtime::Notifier> notifier_;
    std::unique_ptr<frontend::Sessions> sessions_;
    std::unique_ptr<server::SocketServer> server_;
    std::unique_ptr<dbus::DbusServer> bus_;
    std::unique_ptr<restart::StateKeeper> keeper_;
    std::unique_ptr<StaticGroups> statics_;
    Timers::Id grace_timer_ = 0;
    // What a planned restart and a start took, phase by phase, for their log lines (the
    // restart's hand-over is measured: doc/architecture.md §9).
    TimePoint restart_began_{};
    Duration state_read_{0}, taken_back_{0};
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true); // for the observer it adds

    // LiveParts: what a reload applies while running.
    void set_log_level(const std::string &level) override;
    void set_limits(const frontend::Limits &limits, const logging::RoutineLimits &log) override;
    void set_access(const policy::Policy &access) override;
    void set_static_groups(const std::vector<JoinRequest> &groups) override;

    void take_back(server::ListenSocket &listener);
    void check_detached(TimePoint deadline);
    void finish_restart();
};

} // namespace mcastd
