// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Who a D-Bus caller is, from what the bus attests and nothing else, failing closed.
//
// The bus records a connection's credentials when it connects (dbus-daemon: SO_PEERCRED and
// SO_PEERGROUPS of its socket) and gives them with org.freedesktop.DBus.GetConnectionCredentials:
// UnixUserID (the effective uid), UnixGroupIDs, ProcessID. On dbus-daemon 1.14 UnixGroupIDs is
// the supplementary groups and the effective gid at connect, sorted, with no mark of which is
// the primary one, so the caller's primary gid is unknown (kUnknownGid) and the policy matches
// `groups` on the list (proto/DBUS.md). sd-bus is not asked: libsystemd 252 does not read
// UnixGroupIDs, and its "augmented" credentials are /proc reads of a pid that may have passed
// to another process. A field the bus does not give refuses the call (`denied`).
//
// The cgroup (and name, start time) come from the process with the bus's pid, attested
// (frontend/process_identity.hpp): it must still run, run as the bus's uid, and have started
// before its connection appeared (name_watch.hpp). When the connection appeared before the
// daemon's watch began, or the process cannot be attested (gone, its pid reused, another uid),
// the caller's uid and groups stand and its cgroup is unattested: a join whose rule depends on
// the cgroup is refused with the reason (policy::Policy::needs_cgroup()).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <systemd/sd-bus.h>

#include "common/error.hpp"
#include "frontend/access.hpp"
#include "frontend/process_identity.hpp"

namespace mcastd::dbus {

// What the bus says of one connection; each field absent when the bus did not give it.
struct BusCredentials {
    std::optional<uid_t> uid;               // UnixUserID
    std::optional<std::vector<gid_t>> gids; // UnixGroupIDs
    std::optional<pid_t> pid;               // ProcessID
};

// How long the daemon waits for the bus to answer GetConnectionCredentials (the loop waits
// with it; the bus answers from memory).
inline constexpr std::chrono::milliseconds kCredentialsTimeout{2000};

// Asks the bus for `name`'s credentials (synchronous). Returns why not, or "" on success.
std::string query_bus_credentials(sd_bus *bus, const char *name, BusCredentials &out);
// Reads GetConnectionCredentials' reply (a{sv}); keys it does not use are skipped. sd-bus style.
int read_bus_credentials(sd_bus_message *reply, BusCredentials &out);

using ProcessReader =
    std::function<std::variant<frontend::ProcessIdentity, std::string>(pid_t, const frontend::Expected &)>;

// The caller's credentials: `bus`'s uid and groups, and the process with its pid attested
// through `read` when `appeared` (its connection's appearance) is known. Or why the call is
// refused: `denied`, "cannot identify the caller: the bus gives no supplementary groups for
// :1.42 (...)".
std::variant<frontend::Credentials, Error> attest_caller(std::string_view sender, const BusCredentials &bus,
                                                         std::optional<std::chrono::nanoseconds> appeared,
                                                         const ProcessReader &read = frontend::identify_process);

// The reason given for a caller whose connection appeared before the daemon's watch began.
inline constexpr std::string_view kConnectionTooOld =
    "its bus connection is older than this daemon; reconnect to the bus";

} // namespace mcastd::dbus
