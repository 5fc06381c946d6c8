// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What every rdma-mcastctl command shares: global options, exit codes, argument parsing.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <rdmamcast/client.hpp>

namespace ctl {

// One exit code per class of failure, so scripts can tell "no daemon" from "the SA said no".
// Documented in rdma-mcastctl(1); never renumber.
enum Exit : int {
    exit_ok = 0,
    exit_failure = 1,   // anything else: internal errors, protocol errors, I/O errors
    exit_usage = 2,     // bad command line
    exit_no_daemon = 3, // cannot connect to the daemon, or the connection was lost
    exit_refused = 4,   // the daemon refused: denied, limit, unsupported-version
    exit_sa = 5,        // the SA failed the request: sa-error, sa-timeout
    exit_port = 6,      // no-such-device, no-such-port, port-not-active
    exit_conflict = 7,  // conflict with the group's record
    exit_rejected = 8,  // invalid-argument, not-found, too-large, cancelled
};

// A command-line mistake: printed with a pointer to --help, exit code 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Options {
    std::optional<std::string> socket; // --socket wins over RDMA_MCASTD_SOCKET
    bool json = false;
    bool reconnect = true; // --no-reconnect: a lost connection ends the command
};

// The exit code for a library error. `connecting`: the error came from connecting, where a
// system error means "cannot reach the daemon".
int exit_code(const rdmamcast::Error &e, bool connecting);

// Connects as the options say; errors propagate as ConnectError.
struct ConnectError {
    rdmamcast::Error error;
};
rdmamcast::Client connect(const Options &opts);

// Unsigned integers in decimal or 0x hex, within [min, max]. Throws UsageError naming `what`.
std::uint64_t parse_uint(std::string_view text, std::uint64_t min, std::uint64_t max,
                         std::string_view what);

// Prints "rdma-mcastctl: <command>: <code>: <message>" for an error the daemon reported, or
// "rdma-mcastctl: <command>: <message>" for one of the library's own; then the field at fault,
// and the access policy's rule or quota unless the message already names it.
void print_error(std::string_view command, const rdmamcast::Error &e);

} // namespace ctl
