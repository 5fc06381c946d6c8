// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's state as the protocol shows it (`list`, `status`), built once for every
// transport: the socket server encodes these, the D-Bus service converts them.
#pragma once

#include <chrono>
#include <cstdint>

#include "proto/protocol.hpp"
#include "service.hpp"

namespace mcastd {

proto::ListResult list_view(const Service &service);

struct StatusExtras {
    std::string daemon; // "rdma-mcastd 0.1.0"
    std::chrono::steady_clock::time_point started;
    std::uint64_t clients = 0;
};
proto::StatusResult status_view(const Service &service, const StatusExtras &extras);

// One port of `status`: what discovery and the PortInfo polls know (`a`), the engine's view
// (state, groups, re-joins) and the SM last seen; `now` on the engine's clock.
proto::PortStatus port_status(const port::PortAttributes &a, const PortView &engine_port,
                              const Service::SmView &sm, TimePoint now);

// One line for sd_notify STATUS= and `systemctl status`:
// "1/1 ports active, 3 groups, 2 clients" (", 1 port re-joining" while one is).
std::string status_line(const Service &service);
// Above this many SA MADs per transaction, retransmits are doing the SA's work twice: STATUS=
// says so and the journal warns (sa.congestion_control should keep it near 1).
inline constexpr double kAmplificationWarning = 1.2;
// The journal judges it over this long, when at least this many transactions ended in it.
inline constexpr Duration kSaLoadInterval = std::chrono::seconds(60);
inline constexpr std::uint64_t kSaLoadMinTransactions = 100;
// SA MADs sent per transaction ended (answered or timed out); 0 before any ended.
double amplification(const SaCounters &t);

} // namespace mcastd
