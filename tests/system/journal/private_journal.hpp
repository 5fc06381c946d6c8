// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A systemd-journald of the test's own (systemd-journald.service(8), journald.conf(5),
// mount_namespaces(7)): the test process moves into a private mount namespace where /run is
// an empty tmpfs and journald reads the test's journald.conf (volatile storage, no
// forwarding), so sd_journal_sendv() from anything the test starts reaches this journald and
// never the host's.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/daemon_harness.hpp"

namespace mcastd::sim {

// Moves the calling process into the private mount namespace. Must run before the process has
// a second thread (unshare(CLONE_NEWNS) refuses threaded callers). Returns why it failed.
std::optional<std::string> enter_private_journal_namespace();

class PrivateJournal {
public:
    // Starts systemd-journald (with no arguments: an argument would name a journal namespace)
    // and waits for its READY=1.
    explicit PrivateJournal(const std::filesystem::path &scratch);
    ~PrivateJournal();

    // The entries matching every FIELD=value in `matches`, oldest first, as `journalctl -o json`
    // prints them, once journald has stored what it had received (journalctl --sync).
    std::vector<nlohmann::json> entries(const std::vector<std::string> &matches);
    // Polls entries() until at least `count` match or `timeout` passes: a record sent after the
    // event the test saw (an SA answer, a reply) has no other signal to wait on.
    std::vector<nlohmann::json> wait_entries(const std::vector<std::string> &matches, std::size_t count,
                                             std::chrono::milliseconds timeout = std::chrono::seconds(10));

private:
    std::unique_ptr<NotifySocket> notify_;
    std::unique_ptr<Process> journald_;
};

} // namespace mcastd::sim
