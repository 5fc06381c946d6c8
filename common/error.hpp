// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The one domain error of rdma-mcastd. Every transport maps these codes once (socket protocol
// names, D-Bus error names); the message always carries the real cause.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mcastd {

enum class Errc : std::uint8_t {
    invalid_argument,    // a field is malformed or out of range
    no_such_device,      // no CA of that name
    no_such_port,        // the CA has no such port
    port_not_active,     // the port is not ACTIVE or has no SM
    conflict,            // the request contradicts the group's record (names the group's value)
    sa_error,            // the SA answered with a non-zero status (sa_status is set)
    sa_timeout,          // the SA did not answer within the retry budget
    denied,              // policy refused the caller or the MGID
    too_large,           // a message exceeded the size limit
    unsupported_version, // protocol version not served
    not_found,           // no membership with that id for this client
    cancelled,           // the request was withdrawn before it completed
    limit,               // a per-client or per-daemon limit was reached
    internal,            // a bug or an unexpected system error (errno in the message)
};

// Stable kebab-case name: "invalid-argument", "sa-error", ...
std::string_view errc_name(Errc c);
std::optional<Errc> errc_from_name(std::string_view name);

// What in the config refused a request: the access rule that denied it, or the quota, share or
// limit that was reached (`access.quotas`, `limits`) and its value.
struct PolicyRef {
    std::string rule;        // the rule's name ("access.rules[2]" when it has none); empty for a quota
    std::string quota;       // the config key reached, without its section ("memberships_per_uid",
                             // "max_requests_in_flight": PROTOCOL.md lists them); or empty
    std::uint64_t limit = 0; // its value
    bool operator==(const PolicyRef &) const = default;
};

struct Error {
    Errc code;
    std::string message;
    std::optional<std::uint16_t> sa_status; // only for Errc::sa_error
    std::optional<PolicyRef> policy{};      // denied by the access policy, or limit by a config key

    static Error sa(std::uint16_t status, std::string context);
};

} // namespace mcastd
