// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/managed_daemon.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace mcastd::eth {

namespace {

// The value of `key=` among the datagram's lines, or "" (and `found` false).
std::string field(const std::string &text, const std::string &key, bool *found = nullptr) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(key + "=", 0) == 0) {
            if (found)
                *found = true;
            return line.substr(key.size() + 1);
        }
    if (found)
        *found = false;
    return {};
}

} // namespace

ServiceManager::ServiceManager(std::filesystem::path path, bool store) : store_(store) {
    notify_ = std::make_unique<sim::NotifySocket>(
        std::move(path), [this](const std::string &text, std::vector<int> &fds) { handle(text, fds); });
}

ServiceManager::~ServiceManager() {
    notify_.reset(); // its thread first
    for (const auto &[name, fd] : stored_)
        ::close(fd);
}

void ServiceManager::handle(const std::string &text, std::vector<int> &fds) {
    std::lock_guard lock(mu_);
    bool fdstore = false, remove = false;
    field(text, "FDSTORE", &fdstore);
    field(text, "FDSTOREREMOVE", &remove);
    const std::string name = field(text, "FDNAME");
    if (fdstore && store_) {
        for (int fd : fds)
            stored_.emplace_back(name.empty() ? "stored" : name, fd);
        fds.clear();
    }
    if (remove)
        std::erase_if(stored_, [&](const auto &s) {
            if (s.first != name)
                return false;
            ::close(s.second);
            return true;
        });
}

bool ServiceManager::wait_for(const std::string &line, std::chrono::milliseconds timeout) {
    return notify_->wait_for(line, timeout).has_value();
}

std::vector<std::string> ServiceManager::stored_names() {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto &[name, fd] : stored_)
        out.push_back(name);
    return out;
}

std::vector<std::pair<std::string, int>> ServiceManager::pass() {
    std::lock_guard lock(mu_);
    std::vector<std::pair<std::string, int>> out;
    for (const auto &[name, fd] : stored_) {
        const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (copy < 0)
            throw std::system_error(errno, std::generic_category(), "F_DUPFD_CLOEXEC of stored " + name);
        out.emplace_back(name, copy);
    }
    return out;
}

ManagedDaemon::ManagedDaemon(EthernetBed &bed, int host, ServiceManager &manager)
    : bed_(bed), host_(host), manager_(manager) {
    dir_ = bed.scratch() / ("daemon-h" + std::to_string(host));
    std::filesystem::create_directories(dir_);
    socket_ = dir_ / "mcastd.sock";
    config_ = dir_ / "rdma-mcastd.json";
    state_dir_ = dir_ / "state";
    std::filesystem::create_directories(state_dir_);
    ::chmod(state_dir_.c_str(), 0700); // the daemon's alone (doc/architecture.md §9)
    std::ofstream(config_) << R"({"dbus": {"enabled": false}, "ports": [")" << device() << R"(/1"]})";
    sysfs_ = bed.write_sysfs(host) / "class" / "infiniband";
}

ManagedDaemon::~ManagedDaemon() {
    if (proc_ && proc_->running())
        kill9();
}

void ManagedDaemon::start(std::chrono::milliseconds timeout) {
    std::vector<std::pair<std::string, int>> passed = manager_.pass();
    std::map<std::string, std::string> env{{"NOTIFY_SOCKET", manager_.path().string()}};
    if (manager_.stores())
        env["FDSTORE"] = "256";
    std::vector<int> fds;
    std::string names;
    for (const auto &[name, fd] : passed) {
        fds.push_back(fd);
        names += (names.empty() ? "" : ":") + name;
    }
    if (!fds.empty()) {
        env["LISTEN_FDS"] = std::to_string(fds.size());
        env["LISTEN_FDNAMES"] = names;
    }
    // `ip netns exec` runs the command in its own process; LISTEN_PID must be the daemon's.
    proc_ = std::make_unique<Process>(Process::Options{
        .argv = {"ip", "netns", "exec", bed_.host_ns(host_), "sh", "-c",
                 "LISTEN_PID=$$; export LISTEN_PID; exec \"$0\" \"$@\"", MCASTD_DAEMON, "--config", config_.string(),
                 "--socket", socket_.string(), "--state-dir", state_dir_.string(), "--log-target", "console",
                 "--sysfs-root", sysfs_.string()},
        .env = env,
        .pass_fds = fds});
    for (int fd : fds)
        ::close(fd);
    if (!manager_.wait_for("READY=1", timeout))
        throw std::runtime_error("rdma-mcastd on host " + std::to_string(host_) + " did not say READY=1: " +
                                 proc_->stderr_text());
}

void ManagedDaemon::kill9() {
    proc_->signal(SIGKILL);
    proc_->wait(std::chrono::seconds(10));
}

std::optional<int> ManagedDaemon::hand_over(std::chrono::milliseconds timeout) {
    proc_->signal(SIGUSR2);
    return proc_->wait(timeout);
}

std::optional<int> ManagedDaemon::stop(std::chrono::milliseconds timeout) {
    proc_->signal(SIGTERM);
    return proc_->wait(timeout);
}

} // namespace mcastd::eth
