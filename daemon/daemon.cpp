#include "daemon.hpp"

#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include "logging/membership_log.hpp"
#include "reload.hpp"
#include "sa/transactions.hpp"
#include "server/activation.hpp"
#include "views.hpp"

namespace mcastd {

Daemon::Daemon(runtime::EventLoop &loop, config::DaemonConfig cfg, std::unique_ptr<PortBackend> ports,
               std::string name)
    : loop_(loop), cfg_(std::move(cfg)), ports_(std::move(ports)) {
    service_ = std::make_unique<Service>(cfg_.engine, ports_->sa(), loop_.timers());
    ports_->open(*service_);
    service_->add_observer(logging::membership_log(*service_));
    notifier_ = std::make_unique<runtime::Notifier>(loop_.timers(), [this] { return status_line(*service_); });
    service_->set_change_listener([this] { notifier_->changed(); });

    sessions_ = std::make_unique<frontend::Sessions>(*service_, name, cfg_.limits, cfg_.access);
    const server::ListenSocket listener = server::open_client_socket(cfg_.socket);
    server_ = std::make_unique<server::SocketServer>(loop_, *sessions_, listener.fd);
    // D-Bus is optional: without a system bus the socket still serves.
    if (cfg_.dbus.enabled) {
        try {
            bus_ = std::make_unique<dbus::DbusServer>(loop_, *sessions_, dbus::default_log_hooks());
        } catch (const std::exception &e) {
            spdlog::warn("D-Bus disabled: {}; serving the socket only", e.what());
        }
    }
    statics_ = std::make_unique<StaticGroups>(*sessions_, loop_.timers(), cfg_.static_groups, cfg_.engine.retry_min,
                                              cfg_.engine.retry_max);

    // WatchdogSec=: sd-event sends WATCHDOG=1 from this loop, so a wedged loop misses them.
    if (auto period = runtime::EventLoop::watchdog_period(); period && loop_.enable_watchdog())
        spdlog::info("watchdog: the service manager expects a keep-alive every {} ms",
                     std::chrono::duration_cast<std::chrono::milliseconds>(*period).count());
    spdlog::info("{} serving {} port(s) on {}{}", name, service_->ports().size(), listener.path,
                 listener.activated ? " (socket activation)" : "");
    // Once clients can connect (and the D-Bus name, when there is one, is ours); not after SA
    // joins, which may wait hours for a port to come up.
    notifier_->ready();
}

Daemon::~Daemon() {
    statics_.reset();
    bus_.reset();
    server_.reset();
    sessions_.reset();
    service_->set_change_listener({});
    notifier_.reset();
    ports_->quiesce();
    service_.reset();
    ports_.reset();
}

void Daemon::stop(const std::string &why) {
    if (stopping_)
        return;
    stopping_ = true;
    notifier_->stopping("leaving every group");
    spdlog::info("{}: leaving every group and stopping", why);
    server_->stop_accepting();
    server_->disconnect_all();
    if (bus_)
        bus_->disconnect_all();
    statics_.reset();
    // Every Delete answered (or given up on) before the SA sessions close.
    const auto bound = sa::timeout_bound(cfg_.host.sa) + std::chrono::seconds(1);
    loop_.timers().start(bound, [this, bound] {
        spdlog::warn("some leaves were not answered within {} ms; stopping anyway", bound.count());
        loop_.exit(0);
    });
    service_->when_idle([this] { loop_.exit(0); });
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
        auto next = std::get<config::DaemonConfig>(std::move(loaded));
        next.engine.seed = cfg_.engine.seed; // random per start, not config
        const ReloadPlan plan = plan_reload(cfg_, next);

        spdlog::set_level(spdlog::level::from_str(next.log_level));
        sessions_->set_limits(next.limits);
        sessions_->set_access(next.access);
        if (next.static_groups != cfg_.static_groups) {
            // The new holder joins before the old one leaves, so a group in both files keeps its
            // count above zero and costs the SA nothing.
            auto fresh = std::make_unique<StaticGroups>(*sessions_, loop_.timers(), next.static_groups,
                                                        cfg_.engine.retry_min, cfg_.engine.retry_max);
            statics_ = std::move(fresh);
        }
        // What the running engine, SA stack and ports were built with stays until a restart; the
        // config in force keeps those values so the next reload compares against them.
        next.socket = cfg_.socket;
        next.engine = cfg_.engine;
        next.host = cfg_.host;
        next.dbus = cfg_.dbus;
        cfg_ = std::move(next);

        const std::string live =
            plan.live.empty() ? std::string("nothing changed") : fmt::format("{}", fmt::join(plan.live, ", "));
        spdlog::info("configuration reloaded from {}; applied: {}", cfg_.origin, live);
        if (!plan.restart.empty())
            spdlog::warn("changed keys that take effect only after a restart: {}", fmt::join(plan.restart, ", "));
        return true;
    }();
    notifier_->ready();
    return applied;
}

} // namespace mcastd
