// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/utf8.hpp"

namespace mcastd {

namespace {

constexpr char kHex[] = "0123456789abcdef";

void replace(std::string &out, std::string_view) { out += kReplacementCharacter; }

} // namespace

std::string valid_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    append_utf8(out, s, [](std::string_view) { return false; }, replace);
    return out;
}

std::string printable_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    append_utf8(out, s, is_control, replace);
    return out;
}

std::optional<std::string> text_problem(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = utf8_sequence(s, i);
        if (n == 0)
            return "is not UTF-8 (byte " + std::to_string(i) + ")";
        if (is_control(s.substr(i, n)))
            return "has a control character at byte " + std::to_string(i);
        i += n;
    }
    return std::nullopt;
}

std::string escape_bytes(std::string_view s, std::size_t max) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i == max) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            out += static_cast<char>(c);
            continue;
        }
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
    return out;
}

} // namespace mcastd
