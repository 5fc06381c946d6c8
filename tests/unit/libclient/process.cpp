// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

extern char **environ;

namespace fake {

namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Appends what is readable on `fd` to `buf`; false at EOF.
bool drain(int fd, std::string &buf) {
    char chunk[4096];
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
        buf.append(chunk, static_cast<std::size_t>(n));
        return true;
    }
    return n < 0 && (errno == EAGAIN || errno == EINTR);
}

} // namespace

Child::Child(const std::vector<std::string> &args,
             const std::map<std::string, std::optional<std::string>> &env) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) < 0 || ::pipe2(err, O_CLOEXEC) < 0)
        throw std::runtime_error("pipe2");

    std::map<std::string, std::string> vars;
    for (char **e = environ; *e; ++e) {
        std::string kv = *e;
        auto eq = kv.find('=');
        if (eq != std::string::npos)
            vars[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto &[k, v] : env) {
        if (v)
            vars[k] = *v;
        else
            vars.erase(k);
    }
    std::vector<std::string> env_strings;
    for (const auto &[k, v] : vars)
        env_strings.push_back(k + "=" + v);
    std::vector<char *> envp, argv;
    for (auto &s : env_strings)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args_copy = args;
    for (auto &a : args_copy)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
    // The child starts with default dispositions and nothing blocked, whatever the test's
    // thread has.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGINT);
    sigaddset(&dflt, SIGTERM);
    sigaddset(&dflt, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dflt);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    int rc = posix_spawn(&pid_, argv[0], &fa, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(out[1]);
    ::close(err[1]);
    out_ = out[0];
    err_ = err[0];
    if (rc != 0)
        throw std::runtime_error(std::string("posix_spawn ") + args.at(0) + ": " + std::strerror(rc));
    ::fcntl(out_, F_SETFL, O_NONBLOCK);
    ::fcntl(err_, F_SETFL, O_NONBLOCK);
}

Child::~Child() {
    if (!reaped_ && pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    ::close(out_);
    ::close(err_);
}

std::optional<std::string> Child::read_line(int timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        auto nl = out_buf_.find('\n');
        if (nl != std::string::npos) {
            std::string line = out_buf_.substr(0, nl);
            out_buf_.erase(0, nl + 1);
            return line;
        }
        pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
        int n = ::poll(fds, 2, remaining_ms(deadline));
        if (n <= 0)
            return std::nullopt;
        if (fds[1].revents)
            drain(err_, err_buf_);
        if (fds[0].revents && !drain(out_, out_buf_))
            return std::nullopt;
    }
}

void Child::signal(int sig) { ::kill(pid_, sig); }

Finished Child::wait(int timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    bool out_open = true, err_open = true;
    while (out_open || err_open) {
        pollfd fds[2] = {{out_open ? out_ : -1, POLLIN, 0}, {err_open ? err_ : -1, POLLIN, 0}};
        int n = ::poll(fds, 2, remaining_ms(deadline));
        if (n == 0) {
            ::kill(pid_, SIGKILL); // hung: fail the test rather than the whole run
            break;
        }
        if (fds[0].revents)
            out_open = drain(out_, out_buf_);
        if (fds[1].revents)
            err_open = drain(err_, err_buf_);
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    Finished f;
    f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    f.out = std::move(out_buf_);
    f.err = std::move(err_buf_);
    return f;
}

Finished run(const std::vector<std::string> &args,
             const std::map<std::string, std::optional<std::string>> &env) {
    Child c(args, env);
    return c.wait();
}

} // namespace fake
