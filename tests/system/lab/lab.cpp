// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "system/lab/lab.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace mcastd::lab {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char *kSystemd = "/usr/lib/systemd/systemd";
constexpr const char *kBootScript = MCASTD_LAB_BOOT_SCRIPT;
// The build and source trees, which the lab's units run from: visible in the lab even when the
// checkout is under /tmp, which the lab hides behind its own (boot.sh, MCASTD_LAB_KEEP).
constexpr const char *kKeep = MCASTD_LAB_KEEP;
constexpr auto kTeardownTimeout = 10s;

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.pop_back();
    std::size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n'))
        ++i;
    return s.substr(i);
}

std::string read_file(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::optional<std::string> find_in_path(const std::string &name) {
    const char *path = std::getenv("PATH");
    std::istringstream dirs(path && *path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return std::nullopt;
}

// The mount point of the cgroup v2 hierarchy (/sys/fs/cgroup on a unified host,
// /sys/fs/cgroup/unified on a hybrid one), from mountinfo (proc(5)).
std::optional<fs::path> cgroup2_mount() {
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
        const auto dash = line.find(" - ");
        if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0)
            continue;
        std::istringstream f(line.substr(0, dash));
        std::string id, parent, devno, root, mount_point;
        if (f >> id >> parent >> devno >> root >> mount_point && root == "/")
            return fs::path(mount_point);
    }
    return std::nullopt;
}

// This process's cgroup v2 path ("0::PATH" in /proc/self/cgroup, cgroups(7)).
std::optional<std::string> own_cgroup2_path() {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);)
        if (line.starts_with("0::"))
            return line.substr(3);
    return std::nullopt;
}

// Can this process make the namespaces boot.sh needs? Tried in a child, which exits with the
// errno of unshare(2).
std::optional<std::string> namespaces_refused() {
    const pid_t pid = ::fork();
    if (pid < 0)
        return std::string("fork: ") + std::strerror(errno);
    if (pid == 0) {
        const int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWCGROUP;
        ::_exit(::unshare(flags) == 0 ? 0 : (errno & 0x7f));
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return std::nullopt;
    return std::string("unshare(CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWUTS|CLONE_NEWCGROUP) failed: ") +
           (WIFEXITED(status) ? std::strerror(WEXITSTATUS(status)) : "the probe died");
}

bool all_digits(const std::string &s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

std::string random_hex() {
    std::random_device rd;
    std::ostringstream s;
    s << std::hex << rd() << rd();
    return s.str();
}

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

int pidfd_send_signal(int pidfd, int sig) {
    return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

// Waits until `fd` has one of `events`, or `timeout` passes.
bool wait_fd(int fd, short events, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        pollfd p{fd, events, 0};
        const int r = ::poll(&p, 1, static_cast<int>(std::max<long long>(left.count(), 0)));
        if (r > 0)
            return true;
        if (r == 0 || (r < 0 && errno != EINTR))
            return false;
    }
}

std::vector<std::string> first_words(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string w;
        while (words >> w && w == "\xe2\x97\x8f") { // "●", the marker of failed or masked units
        }
        if (!w.empty())
            out.push_back(w);
    }
    return out;
}

// Waits for "populated 0" in the cgroup's cgroup.events: no process left in its tree. The file
// signals every change with POLLPRI (cgroups(7), "Cgroups v2 release notification").
bool wait_cgroup_empty(const fs::path &dir, std::chrono::milliseconds timeout) {
    const int fd = ::open((dir / "cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT;
    const auto deadline = Clock::now() + timeout;
    bool empty = false;
    for (;;) {
        char buf[256];
        const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
        if (n < 0)
            break;
        if (std::string(buf, static_cast<std::size_t>(n)).find("populated 0") != std::string::npos) {
            empty = true;
            break;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0)
            break;
        pollfd p{fd, POLLPRI, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR)
            break;
    }
    ::close(fd);
    return empty;
}

// Removes a cgroup directory and its children, deepest first (cgroups hold no files rmdir
// would refuse; cgroups(7)).
void remove_cgroup_tree(const fs::path &dir, std::string &problems) {
    std::error_code ec;
    std::vector<fs::path> dirs;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec))
            dirs.push_back(it->path());
    std::sort(dirs.begin(), dirs.end(), [](const fs::path &a, const fs::path &b) {
        return a.string().size() > b.string().size();
    });
    dirs.push_back(dir);
    for (const auto &d : dirs)
        if (::rmdir(d.c_str()) < 0 && errno != ENOENT)
            problems += "cannot remove the lab's cgroup " + d.string() + ": " + std::strerror(errno) + "\n";
}

// Removes the empty cgroups and the canaries of labs whose test process died before its
// teardown (SIGKILL, a crash): their namespaces died with them, these did not.
void sweep_leftovers(const fs::path &cgroup_parent) {
    std::error_code ec;
    std::string ignored;
    for (const auto &e : fs::directory_iterator(cgroup_parent, ec))
        if (sim::left_by_dead_process(e.path().filename().string(), "mcastd-lab.") && wait_cgroup_empty(e.path(), 0ms))
            remove_cgroup_tree(e.path(), ignored);
    for (const auto &e : fs::directory_iterator("/tmp", ec))
        if (sim::left_by_dead_process(e.path().filename().string(), "mcastd-lab-canary."))
            fs::remove(e.path(), ec);
}

} // namespace

