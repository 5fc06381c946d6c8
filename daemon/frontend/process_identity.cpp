// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/process_identity.hpp"

#include "common/utf8.hpp"
#include "runtime/small_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

// SO_PEERPIDFD (Linux 6.5) is newer than Debian 12's kernel headers; its number is the
// asm-generic one on these architectures.
#if !defined(SO_PEERPIDFD) && (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || \
                               defined(__arm__) || defined(__riscv))
#define SO_PEERPIDFD 77
#endif

namespace mcastd::frontend {

namespace {

template <class T> std::optional<T> number(std::string_view s) {
    T v{};
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty())
        return std::nullopt;
    return v;
}

// The next whitespace-separated field of `s`, consumed.
std::string_view next_field(std::string_view &s) {
    const auto begin = s.find_first_not_of(" \t\n");
    if (begin == s.npos) {
        s = {};
        return {};
    }
    s.remove_prefix(begin);
    const auto end = s.find_first_of(" \t\n");
    const std::string_view f = s.substr(0, end);
    s.remove_prefix(end == s.npos ? s.size() : end);
    return f;
}

} // namespace

// ---- Pidfd ----

Pidfd::~Pidfd() {
    if (fd_ >= 0)
        ::close(fd_);
}

Pidfd &Pidfd::operator=(Pidfd &&o) noexcept {
    if (this != &o) {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = o.fd_;
        o.fd_ = -1;
    }
    return *this;
}

std::variant<Pidfd, int> Pidfd::open(pid_t pid) {
    if (pid <= 0)
        return ESRCH;
    const long fd = ::syscall(SYS_pidfd_open, pid, 0); // always close-on-exec
    if (fd < 0)
        return errno;
    return Pidfd(static_cast<int>(fd));
}

std::variant<Pidfd, int> Pidfd::of_peer(int sock) {
#ifdef SO_PEERPIDFD
    int fd = -1;
    socklen_t len = sizeof fd;
    if (::getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) < 0)
        return errno;
    return Pidfd(fd);
#else
    (void)sock;
    return ENOPROTOOPT;
#endif
}

bool Pidfd::exited() const {
    pollfd p{fd_, POLLIN, 0};
    int r;
    while ((r = ::poll(&p, 1, 0)) < 0 && errno == EINTR) {
    }
    return r != 0; // readable once the process has exited; an error is no proof that it runs
}

// ---- the parsers ----

std::optional<StatFields> parse_stat(std::string_view stat) {
    // The name (field 2) is in parentheses and may hold spaces or ')': the fields go on after
    // the last ')'; field 3 is the first there and field 22 the twentieth.
    const auto open = stat.find('('), close = stat.rfind(')');
    if (open == stat.npos || close == stat.npos || close < open)
        return std::nullopt;
    StatFields out;
    out.comm = std::string(stat.substr(open + 1, close - open - 1));
    std::string_view rest = stat.substr(close + 1);
    std::string_view f;
    for (int i = 3; i <= 22; ++i)
        f = next_field(rest);
    const auto start = number<std::uint64_t>(f);
    if (!start)
        return std::nullopt;
    out.start_time = *start;
    return out;
}

std::optional<uid_t> parse_status_euid(std::string_view status) {
    while (!status.empty()) {
        const auto eol = status.find('\n');
        std::string_view line = status.substr(0, eol);
        status.remove_prefix(eol == status.npos ? status.size() : eol + 1);
        if (line.substr(0, 4) != "Uid:")
            continue;
        line.remove_prefix(4);
        next_field(line); // real
        return number<uid_t>(next_field(line));
    }
    return std::nullopt;
}

std::string parse_cgroup(std::string_view cgroup) {
    std::string_view v1;
    while (!cgroup.empty()) {
        const auto eol = cgroup.find('\n');
        const std::string_view line = cgroup.substr(0, eol);
        cgroup.remove_prefix(eol == cgroup.npos ? cgroup.size() : eol + 1);
        if (line.substr(0, 3) == "0::")
            return std::string(line.substr(3));
        if (const auto at = line.find(":name=systemd:"); at != line.npos)
            v1 = line.substr(at + 14);
    }
    return std::string(v1);
}

