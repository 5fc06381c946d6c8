// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "app/daemon.hpp"

#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include "logging/membership_log.hpp"
#include "sa/transactions.hpp"
#include "server/activation.hpp"
#include "service/views.hpp"

#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "frontend/process_identity.hpp"
#include "server/fd_store.hpp"

namespace mcastd {

Daemon::Daemon(runtime::EventLoop &loop, config::DaemonConfig cfg, std::unique_ptr<PortBackend> ports,
               std::string name)
    : loop_(loop), cfg_(std::move(cfg)), ports_(std::move(ports)) {
    const TimePoint began = Clock::now();
    routine_ = std::make_unique<logging::RoutineLimiter>(loop_.timers(), cfg_.log_routine,
                                                         [](const logging::FoldSummary &s) {
                                                             logging::log_folded(s, frontend::passwd_name(s.uid));
                                                         });
    service_ = std::make_unique<Service>(cfg_.engine, ports_->sa(), loop_.timers());
    roce_syscalls_ = std::make_unique<roce::LinuxSyscalls>();
    roce_ports_ = std::make_unique<roce::RegistryRocePorts>(service_->ports());
    roce_ = std::make_unique<roce::RoceBackend>(*roce_ports_, *roce_syscalls_, cfg_.roce);
    fd_store_ = server::service_manager_fd_store();
    if (fd_store_) {
        membership_store_ = std::make_unique<MembershipFdStore>(fd_store_);
        roce_->set_store(membership_store_.get());
    }
    service_->set_membership_backend(LinkLayer::ethernet, *roce_);
    const TimePoint ports_began = Clock::now();
    ports_->open(*service_);
    const Clock::duration ports_opened = Clock::now() - ports_began;
    service_->add_observer(logging::membership_log(*service_, *routine_));
    notifier_ = std::make_unique<runtime::Notifier>(loop_.timers(), [this] { return status_line(*service_); });
    service_->set_change_listener([this] { notifier_->changed(); });

    sessions_ = std::make_unique<frontend::Sessions>(*service_, loop_.timers(), name, cfg_.limits, cfg_.access);
    sessions_->names().configure(cfg_.names);
    server::ListenSocket listener =
        server::open_client_socket(cfg_.socket, 0660, cfg_.socket_gid.value_or(static_cast<gid_t>(-1)));
    if (!listener.activated && !cfg_.socket_gid && !cfg_.socket_group.empty())
        spdlog::warn("there is no group '{}' on this host, so only root can use {} (create the group, e.g. "
                     "systemd-sysusers rdma-mcastd.conf, or set socket_group)",
                     cfg_.socket_group, cfg_.socket);
    server_ = std::make_unique<server::SocketServer>(loop_, *sessions_, listener.fd, fd_store_);
    // D-Bus is optional: without a system bus the socket still serves.
    if (cfg_.dbus.enabled) {
        try {
            bus_ = std::make_unique<dbus::DbusServer>(loop_, *sessions_, dbus::default_log_hooks());
        } catch (const std::exception &e) {
            spdlog::warn("D-Bus disabled: {}; serving the socket only", e.what());
        }
    }
    take_back(listener);
    statics_ = std::make_unique<StaticGroups>(*sessions_, loop_.timers(), cfg_.static_groups, cfg_.engine.retry_min,
                                              cfg_.engine.retry_max);
    // Bits of the previous instance that neither a session nor a static group holds now are
    // deleted from here on, as after any leave.
    service_->end_adoption();
    // This instance's first state: with the next change's, once READY is said (what it took
    // back is on disk already, and a Set's bits reach the change log before its answer is read).
    if (keeper_)
        keeper_->changed();

    // WatchdogSec=: sd-event sends WATCHDOG=1 from this loop, so a wedged loop misses them.
    if (auto period = runtime::EventLoop::watchdog_period(); period && loop_.enable_watchdog())
        spdlog::info("watchdog: the service manager expects a keep-alive every {} ms",
                     std::chrono::duration_cast<std::chrono::milliseconds>(*period).count());
    if (const sa::FabricBudget &f = cfg_.fabric; f.hosts)
        spdlog::info("fabric budget: {} ports share {} SA MAD/s: each paced at {:.3g} MAD/s, a re-join's pause up "
                     "to {} ms",
                     f.hosts, f.budget, cfg_.host.sa.pacing_rate,
                     std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.engine.rejoin_jitter).count());
    spdlog::info("{} serving {} port(s) on {}{}; started in {:.1f} ms (ports {:.1f} ms, restart state read in {:.1f} "
                 "ms and taken back in {:.1f} ms)",
                 name, service_->ports().size(), listener.path, listener.activated ? " (socket activation)" : "",
                 in_ms(Clock::now() - began), in_ms(ports_opened), in_ms(state_read_), in_ms(taken_back_));
    // Once clients can connect (and the D-Bus name, when there is one, is ours); not after SA
    // joins, which may wait hours for a port to come up.
    notifier_->ready();
}

