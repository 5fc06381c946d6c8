// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd::sim::Process: fork/exec with pipes, a drain thread, and pidfd-based waiting.
#include "sim/fabric.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

extern char **environ;

namespace mcastd::sim {

namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text(int err) { return std::strerror(err); }

[[noreturn]] void throw_errno(const std::string &what, int err = errno) {
    throw std::runtime_error(what + ": " + errno_text(err));
}

// Milliseconds left until `deadline`, clamped to what poll() takes.
int ms_until(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
        return 0;
    return left.count() > 1'000'000 ? 1'000'000 : static_cast<int>(left.count());
}

void close_fd(int &fd) {
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

// Looks `name` up in PATH the way execvp would, but in the parent: execvp may allocate, and
// only async-signal-safe calls are allowed between fork and exec in a threaded process.
std::string resolve_executable(const std::string &name, const std::string &path_var) {
    if (name.find('/') != std::string::npos)
        return name;
    std::string_view rest = path_var.empty() ? std::string_view("/usr/bin:/bin") : path_var;
    while (true) {
        auto colon = rest.find(':');
        std::string dir(rest.substr(0, colon));
        if (dir.empty())
            dir = ".";
        std::string candidate = dir + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        if (colon == std::string_view::npos)
            break;
        rest.remove_prefix(colon + 1);
    }
    throw std::runtime_error("cannot start '" + name + "': not found in PATH=" + path_var);
}

// Writes all of `data`; returns false on EPIPE (reader gone) without dying of SIGPIPE.
// SIGPIPE is blocked in this thread for the write and a pending one is consumed afterwards,
// so the test process's signal dispositions (inherited by every child) stay untouched.
bool write_all_no_sigpipe(int fd, std::string_view data) {
    sigset_t pipe_set, old_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
    bool ok = true;
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            ok = false;
            if (errno == EPIPE && !was_pending) {
                timespec zero{};
                sigtimedwait(&pipe_set, nullptr, &zero);
            }
            break;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
    return ok;
}

// What a child reports through the exec-error pipe when it fails before exec.
enum class Stage : int { open_stdin, dup2, chdir, execve, prctl, pass_fd };
constexpr const char *kStageNames[] = {"open stdin", "dup2", "chdir", "execve", "prctl", "F_DUPFD_CLOEXEC of a passed fd"};
struct ChildFailure {
    Stage stage;
    int err;
};

} // namespace

struct Process::Impl {
    std::string name; // argv[0], for messages
    pid_t pid = -1;
    int pidfd = -1;
    int stdin_fd = -1;
    int out_fd = -1; // read ends, owned by the drain thread until it exits
    int err_fd = -1;
    int log_fd = -1;
    int wake_fd = -1; // eventfd: "child reaped, drain what is left and stop"
    std::optional<int> status; // set once reaped: exit code, or 128 + signal
    // Any thread may reap (a Fabric counts running clients from whichever thread starts a
    // tool): waitpid and the status it leaves, and the drain thread's join, happen under this,
    // or the loser of a race would take ECHILD for "someone else reaped it".
    std::mutex reap_mu;

    std::mutex mu;
    std::condition_variable cv;
    std::string out;     // stdout not yet consumed by read_line/read_all
    std::string err;     // all of stderr
    bool drained = false; // the drain thread has finished: no more output will come
    std::thread drainer;

    ~Impl() {
        finish_draining();
        close_fd(out_fd); // still open only if the drain thread never started
        close_fd(err_fd);
        close_fd(stdin_fd);
        close_fd(pidfd);
        close_fd(wake_fd);
        close_fd(log_fd);
    }

    void finish_draining() {
        if (!drainer.joinable())
            return;
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof one);
        drainer.join();
    }

    void append(int fd, const char *data, std::size_t len) {
        if (log_fd >= 0)
            [[maybe_unused]] ssize_t n = ::write(log_fd, data, len);
        std::lock_guard lock(mu);
        (fd == out_fd ? out : err).append(data, len);
    }

    enum class ReadResult { data, again, eof };

    // One read from `fd`; at EOF or on error the fd is closed.
    ReadResult read_some(int &fd) {
        char buf[65536];
        while (true) {
            ssize_t n = ::read(fd, buf, sizeof buf);
            if (n > 0) {
                append(fd, buf, static_cast<std::size_t>(n));
                return ReadResult::data;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EAGAIN)
                return ReadResult::again;
            close_fd(fd);
            return ReadResult::eof;
        }
    }

