// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Internal to the config reader: helpers the section readers share (parse.cpp, access.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/json_check.hpp"
#include "policy/policy.hpp"

namespace mcastd::config::detail {

// A nested object of the config: absent means every key at its default.
std::optional<json_check::ObjectReader> section(const json_check::ObjectReader &parent, std::string_view key);

// For each element of the optional array at `key`, with its JSON pointer.
template <class F> void each_element(const json_check::ObjectReader &in, std::string_view key, F f) {
    const json_check::json *list = in.array(key);
    if (!list)
        return;
    std::size_t i = 0;
    for (const json_check::json &v : *list)
        f(v, json_check::pointer_to(in.pointer(key), i++));
}

// "0x1b"
std::string hex(std::uint64_t v);

// JSON has no hex literals, and Q_Keys and P_Keys are always written in hex: accepts
// 305419896 and "0x12345678" alike, in [0, max]. `v` is the value at `pointer`.
std::uint64_t int_or_hex_value(const json_check::json &v, const std::string &pointer, std::uint64_t max);
std::optional<std::uint64_t> int_or_hex(const json_check::ObjectReader &in, std::string_view key, std::uint64_t max);

// A P_Key value: not the invalid P_Key (0x0000 or 0x8000, IBA 10.9.1.2).
std::uint16_t pkey_value(const json_check::json &v, const std::string &pointer);

// The gid of group `name` on this host (getgrnam_r), if it has one.
std::optional<gid_t> group_id(const std::string &name);

// The "access" section (access.cpp): the allow lists, the rules and the quotas. User and group
// names are resolved here, so a name the host does not know is an error naming its key.
policy::Policy read_access(const json_check::ObjectReader &root);

} // namespace mcastd::config::detail
