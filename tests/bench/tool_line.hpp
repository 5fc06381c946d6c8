// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The key=value lines mcastd-raw-sa prints, for the benchmarks that run it.
#pragma once

#include <stdexcept>
#include <string>

namespace mcastd::bench {

// `key=value` out of a tool's line; throws when it is missing.
inline std::string field(const std::string &line, const std::string &key) {
    const auto at = line.find(key + "=");
    if (at == std::string::npos)
        throw std::runtime_error("no " + key + " in: " + line);
    const auto start = at + key.size() + 1;
    return line.substr(start, line.find(' ', start) - start);
}

} // namespace mcastd::bench
