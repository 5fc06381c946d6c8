// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sim/daemon_harness.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "restart/change_log.hpp"
#include "scm_rights.hpp"

namespace mcastd::sim {

namespace {

sockaddr_un unix_address(const std::filesystem::path &p) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    const std::string s = p.string();
    if (s.size() >= sizeof a.sun_path)
        throw std::runtime_error("socket path too long: " + s);
    std::memcpy(a.sun_path, s.c_str(), s.size() + 1);
    return a;
}

bool readable(int fd, std::chrono::milliseconds timeout) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
}

} // namespace

NotifySocket::NotifySocket(std::filesystem::path path, OnDatagram on_datagram)
    : path_(std::move(path)), on_datagram_(std::move(on_datagram)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const sockaddr_un a = unix_address(path_);
    std::filesystem::remove(path_);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<const sockaddr *>(&a), sizeof a) < 0)
        throw std::system_error(errno, std::generic_category(), "notify socket " + path_.string());
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
    if (stop_fd_ < 0)
        throw std::system_error(errno, std::generic_category(), "eventfd");
    drainer_ = std::thread([this] { drain(); });
}

NotifySocket::~NotifySocket() {
    const std::uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof one);
    drainer_.join();
    ::close(stop_fd_);
    ::close(fd_);
    std::error_code ec;
    std::filesystem::remove(path_, ec);
}

void NotifySocket::drain() {
    for (;;) {
        pollfd p[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        if (::poll(p, 2, -1) < 0 && errno != EINTR)
            return;
        if (p[1].revents)
            return;
        if (!(p[0].revents & POLLIN))
            continue;
        char buf[4096];
        test::ScmRightsMessage<16> m(buf, sizeof buf);
        const ssize_t n = ::recvmsg(fd_, &m.msg, MSG_CMSG_CLOEXEC);
        if (n < 0)
            continue;
        std::vector<int> fds = m.fds();
        std::string text(buf, static_cast<std::size_t>(n));
        if (on_datagram_)
            on_datagram_(text, fds);
        for (int fd : fds) // a BARRIER=1's pipe, or a store nobody keeps
            ::close(fd);
        std::lock_guard lock(mu_);
        received_.push_back(std::move(text));
        arrived_.notify_all();
    }
}

std::optional<std::string> NotifySocket::next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    if (!arrived_.wait_for(lock, timeout, [&] { return !received_.empty(); }))
        return std::nullopt;
    std::string msg = std::move(received_.front());
    received_.pop_front();
    return msg;
}

std::optional<std::string> NotifySocket::wait_for(const std::string &line, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            return std::nullopt;
        auto msg = next(left);
        if (!msg)
            return std::nullopt;
        std::istringstream in(*msg);
        for (std::string l; std::getline(in, l);)
            if (l == line)
                return msg;
    }
}

FdStore::~FdStore() {
    for (const auto &[name, fd] : fds_)
        ::close(fd);
}

NotifySocket::OnDatagram FdStore::keeper() {
    return [this](const std::string &text, std::vector<int> &fds) {
        std::map<std::string, std::string> kv;
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);)
            if (const auto eq = line.find('='); eq != std::string::npos)
                kv[line.substr(0, eq)] = line.substr(eq + 1);
        const std::string name = kv.count("FDNAME") ? kv["FDNAME"] : "stored";
        std::lock_guard lock(mu_);
        if (kv["FDSTOREREMOVE"] == "1") {
            if (const auto it = fds_.find(name); it != fds_.end()) {
                ::close(it->second);
                fds_.erase(it);
            }
        } else if (kv["FDSTORE"] == "1" && !fds.empty()) {
            if (const auto it = fds_.find(name); it != fds_.end())
                ::close(it->second); // systemd keeps the newer one under a name too
            fds_[name] = fds.front();
            fds.erase(fds.begin());
        }
    };
}

std::vector<std::pair<std::string, int>> FdStore::held() const {
    std::lock_guard lock(mu_);
    return {fds_.begin(), fds_.end()};
}

std::size_t FdStore::size() const {
    std::lock_guard lock(mu_);
    return fds_.size();
}

std::vector<int> FdStore::listen_fds(std::map<std::string, std::string> &env) const {
    std::vector<int> fds;
    std::string names;
    for (const auto &[name, fd] : held()) {
        names += (names.empty() ? "" : ":") + name;
        fds.push_back(fd);
    }
    if (!fds.empty()) {
        env["LISTEN_FDS"] = std::to_string(fds.size());
        env["LISTEN_FDNAMES"] = names;
    }
    return fds;
}

RawClient::RawClient(const std::filesystem::path &socket) {
    fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    const sockaddr_un a = unix_address(socket);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr *>(&a), sizeof a) < 0)
        throw std::system_error(errno, std::generic_category(), "connect " + socket.string());
}

RawClient::~RawClient() { ::close(fd_); }

