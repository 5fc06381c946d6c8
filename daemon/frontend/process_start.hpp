// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What /proc says of a client process: its start time in /proc/PID/stat (field 22, clock
// ticks since boot; proc(5)), which tells it from a later process that got its pid, its
// cgroup, which the access rules match (a container, a Slurm job step, a tenant's slice), and
// its name.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace mcastd::frontend {

// 0 when the process does not exist or its stat cannot be read.
std::uint64_t process_start_time(pid_t pid);
// The process `pid` that started at `start_time` still runs (start_time 0: any process `pid`).
bool process_alive(pid_t pid, std::uint64_t start_time);
// The process's cgroup v2 path ("/system.slice/foo.service"), from /proc/PID/cgroup: the
// "0::" line, or systemd's "name=systemd" hierarchy on a v1 host. "" when it cannot be read.
std::string process_cgroup(pid_t pid);
// The process's name from /proc/PID/comm, "?" when it cannot be read. The process chooses it
// (prctl(PR_SET_NAME), the executable's file name) and it may hold any byte but NUL: control
// characters and bytes that are not UTF-8 are replaced by U+FFFD here, once, so that every
// later use (log lines, journal fields, list, D-Bus) gets a clean string.
std::string process_comm(pid_t pid);
// `comm` as process_comm() would return it, for a name learned elsewhere (the bus's credentials).
std::string clean_comm(std::string_view comm);

} // namespace mcastd::frontend