Daemon::~Daemon() {
    *alive_ = false;
    if (grace_timer_)
        loop_.timers().cancel(grace_timer_);
    if (keeper_)
        keeper_->seal(false); // what is taken apart below is not what the daemon holds
    statics_.reset();
    bus_.reset();
    server_.reset();
    keeper_.reset();
    sessions_.reset();
    service_->set_change_listener({});
    service_->on_sa_set({});
    notifier_.reset();
    ports_->quiesce();
    service_.reset();
    ports_.reset();
    routine_->flush(); // what was folded until the very end, the leaves of a stop included
}

void Daemon::stop(const std::string &why) {
    if (stopping_)
        return;
    stopping_ = true;
    notifier_->stopping("leaving every group");
    spdlog::info("{}: leaving every group and stopping", why);
    server_->stop_accepting();
    server_->say_stopping("rdma-mcastd is stopping for good: every group is left");
    server_->disconnect_all();
    if (bus_)
        bus_->disconnect_all();
    statics_.reset();
    // Every Delete answered (or given up on) before the SA sessions close.
    const auto bound = sa::timeout_bound(cfg_.host.sa) + std::chrono::seconds(1);
    loop_.timers().start(bound, [this, bound] {
        spdlog::warn("some leaves were not answered within {} ms; stopping anyway{}", bound.count(),
                     keeper_ ? " (the next start deletes what is left)" : "");
        if (keeper_)
            keeper_->write(false);
        loop_.exit(0);
    });
    service_->when_idle([this] {
        if (keeper_)
            keeper_->seal(true); // nothing of the daemon's is left at the SA
        loop_.exit(0);
    });
}

void Daemon::restart(const std::string &why) {
    if (stopping_)
        return;
    if (!keeper_) {
        spdlog::warn("{}: a restart that keeps memberships needs a state directory (--state-dir, or "
                     "RuntimeDirectory= under systemd); stopping for good instead",
                     why);
        stop(why);
        return;
    }
    stopping_ = true;
    restart_began_ = Clock::now();
    notifier_->stopping("restarting: every membership stays");
    spdlog::info("{}: restarting; every membership and connection stays for the next instance", why);
    server_->stop_accepting();
    server_->pause();
    if (bus_)
        bus_->pause();
    // What is in flight is answered (or given up on) first, so the state the next instance
    // takes back is certain and every request read so far has its reply.
    const auto bound = sa::timeout_bound(cfg_.host.sa) + std::chrono::seconds(1);
    const Timers::Id timer = loop_.timers().start(bound, [this, bound] {
        spdlog::warn("SA transactions still unanswered after {} ms; the next instance checks their groups",
                     bound.count());
        finish_restart();
    });
    service_->when_idle([this, timer] {
        loop_.timers().cancel(timer);
        finish_restart();
    });
}

