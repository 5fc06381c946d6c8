// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastctl metrics: the daemon's status in the Prometheus text format, on stdout or
// written atomically to a file (node_exporter's textfile collector, rdma-mcastd-metrics.timer).
#include <cstdio>
#include <optional>
#include <string>

#include "atomic_file.hpp"
#include "commands.hpp"
#include "format.hpp"
#include "metrics.hpp"

namespace ctl {

namespace {

constexpr const char *kHelp =
    "Usage: rdma-mcastctl metrics [--output FILE]\n"
    "\n"
    "Prints the daemon's state in the Prometheus text exposition format: its ports (state,\n"
    "groups, memberships by join state, SA window and round trip, re-joins), the SA\n"
    "traffic, joins and leaves, restored and lost memberships, clients, each user's usage\n"
    "against its quotas and what the daemon refused, by reason. Every name starts with\n"
    "rdma_mcastd_; rdma-mcastctl(1), METRICS, lists them. When the daemon cannot be asked,\n"
    "rdma_mcastd_up is 0 and nothing else is printed (the exit status says why).\n"
    "\n"
    "  --output FILE  write FILE instead, atomically (a temporary file beside it, then a\n"
    "                 rename), mode 0644: for node_exporter's textfile collector, e.g.\n"
    "                 /var/lib/prometheus/node-exporter/rdma-mcastd.prom\n"
    "  --socket PATH  the daemon's socket\n"
    "  -h, --help     this help\n";

void put(const std::optional<std::string> &output, const std::string &text) {
    if (output)
        write_file_atomically(*output, text);
    else
        emit(text);
}

} // namespace

int cmd_metrics(Options &opts, int argc, char **argv) {
    std::optional<std::string> output;
    const std::vector<option> longopts = {{"output", required_argument, nullptr, 1}};
    if (!parse_options(opts, argc, argv, longopts, [&](int, const char *arg) { output = arg; })) {
        std::fputs(kHelp, stdout);
        return exit_ok;
    }
    if (opts.json)
        throw UsageError("--json does not apply: metrics are in the Prometheus text format");
    if (output && output->empty())
        throw UsageError("--output needs a file name");
    std::optional<rdmamcast::Status> status;
    try {
        auto client = connect(opts);
        status = client.status();
    } catch (...) {
        // The scraper learns that the daemon could not be asked; main() says why and exits
        // with the error's status.
        put(output, metrics_unreachable_text());
        throw;
    }
    put(output, metrics_text(*status));
    return exit_ok;
}

} // namespace ctl
