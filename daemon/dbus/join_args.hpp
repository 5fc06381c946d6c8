// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Manager.Join's arguments -> a JoinRequest, validated by the socket protocol's own join
// decoder (proto/join_decoder.hpp), so a D-Bus caller gets the same checks and the same
// sentence for the same mistake ("/qkey: 4294967296 out of range [0, 4294967295]").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "common/request.hpp"

namespace mcastd::dbus {

// An a{sv} option as read off the wire: any integer type, a boolean or a string.
using OptionValue = std::variant<std::int64_t, std::uint64_t, bool, std::string>;
using Options = std::vector<std::pair<std::string, OptionValue>>;

struct JoinArgs {
    std::string device;
    std::uint16_t port = 0;
    std::string mgid;       // "" = create a group with an SA-assigned MGID, or the option "name"'s
    std::string join_state; // "" = full
    Options options;        // PROTOCOL.md's join keys other than the four above ("ip", "gid_type" included)
    // The option "socket" (D-Bus type 'h'): a UDP socket the caller made in its own network
    // namespace, for a full or non-member join on a RoCE port (PROTOCOL.md, "RoCE ports").
    // Borrowed from the message: the request gets its own copy. -1: none.
    int socket = -1;
};

// The option that carries a join's socket.
inline constexpr const char *kSocketOption = "socket";

// Errc::invalid_argument naming the key on any bad value, unknown or repeated option; Errc::internal
// when the socket cannot be copied (errno).
std::variant<JoinRequest, Error> decode_join_args(const JoinArgs &args);

} // namespace mcastd::dbus
