// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// UTF-8 well-formedness, and the one place where text that may be anything (a process's comm,
// a client's name, bytes quoted in an error) is made safe for where it goes: JSON, the journal,
// D-Bus (sd-bus refuses a string that is not valid UTF-8).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mcastd {

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

// U+FFFD REPLACEMENT CHARACTER, which stands for each byte that is not UTF-8.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

// `seq`, one well-formed sequence, is a control character: C0 (U+0000..U+001F), DEL or C1
// (U+0080..U+009F, 0xC2 0x80..0x9F).
inline bool is_control(std::string_view seq) {
    const auto c = static_cast<unsigned char>(seq[0]);
    if (seq.size() == 1)
        return c < 0x20 || c == 0x7f;
    return seq.size() == 2 && c == 0xc2 && static_cast<unsigned char>(seq[1]) < 0xa0;
}

// Appends `s` to `out` as well-formed UTF-8: each byte that starts no well-formed sequence
// becomes U+FFFD, each sequence `special(seq)` selects is written by `escape(out, seq)`, and the
// rest is copied as it is, in runs. The JSON writer, valid_utf8() and printable_utf8() are
// this with their own `special`.
template <class Special, class Escape>
void append_utf8(std::string &out, std::string_view s, Special special, Escape escape) {
    std::size_t run = 0; // start of the bytes not yet copied
    std::size_t i = 0;
    while (i < s.size()) {
        const std::size_t n = static_cast<unsigned char>(s[i]) < 0x80 ? 1 : utf8_sequence(s, i);
        if (n && !special(s.substr(i, n))) {
            i += n;
            continue;
        }
        out.append(s.data() + run, i - run);
        if (n)
            escape(out, s.substr(i, n));
        else
            out += kReplacementCharacter;
        i += n ? n : 1;
        run = i;
    }
    out.append(s.data() + run, s.size() - run);
}

// `s` with every byte that is not UTF-8 as U+FFFD: what sd-bus accepts as a string.
std::string valid_utf8(std::string_view s);

// valid_utf8(), control characters also replaced by U+FFFD: a process name (/proc/PID/comm
// can hold any byte but NUL and newline) as the log, list and D-Bus show it.
std::string printable_utf8(std::string_view s);

// Why `s` is not well-formed UTF-8 free of control characters ("is not UTF-8 (byte 3)", "has a
// control character at byte 0"), or nullopt: the rule of group names and hello's `client`.
std::optional<std::string> text_problem(std::string_view s);

// `s` for quoting in a message whatever it holds: printable ASCII as it is, every other byte
// (and '"' and '\') as \xNN; past `max` bytes of `s`, "...".
std::string escape_bytes(std::string_view s, std::size_t max = 64);

} // namespace mcastd
