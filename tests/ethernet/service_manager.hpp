// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What systemd would give rdma-mcastd on an Ethernet bed host (doc/ethernet-bed.md §9): a
// notify socket and, when asked, a file descriptor store. The bed has no service manager, so
// ServiceManager plays its part for BedDaemon (bed_daemon.hpp): over the sim tier's
// NotifySocket it reads the daemon's sd_notify datagrams (READY=1, STOPPING=1), keeps the
// descriptors sent with FDSTORE=1 in the sim tier's FdStore (under their FDNAME= until
// FDSTOREREMOVE=1), closes a BARRIER=1's, and hands what it keeps to the next instance as
// LISTEN_FDS / LISTEN_FDNAMES (sd_listen_fds_with_names(3)), as `systemctl restart` and
// Restart=on-failure do.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/daemon_harness.hpp"

namespace mcastd::eth {

class ServiceManager {
public:
    // Binds the notify socket at `path`. With `store` it keeps FDSTORE=1 descriptors (and the
    // daemon is told so by $FDSTORE); without, it closes them as systemd does with
    // FileDescriptorStoreMax=0.
    ServiceManager(std::filesystem::path path, bool store);
    ~ServiceManager(); // the notify socket's thread first, then the store closes what it holds
    ServiceManager(const ServiceManager &) = delete;
    ServiceManager &operator=(const ServiceManager &) = delete;

    const std::filesystem::path &path() const { return notify_->path(); }
    bool stores() const { return store_ != nullptr; }
    // Reads the datagrams until one has `line` as one of its lines (the next READY=1).
    bool wait_for(const std::string &line, std::chrono::milliseconds timeout);
    // The stored descriptors' names.
    std::vector<std::string> stored_names() const;
    // What the next instance is handed (sim::FdStore::listen_fds; nothing without a store).
    std::vector<int> listen_fds(std::map<std::string, std::string> &env) const;

private:
    std::unique_ptr<sim::FdStore> store_;       // null: FileDescriptorStoreMax=0
    std::unique_ptr<sim::NotifySocket> notify_; // last: its thread stores into store_
};

} // namespace mcastd::eth
