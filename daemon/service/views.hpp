// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's state as the protocol shows it (`list`, `status`), built once for every
// transport: the socket server encodes these, the D-Bus service converts them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "proto/protocol.hpp"
#include "service/service.hpp"

namespace mcastd {

// What one `list` asks for, once its transport has read it.
struct ListQuery {
    std::optional<GroupCursor> after; // the page after the one that stopped here
    std::optional<ClientId> only;     // `own`: this engine client's memberships only
    std::size_t page_bytes = 0;       // the most a page's encoded reply may take; 0: no limit
};
// Fills in what a member's session knows of it and the engine does not (rule, created,
// flagged, name: Sessions::annotate).
using MemberNotes = std::function<void(const MemberView &, proto::MemberInfo &)>;

// One page of `list`: every port, with the groups and members from `q.after` on in GroupKey
// order, as many as fit in `q.page_bytes` of encoded reply, measured with the codec's own
// writer as they are added (the page's first one goes in whatever its size, so every page gets
// somewhere). A group that does not fit whole goes on in the next page, its header repeated;
// `next` is the cursor of the page after, unset on the last. The page costs what it reads.
proto::ListResult list_view(const Service &service, const ListQuery &q = {}, const MemberNotes &notes = {});

struct StatusExtras {
    std::string daemon; // "rdma-mcastd 0.1.0"
    std::chrono::steady_clock::time_point started;
    std::uint64_t clients = 0;
};
proto::StatusResult status_view(const Service &service, const StatusExtras &extras);

// One port of `status`: what the registry knows of it (discovery, the PortInfo polls, the SM
// last seen, usable) and the engine's view (groups, re-joins); `now` on the engine's clock.
proto::PortStatus port_status(const port::RegisteredPort &port, const PortView &engine_port, TimePoint now);

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