    void drain_loop() {
        while (out_fd >= 0 || err_fd >= 0) {
            pollfd fds[3] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
            if (::poll(fds, 3, -1) < 0) {
                if (errno == EINTR)
                    continue;
                break;
            }
            if (fds[2].revents) {
                // The child is gone, so everything it wrote is already in the pipes. Take it
                // without blocking and stop, even if a grandchild still holds a write end.
                for (int *fd : {&out_fd, &err_fd}) {
                    if (*fd < 0)
                        continue;
                    ::fcntl(*fd, F_SETFL, ::fcntl(*fd, F_GETFL) | O_NONBLOCK);
                    while (read_some(*fd) == ReadResult::data) {
                    }
                    close_fd(*fd);
                }
                break;
            }
            if (fds[0].revents)
                read_some(out_fd);
            if (fds[1].revents)
                read_some(err_fd);
            cv.notify_all();
        }
        close_fd(out_fd);
        close_fd(err_fd);
        {
            std::lock_guard lock(mu);
            drained = true;
        }
        cv.notify_all();
    }

    void record_status(int wstatus) {
        if (WIFEXITED(wstatus))
            status = WEXITSTATUS(wstatus);
        else if (WIFSIGNALED(wstatus))
            status = 128 + WTERMSIG(wstatus);
        else
            status = -1;
        // Output is complete once the child is gone; let the drain thread finish.
        finish_draining();
    }

    // Reaps the child if it has exited within `timeout` (negative: wait forever).
    bool reap(std::chrono::milliseconds timeout) {
        auto deadline = Clock::now() + timeout;
        while (true) {
            if (try_reap())
                return true;
            if (timeout.count() >= 0 && Clock::now() >= deadline)
                return false;
            // The pidfd turns readable when the child exits: no sleeping in a loop. It is
            // polled outside the lock, so a thread that only asks running() never waits.
            pollfd p{pidfd, POLLIN, 0};
            int wait_ms = timeout.count() < 0 ? -1 : ms_until(deadline);
            if (::poll(&p, 1, wait_ms) < 0 && errno != EINTR)
                throw_errno("poll(pidfd) for " + name);
        }
    }

    // One waitpid(WNOHANG); true once the child is reaped (by this call or an earlier one).
    bool try_reap() {
        std::lock_guard lock(reap_mu);
        while (!status) {
            int wstatus = 0;
            pid_t r = ::waitpid(pid, &wstatus, WNOHANG);
            if (r == pid) {
                record_status(wstatus);
            } else if (r < 0 && errno != EINTR) {
                // Reaped outside this class (e.g. a SIGCHLD handler); nothing more to learn.
                status = -1;
                finish_draining();
            } else if (r == 0) {
                return false;
            }
        }
        return true;
    }

    void spawn(const Options &opts);
};

