// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastctl's commands. Each takes the arguments after the global options, with the
// command's name as argv[0], and returns the exit code (errors propagate as exceptions).
#pragma once

#include <getopt.h>

#include <functional>
#include <vector>

#include "cli.hpp"

namespace ctl {

int cmd_join(Options &opts, int argc, char **argv);
int cmd_list(Options &opts, int argc, char **argv);
int cmd_status(Options &opts, int argc, char **argv);
int cmd_monitor(Options &opts, int argc, char **argv);
int cmd_evict(Options &opts, int argc, char **argv);
int cmd_metrics(Options &opts, int argc, char **argv);

// Parses a command's options: `extra` are the command's own (handled by `on_option`), plus
// --socket, --json, --no-reconnect and -h/--help, which every command accepts. Positional arguments are a
// usage error. Returns false when --help was given (print the help, exit 0).
bool parse_options(Options &opts, int argc, char **argv, const std::vector<option> &extra,
                   const std::function<void(int, const char *)> &on_option);

} // namespace ctl