struct Lab::Impl {
    Options opts;
    fs::path canary;
    std::string canary_token;
    fs::path cgroup;
    int notify_fd = -1;
    int netns_fd = -1; // the lab's own network namespace (Options::private_network)
    std::string notify_name; // abstract address, without the leading NUL
    std::optional<sim::Process> boot;
    std::string boot_log; // boot.sh's output, as far as it has been read
    pid_t pid1 = -1;
    int pidfd = -1;
    std::string state;
    std::chrono::milliseconds boot_time{0};
    bool torn_down = false;

    ~Impl() {
        const std::string problems = teardown();
        if (!problems.empty())
            std::fprintf(stderr, "mcastd::lab::Lab: %s", problems.c_str());
        if (notify_fd >= 0)
            ::close(notify_fd);
        if (netns_fd >= 0)
            ::close(netns_fd);
    }

    fs::path root() const { return "/proc/" + std::to_string(pid1) + "/root"; }

    void collect_boot_output() {
        if (boot)
            boot_log += boot->read_all(0ms) + boot->stderr_text();
    }

    void make_canary() {
        static std::atomic<unsigned> counter{0};
        // The host's /tmp itself, not $TMPDIR: /tmp is what a stray tmpfiles run would empty.
        canary = "/tmp/mcastd-lab-canary." + std::to_string(::getpid()) + "." + std::to_string(counter++);
        canary_token = "mcastd lab canary " + random_hex() + "\n";
        const int fd = ::open(canary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
            throw std::system_error(errno, std::generic_category(), "create the canary " + canary.string());
        const bool ok = ::write(fd, canary_token.data(), canary_token.size()) ==
                        static_cast<ssize_t>(canary_token.size());
        ::close(fd);
        if (!ok)
            throw std::runtime_error("cannot write the canary " + canary.string());
    }

    bool canary_intact() const { return read_file(canary) == canary_token; }

    void make_cgroup() {
        const auto mount = cgroup2_mount();
        const auto own = own_cgroup2_path();
        if (!mount || !own)
            throw std::runtime_error("no cgroup v2 hierarchy to run the lab in");
        static std::atomic<unsigned> counter{0};
        const fs::path parent = *mount / fs::path(*own).relative_path();
        sweep_leftovers(parent);
        cgroup = parent / ("mcastd-lab." + std::to_string(::getpid()) + "." + std::to_string(counter++));
        if (::mkdir(cgroup.c_str(), 0755) < 0)
            throw std::system_error(errno, std::generic_category(), "mkdir " + cgroup.string());
    }

    void make_notify_socket() {
        static std::atomic<unsigned> counter{0};
        notify_name = "mcastd-lab/" + std::to_string(::getpid()) + "/" + std::to_string(counter++) + "/" + random_hex();
        notify_fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (notify_fd < 0)
            throw std::system_error(errno, std::generic_category(), "notify socket");
        const int on = 1;
        ::setsockopt(notify_fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path + 1, notify_name.data(), notify_name.size());
        const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + notify_name.size());
        if (::bind(notify_fd, reinterpret_cast<const sockaddr *>(&a), len) < 0)
            throw std::system_error(errno, std::generic_category(), "bind the notify socket @" + notify_name);
    }

