// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastctl list, status and monitor: read-only views of the daemon.
#include <cstdio>

#include "commands.hpp"
#include "events.hpp"
#include "format.hpp"

namespace ctl {

namespace {

constexpr const char *kListHelp =
    "Usage: rdma-mcastctl list [--own] [--json]\n"
    "\n"
    "Lists every group the daemon handles, per port (with its link layer, InfiniBand or\n"
    "Ethernet for RoCE): MGID, MLID, Q_Key, the JoinState bits\n"
    "the daemon holds at the SA (and those another agent held before it), member counts per\n"
    "JoinState bit, and each member's membership id, state, pid, uid and process name, the\n"
    "access rule that admitted it, whether its join created the group, and why the rules in\n"
    "force now would refuse it (FLAGGED), if they would. The daemon answers in pages; all of\n"
    "them are shown.\n"
    "\n"
    "  --own          only the memberships of this command's own connection (the daemon's\n"
    "                 list with \"own\"; a new connection holds none)\n"
    "  --json         print the list as JSON\n"
    "  --socket PATH  the daemon's socket\n"
    "  -h, --help     this help\n";

constexpr const char *kStatusHelp =
    "Usage: rdma-mcastctl status [--json]\n"
    "\n"
    "Shows the daemon's version and uptime, its ports (state, LID, SM LID, rate, MTU,\n"
    "groups), each port's master SM (LID, GUID, ActCount), its re-joins and the latest one\n"
    "(when, how long, how many groups, why), its active memberships by join state, each\n"
    "user's share of the daemon against its quotas (3/4096; no quota: 3): memberships,\n"
    "created groups, groups on its busiest port, clients, monitors, bytes queued for it, SA\n"
    "MADs it may send now (and its rate), and how many memberships are flagged; what the\n"
    "daemon refused by reason (the config key that refused), and its counters: SA MADs\n"
    "sent, retransmits, timeouts, joins, leaves, restored and lost events. A port's GROUPS\n"
    "is shown against its cap the same way.\n";

constexpr const char *kMonitorHelp =
    "Usage: rdma-mcastctl monitor [--json]\n"
    "\n"
    "Prints the daemon's activity (joins, leaves, SA failures, lost and restored groups) as\n"
    "it happens, one line per entry, until SIGINT or SIGTERM. If rdma-mcastd restarts\n"
    "meanwhile, a line on stderr says so and monitoring goes on (with --no-reconnect the\n"
    "command ends there, with exit status 3).\n";

// The commands without options of their own.
bool parse_plain(Options &opts, int argc, char **argv, const char *help) {
    if (parse_options(opts, argc, argv, {}, [](int, const char *) {}))
        return true;
    std::fputs(help, stdout);
    return false;
}

} // namespace

int cmd_list(Options &opts, int argc, char **argv) {
    bool own = false;
    const std::vector<option> longopts = {{"own", no_argument, nullptr, 1}};
    if (!parse_options(opts, argc, argv, longopts, [&](int, const char *) { own = true; })) {
        std::fputs(kListHelp, stdout);
        return exit_ok;
    }
    auto client = connect(opts);
    auto ports = own ? client.list_own() : client.list();
    if (opts.json)
        emit(list_json(ports));
    else
        emit(list_text(ports));
    return exit_ok;
}

int cmd_status(Options &opts, int argc, char **argv) {
    if (!parse_plain(opts, argc, argv, kStatusHelp))
        return exit_ok;
    auto client = connect(opts);
    auto status = client.status();
    if (opts.json)
        emit(status_json(status));
    else
        emit(status_text(status));
    return exit_ok;
}

int cmd_monitor(Options &opts, int argc, char **argv) {
    if (!parse_plain(opts, argc, argv, kMonitorHelp))
        return exit_ok;
    Signals signals;
    auto client = connect(opts);
    client.monitor(true);
    pump_events(
        client, signals,
        [&](const rdmamcast::Event &ev) {
            if (opts.json)
                emit(event_json(ev));
            else
                emit(event_text(ev) + "\n");
        },
        [&](const rdmamcast::ReconnectedEvent &r) { report_reconnect(argv[0], r); });
    return exit_ok;
}

} // namespace ctl