void Daemon::finish_restart() {
    if (loop_.exit_requested())
        return;
    const TimePoint drained = Clock::now();
    const bool written = keeper_->write(service_->idle());
    const TimePoint wrote = Clock::now();
    keeper_->seal(false);
    service_->mute_sa(); // taking the daemon apart must not reach the SA
    roce_->hand_over();  // nor the kernel (the sessions the hand-over ends release their members)
    server_->hand_over();
    // Every FDSTORE=1 sent so far must reach the service manager before this process ends.
    if (server_->storing())
        if (int r = sd_notify_barrier(0, 5'000'000); r < 0)
            spdlog::warn("the service manager did not confirm the fd store: {}", std::strerror(-r));
    spdlog::info("restart state {}; exiting for the next instance (drained in {:.1f} ms, state written in {:.1f} ms, "
                 "handed over in {:.1f} ms)",
                 written ? "written" : "NOT written", in_ms(drained - restart_began_), in_ms(wrote - drained),
                 in_ms(Clock::now() - wrote));
    loop_.exit(0);
}

void Daemon::take_back(server::ListenSocket &listener) {
    auto close_stored = [&](const char *why) {
        for (const auto &c : listener.stored) {
            spdlog::warn("closing stored connection {}: {}", server::connection_fd_name(c.session), why);
            server::discard_stored_connection(c.fd, c.session);
        }
        for (const auto &[id, fd] : listener.membership_sockets) {
            spdlog::warn("closing stored {}: {} (its kernel memberships end)", server::membership_socket_fd_name(id),
                         why);
            server::discard_stored(fd, server::membership_socket_fd_name(id));
        }
        listener.membership_sockets.clear();
    };
    if (cfg_.state_dir.empty()) {
        spdlog::warn("no state directory (--state-dir, or RuntimeDirectory= under systemd): a restart or crash of "
                     "the daemon will drop every membership");
        close_stored("the daemon keeps no restart state");
        return;
    }
    restart::StateFile file(cfg_.state_dir);
    keeper_ = std::make_unique<restart::StateKeeper>(loop_, *service_, *sessions_, file, sessions_->daemon_name());
    if (bus_)
        keeper_->set_bus_id(bus_->bus_id());
    keeper_->set_roce(roce_.get());
    const TimePoint read_began = Clock::now();
    const auto loaded = file.load(restart::current_boot_id());
    state_read_ = std::chrono::duration_cast<Duration>(Clock::now() - read_began);
    if (!loaded.set_aside.empty())
        spdlog::error("restart state {} set aside as {}.rejected: {}; starting without it (groups a previous "
                      "instance set are left alone as another agent's)",
                      file.path().string(), file.path().string(), loaded.set_aside);
    if (!loaded.sets_set_aside.empty())
        spdlog::error("restart sets log {} set aside as {}.rejected: {}", file.sets_path().string(),
                      file.sets_path().string(), loaded.sets_set_aside);
    for (const auto &why : loaded.sets_skipped)
        spdlog::warn("restart sets log {}: {}; that Set is not taken back", file.sets_path().string(), why);
    if (loaded.sets)
        spdlog::info("restart sets log {} (of the release before): {} Set(s) sent after the state was last written; "
                     "their bits are probed",
                     file.sets_path().string(), loaded.sets);
    if (!loaded.log_set_aside.empty())
        spdlog::error("restart change log {} set aside as {}.rejected: {}", file.log_path().string(),
                      file.log_path().string(), loaded.log_set_aside);
    if (!loaded.log_covered.empty())
        spdlog::info("restart change log {} dropped: {}", file.log_path().string(), loaded.log_covered);
    for (const auto &why : loaded.log_skipped)
        spdlog::warn("restart change log {}: {}; that change is not taken back", file.log_path().string(), why);
    if (loaded.changes)
        spdlog::info("restart change log: {} change(s) since the state file was written", loaded.changes);
    if (!loaded.state) {
        close_stored("there is no restart state to match it with");
    } else {
        const TimePoint restore_began = Clock::now();
        const auto r = keeper_->restore(*loaded.state, std::move(listener.stored), *server_,
                                        std::move(listener.membership_sockets));
        listener.membership_sockets.clear();
        spdlog::info("took back from {} ({}): {} group(s), {} session(s) with {} membership(s), {} connection(s) "
                     "kept by the service manager, {} RoCE kernel membership(s) kept and {} made again ({} RoCE "
                     "membership(s) released: their kernel membership could not be kept)",
                     loaded.state->daemon, loaded.state->clean ? "a planned restart" : "a crash", r.groups, r.sessions,
                     r.memberships, r.connections, r.kernel_adopted, r.kernel_remade, r.kernel_lost);
        for (const auto &why : r.set_aside)
            spdlog::warn("restart state: {}", why);
        // A D-Bus caller's unique name outlives the daemon's bus connection: those still on the
        // bus keep their sessions; the rest are released below.
        if (bus_)
            if (const std::size_t n = bus_->take_back(loaded.state->bus_id))
                spdlog::info("{} D-Bus client(s) still on the bus keep their sessions", n);
        // The config may have changed with the binary: what it would refuse is kept, and said.
        if (const std::size_t flagged = sessions_->review())
            spdlog::warn("{} membership(s) taken back would be refused by the access policy in force; they are kept "
                         "(rdma-mcastctl list flags them)",
                         flagged);
        taken_back_ = std::chrono::duration_cast<Duration>(Clock::now() - restore_began);
    }
    listener.stored.clear();

    keeper_->watch();

    // Detached sessions wait for their clients until the grace ends, or less: a session whose
    // client process is gone, or a D-Bus caller's still detached (its unique name is gone from
    // the bus, or the daemon has no bus now), is released at once.
    if (sessions_->detached())
        check_detached(loop_.timers().now() + cfg_.restart.grace);
}

