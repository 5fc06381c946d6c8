// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastctl evict: root releases other users' memberships (the access policy's way out).
#include <pwd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "format.hpp"

namespace ctl {

namespace {

constexpr const char *kHelp =
    "Usage: rdma-mcastctl evict (--uid UID|USER [--disconnect] | --membership ID) [--json]\n"
    "\n"
    "Root only: releases memberships whoever holds them, as if their clients had left them:\n"
    "every membership of a user, or one membership (its id as 'list' shows it). Each holder\n"
    "is told its membership was lost because an administrator evicted it; the daemon does not\n"
    "restore it. Prints how many memberships were released.\n"
    "\n"
    "  --uid UID|USER     every membership of this uid, or of this user name\n"
    "  --disconnect       with --uid: also close every connection of the uid (and end its\n"
    "                     D-Bus sessions); it may connect again as the access policy allows\n"
    "  --membership ID    this membership\n"
    "  --json             print {\"released\": N} (and \"disconnected\": M)\n"
    "  --socket PATH      the daemon's socket\n"
    "  -h, --help         this help\n";

enum : int { o_uid = 1, o_membership, o_disconnect };

// A uid in decimal (all digits, as chown takes it), or a user name. (uid_t)-1 is no uid, so
// it is not one to evict.
std::uint32_t parse_user(const std::string &text) {
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (!text.empty() && std::all_of(text.begin(), text.end(), digit))
        return static_cast<std::uint32_t>(parse_uint(text, 0, 0xfffffffe, "--uid"));
    std::vector<char> buf(16384);
    passwd pw{};
    passwd *found = nullptr;
    const int rc = getpwnam_r(text.c_str(), &pw, buf.data(), buf.size(), &found);
    if (rc != 0 || !found)
        throw UsageError("--uid \"" + text + "\" is neither a uid nor a known user name");
    return static_cast<std::uint32_t>(found->pw_uid);
}

} // namespace

int cmd_evict(Options &opts, int argc, char **argv) {
    std::optional<std::uint32_t> uid;
    std::optional<std::uint64_t> membership;
    bool disconnect = false;
    const std::vector<option> longopts = {
        {"uid", required_argument, nullptr, o_uid},
        {"membership", required_argument, nullptr, o_membership},
        {"disconnect", no_argument, nullptr, o_disconnect},
    };
    if (!parse_options(opts, argc, argv, longopts, [&](int opt, const char *arg) {
            if (opt == o_uid)
                uid = parse_user(arg);
            else if (opt == o_disconnect)
                disconnect = true;
            else
                membership = parse_uint(arg, 0, UINT64_MAX, "--membership");
        })) {
        std::fputs(kHelp, stdout);
        return exit_ok;
    }
    if (uid.has_value() == membership.has_value())
        throw UsageError("give exactly one of --uid and --membership");
    if (disconnect && !uid)
        throw UsageError("--disconnect goes with --uid: a membership has no connection of its own");

    auto client = connect(opts);
    if (disconnect) {
        const auto d = client.disconnect_uid(*uid);
        if (opts.json)
            emit(Json{{"released", d.released}, {"disconnected", d.disconnected}});
        else
            emit("released " + std::to_string(d.released) + (d.released == 1 ? " membership" : " memberships") +
                 ", disconnected " + std::to_string(d.disconnected) + (d.disconnected == 1 ? " client\n" : " clients\n"));
        return exit_ok;
    }
    const std::uint64_t released =
        uid ? client.evict_uid(*uid) : client.evict_membership(*membership);
    if (opts.json)
        emit(Json{{"released", released}});
    else
        emit("released " + std::to_string(released) +
             (released == 1 ? " membership\n" : " memberships\n"));
    return exit_ok;
}

} // namespace ctl
