// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Names and explanations of SA MAD status values (IBA 13.4.7 and 15.2.1.1).
#pragma once

#include <cstdint>
#include <string>

namespace mcastd {

namespace sa_status {
inline constexpr std::uint16_t success = 0x0000;
inline constexpr std::uint16_t no_resources = 0x0100;
inline constexpr std::uint16_t req_invalid = 0x0200;
inline constexpr std::uint16_t no_records = 0x0300;
inline constexpr std::uint16_t too_many_records = 0x0400;
inline constexpr std::uint16_t invalid_gid = 0x0500;
inline constexpr std::uint16_t insufficient_components = 0x0600;
inline constexpr std::uint16_t denied = 0x0700;
inline constexpr std::uint16_t prio_suggested = 0x0800;
} // namespace sa_status

// "ERR_REQ_INVALID", "ERR_NO_RESOURCES", ... ; generic MAD codes get their IBA names
// ("BUSY", "BAD_VERSION", ...); anything else is "0x....".
std::string sa_status_name(std::uint16_t status);

// One sentence on what the status means for a multicast join or leave.
std::string sa_status_sentence(std::uint16_t status);

// "SA status 0x0200 ERR_REQ_INVALID: <sentence>"
std::string sa_status_describe(std::uint16_t status);

} // namespace mcastd
