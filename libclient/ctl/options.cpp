// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include <cstring>
#include <string>

#include "commands.hpp"

namespace ctl {

namespace {
enum : int { opt_socket = 1000, opt_json, opt_no_reconnect };
}

bool parse_options(Options &opts, int argc, char **argv, const std::vector<option> &extra,
                   const std::function<void(int, const char *)> &on_option) {
    std::vector<option> longopts = extra;
    longopts.push_back({"socket", required_argument, nullptr, opt_socket});
    longopts.push_back({"json", no_argument, nullptr, opt_json});
    longopts.push_back({"no-reconnect", no_argument, nullptr, opt_no_reconnect});
    longopts.push_back({"help", no_argument, nullptr, 'h'});
    longopts.push_back({nullptr, 0, nullptr, 0});

    bool help = false;
    optind = 0; // 0, not 1: makes GNU getopt reinitialise for this argument vector
    opterr = 0; // we word the messages ourselves, naming the command
    for (;;) {
        int c = getopt_long(argc, argv, ":h", longopts.data(), nullptr);
        if (c == -1)
            break;
        switch (c) {
        case opt_socket: opts.socket = optarg; break;
        case opt_json: opts.json = true; break;
        case opt_no_reconnect: opts.reconnect = false; break;
        case 'h': help = true; break;
        case ':': throw UsageError(std::string("option ") + argv[optind - 1] + " needs a value");
        case '?':
            throw UsageError(std::string("unknown option ") +
                             (optopt ? std::string("-") + static_cast<char>(optopt)
                                     : std::string(argv[optind - 1])));
        default: on_option(c, optarg); break;
        }
    }
    if (optind < argc && !help)
        throw UsageError(std::string("unexpected argument \"") + argv[optind] + "\"");
    return !help;
}

} // namespace ctl
