// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "cli.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace ctl {

int exit_code(const rdmamcast::Error &e, bool connecting) {
    switch (e.code()) {
    case RDMAMCAST_E_SA_ERROR:
    case RDMAMCAST_E_SA_TIMEOUT: return exit_sa;
    case RDMAMCAST_E_DENIED:
    case RDMAMCAST_E_LIMIT:
    case RDMAMCAST_E_UNSUPPORTED_VERSION: return exit_refused;
    case RDMAMCAST_E_NO_SUCH_DEVICE:
    case RDMAMCAST_E_NO_SUCH_PORT:
    case RDMAMCAST_E_PORT_NOT_ACTIVE: return exit_port;
    case RDMAMCAST_E_CONFLICT: return exit_conflict;
    case RDMAMCAST_E_INVALID_ARGUMENT:
    case RDMAMCAST_E_NOT_FOUND:
    case RDMAMCAST_E_TOO_LARGE:
    case RDMAMCAST_E_CANCELLED: return exit_rejected;
    case RDMAMCAST_E_DISCONNECTED: return exit_no_daemon;
    case RDMAMCAST_E_SYSTEM: return connecting ? exit_no_daemon : exit_failure;
    default: return exit_failure;
    }
}

rdmamcast::Client connect(const Options &opts) {
    try {
        auto client = opts.socket ? rdmamcast::Client(*opts.socket) : rdmamcast::Client();
        if (!opts.reconnect)
            client.set_reconnect(false);
        return client;
    } catch (const rdmamcast::Error &e) {
        throw ConnectError{e};
    }
}

std::uint64_t parse_uint(std::string_view text, std::uint64_t min, std::uint64_t max,
                         std::string_view what) {
    std::string s(text);
    const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    // strtoull accepts signs and leading blanks; a Q_Key of "-1" must not become 2^64-1.
    bool ok = !s.empty() && (hex || (s[0] >= '0' && s[0] <= '9'));
    std::uint64_t v = 0;
    if (ok) {
        char *end = nullptr;
        errno = 0;
        v = std::strtoull(s.c_str() + (hex ? 2 : 0), &end, hex ? 16 : 10);
        ok = errno == 0 && end && *end == '\0' && (!hex || std::isxdigit(static_cast<unsigned char>(s[2])));
    }
    if (!ok || v < min || v > max) {
        throw UsageError(std::string(what) + " \"" + s + "\" is not an integer in " +
                         std::to_string(min) + ".." + std::to_string(max));
    }
    return v;
}

void print_error(std::string_view command, const rdmamcast::Error &e) {
    // Library codes (system, protocol, disconnected) have no protocol name worth showing:
    // their message already says what failed.
    const bool daemon_code = e.code() < RDMAMCAST_E_UNKNOWN || e.code() == RDMAMCAST_E_UNKNOWN;
    std::string line = "rdma-mcastctl: " + std::string(command) + ": ";
    if (daemon_code && !e.code_name().empty())
        line += e.code_name() + ": ";
    line += e.what();
    if (!e.field().empty())
        line += " (field " + e.field() + ")";
    // The daemon's message names the rule or quota; should it not, they are not lost.
    const std::string message = e.message();
    const auto names = [&](const std::string &what) {
        return message.find(what) != std::string::npos;
    };
    if (!e.rule().empty() && !names(e.rule()))
        line += " (rule " + e.rule() + ")";
    if (!e.quota().empty() && !(names(e.quota()) && names(std::to_string(e.limit()))))
        line += " (quota " + e.quota() + " = " + std::to_string(e.limit()) + ")";
    std::fprintf(stderr, "%s\n", line.c_str());
}

} // namespace ctl
