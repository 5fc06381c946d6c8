// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastd on a simulated node, for the sim tier: started with its own config and socket in
// the fabric's scratch directory, ready when it says READY=1 on a NOTIFY_SOCKET the harness
// owns (the systemd protocol, so no polling), and talked to over its Unix socket.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>
#include <mutex>
#include <deque>
#include <condition_variable>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "restart/saved_state.hpp"
#include "sim/fabric.hpp"

namespace mcastd::sim {

// A datagram socket that collects sd_notify messages ("READY=1\nSTATUS=...").
//
// A thread reads every datagram as it arrives, as a service manager does: sd_notify() blocks
// once ten datagrams (net.unix.max_dgram_qlen) wait unread, and a daemon whose status changes
// more often than the test asks for them would otherwise hang in it.
class NotifySocket {
public:
    // `on_datagram`, when given, sees each datagram and the descriptors it carried (FDSTORE=1,
    // BARRIER=1) on the reading thread before it is queued; it takes those it keeps out of
    // `fds`, and the rest are closed.
    using OnDatagram = std::function<void(const std::string &text, std::vector<int> &fds)>;
    explicit NotifySocket(std::filesystem::path path, OnDatagram on_datagram = {});
    ~NotifySocket();
    NotifySocket(const NotifySocket &) = delete;
    NotifySocket &operator=(const NotifySocket &) = delete;

    const std::filesystem::path &path() const { return path_; }
    // Next datagram, or nullopt after `timeout`.
    std::optional<std::string> next(std::chrono::milliseconds timeout);
    // Reads datagrams until one contains `line` as one of its lines; returns that datagram.
    std::optional<std::string> wait_for(const std::string &line, std::chrono::milliseconds timeout);

private:
    void drain();

    std::filesystem::path path_;
    int fd_ = -1;
    int stop_fd_ = -1; // eventfd: wakes the drain thread to end
    std::mutex mu_;
    std::condition_variable arrived_;
    std::deque<std::string> received_; // under mu_
    OnDatagram on_datagram_;
    std::thread drainer_;
};

// The service manager's fd store as the daemon uses it under systemd, for a restart that keeps
// its connections outside systemd: the daemon is told its size ($FDSTORE), its FDSTORE=1 and
// FDSTOREREMOVE=1 (with FDNAME=) on the notify socket are kept here, and the next instance
// gets what is stored at 3, 4, ... with LISTEN_FDS, LISTEN_FDNAMES and LISTEN_PID.
class FdStore {
public:
    FdStore() = default;
    ~FdStore(); // closes what it holds
    FdStore(const FdStore &) = delete;
    FdStore &operator=(const FdStore &) = delete;

    // For the NotifySocket of every instance that stores here.
    NotifySocket::OnDatagram keeper();
    // What is stored now, by name.
    std::vector<std::pair<std::string, int>> held() const;
    std::size_t size() const;
    // What the next instance is handed: the stored descriptors, for Process's pass_fds (it
    // places them at 3, 4, ... and sets LISTEN_PID), and LISTEN_FDS and LISTEN_FDNAMES in
    // `env`. Nothing when the store is empty. The store keeps its own.
    std::vector<int> listen_fds(std::map<std::string, std::string> &env) const;

private:
    mutable std::mutex mu_;
    std::map<std::string, int> fds_;
};

// A raw client connection: sends bytes, receives whole messages. No codec, so the tests can
// send exactly the bad input they mean to.
class RawClient {
public:
    explicit RawClient(const std::filesystem::path &socket);
    ~RawClient();
    RawClient(const RawClient &) = delete;
    RawClient &operator=(const RawClient &) = delete;

    void send(const std::string &message);
    // Next message (reply or event), or nullopt on timeout or EOF.
    std::optional<std::string> receive(std::chrono::milliseconds timeout = std::chrono::seconds(10));
    // Sends a request and returns the next message whose "id" equals `id` (events are skipped).
    std::string call(const std::string &message, long long id, std::chrono::milliseconds timeout = std::chrono::seconds(20));
    // hello with version 1; throws unless it succeeds.
    void hello();
    int fd() const { return fd_; }

private:
    int fd_ = -1;
};

// The restart state in `state_dir` as the next instance would read it (the state file and its
// change log replayed), without renaming anything; nullopt without a readable state file.
std::optional<restart::SavedState> saved_state(const std::filesystem::path &state_dir);

// Waits until the restart state in `state_dir` lists exactly `n` memberships (the daemon writes
// a change a few milliseconds after it: its own signal that a crash now keeps them). False
// after `timeout`.
bool wait_saved_memberships(const std::filesystem::path &state_dir, std::size_t n,
                            std::chrono::milliseconds timeout = std::chrono::seconds(10));

// The rdma-mcastd to run: $MCASTD_DAEMON_BINARY when set (another build, to compare builds in
// one sitting), else this build's. Every harness that starts the daemon asks here.
std::string daemon_binary();

class Daemon {
public:
    // Starts rdma-mcastd attached to `node` with `config_json` (the "socket" key is set by
    // the harness) and waits for READY=1. `extra_env` is added to its environment (e.g.
    // WATCHDOG_USEC). $MCASTD_DAEMON_BINARY, when set, names another build of the daemon to run
    // (to compare builds in one sitting).
    // With `store`, the daemon stores in it and is handed what it holds (FdStore).
    Daemon(Fabric &fabric, const std::string &node, const std::string &config_json = "{}",
           std::vector<std::string> extra_args = {}, std::map<std::string, std::string> extra_env = {},
           FdStore *store = nullptr);

    // Starts the daemon's process for the other constructor: argv and environment in, a Process
    // its starter owns (and stops, at the latest, in its own teardown) out.
    using Spawn = std::function<Process &(std::vector<std::string> argv, std::map<std::string, std::string> env)>;
    // The same anywhere a process can be started (a host of the Ethernet bed, tests/ethernet):
    // config, socket and notify socket in `dir`, `where` names the place in messages.
    Daemon(const Spawn &spawn, const std::filesystem::path &dir, const std::string &where,
           const std::string &config_json = "{}", std::vector<std::string> extra_args = {},
           std::map<std::string, std::string> extra_env = {}, FdStore *store = nullptr);
    ~Daemon();

    const std::filesystem::path &socket() const { return socket_; }
    // The config file the daemon was started with; rewrite it and send SIGHUP to reload.
    const std::filesystem::path &config() const { return config_; }
    // The datagram that said READY=1 (with its STATUS=).
    const std::string &ready_message() const { return ready_; }
    Process &process() { return *proc_; }
    NotifySocket &notify() { return *notify_; }
    // SIGTERM and wait for a clean exit; returns the exit code.
    std::optional<int> stop(std::chrono::milliseconds timeout = std::chrono::seconds(20));

private:
    std::filesystem::path socket_;
    std::filesystem::path config_;
    std::string ready_;
    std::unique_ptr<NotifySocket> notify_;
    Process *proc_ = nullptr;
};

} // namespace mcastd::sim
