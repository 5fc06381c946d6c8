// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The comparison encoder of mcastd-bench-json: the join and list replies of
// proto::encode_reply, built as nlohmann::ordered_json (keys in PROTOCOL.md's order) and
// written with dump(-1, ' ', false, error_handler_t::replace), so that invalid UTF-8 becomes
// U+FFFD instead of an exception.
#pragma once

#include <cstdint>
#include <string>

#include "protocol.hpp"

namespace bench_nlohmann {

std::string encode_join_reply(std::uint64_t id, const mcastd::proto::JoinResult &r);
std::string encode_list_reply(std::uint64_t id, const mcastd::proto::ListResult &r);
// The same, with doubles handed to nlohmann as doubles (100.0 is written "100.0").
std::string encode_join_reply_plain_doubles(std::uint64_t id, const mcastd::proto::JoinResult &r);

} // namespace bench_nlohmann
