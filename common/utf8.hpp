// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// UTF-8 well-formedness, for text that must be valid JSON or a valid D-Bus string on the way
// out (a process name from /proc is any bytes; sd-bus refuses a string that is not UTF-8).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mcastd::proto {

// The length of the well-formed UTF-8 sequence that starts at s[i] (RFC 3629: no overlongs, no
// surrogates, nothing above U+10FFFF), or 0 when the bytes there are not one. ASCII is 1.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const std::size_t left = s.size() - i;
    const auto cont = [&](std::size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
        return k < left && b(k) >= lo && b(k) <= hi;
    };
    const unsigned char c = b(0);
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return cont(1) ? 2 : 0;
    if (c == 0xE0)
        return cont(1, 0xA0) && cont(2) ? 3 : 0;
    if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
        return cont(1) && cont(2) ? 3 : 0;
    if (c == 0xED)
        return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
    if (c == 0xF0)
        return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    if (c >= 0xF1 && c <= 0xF3)
        return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (c == 0xF4)
        return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
    return 0;
}

// `s` with every byte that does not start a well-formed sequence replaced by U+FFFD (as the
// JSON writer does): valid UTF-8, and `s` itself when it already is.
inline std::string valid_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        if (const std::size_t n = utf8_sequence(s, i)) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return out;
}

} // namespace mcastd::proto
