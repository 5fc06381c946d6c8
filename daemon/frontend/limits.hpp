// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The front door's limits (config `limits`, config/README.md "limits"): what one connection may
// ask of the daemon, and each uid's share of what every client shares (doc/architecture.md §12).
// A reload applies them to the next request.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace mcastd::frontend {

struct Limits {
    // ---- one connection ----
    std::size_t max_message_bytes = 65536;     // the socket's longest request
    std::size_t max_requests_in_flight = 64;   // joins waiting for the SA, per client
    std::size_t max_memberships_per_client = 4096;
    std::size_t max_queued_bytes = 4u << 20;   // events a client that does not read may be owed
    std::size_t max_monitor_queued_bytes = 256u << 10; // monitor events beyond this are dropped
    std::chrono::milliseconds hello_timeout{5000}; // an un-greeted socket connection is closed then

    // ---- the host ----
    std::size_t max_clients = 1024;            // socket and D-Bus clients together
    std::size_t root_reserved_clients = 8;     // of max_clients, only root may take these
    std::size_t max_queued_bytes_total = 64u << 20; // over every connection
    std::size_t max_memberships = 262144;      // held and pending, every client's

    // ---- each uid's share (root has none: it keeps the reserved slots) ----
    std::size_t max_clients_per_uid = 256;
    std::size_t max_monitors_per_uid = 4;
    std::size_t max_queued_bytes_per_uid = 8u << 20;
    // Whose share a uid takes: a uid in a user's subordinate range is charged to that user
    // (subordinate_ids.hpp); "" charges every uid to itself.
    std::string subuid_file = "/etc/subuid";

    bool operator==(const Limits &) const = default;
};

} // namespace mcastd::frontend
