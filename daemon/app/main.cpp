// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastd: the command line, the config, logging, and the loop. The parts of the daemon
// start (and stop, backwards) in Daemon (daemon.hpp); the signals are handed to it here.
#include <getopt.h>

#include <spdlog/spdlog.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>

#include "config/config.hpp"
#include "core/timers.hpp"
#include "app/daemon.hpp"
#include "host/host_ports.hpp"
#include "logging/logging.hpp"
#include "mcastd/version.hpp"
#include "port/sysfs_ports.hpp"
#include "restart/state_file.hpp"
#include "runtime/event_loop.hpp"
#include "runtime/signals.hpp"

using namespace mcastd;

namespace {

constexpr const char *kDefaultConfig = "/etc/rdma-mcastd/rdma-mcastd.json";

struct Args {
    std::string config = kDefaultConfig;
    bool config_given = false;
    std::optional<std::string> socket;
    std::optional<std::string> log_level;
    std::string log_target = "auto";
    std::optional<std::string> state_dir;
    std::optional<std::string> sysfs_root;
};

constexpr int kSysfsRootOption = 0x100; // long only: a diagnostic option

// --state-dir, else the service manager's RuntimeDirectory= (the first, when it lists several).
std::string state_dir(const Args &a) {
    if (a.state_dir)
        return *a.state_dir;
    const char *rt = std::getenv("RUNTIME_DIRECTORY");
    if (!rt || !*rt)
        return {};
    const std::string dirs = rt;
    return dirs.substr(0, dirs.find(':'));
}

void usage(std::FILE *to) {
    std::fprintf(to,
                 "Usage: rdma-mcastd [OPTIONS]\n"
                 "Share InfiniBand multicast group memberships between processes.\n\n"
                 "  -c, --config FILE     configuration file (default %s)\n"
                 "  -s, --socket PATH     client socket (overrides the config's \"socket\")\n"
                 "  -l, --log-level LEVEL trace, debug, info, warning, error, critical or off\n"
                 "  -t, --log-target T    console, journal or auto (default: the journal when\n"
                 "                        stderr is connected to it)\n"
                 "  -d, --state-dir DIR   keep the restart state here (default: $RUNTIME_DIRECTORY,\n"
                 "                        set by systemd; without either, a restart loses everything)\n"
                 "      --sysfs-root DIR  read RoCE (Ethernet) ports and GID tables from DIR, laid\n"
                 "                        out like %s (the default), for tests\n"
                 "                        and diagnosis; InfiniBand ports come from libibumad\n"
                 "  -h, --help            show this help and exit\n"
                 "  -V, --version         show the version and exit\n\n"
                 "See rdma-mcastd(8) and rdma-mcastd.json(5).\n",
                 kDefaultConfig, port::kSysfsRoot);
}

// Returns the exit code to stop with, or nullopt to run.
std::optional<int> parse_args(int argc, char **argv, Args &a) {
    static const option opts[] = {{"config", required_argument, nullptr, 'c'},
                                  {"socket", required_argument, nullptr, 's'},
                                  {"log-level", required_argument, nullptr, 'l'},
                                  {"log-target", required_argument, nullptr, 't'},
                                  {"state-dir", required_argument, nullptr, 'd'},
                                  {"sysfs-root", required_argument, nullptr, kSysfsRootOption},
                                  {"help", no_argument, nullptr, 'h'},
                                  {"version", no_argument, nullptr, 'V'},
                                  {nullptr, 0, nullptr, 0}};
    for (int c; (c = getopt_long(argc, argv, "c:s:l:t:d:hV", opts, nullptr)) != -1;) {
        switch (c) {
        case 'c': a.config = optarg; a.config_given = true; break;
        case 's': a.socket = optarg; break;
        case 'l': a.log_level = optarg; break;
        case 't': a.log_target = optarg; break;
        case 'd': a.state_dir = optarg; break;
        case kSysfsRootOption: a.sysfs_root = optarg; break;
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
    if (a.sysfs_root)
        if (auto why = port::sysfs_root_problem(*a.sysfs_root)) {
            std::fprintf(stderr, "rdma-mcastd: --sysfs-root: %s\n", why->c_str());
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
        cfg->state_dir = state_dir(a);
        cfg->host.sysfs_root = a.sysfs_root.value_or(port::kSysfsRoot);
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
    // The restart state decides what the daemon deletes at the SA and which sessions it hands
    // back: a directory someone else can write or swap is a configuration error.
    if (!cfg.state_dir.empty())
        if (auto why = restart::state_dir_problem(cfg.state_dir)) {
            std::fprintf(stderr, "rdma-mcastd: %s: %s\n", args.state_dir ? "--state-dir" : "$RUNTIME_DIRECTORY",
                         why->c_str());
            return 78; // EX_CONFIG
        }
    // Hosts that saw the same SM event must not all rejoin in the same millisecond.
    cfg.engine.seed = (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}();
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
        auto ports = std::make_unique<HostPorts>(loop, cfg.host);
        auto daemon = std::make_unique<Daemon>(loop, std::move(cfg), std::move(ports),
                                               std::string("rdma-mcastd ") + MCASTD_VERSION);

        auto stop = [&](const signalfd_siginfo &si) { daemon->stop("signal " + std::to_string(si.ssi_signo)); };
        auto on_term = loop.watch_signal(SIGTERM, stop);
        auto on_int = loop.watch_signal(SIGINT, stop);
        auto on_hup = loop.watch_signal(SIGHUP, [&](const signalfd_siginfo &) {
            daemon->reload(load_effective_config(args));
        });
        auto on_usr2 = loop.watch_signal(SIGUSR2, [&](const signalfd_siginfo &si) {
            daemon->restart("signal " + std::to_string(si.ssi_signo) + " (restart)");
        });

        const int rc = loop.run();
        // Taken apart here, not at the end of the scope, so the log says what that took (a
        // restart's successor waits for it).
        const TimePoint teardown = Clock::now();
        daemon.reset();
        spdlog::info("stopped; taken apart in {:.1f} ms", in_ms(Clock::now() - teardown));
        return rc;
    } catch (const std::exception &e) {
        spdlog::critical("{}", e.what());
        return 1;
    }
}
