// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The real rdma-mcastd on a host of the Ethernet bed (doc/ethernet-bed.md §9), the one harness
// every bed test starts it with. It runs in the host's network namespace (EthernetBed::spawn_on,
// so the bed stops it before the namespaces go) with its config, socket, notify socket, state
// directory and fake sysfs under <scratch>/daemon-h<host>; it is ready when it says READY=1 to
// its ServiceManager (service_manager.hpp: systemd's part, with or without an fd store), no
// polling. Its RoCE port is the host's fake RDMA device, which publish() replaces as the kernel
// would. Its clients are rdma-mcastctl processes in a namespace of the bed, as root or as a user
// a test made (tests/sim/test_users.hpp).
//
// One BedDaemon is one service: start() again after kill9(), hand_over() or stop() runs the
// next instance with the same state directory, config and store, as a service manager does.
//
// Optionally attached to a node of a simulated InfiniBand fabric as well (umad2sim, as
// tests/sim does): one daemon serving an InfiniBand port and a RoCE port at once. ibsim's sockets
// are abstract, which a network namespace hides: that fabric must run in the same host's
// namespace (sim::Fabric::Options::netns).
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ethernet/ethernet_bed.hpp"
#include "ethernet/service_manager.hpp"
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
        // The service manager keeps a file descriptor store ($FDSTORE, FDSTORE=1), handed to each
        // next instance as LISTEN_FDS; without, it closes what it is sent (FileDescriptorStoreMax=0).
        bool fd_store = false;
        // How long the first instance may take to say READY=1 (a start takes well under a second;
        // the margin is for two busy cores).
        std::chrono::milliseconds ready_timeout = std::chrono::seconds(30);
    };

    // Starts the first instance in host `host`'s namespace, its discovery pointed at the host's
    // fake device (bed.rdma_device(host), published), and waits for READY=1. Throws
    // std::runtime_error with its stderr otherwise.
    BedDaemon(EthernetBed &bed, int host, Options opts);
    BedDaemon(EthernetBed &bed, int host);
    ~BedDaemon(); // stops a running instance (SIGTERM, then SIGKILL)
    BedDaemon(const BedDaemon &) = delete;
    BedDaemon &operator=(const BedDaemon &) = delete;

    // ---- Instances ----
    // Starts the next instance (with what the manager stores, as LISTEN_FDS, LISTEN_FDNAMES and
    // LISTEN_PID) and waits for its READY=1; throws std::runtime_error with its stderr when it
    // does not come within `timeout`. The previous instance must have ended.
    void start(std::chrono::milliseconds timeout = std::chrono::seconds(30));
    // kill -9 (a crash), and reaps it.
    void kill9();
    // SIGUSR2 (the unit's RestartKillSignal=): a planned restart's first half; waits for the exit.
    std::optional<int> hand_over(std::chrono::milliseconds timeout = std::chrono::seconds(20));
    // SIGTERM, and waits for the exit: its code, nullopt on timeout.
    std::optional<int> stop(std::chrono::milliseconds timeout = std::chrono::seconds(20));
    // The current (or last) instance.
    Process &process() { return *proc_; }
    ServiceManager &manager() { return manager_; }

    // ---- Its port ----
    // Replaces the device's tree as the daemon reads it: the device's entry in the fake
    // /sys/class/infiniband is a symbolic link (as in sysfs) to a tree written anew each time,
    // swapped by one rename(2), so that the daemon's watch never reads a tree half written.
    void publish(const FakeRdmaDevice &dev);
    // The RoCE port's device: "rxe<host>", port 1.
    const std::string &device() const { return device_; }

    // ---- Its files ----
    const std::filesystem::path &socket() const { return socket_; }
    // Rewrite it and send SIGHUP to reload.
    const std::filesystem::path &config() const { return config_; }
    const std::filesystem::path &state_dir() const { return state_dir_; }

    // ---- Its clients ----
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
    int host_;
    std::string device_;
    std::filesystem::path dir_, socket_, config_, state_dir_, sysfs_;
    std::vector<std::string> args_;           // after the binary, the same for every instance
    std::map<std::string, std::string> env_;  // umad2sim's, under a fabric
    int versions_ = 0;                        // trees publish() has written
    ServiceManager manager_;
    Process *proc_ = nullptr; // the bed's
};

} // namespace mcastd::eth