void Process::Impl::spawn(const Options &opts) {
    if (opts.argv.empty())
        throw std::invalid_argument("Process: empty argv");
    if (opts.stdin_pipe && !opts.stdin_path.empty())
        throw std::invalid_argument("Process: stdin_pipe and stdin_path are exclusive");
    name = opts.argv[0];

    // Everything the child needs is built before fork: after it, only async-signal-safe calls.
    std::map<std::string, std::string> env;
    for (char **e = environ; e && *e; ++e) {
        std::string_view kv(*e);
        auto eq = kv.find('=');
        if (eq != std::string_view::npos)
            env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
    for (const auto &[k, v] : opts.env)
        env[k] = v;
    std::vector<std::string> env_strings;
    for (const auto &[k, v] : env)
        env_strings.push_back(k + "=" + v);
    std::vector<char *> envp;
    for (auto &s : env_strings)
        envp.push_back(s.data());
    // LISTEN_PID is the child's own pid, written after fork (as a service manager does).
    char listen_pid[32] = "LISTEN_PID=";
    if (env.count("LISTEN_FDS") && !env.count("LISTEN_PID"))
        envp.push_back(listen_pid);
    envp.push_back(nullptr);
    std::vector<std::string> args = opts.argv;
    std::vector<char *> argv;
    for (auto &s : args)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    std::string exe = resolve_executable(opts.argv[0], env.count("PATH") ? env["PATH"] : "");
    std::string cwd = opts.cwd.string();
    std::string stdin_path = opts.stdin_path.empty() ? "/dev/null" : opts.stdin_path.string();

    int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    int fail_pipe[2] = {-1, -1};
    auto close_all = [&] {
        for (int *p : {in_pipe, out_pipe, err_pipe, fail_pipe})
            for (int i = 0; i < 2; ++i)
                close_fd(p[i]);
    };
    if ((opts.stdin_pipe && ::pipe2(in_pipe, O_CLOEXEC) < 0) || ::pipe2(out_pipe, O_CLOEXEC) < 0 ||
        (!opts.merge_stderr && ::pipe2(err_pipe, O_CLOEXEC) < 0) ||
        ::pipe2(fail_pipe, O_CLOEXEC) < 0) {
        int e = errno;
        close_all();
        throw_errno("pipe2", e);
    }
    if (!opts.log_file.empty()) {
        log_fd = ::open(opts.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0) {
            int e = errno;
            close_all();
            throw_errno("open " + opts.log_file.string(), e);
        }
    }
    wake_fd = ::eventfd(0, EFD_CLOEXEC);
    if (wake_fd < 0) {
        int e = errno;
        close_all();
        throw_errno("eventfd", e);
    }

    // The child first copies the passed fds above every number it places them at, so that
    // placing one overwrites none. The child does it, not this process: this one is threaded,
    // and growing a shared fd table makes the kernel wait out an RCU grace period
    // (expand_fdtable), milliseconds in a restart benchmark's gap. The child's table is its own.
    const int high = 3 + static_cast<int>(opts.pass_fds.size());
    std::vector<int> passed(opts.pass_fds.size(), -1); // filled in by the child
    pid_t parent = ::getpid();
    pid_t child = ::fork();
    if (child < 0) {
        int e = errno;
        close_all();
        throw_errno("fork", e);
    }
    if (child == 0) {
        auto fail = [&](Stage stage) {
            ChildFailure f{stage, errno};
            [[maybe_unused]] ssize_t n = ::write(fail_pipe[1], &f, sizeof f);
            ::_exit(127);
        };
        // Die with the test process; check the parent did not already go before prctl.
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
            fail(Stage::prctl);
        if (::getppid() != parent)
            ::_exit(127);
        for (std::size_t i = 0; i < passed.size(); ++i)
            if ((passed[i] = ::fcntl(opts.pass_fds[i], F_DUPFD_CLOEXEC, high)) < 0)
                fail(Stage::pass_fd);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        ::sigaction(SIGPIPE, &dfl, nullptr);

        int in_fd = in_pipe[0];
        if (!opts.stdin_pipe) {
            // A FIFO with a writer held open by the parent opens without blocking.
            in_fd = ::open(stdin_path.c_str(), O_RDONLY);
            if (in_fd < 0)
                fail(Stage::open_stdin);
        }
        if (::dup2(in_fd, 0) < 0 || ::dup2(out_pipe[1], 1) < 0 ||
            ::dup2(opts.merge_stderr ? out_pipe[1] : err_pipe[1], 2) < 0)
            fail(Stage::dup2);
        if (!cwd.empty() && ::chdir(cwd.c_str()) < 0)
            fail(Stage::chdir);
        if (!passed.empty()) {
            // The failure pipe goes above where the passed ones are placed.
            const int moved = ::fcntl(fail_pipe[1], F_DUPFD_CLOEXEC, high);
            if (moved < 0)
                fail(Stage::dup2);
            fail_pipe[1] = moved;
            for (std::size_t i = 0; i < passed.size(); ++i)
                if (::dup2(passed[i], 3 + static_cast<int>(i)) < 0) // without FD_CLOEXEC
                    fail(Stage::dup2);
        }
        if (listen_pid[11] == '\0' && envp.size() > 1 && envp[envp.size() - 2] == listen_pid) {
            char digits[16];
            int n = 0;
            for (pid_t v = ::getpid(); v > 0; v /= 10)
                digits[n++] = static_cast<char>('0' + v % 10);
            for (int i = 0; i < n; ++i)
                listen_pid[11 + i] = digits[n - 1 - i];
            listen_pid[11 + n] = '\0';
        }
        // Nothing but 0-2 and the passed fds may leak into the child (other Processes' pipes,
        // the console FIFO).
        ::close_range(3 + static_cast<unsigned>(passed.size()), ~0U, CLOSE_RANGE_CLOEXEC);
        ::execve(exe.c_str(), argv.data(), envp.data());
        fail(Stage::execve);
    }

    pid = child;
    close_fd(in_pipe[0]);
    close_fd(out_pipe[1]);
    close_fd(err_pipe[1]);
    close_fd(fail_pipe[1]);
    stdin_fd = in_pipe[1];
    out_fd = out_pipe[0];
    err_fd = err_pipe[0];

    ChildFailure failure{};
    ssize_t n;
    do
        n = ::read(fail_pipe[0], &failure, sizeof failure);
    while (n < 0 && errno == EINTR);
    close_fd(fail_pipe[0]);
    if (n == static_cast<ssize_t>(sizeof failure)) {
        int wstatus = 0;
        ::waitpid(pid, &wstatus, 0);
        status = 127;
        close_fd(stdin_fd);
        close_fd(out_fd);
        close_fd(err_fd);
        std::string what = "cannot start '" + exe + "'";
        if (failure.stage == Stage::chdir)
            what += " in " + cwd;
        throw std::runtime_error(what + ": " + kStageNames[static_cast<int>(failure.stage)] +
                                 ": " + errno_text(failure.err));
    }

    // Through syscall(): glibc 2.36's <sys/pidfd.h> lacks C linkage for C++.
    pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0) {
        int e = errno;
        ::kill(pid, SIGKILL);
        int wstatus = 0;
        ::waitpid(pid, &wstatus, 0);
        status = -1;
        throw_errno("pidfd_open", e);
    }
    drainer = std::thread([this] { drain_loop(); });
}