// ---- reading ----

std::chrono::nanoseconds boot_clock() {
    timespec ts{};
    ::clock_gettime(CLOCK_BOOTTIME, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

std::chrono::nanoseconds ticks_to_boot_clock(std::uint64_t ticks) {
    static const long hz = ::sysconf(_SC_CLK_TCK);
    return std::chrono::nanoseconds(static_cast<std::int64_t>(ticks) * (1'000'000'000 / (hz > 0 ? hz : 100)));
}

std::variant<ProcessIdentity, std::string> read_identity(pid_t pid, const Pidfd &pidfd, const Expected &expected) {
    const std::string who = "process " + std::to_string(pid);
    const std::string dir = "/proc/" + std::to_string(pid);
    const std::string gone = who + " has exited";
    if (pid <= 0 || !pidfd)
        return who + " cannot be read";
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT ? gone : "cannot open " + dir + ": " + std::strerror(errno);
    std::string stat, status, cgroup;
    const char *failed = nullptr;
    int err = 0;
    for (auto [name, text] : {std::pair{"stat", &stat}, std::pair{"status", &status}, std::pair{"cgroup", &cgroup}})
        if ((err = runtime::read_small_file(dfd, name, *text)) != 0) {
            failed = name;
            break;
        }
    ::close(dfd);
    // Only now: while the pidfd's process runs, /proc/PID was its own.
    if (pidfd.exited() || err == ENOENT || err == ESRCH)
        return gone;
    if (failed)
        return "cannot read " + dir + "/" + failed + ": " + std::strerror(err);

    ProcessIdentity id;
    id.pid = pid;
    const auto fields = parse_stat(stat);
    const auto euid = parse_status_euid(status);
    if (!fields || !euid)
        return "cannot read " + dir + "/" + (fields ? "status" : "stat") + ": not in the format of proc(5)";
    id.start_time = fields->start_time;
    id.comm = fields->comm;
    id.uid = *euid;
    id.cgroup = parse_cgroup(cgroup);
    if (id.uid != expected.uid)
        return who + " runs as uid " + std::to_string(id.uid) + ", not uid " + std::to_string(expected.uid);
    if (expected.started_by && ticks_to_boot_clock(id.start_time) > *expected.started_by)
        return who + " started after the connection appeared, so it is not the process that made it (its pid was "
                     "reused)";
    return id;
}

std::variant<ProcessIdentity, std::string> identify_process(pid_t pid, const Expected &expected) {
    auto fd = Pidfd::open(pid);
    if (const int *err = std::get_if<int>(&fd))
        return *err == ESRCH ? "process " + std::to_string(pid) + " has exited"
                             : "pidfd_open(" + std::to_string(pid) + "): " + std::strerror(*err);
    return read_identity(pid, std::get<Pidfd>(fd), expected);
}

void take_process(Credentials &c, ProcessIdentity process) {
    c.cgroup = std::move(process.cgroup);
    // /proc/PID/comm may hold any byte but NUL: the name as the log, list and D-Bus show it.
    c.who.comm = process.comm.empty() ? "?" : printable_utf8(process.comm);
    c.start_time = process.start_time;
}

std::uint64_t process_start_time(pid_t pid) {
    if (pid <= 0)
        return 0;
    const int dfd = ::open(("/proc/" + std::to_string(pid)).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    std::string stat;
    const int err = runtime::read_small_file(dfd, "stat", stat);
    ::close(dfd);
    const auto fields = err ? std::nullopt : parse_stat(stat);
    return fields ? fields->start_time : 0;
}

bool process_alive(pid_t pid, std::uint64_t start_time) {
    const std::uint64_t now = process_start_time(pid);
    return now != 0 && (start_time == 0 || now == start_time);
}

} // namespace mcastd::frontend
