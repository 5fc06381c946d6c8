// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/bed_daemon.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

#include "sim/daemon_harness.hpp"

namespace mcastd::eth {

namespace fs = std::filesystem;

namespace {

// <scratch>/daemon-h<host>, made: the notify socket is bound there before anything else.
fs::path daemon_dir(const EthernetBed &bed, int host) {
    const fs::path dir = bed.scratch() / ("daemon-h" + std::to_string(host));
    fs::create_directories(dir);
    return dir;
}

} // namespace

BedDaemon::BedDaemon(EthernetBed &bed, int host) : BedDaemon(bed, host, Options{}) {}

BedDaemon::BedDaemon(EthernetBed &bed, int host, Options opts)
    : bed_(bed), host_(host), device_(bed.rdma_device(host).name), dir_(daemon_dir(bed, host)),
      socket_(dir_ / "mcastd.sock"), config_(dir_ / "rdma-mcastd.json"), state_dir_(dir_ / "state"),
      sysfs_(dir_ / "sys" / "class" / "infiniband"), manager_(dir_ / "notify.sock", opts.fd_store) {
    fs::create_directories(state_dir_);
    ::chmod(state_dir_.c_str(), 0700); // the daemon's alone (doc/architecture.md §9)
    fs::create_directories(sysfs_);
    publish(bed.rdma_device(host));
    nlohmann::json config = nlohmann::json::parse(opts.config_json);
    if (!opts.socket_group.empty())
        config["socket_group"] = opts.socket_group;
    std::ofstream(config_) << config.dump();
    args_ = {"--config", config_.string(), "--socket", socket_.string(), "--state-dir", state_dir_.string(),
             "--log-target", "console", "--sysfs-root", sysfs_.string()};
    args_.insert(args_.end(), opts.extra_args.begin(), opts.extra_args.end());
    // Under umad2sim the daemon finds the simulated node's InfiniBand port through libibumad as
    // well (doc/architecture.md §6.2: the two sources combined).
    if (opts.fabric)
        env_ = opts.fabric->node_env(opts.node);
    start(opts.ready_timeout);
    if (!opts.socket_group.empty())
        sim::make_reachable(socket_, bed.scratch());
}

BedDaemon::~BedDaemon() {
    if (proc_ && proc_->running())
        proc_->stop();
}

void BedDaemon::start(std::chrono::milliseconds timeout) {
    std::map<std::string, std::string> env = env_;
    env["NOTIFY_SOCKET"] = manager_.path().string();
    if (manager_.stores())
        env["FDSTORE"] = "256";
    // What the store holds, at 3, 4, ...; Process sets LISTEN_PID (`ip netns exec` execs the
    // daemon, so the pid is its own).
    std::vector<int> fds = manager_.listen_fds(env);
    std::vector<std::string> argv{sim::daemon_binary()};
    argv.insert(argv.end(), args_.begin(), args_.end());
    proc_ = &bed_.spawn_on(host_, std::move(argv), false, std::move(env), std::move(fds));
    if (!manager_.wait_for("READY=1", timeout))
        throw std::runtime_error("rdma-mcastd in " + bed_.host_ns(host_) + " did not say READY=1: " +
                                 proc_->stderr_text());
}

void BedDaemon::kill9() {
    proc_->signal(SIGKILL);
    proc_->wait(std::chrono::seconds(10));
}

std::optional<int> BedDaemon::hand_over(std::chrono::milliseconds timeout) {
    proc_->signal(SIGUSR2);
    return proc_->wait(timeout);
}

std::optional<int> BedDaemon::stop(std::chrono::milliseconds timeout) {
    proc_->signal(SIGTERM);
    return proc_->wait(timeout);
}

void BedDaemon::publish(const FakeRdmaDevice &dev) {
    const fs::path written = dev.write(dir_ / ("v" + std::to_string(++versions_)));
    const fs::path link = sysfs_ / dev.name;
    const fs::path next = link.string() + ".next";
    fs::create_directory_symlink(written, next);
    fs::rename(next, link); // rename(2): atomic, over the old link
}

std::vector<std::string> BedDaemon::on_port(std::vector<std::string> more) const {
    std::vector<std::string> args{"--device", device_, "--port", "1"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

std::vector<std::string> BedDaemon::ctl_argv(const sim::TestUser *user, const std::string &command,
                                             std::vector<std::string> args) const {
    std::vector<std::string> argv{MCASTD_CTL, "--socket", socket().string(), "--json", command};
    argv.insert(argv.end(), args.begin(), args.end());
    return user ? sim::TestUsers::as_user(*user, std::move(argv)) : argv;
}

RunResult BedDaemon::ctl(int client_host, const sim::TestUser *user, const std::string &command,
                         std::vector<std::string> args) {
    return bed_.run_on(client_host, ctl_argv(user, command, std::move(args)));
}

Process &BedDaemon::hold(int client_host, const sim::TestUser *user, std::vector<std::string> join_args,
                         std::size_t records, std::chrono::milliseconds timeout) {
    join_args.push_back("--hold");
    Process &p = bed_.spawn_on(client_host, ctl_argv(user, "join", std::move(join_args)));
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (std::size_t got = 0; got < records; ++got) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
        auto line = p.read_line(std::max(left, std::chrono::milliseconds(1)));
        if (!line || line->find("\"membership\"") == std::string::npos)
            throw std::runtime_error("rdma-mcastctl join --hold in " + bed_.host_ns(client_host) + " printed " +
                                     std::to_string(got) + " of " + std::to_string(records) +
                                     " records, then: " + line.value_or("(nothing)") + " " + p.stderr_text());
    }
    return p;
}

} // namespace mcastd::eth