void RawClient::send(const std::string &message) {
    if (::send(fd_, message.data(), message.size(), MSG_NOSIGNAL) < 0)
        throw std::system_error(errno, std::generic_category(), "send");
}

std::optional<std::string> RawClient::receive(std::chrono::milliseconds timeout) {
    if (!readable(fd_, timeout))
        return std::nullopt;
    // Peek at the size first: replies such as `list` can be larger than any fixed buffer.
    const ssize_t size = ::recv(fd_, nullptr, 0, MSG_PEEK | MSG_TRUNC);
    if (size <= 0)
        return std::nullopt;
    std::string buf(static_cast<std::size_t>(size), '\0');
    const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
    if (n <= 0)
        return std::nullopt;
    buf.resize(static_cast<std::size_t>(n));
    return buf;
}

std::string RawClient::call(const std::string &message, long long id, std::chrono::milliseconds timeout) {
    send(message);
    const std::string want = "\"id\":" + std::to_string(id) + ",";
    const std::string want_end = "\"id\":" + std::to_string(id) + "}";
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        auto m = receive(std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()));
        if (!m)
            break;
        if (m->find(want) != std::string::npos || m->find(want_end) != std::string::npos)
            return *m;
    }
    throw std::runtime_error("no reply with id " + std::to_string(id) + " to " + message);
}

void RawClient::hello() {
    const std::string r = call(R"({"id":0,"op":"hello","versions":[1]})", 0);
    if (r.find("\"ok\":true") == std::string::npos)
        throw std::runtime_error("hello failed: " + r);
}

std::optional<restart::SavedState> saved_state(const std::filesystem::path &state_dir) {
    // Read as the next instance would, without its side effects (nothing is renamed).
    auto decoded = restart::decode(read_text_file(state_dir / "state.json"));
    auto *st = std::get_if<restart::SavedState>(&decoded);
    if (!st)
        return std::nullopt;
    const std::string log_text = read_text_file(state_dir / "state.log");
    if (log_text.empty())
        return std::move(*st);
    auto log = restart::decode_log(log_text);
    if (auto *l = std::get_if<restart::ChangeLog>(&log); l && l->generation == st->generation)
        restart::replay(*st, l->changes);
    return std::move(*st);
}

bool wait_saved_memberships(const std::filesystem::path &state_dir, std::size_t n,
                            std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        std::size_t count = 0;
        if (const auto st = saved_state(state_dir))
            for (const restart::SavedSession &s : st->sessions)
                count += s.memberships.size();
        if (count == n)
            return true;
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2)); // no notification of an append
    }
}

std::string daemon_binary() {
    // MCASTD_DAEMON_BINARY: another build of the daemon, to compare builds in one run.
    const char *binary = std::getenv("MCASTD_DAEMON_BINARY");
    return binary && *binary ? binary : MCASTD_DAEMON;
}

Daemon::Daemon(Fabric &fabric, const std::string &node, const std::string &config_json,
               std::vector<std::string> extra_args, std::map<std::string, std::string> extra_env, FdStore *store)
    : Daemon(
          [&](std::vector<std::string> argv, std::map<std::string, std::string> env) -> Process & {
              std::vector<int> fds = store ? store->listen_fds(env) : std::vector<int>{};
              return fabric.spawn_on(node, std::move(argv), std::move(env), false, std::move(fds));
          },
          fabric.scratch() / ("daemon-" + node), node, config_json, std::move(extra_args), std::move(extra_env),
          store) {}

Daemon::Daemon(const Spawn &spawn, const std::filesystem::path &dir, const std::string &where,
               const std::string &config_json, std::vector<std::string> extra_args,
               std::map<std::string, std::string> extra_env, FdStore *store) {
    std::filesystem::create_directories(dir);
    socket_ = dir / "mcastd.sock";
    notify_ = std::make_unique<NotifySocket>(dir / "notify.sock",
                                             store ? store->keeper() : NotifySocket::OnDatagram{});
    if (store)
        extra_env["FDSTORE"] = "4096";
    config_ = dir / "rdma-mcastd.json";
    std::ofstream(config_) << config_json;
    std::vector<std::string> argv{daemon_binary(), "--config", config_.string(), "--socket", socket_.string()};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    extra_env["NOTIFY_SOCKET"] = notify_->path().string();
    proc_ = &spawn(std::move(argv), std::move(extra_env));
    if (auto ready = notify_->wait_for("READY=1", std::chrono::seconds(30)))
        ready_ = std::move(*ready);
    else
        throw std::runtime_error("rdma-mcastd on " + where + " never said READY=1: " + proc_->stderr_text());
}

Daemon::~Daemon() {
    if (proc_)
        proc_->stop();
}

std::optional<int> Daemon::stop(std::chrono::milliseconds timeout) {
    proc_->signal(SIGTERM);
    return proc_->wait(timeout);
}

} // namespace mcastd::sim
