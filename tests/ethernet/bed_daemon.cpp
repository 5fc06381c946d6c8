// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/bed_daemon.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace mcastd::eth {

namespace fs = std::filesystem;

BedDaemon::BedDaemon(EthernetBed &bed, int host) : BedDaemon(bed, host, Options{}) {}

BedDaemon::BedDaemon(EthernetBed &bed, int host, Options opts)
    : bed_(bed), device_(bed.rdma_device(host).name) {
    const fs::path dir = bed.scratch() / ("daemon-h" + std::to_string(host));
    state_dir_ = dir / "state";
    fs::create_directories(state_dir_);
    nlohmann::json config = nlohmann::json::parse(opts.config_json);
    if (!opts.socket_group.empty())
        config["socket_group"] = opts.socket_group;
    std::vector<std::string> args{"--sysfs-root", (bed.write_sysfs(host) / "class" / "infiniband").string(),
                                  "--state-dir", state_dir_.string()};
    args.insert(args.end(), opts.extra_args.begin(), opts.extra_args.end());
    // Under umad2sim the daemon finds the simulated node's InfiniBand port through libibumad as
    // well (doc/architecture.md §6.2: the two sources combined).
    std::map<std::string, std::string> env;
    if (opts.fabric)
        env = opts.fabric->node_env(opts.node);
    daemon_ = std::make_unique<sim::Daemon>(
        [&](std::vector<std::string> argv, std::map<std::string, std::string> e) -> Process & {
            return bed.spawn_on(host, std::move(argv), false, std::move(e));
        },
        dir, bed.host_ns(host), config.dump(), std::move(args), std::move(env));
    if (!opts.socket_group.empty())
        sim::make_reachable(daemon_->socket(), bed.scratch());
}

BedDaemon::~BedDaemon() = default;

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
