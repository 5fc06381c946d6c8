// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The groups list on D-Bus, from the same list the socket's `list` sends (with
// Sessions::annotate's rule, created, flagged and name): ListGroups' fixed struct of version 1,
// and ListGroups2's dictionaries, one per group with the socket's keys, which can grow without a
// new method. Text from clients and /proc (a process name is any bytes) is made valid UTF-8,
// which sd-bus requires of every string. sd-bus style: >= 0 or -errno.
#pragma once

#include <systemd/sd-bus.h>

#include "proto/protocol.hpp"

namespace mcastd::dbus {

inline constexpr const char *kListGroupsType = "a(sqsquasasa(tssuus))";
inline constexpr const char *kListGroups2Type = "aa{sv}";

// a(sqsquasasa(tssuus)): (device, port, mgid, mlid, qkey, held, foreign,
// members: (membership, join_state, state, pid, uid, comm)).
int append_groups_v1(sd_bus_message *m, const proto::ListResult &list);
// aa{sv}: per group "device" s, "port" q, "port_gid" s, "mgid" s, "mlid" q, "qkey" u, "busy" b,
// "held" as, "foreign" as, "counts" a{su}, "members" aa{sv}; per member "membership" t,
// "join_state" s, "state" s, "pid" u, "uid" u, "comm" s, "rule" s, "created" b, and "flagged" s
// and "name" s when set.
int append_groups(sd_bus_message *m, const proto::ListResult &list);

// The most bytes the body of either reply takes for `list`, by the D-Bus marshalling rules with
// every alignment's padding counted at its largest: a bound, never short, not much over.
std::size_t reply_bytes_at_most(const proto::ListResult &list, bool v2);

// What one reply may take: half the 32 MiB a bus (dbus-daemon's max_message_size) accepts of a
// message. A connection that sends more is dropped by the bus, and with it every D-Bus
// caller's memberships.
inline constexpr std::size_t kMaxReplyBytes = std::size_t{16} << 20;

} // namespace mcastd::dbus
