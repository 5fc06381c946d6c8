// rdma-mcastd: the wiring, in the order things start. Everything of substance lives in the
// modules named here; stopping runs the same list backwards.
#include <getopt.h>

#include <spdlog/spdlog.h>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>

#include "config/config.hpp"
#include "dbus/dbus_server.hpp"
#include "logging/logging.hpp"
#include "logging/membership_log.hpp"
#include "mcastd/version.hpp"
#include "reload.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/notifier.hpp"
#include "runtime/signals.hpp"
#include "server/activation.hpp"
#include "server/socket_server.hpp"
#include "service.hpp"
#include "static_groups.hpp"
#include "views.hpp"

using namespace mcastd;

namespace {

constexpr const char *kDefaultConfig = "/etc/rdma-mcastd/rdma-mcastd.json";

struct Args {
    std::string config = kDefaultConfig;
    bool config_given = false;
    std::optional<std::string> socket;
    std::optional<std::string> log_level;
    std::string log_target = "auto";
};

void usage(std::FILE *to) {
    std::fprintf(to,
                 "Usage: rdma-mcastd [OPTIONS]\n"
                 "Share InfiniBand multicast group memberships between processes.\n\n"
                 "  -c, --config FILE     configuration file (default %s)\n"
                 "  -s, --socket PATH     client socket (overrides the config's \"socket\")\n"
                 "  -l, --log-level LEVEL trace, debug, info, warning, error, critical or off\n"
                 "  -t, --log-target T    console, journal or auto (default: the journal when\n"
                 "                        stderr is connected to it)\n"
                 "  -h, --help            show this help and exit\n"
                 "  -V, --version         show the version and exit\n\n"
                 "See rdma-mcastd(8) and rdma-mcastd.json(5).\n",
                 kDefaultConfig);
}

// Returns the exit code to stop with, or nullopt to run.
std::optional<int> parse_args(int argc, char **argv, Args &a) {
    static const option opts[] = {{"config", required_argument, nullptr, 'c'},
                                  {"socket", required_argument, nullptr, 's'},
                                  {"log-level", required_argument, nullptr, 'l'},
                                  {"log-target", required_argument, nullptr, 't'},
                                  {"help", no_argument, nullptr, 'h'},
                                  {"version", no_argument, nullptr, 'V'},
                                  {nullptr, 0, nullptr, 0}};
    for (int c; (c = getopt_long(argc, argv, "c:s:l:t:hV", opts, nullptr)) != -1;) {
        switch (c) {
        case 'c': a.config = optarg; a.config_given = true; break;
        case 's': a.socket = optarg; break;
        case 'l': a.log_level = optarg; break;
        case 't': a.log_target = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'V': std::printf("rdma-mcastd %s\n", MCASTD_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        std::fprintf(stderr, "rdma-mcastd: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return std::nullopt;
}

// The config file with the command line's overrides, at start and on every reload.
config::ConfigResult load_effective_config(const Args &a) {
    auto loaded = config::load_config(a.config, !a.config_given);
    if (auto *cfg = std::get_if<config::DaemonConfig>(&loaded)) {
        if (a.socket)
            cfg->socket = *a.socket;
        if (a.log_level)
            cfg->log_level = *a.log_level;
    }
    return loaded;
}

} // namespace

int main(int argc, char **argv) {
    Args args;
    if (auto rc = parse_args(argc, argv, args))
        return *rc;

    auto loaded = load_effective_config(args);
    if (auto *err = std::get_if<Error>(&loaded)) {
        std::fprintf(stderr, "rdma-mcastd: %s\n", err->message.c_str());
        return 78; // EX_CONFIG
    }
    config::DaemonConfig cfg = std::get<config::DaemonConfig>(std::move(loaded));
    // Hosts that saw the same SM event must not all rejoin in the same millisecond.
    cfg.service.engine.seed = (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}();
    const auto lvl = spdlog::level::from_str(cfg.log_level);
    if (lvl == spdlog::level::off && cfg.log_level != "off") {
        std::fprintf(stderr, "rdma-mcastd: --log-level: unknown level '%s'\n", cfg.log_level.c_str());
        return 2;
    }
    // Logs go to stderr (stdout is nobody's business) or, under systemd, to the journal.
    if (auto err = logging::setup(lvl, args.log_target)) {
        std::fprintf(stderr, "rdma-mcastd: --log-target: %s\n", err->c_str());
        return 2;
    }

    try {
        // Before any thread exists, so that signals reach only the loop's signalfd.
        runtime::block_signals(runtime::kDaemonSignals);
        runtime::EventLoop loop(runtime::EventLoop::Kind::thread_default);

        Service service(loop, cfg.service);
        service.add_observer(logging::membership_log(service));
        runtime::Notifier notifier(loop.timers(), [&service] { return status_line(service); });
        service.set_change_listener([&notifier] { notifier.changed(); });

        const server::ListenSocket listener = server::open_client_socket(cfg.socket);
        auto server = std::make_unique<server::SocketServer>(loop, service, listener.fd, cfg.limits, cfg.access,
                                                             std::string("rdma-mcastd ") + MCASTD_VERSION);
        // D-Bus is optional: without a system bus the socket still serves.
        std::unique_ptr<dbus::DbusServer> bus;
        if (cfg.dbus.enabled) {
            try {
                bus = std::make_unique<dbus::DbusServer>(loop, service, dbus::default_log_hooks());
            } catch (const std::exception &e) {
                spdlog::warn("D-Bus disabled: {}; serving the socket only", e.what());
            }
        }
        auto statics = std::make_unique<StaticGroups>(service, loop.timers(), cfg.static_groups,
                                                      cfg.service.engine.retry_min, cfg.service.engine.retry_max);
        // WatchdogSec=: sd-event sends WATCHDOG=1 from this loop, so a wedged loop misses them.
        if (auto period = runtime::EventLoop::watchdog_period(); period && loop.enable_watchdog())
            spdlog::info("watchdog: the service manager expects a keep-alive every {} ms",
                         std::chrono::duration_cast<std::chrono::milliseconds>(*period).count());
        spdlog::info("rdma-mcastd {} serving {} port(s) on {}{}", MCASTD_VERSION, service.ports().size(), listener.path,
                     listener.activated ? " (socket activation)" : "");

        // ---- READY=1 ----
        // Once clients can connect (the D-Bus name, when there is one, is acquired above this
        // line); not after SA joins, which may wait hours for a port to come up.
        notifier.ready();

        // Graceful stop: no new clients, every membership left, every Delete answered (or
        // given up on) before the SA sessions close.
        bool stopping = false;
        auto stop = [&](const signalfd_siginfo &si) {
            if (stopping)
                return;
            stopping = true;
            notifier.stopping("leaving every group");
            spdlog::info("signal {}: leaving every group and stopping", si.ssi_signo);
            server->stop_accepting();
            server->disconnect_all();
            if (bus)
                bus->disconnect_all();
            statics.reset();
            const auto bound = sa::timeout_bound(cfg.service.sa) + std::chrono::seconds(1);
            loop.timers().start(bound, [&] {
                spdlog::warn("some leaves were not answered within {} ms; stopping anyway", bound.count());
                loop.exit(0);
            });
            service.engine().when_idle([&] { loop.exit(0); });
        };
        auto on_term = loop.watch_signal(SIGTERM, stop);
        auto on_int = loop.watch_signal(SIGINT, stop);
        auto on_hup = loop.watch_signal(SIGHUP, [&](const signalfd_siginfo &) {
            if (stopping)
                return;
            notifier.reloading();
            reload_config(load_effective_config(args), cfg, LiveParts{service, loop.timers(), *server, statics});
            notifier.ready();
        });

        const int rc = loop.run();
        statics.reset();
        bus.reset();
        server.reset();
        spdlog::info("stopped");
        return rc;
    } catch (const std::exception &e) {
        spdlog::critical("{}", e.what());
        return 1;
    }
}
