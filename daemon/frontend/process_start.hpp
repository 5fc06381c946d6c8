// Telling a client process from a later one that got its pid: the start time in
// /proc/PID/stat (field 22, clock ticks since boot; proc(5)).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace mcastd::frontend {

// 0 when the process does not exist or its stat cannot be read.
std::uint64_t process_start_time(pid_t pid);
// The process `pid` that started at `start_time` still runs (start_time 0: any process `pid`).
bool process_alive(pid_t pid, std::uint64_t start_time);

} // namespace mcastd::frontend
