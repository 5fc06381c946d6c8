// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Parsing the text that infiniband-diags tools print (saquery, smpquery), and OpenSM's SA dump.
//
// Both print "Label<dots>value" lines, e.g. saquery's "\t\tJoinState...............0x1" and
// smpquery's "Lid:.............................3". saquery prints one block per record, each
// opened by a header line ("MCMember Record dump:"). Labels differ in case between commands
// ("Mlid" in `saquery -g`, "mlid" in `saquery MCMR`), so keys are kept lower-cased.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/gid.hpp"

namespace mcastd::sim {

// One record: lower-cased label -> value with surrounding blanks removed.
using ToolRecord = std::map<std::string, std::string>;

// Splits a field line "Label....value" or "Label:....value". nullopt for any other line
// (headers, capability-name lines, prompts).
std::optional<std::pair<std::string, std::string>> parse_field_line(std::string_view line);

// All field lines of `text` as one record (smpquery, which prints a single attribute).
ToolRecord parse_fields(std::string_view text);

// The records of `text`: each starts at a line equal to `header` (after trimming blanks);
// field lines before the first header are ignored.
std::vector<ToolRecord> parse_records(std::string_view text, std::string_view header);

// "0x1F" (any case) or decimal "31"; nullopt for anything else or a value above `max`.
std::optional<std::uint64_t> parse_number(std::string_view text,
                                          std::uint64_t max = UINT64_MAX);

// The value of `key` in `rec` as a number no larger than `max`. Throws std::runtime_error
// naming the key and the offending text when it is missing or malformed.
std::uint64_t field_number(const ToolRecord &rec, const std::string &key,
                           std::uint64_t max = UINT64_MAX);
// The value of `key` as a GID in IPv6 text form; throws like field_number.
Gid field_gid(const ToolRecord &rec, const std::string &key);

// One multicast group of OpenSM's opensm-sa.dump (doc/testbed.md §9): the complete SA picture,
// unlike saquery's GetTable answers, which umad2sim cuts to one MAD.
struct SaDumpGroup {
    Gid mgid{};
    std::uint16_t mlid = 0;
    bool well_known = false;                     // tagged "(well known)": OpenSM made it itself
    std::map<Gid, std::uint8_t> members{};       // PortGID -> JoinState
};
// The groups of a dump's text, in file order. Throws std::runtime_error naming the line when
// a "MC Group" or "mcm_port" line is malformed, or a member comes before any group.
std::vector<SaDumpGroup> parse_sa_dump(std::string_view text);

} // namespace mcastd::sim
