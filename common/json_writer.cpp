// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/json_writer.hpp"

#include "common/utf8.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace mcastd::proto {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// A byte RFC 8259 allows in a string only escaped: a control character, '"' or '\'.
bool must_escape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

} // namespace

void append_json_string(std::string &out, std::string_view s) {
    // Nearly every string written (each key, a GID, a device) is printable ASCII with nothing to
    // escape: copied whole, without the per-sequence walk below.
    if (std::all_of(s.begin(), s.end(), [](char ch) {
            const auto c = static_cast<unsigned char>(ch);
            return c < 0x80 && !must_escape(c);
        })) {
        out.reserve(out.size() + s.size() + 2);
        out += '"';
        out.append(s);
        out += '"';
        return;
    }
    out += '"';
    // A byte that is not UTF-8 becomes U+FFFD (one per byte); RFC 8259's escapes for the rest.
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

void JsonWriter::separate() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (depth_ == 0)
        return;
    const std::uint64_t bit = std::uint64_t{1} << (depth_ - 1);
    if (first_ & bit)
        first_ &= ~bit;
    else
        out_ += ',';
}

void JsonWriter::open(char c) {
    separate();
    if (depth_ == 64)
        throw std::logic_error("JsonWriter: nested deeper than 64 levels");
    out_ += c;
    first_ |= std::uint64_t{1} << depth_;
    ++depth_;
}

void JsonWriter::close(char c) {
    --depth_;
    out_ += c;
}

void JsonWriter::key(std::string_view k) {
    separate();
    append_json_string(out_, k);
    out_ += ':';
    after_key_ = true;
}

void JsonWriter::value(std::string_view s) {
    separate();
    append_json_string(out_, s);
}

void JsonWriter::value(bool b) {
    separate();
    out_ += b ? "true" : "false";
}

void JsonWriter::value(std::uint64_t v) {
    separate();
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
}

void JsonWriter::value(std::int64_t v) {
    separate();
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
}

void JsonWriter::value(double v) {
    if (!std::isfinite(v)) { // JSON has no NaN or infinity; nlohmann writes null too
        null();
        return;
    }
    separate();
    if (v == 0) { // -0.0 too: "-0" reads back as the integer 0, so write what it reads as
        out_ += '0';
        return;
    }
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
}

void JsonWriter::null() {
    separate();
    out_ += "null";
}

} // namespace mcastd::proto
