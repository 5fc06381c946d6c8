// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// json_check::parse: strict JSON text (RFC 8259) into nlohmann-json's DOM, in one pass.
//
// Why not the library's parser: its lexer reads a byte at a time through an input adapter and
// keeps each token's text for its messages, about 10 ns a byte. A 280-byte join reply took
// 3 us to parse, the largest single cost of a held join's round trip (mcastd-bench-json
// prints both). This parser scans ASCII runs in bulk and fills each value in place.
//
// It accepts exactly what json::parse(text) accepts (tests/unit/common/test_json_parse.cpp
// compares the two on a corpus and on mutations of it), builds the same DOM, and adds what the
// library cannot: the first duplicate key with its pointer, a depth bound, and errors as text
// with a line and column, never as exceptions (except std::bad_alloc).
#include "common/json_check.hpp"

#include "common/utf8.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace mcastd::json_check {
namespace {

struct Syntax {
    std::size_t offset; // of the byte the parser could not take (size() = end of input)
    std::string message;
    bool positioned = true; // prefix "line L, column C: " (a depth error names its pointer)
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void append_code_point(std::string &out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

class Parser {
public:
    Parser(std::string_view text, const ParseOptions &options)
        : text_(text), options_(options) {}

    void document(json &out) {
        space();
        value(out, "value");
        space();
        if (pos_ != text_.size())
            fail("value", "unexpected " + here() + "; expected end of input");
    }

    std::optional<FieldError> duplicate;

private:
    [[noreturn]] void fail(std::string_view parsing, std::string what) const {
        throw Syntax{pos_, "syntax error while parsing " + std::string(parsing) + " - " +
                               std::move(what)};
    }

    // The byte (or UTF-8 character) at pos_, quoted for a message.
    std::string here() const {
        if (pos_ >= text_.size())
            return "end of input";
        // The input may be anything, and the message goes into a JSON reply and a log line: a
        // byte that is not UTF-8 becomes U+FFFD, a control character "\xNN".
        const std::size_t n = std::max<std::size_t>(1, utf8_sequence(text_, pos_));
        std::string out = "'";
        mcastd::append_utf8(out, text_.substr(pos_, n), is_control,
                    [](std::string &o, std::string_view seq) { o += escape_bytes(seq); });
        return out + "'";
    }

    bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

    void expect(char c, std::string_view parsing) {
        if (!at(c))
            fail(parsing, "unexpected " + here() + "; expected '" + std::string(1, c) + "'");
        ++pos_;
    }

    void space() {
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
                ++pos_;
            else if (c == '/' && options_.comments)
                comment();
            else
                return;
        }
    }

    void comment() {
        ++pos_;
        if (at('/')) {
            const std::size_t eol = text_.find_first_of("\n\r", pos_);
            pos_ = eol == text_.npos ? text_.size() : eol;
        } else if (at('*')) {
            const std::size_t close = text_.find("*/", pos_ + 1);
            if (close == text_.npos) {
                pos_ = text_.size();
                fail("value", "invalid comment; missing closing '*/'");
            }
            pos_ = close + 2;
        } else {
            fail("value", "invalid comment; expecting '/' or '*' after '/'");
        }
    }

    void value(json &slot, std::string_view parsing) {
        if (pos_ >= text_.size())
            fail(parsing, "unexpected end of input; expected '[', '{', or a literal");
        switch (text_[pos_]) {
        case '{': object(slot); return;
        case '[': array(slot); return;
        case '"': {
            std::string s;
            string(s);
            slot = std::move(s);
            return;
        }
        case 't': literal("true", parsing); slot = true; return;
        case 'f': literal("false", parsing); slot = false; return;
        case 'n': literal("null", parsing); slot = nullptr; return;
        default:
            if (text_[pos_] == '-' || is_digit(text_[pos_])) {
                number(slot);
                return;
            }
            fail(parsing, "unexpected " + here() + "; expected '[', '{', or a literal");
        }
    }

    void literal(std::string_view word, std::string_view parsing) {
        if (text_.substr(pos_, word.size()) != word)
            fail(parsing, "invalid literal; expected '" + std::string(word) + "'");
        pos_ += word.size();
    }

    // Opens a container in `slot`, or fails when that would nest deeper than allowed.
    void open(json &slot, json::value_t type) {
        if (open_.size() >= options_.max_depth) {
            const std::string at = pointer_of(slot);
            throw Syntax{pos_, (at.empty() ? std::string("document") : at) +
                                   ": nested deeper than " + std::to_string(options_.max_depth) +
                                   " levels",
                         false};
        }
        slot = json(type);
        open_.push_back(&slot);
        ++pos_;
        space();
    }

    void object(json &slot) {
        open(slot, json::value_t::object);
        if (at('}')) {
            ++pos_;
            open_.pop_back();
            return;
        }
        for (;;) {
            if (!at('"'))
                fail("object key", "unexpected " + here() + "; expected string literal");
            std::string key;
            string(key);
            space();
            expect(':', "object separator");
            space();
            // Filled in place; a duplicate key's value replaces the first, as json::parse does.
            const std::size_t before = slot.size();
            json &member = slot[std::move(key)];
            if (slot.size() == before && !duplicate)
                duplicate.emplace(pointer_of(member), "duplicate key");
            value(member, "object value");
            space();
            if (at(',')) {
                ++pos_;
                space();
                continue;
            }
            expect('}', "object");
            open_.pop_back();
            return;
        }
    }

    void array(json &slot) {
        open(slot, json::value_t::array);
        if (at(']')) {
            ++pos_;
            open_.pop_back();
            return;
        }
        for (;;) {
            slot.push_back(nullptr);
            value(slot.back(), "array element");
            space();
            if (at(',')) {
                ++pos_;
                space();
                continue;
            }
            expect(']', "array");
            open_.pop_back();
            return;
        }
    }

    // At the opening quote. Plain runs are copied in bulk; escapes are decoded and other bytes
    // must be well-formed UTF-8 (RFC 8259 section 8.1).
    void string(std::string &out) {
        ++pos_;
        for (;;) {
            std::size_t run = pos_;
            while (run < text_.size()) {
                const auto c = static_cast<unsigned char>(text_[run]);
                if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
                    break;
                ++run;
            }
            out.append(text_.data() + pos_, run - pos_);
            pos_ = run;
            if (pos_ >= text_.size())
                fail("string", "missing closing quote");
            const auto c = static_cast<unsigned char>(text_[pos_]);
            if (c == '"') {
                ++pos_;
                return;
            }
            if (c == '\\') {
                escape(out);
            } else if (c < 0x20) {
                fail("string", "control character " + here() + " must be escaped");
            } else {
                const std::size_t n = utf8_sequence(text_, pos_);
                if (n == 0)
                    fail("string", "invalid UTF-8 byte " + here());
                out.append(text_.data() + pos_, n);
                pos_ += n;
            }
        }
    }

    void escape(std::string &out) {
        ++pos_;
        if (pos_ >= text_.size())
            fail("string", "missing closing quote");
        const char c = text_[pos_++];
        switch (c) {
        case '"': out += '"'; return;
        case '\\': out += '\\'; return;
        case '/': out += '/'; return;
        case 'b': out += '\b'; return;
        case 'f': out += '\f'; return;
        case 'n': out += '\n'; return;
        case 'r': out += '\r'; return;
        case 't': out += '\t'; return;
        case 'u': break;
        default:
            --pos_;
            fail("string", "invalid escape " + here());
        }
        std::uint32_t cp = hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            fail("string", "a low surrogate \\u escape without a high one before it");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u")
                fail("string", "a high surrogate \\u escape without a low one after it");
            pos_ += 2;
            const std::uint32_t low = hex4();
            if (low < 0xDC00 || low > 0xDFFF)
                fail("string", "a high surrogate \\u escape without a low one after it");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_code_point(out, cp);
    }

    std::uint32_t hex4() {
        std::uint32_t v = 0;
        for (int i = 0; i < 4; ++i, ++pos_) {
            const int h = pos_ < text_.size() ? hex_value(text_[pos_]) : -1;
            if (h < 0)
                fail("string", "'\\u' must be followed by 4 hex digits");
            v = v << 4 | static_cast<std::uint32_t>(h);
        }
        return v;
    }

    // RFC 8259 section 6. Integers become unsigned (or signed when negative) while they fit in
    // 64 bits and doubles beyond that, as in the library; a double that overflows is an error.
    void number(json &slot) {
        const std::size_t start = pos_;
        const auto digits = [&] {
            const std::size_t from = pos_;
            while (pos_ < text_.size() && is_digit(text_[pos_]))
                ++pos_;
            return pos_ > from;
        };
        const bool negative = at('-');
        if (negative)
            ++pos_;
        if (at('0'))
            ++pos_;
        else if (!digits())
            fail("number", "unexpected " + here() + "; expected a digit");
        bool integral = true;
        if (at('.')) {
            ++pos_;
            integral = false;
            if (!digits())
                fail("number", "unexpected " + here() + "; expected a digit after '.'");
        }
        if (at('e') || at('E')) {
            ++pos_;
            integral = false;
            if (at('+') || at('-'))
                ++pos_;
            if (!digits())
                fail("number", "unexpected " + here() + "; expected a digit in the exponent");
        }
        const char *first = text_.data() + start;
        const char *last = text_.data() + pos_;
        if (integral) {
            if (negative) {
                std::int64_t v = 0;
                if (std::from_chars(first, last, v).ec == std::errc()) {
                    slot = v;
                    return;
                }
            } else {
                std::uint64_t v = 0;
                if (std::from_chars(first, last, v).ec == std::errc()) {
                    slot = v;
                    return;
                }
            }
        }
        double d = 0;
        const auto r = std::from_chars(first, last, d);
        if (r.ec == std::errc::result_out_of_range) {
            // Tiny values round to zero or a subnormal, as strtod gives them; huge ones fail.
            const std::string copy(first, last);
            d = std::strtod(copy.c_str(), nullptr);
        }
        if (!std::isfinite(d)) {
            throw Syntax{start, "number overflow parsing '" + std::string(first, last) + "'"};
        }
        slot = d;
    }

    // The JSON pointer of `target`: a value inside the containers open now (or the root).
    std::string pointer_of(const json &target) const {
        std::string out;
        for (std::size_t i = 0; i < open_.size(); ++i) {
            const json &parent = *open_[i];
            const json *child = i + 1 < open_.size() ? open_[i + 1] : &target;
            if (parent.is_array()) {
                out = pointer_to(out, static_cast<std::size_t>(child - &parent.front()));
            } else {
                for (const auto &[key, value] : parent.items())
                    if (&value == child) {
                        out = pointer_to(out, key);
                        break;
                    }
            }
        }
        return out;
    }

    std::string_view text_;
    const ParseOptions &options_;
    std::size_t pos_ = 0;
    std::vector<json *> open_; // the containers being filled, root first
};

// "line L, column C" of a byte offset: C counts bytes from 1, and the end of input is one
// past the last byte.
std::string position(std::string_view text, std::size_t offset) {
    std::size_t line = 1, line_start = 0;
    for (std::size_t i = 0; i < offset && i < text.size(); ++i)
        if (text[i] == '\n') {
            ++line;
            line_start = i + 1;
        }
    return "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
}

} // namespace

Parsed parse(std::string_view text, const ParseOptions &options) {
    Parsed out;
    if (const void *nul = std::memchr(text.data(), '\0', text.size())) {
        out.syntax_error = "NUL byte at offset " +
                           std::to_string(static_cast<const char *>(nul) - text.data());
        return out;
    }
    Parser parser(text, options);
    try {
        parser.document(out.value);
    } catch (const Syntax &e) {
        out.syntax_error = e.positioned ? position(text, e.offset) + ": " + e.message : e.message;
        out.value = json(); // whatever was built is partial
        return out;
    }
    out.duplicate = std::move(parser.duplicate);
    return out;
}

} // namespace mcastd::json_check
