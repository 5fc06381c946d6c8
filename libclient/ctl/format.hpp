// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// How rdma-mcastctl shows things: text for people, one JSON object (per line) for scripts.
// The JSON keys follow PROTOCOL.md's names, so scripts can read both the same way.
#pragma once

#include <cstdint>
#include <string>
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

// The record of a join: key/value lines, or one object.
std::string record_text(const rdmamcast::Record &r, std::uint64_t membership);
Json record_json(const rdmamcast::Record &r);
Json membership_json(const rdmamcast::Record &r, std::uint64_t membership);

// One line per event of the daemon (restored, lost, monitor), without the newline.
std::string event_text(const rdmamcast::Event &ev);
Json event_json(const rdmamcast::Event &ev);

std::string list_text(const std::vector<rdmamcast::PortGroups> &ports);
Json list_json(const std::vector<rdmamcast::PortGroups> &ports);

std::string status_text(const rdmamcast::Status &s);
Json status_json(const rdmamcast::Status &s);

// Writes to stdout and flushes, so that whoever reads a pipe sees each line as it happens.
// Returns false if stdout is gone.
bool emit(const std::string &text);
bool emit(const Json &j);

} // namespace ctl
