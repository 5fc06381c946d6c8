// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The real rdma-mcastd on a host of the Ethernet bed (doc/ethernet-bed.md §9): started inside
// the host's network namespace by the sim tier's daemon harness (tests/sim/daemon_harness.hpp:
// its own config, socket, notify socket and state directory, here in the bed's scratch
// directory; ready when it says READY=1, no polling), its RoCE port the host's fake RDMA device
// (--sysfs-root). Its clients are rdma-mcastctl processes in a namespace of the bed, as root or
// as a user a test made (tests/sim/test_users.hpp).
//
// Optionally attached to a node of a simulated InfiniBand fabric as well (umad2sim, as
// tests/sim does): one daemon serving an InfiniBand port and a RoCE port at once. ibsim's sockets
// are abstract, which a network namespace hides: that fabric must run in the same host's
// namespace (sim::Fabric::Options::netns).
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ethernet/ethernet_bed.hpp"
#include "sim/daemon_harness.hpp"
#include "sim/test_users.hpp"

namespace mcastd::eth {

class BedDaemon {
public:
    struct Options {
        // The daemon's config; the harness adds "socket_group" when it is set.
        std::string config_json = "{}";
        // The group whose members (besides root) may use the socket: tests/sim/test_users.hpp's.
        std::string socket_group{};
        std::vector<std::string> extra_args{};
        // Also attached to this node of a simulated InfiniBand fabric (nullptr: a RoCE-only host).
        sim::Fabric *fabric = nullptr;
        std::string node{};
    };

    // Starts the daemon in host `host`'s namespace, its discovery pointed at the host's fake
    // device (EthernetBed::write_sysfs), and waits for READY=1. Throws with its stderr otherwise.
    BedDaemon(EthernetBed &bed, int host, Options opts);
    BedDaemon(EthernetBed &bed, int host);
    ~BedDaemon();
    BedDaemon(const BedDaemon &) = delete;
    BedDaemon &operator=(const BedDaemon &) = delete;

    sim::Daemon &daemon() { return *daemon_; }
    const std::filesystem::path &socket() const { return daemon_->socket(); }
    const std::filesystem::path &state_dir() const { return state_dir_; }
    // The RoCE port's device: "rxe<host>", port 1.
    const std::string &device() const { return device_; }

    // --device rxe<host> --port 1, then `more`: a join on this daemon's RoCE port.
    std::vector<std::string> on_port(std::vector<std::string> more) const;
    // rdma-mcastctl --json COMMAND ARGS in namespace `client_host` (this daemon's host, or another
    // bed host standing for a container on it), as `user` (nullptr: root).
    std::vector<std::string> ctl_argv(const sim::TestUser *user, const std::string &command,
                                      std::vector<std::string> args) const;
    RunResult ctl(int client_host, const sim::TestUser *user, const std::string &command,
                  std::vector<std::string> args);
    // `rdma-mcastctl --json join ... --hold` in `client_host`, returned once it printed one
    // record per group (`records`): its memberships are held then. Throws with its stderr when
    // it did not.
    Process &hold(int client_host, const sim::TestUser *user, std::vector<std::string> join_args,
                  std::size_t records = 1, std::chrono::milliseconds timeout = std::chrono::seconds(30));

private:
    EthernetBed &bed_;
    std::string device_;
    std::filesystem::path state_dir_;
    std::unique_ptr<sim::Daemon> daemon_;
};

} // namespace mcastd::eth
