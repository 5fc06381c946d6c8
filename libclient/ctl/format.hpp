// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// How rdma-mcastctl shows things: text for people, one JSON object (per line) for scripts.
// The JSON keys follow PROTOCOL.md's names, so scripts can read both the same way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <rdmamcast/client.hpp>

namespace ctl {

using Json = nlohmann::ordered_json;

std::string hex(std::uint64_t v);
// "full", or "-" for no bits; several bits joined by '+'.
std::string bits_text(std::uint8_t join_state_bits);
// ["full", "sendonly-full"]: one name per bit.
Json bits_json(std::uint8_t join_state_bits);

// The record of a join: key/value lines, or one object. On a RoCE port, `netdev` is the
// membership's (Membership::netdev(); the record has no room for it).
std::string record_text(const rdmamcast::Record &r, std::uint64_t membership, std::string_view netdev = {});
Json record_json(const rdmamcast::Record &r, std::string_view netdev = {});
Json membership_json(const rdmamcast::Record &r, std::uint64_t membership, std::string_view netdev = {});

// One line per event of the daemon (restored, lost, monitor), without the newline. `netdev`:
// a restored RoCE membership's.
std::string event_text(const rdmamcast::Event &ev, std::string_view netdev = {});
Json event_json(const rdmamcast::Event &ev, std::string_view netdev = {});

std::string list_text(const std::vector<rdmamcast::PortGroups> &ports);
Json list_json(const std::vector<rdmamcast::PortGroups> &ports);

std::string status_text(const rdmamcast::Status &s);
Json status_json(const rdmamcast::Status &s);

// Writes to stdout and flushes, so that whoever reads a pipe sees each line as it happens.
// Returns false if stdout is gone.
bool emit(const std::string &text);
bool emit(const Json &j);

} // namespace ctl