    // Options::private_network: a new network namespace, made on a thread of its own (a
    // thread's namespace is its own; unshare(2)) so the test process stays in the host's. The
    // notify socket is bound there, since an abstract address belongs to one network namespace
    // and the lab's systemd must reach it; lo is brought up there; boot.sh enters it by nsenter.
    void make_network_namespace() {
        std::exception_ptr failed;
        std::thread([&] {
            try {
                if (::unshare(CLONE_NEWNET) < 0)
                    throw std::system_error(errno, std::generic_category(), "unshare(CLONE_NEWNET)");
                netns_fd = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
                if (netns_fd < 0)
                    throw std::system_error(errno, std::generic_category(), "open /proc/thread-self/ns/net");
                const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (s < 0)
                    throw std::system_error(errno, std::generic_category(), "socket(AF_INET) in the lab's netns");
                ifreq ifr{};
                std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
                const bool up = ::ioctl(s, SIOCGIFFLAGS, &ifr) == 0 &&
                                (ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP),
                                 ::ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
                const int err = errno;
                ::close(s);
                if (!up)
                    throw std::system_error(err, std::generic_category(), "bring lo up in the lab's netns");
                make_notify_socket();
            } catch (...) {
                failed = std::current_exception();
            }
        }).join();
        if (failed)
            std::rethrow_exception(failed);
    }

    // One datagram and its sender's pid (as this namespace sees it), or nullopt on timeout.
    std::optional<std::pair<std::string, pid_t>> next_notification(std::chrono::milliseconds timeout) {
        if (!wait_fd(notify_fd, POLLIN, timeout))
            return std::nullopt;
        char buf[4096];
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
        iovec iov{buf, sizeof buf};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(notify_fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
            return std::make_pair(std::string(), pid_t{-1});
        pid_t sender = -1;
        for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                ucred cred{};
                std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
                sender = cred.pid;
            }
        return std::make_pair(std::string(buf, static_cast<std::size_t>(n)), sender);
    }

