// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Who a client's process is, read so that everything read belongs to one process.
//
// The kernel (SO_PEERCRED) and the bus (GetConnectionCredentials) record a pid when a client
// connects; the process that had it may be gone by the time the daemon reads /proc/PID, and
// another may have its pid. So: a pidfd pins a process (while it runs, its pid is no other's);
// /proc/PID is read (the start time, the effective uid, the cgroup, the name); then the pidfd
// says whether the process still runs: if it does, everything read was its own. Which process
// the pidfd holds is the transport's to attest: SO_PEERPIDFD gives the one that connected
// (Linux 6.5); pidfd_open(2) of a recorded pid gives whichever process has the pid now, so the
// caller also asks that it started no later than the connection appeared (the process that
// made a connection started before it). The start time (proc(5), field 22 of stat) is also
// what tells a client process from a later one with its pid across a restart of the daemon.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "common/request.hpp"
#include "frontend/access.hpp"

namespace mcastd::frontend {

// An open pidfd; closes it.
class Pidfd {
public:
    Pidfd() = default;
    explicit Pidfd(int fd) : fd_(fd) {}
    ~Pidfd();
    Pidfd(Pidfd &&o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    Pidfd &operator=(Pidfd &&o) noexcept;
    Pidfd(const Pidfd &) = delete;
    Pidfd &operator=(const Pidfd &) = delete;

    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }

    // pidfd_open(2): the process that has `pid` now. The errno on failure (ESRCH: none has).
    static std::variant<Pidfd, int> open(pid_t pid);
    // SO_PEERPIDFD: the process that connected the Unix socket `sock`. The errno on failure:
    // ENOPROTOOPT where the kernel has no such option (before 6.5), another when the peer is gone.
    static std::variant<Pidfd, int> of_peer(int sock);

    // The process has exited (the pidfd polls readable; pidfd_open(2)).
    bool exited() const;

private:
    int fd_ = -1;
};

struct ProcessIdentity {
    pid_t pid = 0;
    std::uint64_t start_time = 0; // clock ticks after boot (/proc/PID/stat field 22)
    uid_t uid = kUnknownUid;      // effective (/proc/PID/status "Uid:", second field)
    std::string cgroup;           // process_cgroup()'s path; "" when the process has none readable
    std::string comm;             // its name (/proc/PID/stat field 2)
};

// What the process must be to be the client.
struct Expected {
    uid_t uid = kUnknownUid; // the effective uid its transport recorded at connect
    // It started no later than this (boot_clock()): it made the connection that appeared then.
    // nullopt: not asked (a pidfd the kernel tied to the connection).
    std::optional<std::chrono::nanoseconds> started_by{};
};

// Reads the identity of `pid`, held by `pidfd`, and checks it against `expected`; or why not,
// one sentence ("process 4242 has exited", "process 4242 runs as uid 1002, not 1001", ...).
std::variant<ProcessIdentity, std::string> read_identity(pid_t pid, const Pidfd &pidfd, const Expected &expected);
// The same through pidfd_open(pid).
std::variant<ProcessIdentity, std::string> identify_process(pid_t pid, const Expected &expected);

// What an attested process gives a client's credentials: its cgroup, name ("?" when it has
// none) and start time.
void take_process(Credentials &c, ProcessIdentity process);

// CLOCK_BOOTTIME now, the clock of the start times in /proc/PID/stat.
std::chrono::nanoseconds boot_clock();
// A start time in clock ticks (sysconf(_SC_CLK_TCK)) as boot_clock() time.
std::chrono::nanoseconds ticks_to_boot_clock(std::uint64_t ticks);

// The start time of the process that has `pid` now; 0 when none has or its stat cannot be read.
std::uint64_t process_start_time(pid_t pid);
// The process `pid` that started at `start_time` still runs (start_time 0: any process `pid`).
bool process_alive(pid_t pid, std::uint64_t start_time);

// ---- the parsers, pure ----

// From the text of /proc/PID/stat: the start time and the name; nullopt when malformed.
struct StatFields {
    std::uint64_t start_time = 0;
    std::string comm;
};
std::optional<StatFields> parse_stat(std::string_view stat);
// From the text of /proc/PID/status: the effective uid; nullopt when there is no valid Uid: line.
std::optional<uid_t> parse_status_euid(std::string_view status);
// From the text of /proc/PID/cgroup: the cgroup v2 path (the "0::" line), or systemd's
// "name=systemd" hierarchy on a v1 host; "" when neither is there.
std::string parse_cgroup(std::string_view cgroup);

} // namespace mcastd::frontend