Process::Process(Options opts) : impl_(std::make_unique<Impl>()) { impl_->spawn(opts); }

Process::~Process() {
    if (impl_)
        stop();
}

Process::Process(Process &&) noexcept = default;

Process &Process::operator=(Process &&other) noexcept {
    if (this != &other) {
        if (impl_)
            stop();
        impl_ = std::move(other.impl_);
    }
    return *this;
}

pid_t Process::pid() const { return impl_->pid; }

bool Process::running() { return !impl_->reap(std::chrono::milliseconds(0)); }

bool Process::write_stdin(const std::string &data) {
    if (impl_->stdin_fd < 0)
        return false;
    if (!write_all_no_sigpipe(impl_->stdin_fd, data)) {
        close_fd(impl_->stdin_fd);
        return false;
    }
    return true;
}

void Process::close_stdin() { close_fd(impl_->stdin_fd); }

std::optional<std::string> Process::read_line(std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    std::unique_lock lock(impl_->mu);
    while (true) {
        auto nl = impl_->out.find('\n');
        if (nl != std::string::npos) {
            std::string line = impl_->out.substr(0, nl);
            impl_->out.erase(0, nl + 1);
            return line;
        }
        if (impl_->drained) {
            if (impl_->out.empty())
                return std::nullopt;
            std::string last = std::move(impl_->out); // a final line without a newline
            impl_->out.clear();
            return last;
        }
        if (impl_->cv.wait_until(lock, deadline) == std::cv_status::timeout &&
            impl_->out.find('\n') == std::string::npos && !impl_->drained)
            return std::nullopt;
    }
}

std::optional<std::string> Process::wait_for_line(const std::string &needle,
                                                  std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        auto line = read_line(left.count() > 0 ? left : std::chrono::milliseconds(0));
        if (!line)
            return std::nullopt;
        if (line->find(needle) != std::string::npos)
            return line;
    }
}

std::string Process::stderr_text() {
    std::lock_guard lock(impl_->mu);
    return impl_->err;
}

bool Process::wait_for_stderr(const std::string &needle, std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->mu);
    return impl_->cv.wait_for(lock, timeout, [&] {
        return impl_->err.find(needle) != std::string::npos || impl_->drained;
    }) && impl_->err.find(needle) != std::string::npos;
}

std::string Process::read_all(std::chrono::milliseconds timeout) {
    std::unique_lock lock(impl_->mu);
    impl_->cv.wait_for(lock, timeout, [&] { return impl_->drained; });
    std::string all = std::move(impl_->out);
    impl_->out.clear();
    return all;
}

void Process::signal(int sig) {
    // Only an unreaped pid is ours: after waitpid the number may belong to anyone. The lock
    // keeps another thread from reaping between the check and the kill.
    std::lock_guard lock(impl_->reap_mu);
    if (!impl_->status)
        ::kill(impl_->pid, sig);
}

std::optional<int> Process::wait(std::chrono::milliseconds timeout) {
    if (!impl_->reap(timeout))
        return std::nullopt;
    std::lock_guard lock(impl_->reap_mu);
    return impl_->status;
}

