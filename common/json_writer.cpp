// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/json_writer.hpp"

#include "common/utf8.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace mcastd::proto {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// A byte RFC 8259 allows in a string only escaped: a control character, '"' or '\'.
bool must_escape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

// Printable ASCII with nothing to escape: nearly every string written (each key, a GID, a
// device name).
bool plain(std::string_view s) {
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c >= 0x80 || must_escape(c))
            return false;
    }
    return true;
}

// `before` (0 for none), `s` quoted, and `after` (0 for none), in one append when short.
void append_plain(std::string &out, char before, std::string_view s, char after) {
    char buf[96];
    if (s.size() + 4 > sizeof buf) {
        if (before)
            out += before;
        out += '"';
        out.append(s);
        out += '"';
        if (after)
            out += after;
        return;
    }
    char *p = buf;
    if (before)
        *p++ = before;
    *p++ = '"';
    std::memcpy(p, s.data(), s.size());
    p += s.size();
    *p++ = '"';
    if (after)
        *p++ = after;
    out.append(buf, p);
}

// Any other string: a byte that is not UTF-8 becomes U+FFFD (one per byte); RFC 8259's
// escapes for the rest.
void append_escaped(std::string &out, std::string_view s) {
    out += '"';
    append_utf8(
        out, s,
        [](std::string_view seq) { return seq.size() == 1 && must_escape(static_cast<unsigned char>(seq[0])); },
        [](std::string &o, std::string_view seq) {
            const auto c = static_cast<unsigned char>(seq[0]);
            switch (c) {
            case '"': o += "\\\""; break;
            case '\\': o += "\\\\"; break;
            case '\n': o += "\\n"; break;
            case '\r': o += "\\r"; break;
            case '\t': o += "\\t"; break;
            case '\b': o += "\\b"; break;
            case '\f': o += "\\f"; break;
            default: {
                const char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
                o.append(esc, sizeof esc);
            }
            }
        });
    out += '"';
}

} // namespace

void append_json_string(std::string &out, std::string_view s) {
    if (plain(s))
        append_plain(out, 0, s, 0);
    else
        append_escaped(out, s);
}

void JsonWriter::put(char before, std::string_view text) {
    char buf[32];
    if (before && text.size() < sizeof buf) {
        buf[0] = before;
        std::memcpy(buf + 1, text.data(), text.size());
        out_.append(buf, text.size() + 1);
        return;
    }
    if (before)
        out_ += before;
    out_.append(text);
}

void JsonWriter::open(char c) {
    const char before = separator();
    if (depth_ == 64)
        throw std::logic_error("JsonWriter: nested deeper than 64 levels");
    put(before, std::string_view(&c, 1));
    first_ |= std::uint64_t{1} << depth_;
    ++depth_;
}

void JsonWriter::close(char c) {
    --depth_;
    out_ += c;
}

void JsonWriter::key(std::string_view k) {
    const char before = separator();
    if (plain(k)) {
        append_plain(out_, before, k, ':');
    } else {
        if (before)
            out_ += before;
        append_escaped(out_, k);
        out_ += ':';
    }
    after_key_ = true;
}

void JsonWriter::value(std::string_view s) {
    const char before = separator();
    if (plain(s)) {
        append_plain(out_, before, s, 0);
    } else {
        if (before)
            out_ += before;
        append_escaped(out_, s);
    }
}

void JsonWriter::value(bool b) { put(separator(), b ? "true" : "false"); }

void JsonWriter::value(std::uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    put(separator(), std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}

void JsonWriter::value(std::int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    put(separator(), std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}

void JsonWriter::value(double v) {
    if (!std::isfinite(v)) { // JSON has no NaN or infinity; nlohmann writes null too
        null();
        return;
    }
    if (v == 0) { // -0.0 too: "-0" reads back as the integer 0, so write what it reads as
        put(separator(), "0");
        return;
    }
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    put(separator(), std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}

void JsonWriter::null() { put(separator(), "null"); }

} // namespace mcastd::proto
