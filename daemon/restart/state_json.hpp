// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The JSON form of the restart state's parts (a group, a session, a membership, the RoCE
// section, a Set), shared by the state file (saved_state.cpp) and the change log
// (change_log.cpp), whose lines carry the same objects. Internal to daemon/restart.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/json_check.hpp"
#include "common/json_writer.hpp"
#include "restart/saved_state.hpp"

namespace mcastd::restart::json_form {

using json_check::ObjectReader;

void write_gid(proto::JsonWriter &w, std::string_view key, const Gid &g);
Gid read_gid(const ObjectReader &in, std::string_view key);
std::uint8_t read_bits(const ObjectReader &in, std::string_view key);

void write_group(proto::JsonWriter &w, const SavedGroup &g);
SavedGroup read_group(const ObjectReader &in);
// The session's members up to its memberships: the caller writes them and ends the object.
void write_session_head(proto::JsonWriter &w, const SavedSession &s);
SavedSession read_session(const ObjectReader &in);
void write_membership(proto::JsonWriter &w, const SavedMembership &m);
SavedMembership read_membership(const ObjectReader &in);
void write_roce(proto::JsonWriter &w, const roce::KeptRoce &r);
roce::KeptRoce read_roce(const ObjectReader &in); // `adding` is the change log's alone
void write_roce_adding(proto::JsonWriter &w, const roce::KeptAdding &a);
roce::KeptAdding read_roce_adding(const ObjectReader &in);
void write_set(proto::JsonWriter &w, const SavedSet &s);
SavedSet read_set(const ObjectReader &in);

// A log's header line (with its '\n'): its format and version, the boot and the daemon that
// wrote it, and (the change log's) the state file generation it follows.
std::string header_line(std::string_view format, unsigned version, std::string_view boot_id, std::string_view daemon,
                        std::optional<std::uint64_t> generation);

// The format first: a file of another kind or version is named as such, not by its first
// unknown key.
void check_format(const ObjectReader &in, std::string_view name, unsigned version, std::string_view kind);

// Parses `text` as one JSON object and hands it to `read`; returns why it cannot, or "".
template <class F> std::string read_object(std::string_view text, F read) {
    json_check::Parsed parsed = json_check::parse(text);
    if (parsed.syntax_error)
        return "not JSON (" + *parsed.syntax_error + ")";
    if (parsed.duplicate)
        return parsed.duplicate->describe();
    try {
        read(ObjectReader(parsed.value(), ""));
    } catch (const json_check::FieldError &e) {
        return e.describe();
    }
    return {};
}

// A file of JSON lines, each with its '\n': `header` reads the first, `line` each later one.
// The lines that could not be read (a torn last line), one sentence each ("line 3: ..."), or
// why the file cannot be used (empty, or its header unreadable).
std::variant<std::vector<std::string>, std::string>
read_lines(std::string_view text, const std::function<void(const ObjectReader &)> &header,
           const std::function<void(const ObjectReader &)> &line);

} // namespace mcastd::restart::json_form