void Process::stop(std::chrono::milliseconds grace) {
    if (impl_->try_reap())
        return;
    signal(SIGTERM);
    if (!impl_->reap(grace)) {
        signal(SIGKILL);
        impl_->reap(std::chrono::milliseconds(-1));
    }
}

RunResult finish(Process &p, std::chrono::milliseconds timeout) {
    RunResult r;
    const auto code = p.wait(timeout);
    if (!code)
        p.stop(2s);
    else if (*code < 128)
        r.exit_code = *code;
    r.out = p.read_all(0ms); // complete: the child has been reaped
    r.err = p.stderr_text();
    return r;
}

std::optional<std::filesystem::path> find_tool(const std::string &name) {
    if (name.find('/') != std::string::npos)
        return ::access(name.c_str(), X_OK) == 0 ? std::optional<std::filesystem::path>(name)
                                                  : std::nullopt;
    std::vector<std::string> dirs;
    if (const char *path = std::getenv("PATH")) {
        std::istringstream in(path);
        for (std::string d; std::getline(in, d, ':');)
            if (!d.empty())
                dirs.push_back(d);
    }
    for (const char *d : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"})
        dirs.emplace_back(d);
    for (const auto &d : dirs) {
        const std::filesystem::path p = std::filesystem::path(d) / name;
        if (::access(p.c_str(), X_OK) == 0)
            return p;
    }
    return std::nullopt;
}

namespace {

// The first line of a small file (a /proc entry), without its newline; empty if unreadable.
std::string first_line(const std::filesystem::path &p) {
    std::ifstream in(p);
    std::string line;
    std::getline(in, line);
    return line;
}

} // namespace

std::string thread_states(pid_t pid) {
    namespace fs = std::filesystem;
    std::string out;
    std::error_code ec;
    for (const auto &task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
        // stat: "tid (comm) S ..."; the name may hold spaces, the state follows its ')'.
        const std::string stat = first_line(task.path() / "stat");
        const auto close = stat.rfind(')');
        std::string state = "?", utime = "?", stime = "?";
        if (close != std::string::npos) {
            // After ')': state (field 3) ... utime (14), stime (15).
            std::istringstream f(stat.substr(close + 2));
            std::vector<std::string> fields{std::istream_iterator<std::string>(f), {}};
            if (fields.size() > 12) {
                state = fields[0];
                utime = fields[11];
                stime = fields[12];
            }
        }
        out += "  " + task.path().filename().string() + " " + first_line(task.path() / "comm") + " " + state +
               " utime=" + utime + " stime=" + stime + " wchan=" + first_line(task.path() / "wchan") +
               " syscall=" + first_line(task.path() / "syscall") + "\n";
    }
    return out.empty() ? "  (no such process)\n" : out;
}

std::vector<pid_t> threads_named(pid_t pid, const std::string &name) {
    std::vector<pid_t> out;
    std::error_code ec;
    for (const auto &task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec))
        if (first_line(task.path() / "comm") == name)
            out.push_back(static_cast<pid_t>(std::stol(task.path().filename().string())));
    return out;
}

std::string unique_name(const std::string &prefix) {
    static std::atomic<unsigned> counter{0};
    std::random_device rd;
    std::ostringstream s;
    s << prefix << "-" << ::getpid() << "-" << counter++ << "-" << std::hex << rd();
    return s.str();
}

bool left_by_dead_process(const std::string &name, const std::string &prefix) {
    if (!name.starts_with(prefix))
        return false;
    const std::string rest = name.substr(prefix.size());
    const auto end = rest.find_first_not_of("0123456789");
    if (end == 0 || end > 9) // no pid, or more digits than a pid has
        return false;
    const auto pid = static_cast<pid_t>(std::stol(rest.substr(0, end)));
    return pid != ::getpid() && ::kill(pid, 0) < 0 && errno == ESRCH;
}

std::filesystem::path make_scratch_dir(const std::string &prefix, bool in_memory) {
    const char *tmp = std::getenv("TMPDIR");
    struct statfs shm {};
    const bool shm_ok = in_memory && ::statfs("/dev/shm", &shm) == 0 && shm.f_type == TMPFS_MAGIC &&
                        ::access("/dev/shm", W_OK) == 0;
    const std::string root = tmp && *tmp ? tmp : shm_ok ? "/dev/shm" : "/tmp";
    std::string tmpl = root + "/" + prefix + "-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
        throw_errno("mkdtemp " + tmpl);
    return tmpl;
}

} // namespace mcastd::sim
