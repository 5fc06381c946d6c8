// The comparison encoder of mcastd-bench-json: the join and list replies of
// proto::encode_reply, built as nlohmann::ordered_json (keys in PROTOCOL.md's order) and
// written with dump(-1, ' ', false, error_handler_t::replace), so that invalid UTF-8 becomes
// U+FFFD instead of an exception.
//
// bench_json_nlohmann.inc holds it; two translation units compile it, once with the project's
// flags (JSON_DIAGNOSTICS=1, from mcastd_options: what proto/ would get) and once without,
// so the figures show what the diagnostics cost. nlohmann 3.11 puts the two builds in
// different inline namespaces, so they link side by side.
#pragma once

#include <cstdint>
#include <string>

#include "protocol.hpp"

namespace bench_nlohmann {

#define BENCH_NLOHMANN_DECLARE(ns)                                                                 \
    namespace ns {                                                                                 \
    std::string encode_join_reply(std::uint64_t id, const mcastd::proto::JoinResult &r);           \
    std::string encode_list_reply(std::uint64_t id, const mcastd::proto::ListResult &r);           \
    /* The same, with doubles handed to nlohmann as doubles (100.0 is written "100.0"). */         \
    std::string encode_join_reply_plain_doubles(std::uint64_t id,                                  \
                                                const mcastd::proto::JoinResult &r);               \
    }

BENCH_NLOHMANN_DECLARE(diag)
BENCH_NLOHMANN_DECLARE(nodiag)

#undef BENCH_NLOHMANN_DECLARE

} // namespace bench_nlohmann
