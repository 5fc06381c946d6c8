// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Refusals: how often the front door refused something since the daemon started, by reason, for
// `status` and the metrics. A reason is the config key of the rule, quota or limit that refused
// (or "identity": a caller nobody could identify), out of a fixed set: never an MGID, a uid or a
// message, so that a monitoring system can keep one series per reason however clients behave.
// Counted where a refusal is decided (the sessions, the transports' front doors), beside the
// journal line that names it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "proto/protocol.hpp"

namespace mcastd::frontend::refusal {

// The allow lists (access.allow_uids and access.allow_gids, which decide together).
inline constexpr std::string_view kAllowLists = "access.allow_uids,access.allow_gids";
inline constexpr std::string_view kRules = "access.rules";
inline constexpr std::string_view kHelloTimeout = "limits.hello_timeout_ms";
inline constexpr std::string_view kRequestsInFlight = "limits.max_requests_in_flight";
inline constexpr std::string_view kMembershipsPerClient = "limits.max_memberships_per_client";
// A caller whose credentials could not be read (no config key refuses it).
inline constexpr std::string_view kIdentity = "identity";

// Every reason, in the order `status` lists them.
inline constexpr std::array<std::string_view, 16> kReasons{
    kAllowLists,
    kRules,
    "access.quotas.memberships_per_uid",
    "access.quotas.creates_per_uid",
    "access.quotas.groups_per_port_per_uid",
    "access.quotas.groups_per_port",
    "access.quotas.sa_mads_per_second",
    "limits.max_clients",
    "limits.root_reserved_clients",
    "limits.max_clients_per_uid",
    "limits.max_monitors_per_uid",
    "limits.max_memberships",
    kMembershipsPerClient,
    kRequestsInFlight,
    kHelloTimeout,
    kIdentity,
};

// The reason of a refusal the access policy or a share made (Error::policy): the rules for a
// rule's denial, the quota's or limit's key for a quota; nullopt for an error without one.
std::optional<std::string_view> reason_of(const Error &e);

} // namespace mcastd::frontend::refusal

namespace mcastd::frontend {

class Refusals {
public:
    // One refusal for `reason`, one of refusal::kReasons (anything else is a bug, and is
    // dropped rather than made a new series).
    void count(std::string_view reason);
    // One refusal for what `e` names (refusal::reason_of); an error that names nothing is not
    // a refusal of the policy or a share, and is not counted.
    void count(const Error &e);

    std::uint64_t of(std::string_view reason) const;
    // Every reason, 0 included, in kReasons' order.
    std::vector<proto::RefusalCount> snapshot() const;

private:
    std::array<std::uint64_t, refusal::kReasons.size()> counts_{};
};

} // namespace mcastd::frontend
