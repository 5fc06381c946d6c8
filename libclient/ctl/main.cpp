// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastctl: the command-line client of rdma-mcastd (see rdma-mcastctl(1)).
#include <getopt.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

#include "commands.hpp"

namespace {

constexpr const char *kUsage =
    "Usage: rdma-mcastctl [--socket PATH] [--json] [--no-reconnect] COMMAND [OPTIONS]\n"
    "\n"
    "Talks to rdma-mcastd, the daemon that shares InfiniBand multicast memberships.\n"
    "\n"
    "Commands:\n"
    "  join      join a group and print its record (--hold keeps it until interrupted)\n"
    "  list      the groups of each port, with their members' pid, uid, process name and\n"
    "            the access rule that admitted them\n"
    "  status    ports, counters, and each user's memberships against its quotas\n"
    "  monitor   print the daemon's activity until interrupted\n"
    "  metrics   the daemon's state in the Prometheus text format (--output FILE)\n"
    "  evict     root only: release a user's memberships, or one membership\n"
    "\n"
    "Options:\n"
    "  --socket PATH   the daemon's socket (default: $RDMA_MCASTD_SOCKET, else\n"
    "                  " RDMAMCAST_DEFAULT_SOCKET ")\n"
    "  --json          output for scripts: one JSON object (per line, for streams)\n"
    "  --no-reconnect  end join --hold and monitor when the connection is lost, even\n"
    "                  when the daemon restarted and would take the session back\n"
    "  -h, --help      this help; 'rdma-mcastctl COMMAND --help' for a command's\n"
    "  -V, --version   print the version\n"
    "\n"
    "Exit status: 0 success, 1 other failure, 2 usage error, 3 cannot reach the daemon (or\n"
    "lost the connection), 4 refused by the daemon (denied, limit, unsupported version),\n"
    "5 SA error or timeout, 6 no such device or port, or port not active, 7 conflict with\n"
    "the group's record, 8 request rejected (invalid argument, not found, too large,\n"
    "cancelled).\n";

struct Command {
    const char *name;
    int (*run)(ctl::Options &, int, char **);
};
constexpr Command kCommands[] = {
    {"join", ctl::cmd_join},
    {"list", ctl::cmd_list},
    {"status", ctl::cmd_status},
    {"monitor", ctl::cmd_monitor},
    {"evict", ctl::cmd_evict},
    {"metrics", ctl::cmd_metrics},
};

int usage_error(std::string_view command, const std::string &message) {
    std::string where = command.empty() ? "" : std::string(command) + ": ";
    std::string help = command.empty() ? "" : std::string(command) + " ";
    std::fprintf(stderr, "rdma-mcastctl: %s%s\nTry 'rdma-mcastctl %s--help'.\n", where.c_str(),
                 message.c_str(), help.c_str());
    return ctl::exit_usage;
}

int run_command(const Command &cmd, ctl::Options &opts, int argc, char **argv) {
    try {
        return cmd.run(opts, argc, argv);
    } catch (const ctl::UsageError &e) {
        return usage_error(cmd.name, e.what());
    } catch (const ctl::ConnectError &e) {
        ctl::print_error(cmd.name, e.error);
        return ctl::exit_code(e.error, true);
    } catch (const rdmamcast::Error &e) {
        ctl::print_error(cmd.name, e);
        return ctl::exit_code(e, false);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "rdma-mcastctl: %s: %s\n", cmd.name, e.what());
        return ctl::exit_failure;
    }
}

} // namespace

int main(int argc, char **argv) {
    enum : int { opt_socket = 1000, opt_json, opt_no_reconnect };
    static const option longopts[] = {
        {"socket", required_argument, nullptr, opt_socket},
        {"json", no_argument, nullptr, opt_json},
        {"no-reconnect", no_argument, nullptr, opt_no_reconnect},
        {"help", no_argument, nullptr, 'h'},
        {"version", no_argument, nullptr, 'V'},
        {nullptr, 0, nullptr, 0},
    };
    ctl::Options opts;
    opterr = 0;
    // '+': stop at the command; what follows belongs to it.
    for (int c; (c = getopt_long(argc, argv, "+:hV", longopts, nullptr)) != -1;) {
        switch (c) {
        case opt_socket: opts.socket = optarg; break;
        case opt_json: opts.json = true; break;
        case opt_no_reconnect: opts.reconnect = false; break;
        case 'h': std::fputs(kUsage, stdout); return ctl::exit_ok;
        case 'V':
            std::printf("rdma-mcastctl %s (librdmamcast %s, protocol %d)\n", MCASTCTL_VERSION,
                        rdmamcast_version(), RDMAMCAST_PROTOCOL_VERSION);
            return ctl::exit_ok;
        case ':': return usage_error("", std::string("option ") + argv[optind - 1] + " needs a value");
        default:
            return usage_error("", std::string("unknown option ") +
                                       (optopt ? std::string("-") + static_cast<char>(optopt)
                                               : std::string(argv[optind - 1])));
        }
    }
    if (optind >= argc)
        return usage_error("", "no command given");
    for (const auto &cmd : kCommands)
        if (std::strcmp(argv[optind], cmd.name) == 0)
            return run_command(cmd, opts, argc - optind, argv + optind);
    return usage_error("", std::string("unknown command \"") + argv[optind] + "\"");
}
