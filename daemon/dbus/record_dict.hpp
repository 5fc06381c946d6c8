// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A group record as D-Bus shows it: the a{sv} dictionary Join and StateChanged carry (keys are
// the socket protocol's RECORD keys) and the Membership object's properties (CamelCase names),
// built from one table so the two never disagree. Pure data; wire.hpp writes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/record.hpp"

namespace mcastd::dbus {

// D-Bus basic types: y, q, u, d, s.
using Value = std::variant<std::uint8_t, std::uint16_t, std::uint32_t, double, std::string>;

struct RecordEntry {
    std::string_view key;      // "mlid": the a{sv} key, as PROTOCOL.md's RECORD
    std::string_view property; // "MLID": the Membership property
    Value value;
};

// Every RECORD key, in PROTOCOL.md's order: RoCE's (gid_type, sgid_index, netdev, ip, dmac) on
// an Ethernet record only, unless `every_key` (the Membership properties: empty on InfiniBand).
std::vector<RecordEntry> record_entries(const McRecord &record, bool every_key = false);
// The value of one Membership record property ("MLID"), nullopt for a name not in the table.
std::optional<Value> record_property(const McRecord &record, std::string_view property);

} // namespace mcastd::dbus
