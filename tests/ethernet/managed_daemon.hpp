// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastd on an Ethernet bed host (doc/ethernet-bed.md §3), with what systemd would give
// it: a notify socket and, when asked, a file descriptor store. The bed has no service manager,
// so ServiceManager plays its part: over the sim tier's NotifySocket it reads the daemon's
// sd_notify datagrams (READY=1, STOPPING=1), keeps the descriptors sent with FDSTORE=1 under
// their FDNAME= until FDSTOREREMOVE=1, closes a BARRIER=1's, and hands what it keeps to the
// next instance as LISTEN_FDS / LISTEN_FDNAMES (sd_listen_fds_with_names(3)), as
// `systemctl restart` and Restart=on-failure do.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ethernet/ethernet_bed.hpp"
#include "sim/daemon_harness.hpp"

namespace mcastd::eth {

class ServiceManager {
public:
    // Binds the notify socket at `path`. With `store` it keeps FDSTORE=1 descriptors (and the
    // daemon is told so by $FDSTORE); without, it closes them as systemd does with
    // FileDescriptorStoreMax=0.
    ServiceManager(std::filesystem::path path, bool store);
    ~ServiceManager(); // closes what it stores
    ServiceManager(const ServiceManager &) = delete;
    ServiceManager &operator=(const ServiceManager &) = delete;

    const std::filesystem::path &path() const { return notify_->path(); }
    bool stores() const { return store_; }
    // Reads the datagrams until one has `line` as one of its lines (the next READY=1).
    bool wait_for(const std::string &line, std::chrono::milliseconds timeout);
    // The stored descriptors' names, in the order they were stored.
    std::vector<std::string> stored_names();
    // Copies of the stored descriptors with their names, for the next instance (the store
    // keeps its own). The caller closes the copies.
    std::vector<std::pair<std::string, int>> pass();

private:
    void handle(const std::string &text, std::vector<int> &fds);

    bool store_;
    std::mutex mu_;
    std::vector<std::pair<std::string, int>> stored_; // under mu_
    std::unique_ptr<sim::NotifySocket> notify_;       // last: its thread calls handle()
};

// One rdma-mcastd serving host `host`'s fake RDMA device (rxe<host>/1 on its veth) in the host's
// namespace, with a state directory, its socket and config under <scratch>/daemon-h<host>.
// Each start() is a new instance of the same daemon: the state directory and the manager's
// store carry over.
class ManagedDaemon {
public:
    ManagedDaemon(EthernetBed &bed, int host, ServiceManager &manager);
    ~ManagedDaemon(); // SIGKILL, if it still runs

    // Starts an instance (with what the manager stores, as LISTEN_FDS) and waits for READY=1;
    // throws std::runtime_error with its stderr when it does not come within `timeout`.
    void start(std::chrono::milliseconds timeout = std::chrono::seconds(20));
    // kill -9, and reaps it.
    void kill9();
    // SIGUSR2 (the unit's RestartKillSignal=): a planned restart's first half; waits for the exit.
    std::optional<int> hand_over(std::chrono::milliseconds timeout = std::chrono::seconds(20));
    // SIGTERM, and waits for the exit.
    std::optional<int> stop(std::chrono::milliseconds timeout = std::chrono::seconds(20));

    Process &process() { return *proc_; }
    const std::filesystem::path &socket() const { return socket_; }
    const std::filesystem::path &state_dir() const { return state_dir_; }
    std::string device() const { return "rxe" + std::to_string(host_); }

private:
    EthernetBed &bed_;
    int host_;
    ServiceManager &manager_;
    std::filesystem::path dir_, socket_, config_, state_dir_, sysfs_;
    std::unique_ptr<Process> proc_;
};

} // namespace mcastd::eth