void Daemon::check_detached(TimePoint deadline) {
    grace_timer_ = 0;
    const bool over = loop_.timers().now() >= deadline;
    std::size_t released = 0;
    const std::size_t left = sessions_->release_detached([&](const frontend::ClientSession &s) {
        const bool drop = over || s.door() != frontend::Door::socket ||
                          !frontend::process_alive(s.who().who.pid, s.start_time());
        if (drop)
            spdlog::info("releasing session {} of pid {} ({}): {}", s.id(), s.who().who.pid, s.who().who.comm,
                         over                                     ? "not resumed within restart.grace_ms"
                         : s.door() == frontend::Door::dbus ? "its D-Bus client is not on the bus"
                                                                  : "its client is gone");
        released += drop;
        return drop;
    });
    if (left == 0) {
        spdlog::info("every session of the previous instance is resumed or released");
        return;
    }
    const Duration until_end = std::chrono::duration_cast<Duration>(deadline - loop_.timers().now());
    grace_timer_ = loop_.timers().start(std::min<Duration>(std::chrono::milliseconds(200), until_end),
                                        [this, deadline] { check_detached(deadline); });
}

bool Daemon::reload(config::ConfigResult loaded) {
    if (stopping_)
        return false;
    notifier_->reloading();
    const bool applied = [&] {
        if (const auto *err = std::get_if<Error>(&loaded)) {
            spdlog::error("reload refused, the running configuration stays: {}", err->message);
            return false;
        }
        Reloaded r = apply_reload(cfg_, std::get<config::DaemonConfig>(loaded), *this);
        cfg_ = std::move(r.in_force);
        const ReloadPlan &plan = r.plan;
        const std::string live =
            plan.live.empty() ? std::string("nothing changed") : fmt::format("{}", fmt::join(plan.live, ", "));
        spdlog::info("configuration reloaded from {}; applied: {}", cfg_.origin, live);
        if (!plan.restart.empty())
            spdlog::warn("changed keys that keep their running value until a restart: {}",
                         fmt::join(plan.restart, ", "));
        return true;
    }();
    notifier_->ready();
    return applied;
}

void Daemon::set_log_level(const std::string &level) { spdlog::set_level(spdlog::level::from_str(level)); }

void Daemon::set_limits(const frontend::Limits &limits, const logging::RoutineLimits &log) {
    sessions_->set_limits(limits);
    routine_->set_limits(log);
}

void Daemon::set_access(const policy::Policy &access) { sessions_->set_policy(access); }

void Daemon::set_static_groups(const std::vector<JoinRequest> &groups) {
    // The new holder joins before the old one leaves, so a group in both files keeps its count
    // above zero and costs the SA nothing.
    auto fresh = std::make_unique<StaticGroups>(*sessions_, loop_.timers(), groups, cfg_.engine.retry_min,
                                                cfg_.engine.retry_max);
    statics_ = std::move(fresh);
}

} // namespace mcastd
