// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "json_writer.hpp"

#include "common/utf8.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace mcastd::proto {

namespace {

constexpr char kHex[] = "0123456789abcdef";

} // namespace

void append_json_string(std::string &out, std::string_view s) {
    out += '"';
    std::size_t run = 0; // start of the bytes not yet copied: copied in runs, not one by one
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            ++i;
            continue;
        }
        if (c >= 0x80) {
            if (const std::size_t n = utf8_sequence(s, i)) {
                i += n;
                continue;
            }
        }
        out.append(s.data() + run, i - run);
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
            if (c < 0x20) {
                const char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
                out.append(esc, sizeof esc);
            } else {
                out += "\xEF\xBF\xBD"; // U+FFFD REPLACEMENT CHARACTER, for one bad byte
            }
        }
        run = ++i;
    }
    out.append(s.data() + run, s.size() - run);
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