    void start() {
        const auto started = Clock::now();
        make_canary();
        make_cgroup();
        std::vector<std::string> argv;
        if (opts.private_network) {
            make_network_namespace();
            // nsenter opens our descriptor's magic link: the namespace, however it is named.
            argv = {"nsenter", "--net=/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(netns_fd), "--"};
        } else {
            make_notify_socket();
        }
        argv.insert(argv.end(), {"setsid", "unshare", "--pid", "--fork", "--kill-child=SIGKILL", "--mount", "--uts",
                                 "--mount-proc", kBootScript});
        if (!opts.unit_dir.empty())
            argv.push_back(opts.unit_dir.string());
        boot.emplace(sim::Process::Options{.argv = argv,
                                           .env = {{"NOTIFY_SOCKET", "@" + notify_name},
                                                   {"MCASTD_LAB_CGROUP", cgroup.string()},
                                                   {"MCASTD_LAB_KEEP", kKeep},
                                                   {"MCASTD_LAB_ROOT", opts.root == Root::overlay ? "overlay" : "ro"}},
                                           .cwd = "/",
                                           .merge_stderr = true});
        const auto deadline = Clock::now() + opts.boot_timeout;
        auto left = [&] {
            return std::max(0ms, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
        };
        // boot.sh says this just before it exec()s systemd; until then nothing is PID 1.
        for (;;) {
            auto line = boot->read_line(left());
            if (!line)
                throw std::runtime_error("boot.sh never reached systemd (" +
                                         std::string(boot->running() ? "timeout" : "it exited") + ")");
            boot_log += *line + "\n";
            if (*line == "mcastd-lab: exec systemd")
                break;
        }
        // unshare --fork's only child is boot.sh, now systemd.
        const std::string children = trim(read_file("/proc/" + std::to_string(boot->pid()) + "/task/" +
                                                    std::to_string(boot->pid()) + "/children"));
        if (children.empty() || children.find(' ') != std::string::npos)
            throw std::runtime_error("cannot tell PID 1 from unshare's children '" + children + "'");
        pid1 = static_cast<pid_t>(std::stol(children));
        // From here on signals go through the pidfd: the number cannot be reused under us.
        pidfd = pidfd_open(pid1);
        if (pidfd < 0)
            throw std::system_error(errno, std::generic_category(), "pidfd_open(" + children + ")");

        for (;;) {
            pollfd fds[2] = {{notify_fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
            const int r = ::poll(fds, 2, static_cast<int>(left().count()));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                throw std::runtime_error("systemd did not say READY=1 within " +
                                         std::to_string(opts.boot_timeout.count()) + " ms");
            if (fds[1].revents)
                throw std::runtime_error("the lab's systemd (pid " + std::to_string(pid1) + ") exited during boot");
            auto note = next_notification(0ms);
            if (note && note->second == pid1 && ("\n" + note->first + "\n").find("\nREADY=1\n") != std::string::npos)
                break;
        }
        // Nothing reads the lab's notifications from here on, and systemd 252 keeps sending
        // them: "STATUS=User job X/start running (2s / no limit)..." about three times a second
        // while a job runs for more than a couple of seconds. Left open, the socket's queue
        // fills (net.unix.max_dgram_qlen, 10) and PID 1 blocks in sendmsg for good. Closed, the
        // address refuses them at once, and systemd ignores that.
        ::close(notify_fd);
        notify_fd = -1;
        boot_time = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
        verify_isolation();
    }

    // Checks, from the host, what boot.sh promises before anything is written into the lab:
    // one mount on the lab's "/" (a second one stacked there would be what services see, see
    // boot.sh), read-only or the overlay as asked, and the lab's private directories on file
    // systems of their own. Throws when something is wrong.
    void verify_isolation() const {
        std::ifstream in("/proc/" + std::to_string(pid1) + "/mountinfo");
        int roots = 0;
        for (std::string line; std::getline(in, line);) {
            std::istringstream f(line);
            std::string id, parent, devno, root, mount_point, options, field;
            if (!(f >> id >> parent >> devno >> root >> mount_point >> options) || mount_point != "/")
                continue;
            ++roots;
            while (f >> field && field != "-") {
            }
            std::string fstype;
            f >> fstype;
            if (opts.root == Root::overlay) {
                if (fstype != "overlay")
                    throw std::runtime_error("the lab's / is not the overlay: " + line);
            } else if (("," + options + ",").find(",ro,") == std::string::npos) {
                throw std::runtime_error("the lab's / is mounted read-write: " + line);
            }
        }
        if (roots != 1)
            throw std::runtime_error("the lab has " + std::to_string(roots) + " mounts on /, not one");
        for (const char *dir : {"/tmp", "/run", "/var/tmp", "/var/log", "/var/lib/systemd", "/var/cache", "/dev"}) {
            struct stat host {}, lab {};
            const std::string in_lab = root().string() + dir;
            if (::stat(dir, &host) == 0 && ::stat(in_lab.c_str(), &lab) == 0 && host.st_dev == lab.st_dev)
                throw std::runtime_error(std::string("the lab's ") + dir + " is the host's");
        }
    }

    sim::Process spawn(std::vector<std::string> argv, const char *who, bool stdin_pipe = false) {
        if (pid1 <= 0 || torn_down)
            throw std::logic_error(std::string(who) + ": the lab is not running");
        // nsenter --pid makes its child a member of the lab's PID namespace; chroot into PID 1's
        // root (a magic link into the lab's mount namespace) gives it the lab's mounts, and
        // with them the lab's /proc, so systemctl does not think it runs in a chroot.
        std::vector<std::string> full{"nsenter", "--target", std::to_string(pid1), "--pid"};
        if (opts.private_network)
            full.push_back("--net");
        full.insert(full.end(), {"--", "chroot", root().string()});
        full.insert(full.end(), argv.begin(), argv.end());
        return sim::Process(sim::Process::Options{.argv = std::move(full),
                                                  .env = {{"SYSTEMD_PAGER", ""},
                                                          {"SYSTEMD_COLORS", "0"},
                                                          {"SYSTEMD_LOG_COLOR", "0"},
                                                          {"PAGER", "cat"}},
                                                  .cwd = "/",
                                                  .stdin_pipe = stdin_pipe});
    }

    sim::RunResult run(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
        sim::Process p = spawn(std::move(argv), "Lab::run");
        return sim::finish(p, timeout);
    }

    std::string teardown() {
        if (torn_down)
            return "";
        torn_down = true;
        std::string problems;
        if (pidfd >= 0) {
            if (pidfd_send_signal(pidfd, SIGKILL) < 0 && errno != ESRCH)
                problems += std::string("cannot SIGKILL the lab's PID 1: ") + std::strerror(errno) + "\n";
            else if (!wait_fd(pidfd, POLLIN, kTeardownTimeout))
                problems += "the lab's PID 1 (" + std::to_string(pid1) + ") did not die of SIGKILL\n";
            ::close(pidfd);
            pidfd = -1;
        }
        // unshare exits once its child is gone; when PID 1 was never found, stopping unshare
        // kills it (--kill-child).
        if (boot) {
            if (!boot->wait(kTeardownTimeout))
                boot->stop(2s);
            collect_boot_output();
        }
        if (!cgroup.empty()) {
            // Every process of the lab is in this cgroup's tree; the kernel empties it once the
            // PID namespace is gone. "populated 0" in cgroup.events says so.
            if (!wait_cgroup_empty(cgroup, kTeardownTimeout))
                problems += "processes are left in the lab's cgroup " + cgroup.string() + ": " +
                            read_file(cgroup / "cgroup.procs") + "\n";
            else
                remove_cgroup_tree(cgroup, problems);
        }
        if (!canary.empty()) {
            if (!canary_intact())
                problems += "the canary " + canary.string() +
                            " in the host's /tmp is gone or changed: something in the lab wrote to the host's /tmp\n";
            std::error_code ec;
            fs::remove(canary, ec);
        }
        return problems;
    }
};

std::optional<std::string> Lab::unavailable() {
    static const std::optional<std::string> reason = []() -> std::optional<std::string> {
        if (::geteuid() != 0)
            return std::string("the lab needs root (it mounts, and boots systemd as PID 1 of new namespaces)");
        if (::access(kSystemd, X_OK) != 0)
            return std::string(kSystemd) + " is missing: no systemd to boot";
        if (::access(kBootScript, X_OK) != 0)
            return std::string("the boot script ") + kBootScript + " is missing or not executable";
        for (const char *tool : {"unshare", "nsenter", "setsid", "chroot", "systemctl", "journalctl"})
            if (!find_in_path(tool))
                return std::string(tool) + " is not in PATH (util-linux, coreutils, systemd)";
        if (!cgroup2_mount() || !own_cgroup2_path())
            return std::string("no cgroup v2 hierarchy is mounted: the lab runs in a cgroup namespace of its own");
        if (auto why = namespaces_refused())
            return *why;
        return std::nullopt;
    }();
    return reason;
}

std::optional<std::string> Lab::unavailable(Root root) {
    if (auto why = unavailable())
        return why;
    if (root == Root::overlay && read_file("/proc/filesystems").find("\toverlay\n") == std::string::npos)
        return std::string("the kernel has no overlayfs (/proc/filesystems): no throw-away root for the lab");
    return std::nullopt;
}

RunResult host_run(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
    sim::Process p(sim::Process::Options{.argv = std::move(argv), .cwd = "/"});
    return sim::finish(p, timeout);
}

Lab::Lab() : Lab(Options{}) {}

Lab::Lab(Options opts) : impl_(std::make_unique<Impl>()) {
    impl_->opts = std::move(opts);
    try {
        impl_->start();
        impl_->state = trim(impl_->run({"systemctl", "is-system-running"}, 30s).out);
    } catch (const std::exception &e) {
        std::string what = std::string("the lab did not boot: ") + e.what() + "\n" + diagnostics();
        const std::string problems = impl_->teardown();
        if (!problems.empty())
            what += "\n--- teardown ---\n" + problems;
        throw std::runtime_error(what);
    }
}

Lab::~Lab() {
    const std::string problems = impl_->teardown();
    if (!problems.empty())
        ADD_FAILURE() << "lab teardown: " << problems;
}

pid_t Lab::pid1() const { return impl_->pid1; }

const std::string &Lab::boot_state() const { return impl_->state; }

std::chrono::milliseconds Lab::boot_time() const { return impl_->boot_time; }

RunResult Lab::run(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
    return impl_->run(std::move(argv), timeout);
}

sim::Process Lab::spawn(std::vector<std::string> argv, bool stdin_pipe) {
    return impl_->spawn(std::move(argv), "Lab::spawn", stdin_pipe);
}

RunResult Lab::systemctl(std::vector<std::string> args, std::chrono::milliseconds timeout) {
    args.insert(args.begin(), "systemctl");
    return run(std::move(args), timeout);
}

void Lab::write_file(const std::string &lab_path, const std::string &text) {
    const fs::path p = host_path(lab_path);
    fs::create_directories(p.parent_path());
    // Written aside and renamed: systemd may read the directory at any time.
    const fs::path tmp = p.parent_path() / ("." + p.filename().string() + ".tmp");
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        if (!out.flush())
            throw std::runtime_error("cannot write " + tmp.string());
    }
    fs::rename(tmp, p);
}

void Lab::write_unit(const std::string &name, const std::string &text) {
    if (name.empty() || name.front() == '/' || name.find("..") != std::string::npos)
        throw std::invalid_argument("write_unit: not a unit name: " + name);
    write_file("/run/systemd/system/" + name, text);
}

void Lab::daemon_reload() {
    const RunResult r = systemctl({"daemon-reload"});
    if (r.exit_code != 0)
        throw std::runtime_error("systemctl daemon-reload failed (" + std::to_string(r.exit_code) + "): " + r.err);
}

std::string Lab::show(const std::string &unit, const std::string &prop) {
    return trim(systemctl({"show", "-p", prop, "--value", unit}).out);
}

std::optional<pid_t> Lab::main_pid(const std::string &unit) {
    const std::string v = show(unit, "MainPID");
    if (v.empty() || v == "0")
        return std::nullopt;
    return static_cast<pid_t>(std::stol(v));
}

std::optional<pid_t> Lab::host_pid(pid_t lab_pid) const {
    std::error_code ec;
    const fs::path lab_ns = fs::read_symlink("/proc/" + std::to_string(impl_->pid1) + "/ns/pid", ec);
    if (ec)
        return std::nullopt;
    for (const auto &entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (!all_digits(name))
            continue;
        // NSpid: the pid in each PID namespace the process is in, outermost first (proc(5)).
        std::ifstream status(entry.path() / "status");
        for (std::string line; std::getline(status, line);) {
            if (!line.starts_with("NSpid:"))
                continue;
            std::istringstream f(line.substr(6));
            std::vector<pid_t> pids;
            for (pid_t p; f >> p;)
                pids.push_back(p);
            std::error_code ec2;
            if (pids.size() >= 2 && pids.back() == lab_pid &&
                fs::read_symlink(entry.path() / "ns" / "pid", ec2) == lab_ns && !ec2)
                return static_cast<pid_t>(std::stol(name));
            break;
        }
    }
    return std::nullopt;
}

std::string Lab::journal(const std::string &unit) {
    run({"journalctl", "--sync"}, 10s);
    std::vector<std::string> argv{"journalctl", "--no-pager", "-b", "-o", "short-monotonic"};
    if (!unit.empty())
        argv.insert(argv.end(), {"-u", unit});
    return run(argv).out;
}

fs::path Lab::host_path(const std::string &lab_path) const {
    if (lab_path.empty() || lab_path.front() != '/')
        throw std::invalid_argument("host_path: not an absolute path: " + lab_path);
    return impl_->root() / fs::path(lab_path).relative_path();
}

std::vector<std::string> Lab::failed_units() {
    return first_words(systemctl({"list-units", "--failed", "--all", "--plain", "--no-legend", "--full"}).out);
}

std::vector<std::string> Lab::started_units() {
    const auto units = first_words(systemctl({"list-units", "--all", "--plain", "--no-legend", "--full"}).out);
    // "--": "-.mount" and "-.slice" are unit names, not options.
    std::vector<std::string> args{"show", "-p", "Id", "-p", "InactiveExitTimestampMonotonic", "--"};
    args.insert(args.end(), units.begin(), units.end());
    const std::string out = systemctl(args).out;
    std::vector<std::string> started;
    std::istringstream in(out + "\n");
    std::string id, exit_ts;
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("Id="))
            id = line.substr(3);
        else if (line.starts_with("InactiveExitTimestampMonotonic="))
            exit_ts = line.substr(31);
        else if (line.empty()) {
            if (!id.empty() && !exit_ts.empty() && exit_ts != "0")
                started.push_back(id);
            id.clear();
            exit_ts.clear();
        }
    }
    std::sort(started.begin(), started.end());
    started.erase(std::unique(started.begin(), started.end()), started.end());
    return started;
}

bool Lab::canary_intact() const { return impl_->canary_intact(); }

const fs::path &Lab::canary() const { return impl_->canary; }

std::string Lab::diagnostics() {
    impl_->collect_boot_output();
    std::string d = "--- boot.sh ---\n" + impl_->boot_log;
    if (impl_->pid1 > 0 && !impl_->torn_down && ::kill(impl_->pid1, 0) == 0) {
        try {
            d += "--- failed units ---\n" +
                 run({"systemctl", "list-units", "--failed", "--all", "--no-pager"}, 10s).out;
            d += "--- jobs ---\n" + run({"systemctl", "list-jobs", "--no-pager"}, 10s).out;
            d += "--- journal (last 80 lines) ---\n" +
                 run({"journalctl", "--no-pager", "-b", "-n", "80", "-o", "short-monotonic"}, 10s).out;
        } catch (const std::exception &e) {
            d += std::string("(cannot ask the lab: ") + e.what() + ")\n";
        }
    }
    return d;
}

std::string Lab::teardown() { return impl_->teardown(); }

} // namespace mcastd::lab
