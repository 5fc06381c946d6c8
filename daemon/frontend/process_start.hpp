// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What /proc says of a client process: its start time in /proc/PID/stat (field 22, clock
// ticks since boot; proc(5)), which tells it from a later process that got its pid, and its
// cgroup, which the access rules match (a container, a Slurm job step, a tenant's slice).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace mcastd::frontend {

// 0 when the process does not exist or its stat cannot be read.
std::uint64_t process_start_time(pid_t pid);
// The process `pid` that started at `start_time` still runs (start_time 0: any process `pid`).
bool process_alive(pid_t pid, std::uint64_t start_time);
// The process's cgroup v2 path ("/system.slice/foo.service"), from /proc/PID/cgroup: the
// "0::" line, or systemd's "name=systemd" hierarchy on a v1 host. "" when it cannot be read.
std::string process_cgroup(pid_t pid);

} // namespace mcastd::frontend
