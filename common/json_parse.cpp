// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// json_check::parse: strict JSON text (RFC 8259) into a Document (json_dom.hpp), in one pass.
//
// Why not the library's parser: its lexer reads a byte at a time through an input adapter and
// keeps each token's text for its messages, about 10 ns a byte. A 280-byte join reply took
// 3 us to parse, the largest single cost of a held join's round trip (mcastd-bench-json
// prints both). This parser scans ASCII runs in bulk, leaves strings where they are in the
// document's copy of the text, and appends each value to one array.
//
// It accepts exactly what json::parse(text) accepts and reads the same values
// (tests/unit/common/test_json_parse.cpp compares the two on a corpus and on mutations of it),
// and adds what the library cannot: the first duplicate key with its pointer, a depth bound,
// and errors as text with a line and column, never as exceptions (except std::bad_alloc).
#include "common/json_check.hpp"

#include "common/utf8.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

namespace mcastd::json_check {

// Fills a Document: the friend of Document and Value that may build them.
class DocumentBuilder {
public:
    static char *adopt(Document &doc, std::string_view text) {
        doc.text_.assign(text.begin(), text.end());
        doc.nodes_.clear();
        // A first guess (a small value takes a few bytes of text); the vector grows past it.
        doc.nodes_.reserve(text.size() / 8 + 4);
        return doc.text_.data();
    }
    static std::vector<Value> &nodes(Document &doc) { return doc.nodes_; }
    static void reset(Document &doc) { doc = Document(); }

    static void set_key(Value &v, const char *key, std::size_t size) {
        v.key_ = key;
        v.key_size_ = static_cast<std::uint32_t>(size);
    }
    static void set_type(Value &v, Value::Type t) { v.type_ = t; }
    static void set_bool(Value &v, bool b) { v.type_ = Value::Type::boolean; v.scalar_.b = b; }
    static void set_int(Value &v, std::int64_t i) { v.type_ = Value::Type::integer; v.scalar_.i = i; }
    static void set_uint(Value &v, std::uint64_t u) {
        v.type_ = Value::Type::unsigned_integer;
        v.scalar_.u = u;
    }
    static void set_double(Value &v, double d) { v.type_ = Value::Type::floating; v.scalar_.d = d; }
    static void set_string(Value &v, const char *s, std::size_t size) {
        v.type_ = Value::Type::string;
        v.text_ = s;
        v.size_ = static_cast<std::uint32_t>(size);
    }
    static void close(Value &container, std::size_t span, std::size_t live) {
        container.span_ = static_cast<std::uint32_t>(span);
        container.size_ = static_cast<std::uint32_t>(live);
    }
    static void shadow(Value &member) { member.shadowed_ = true; }
    static bool shadowed(const Value &member) { return member.shadowed_; }
    static std::size_t span(const Value &v) { return v.span_; }
};

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

// Writes cp as UTF-8 at out; returns the end.
char *put_code_point(char *out, std::uint32_t cp) {
    if (cp < 0x80) {
        *out++ = static_cast<char>(cp);
    } else if (cp < 0x800) {
        *out++ = static_cast<char>(0xC0 | (cp >> 6));
        *out++ = static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *out++ = static_cast<char>(0xE0 | (cp >> 12));
        *out++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *out++ = static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        *out++ = static_cast<char>(0xF0 | (cp >> 18));
        *out++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        *out++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *out++ = static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
}

using B = DocumentBuilder;

// The bytes a string's plain run may hold: not the quote, the backslash, a control character
// or the start of a multi-byte UTF-8 sequence (those take the slow path). One load per byte
// where four compares were: scanning strings was a sixth of decoding a join reply.
constexpr auto kPlainByte = [] {
    std::array<bool, 256> plain{};
    for (int c = 0x20; c < 0x80; ++c)
        plain[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
    return plain;
}();

class Parser {
public:
    // `buf` is the document's own copy of `text`: strings are unescaped in it, in place.
    Parser(std::string_view text, char *buf, std::vector<Value> &nodes, const ParseOptions &options)
        : text_(text), buf_(buf), nodes_(nodes), options_(options) {}

    void document() {
        space();
        value("value", {});
        space();
        if (pos_ != text_.size())
            fail("value", "unexpected " + here() + "; expected end of input");
    }

    std::optional<FieldError> duplicate;

private:
    // A container being filled: its node, how many values it holds, and for an object the key
    // of the member being read (for pointers in messages).
    struct Frame {
        std::size_t node = 0;
        std::size_t live = 0; // values, an object's members not shadowed by a later duplicate
        std::string_view key;
        // An object's keys once it has many: a walk of the siblings would be quadratic.
        std::unique_ptr<std::unordered_map<std::string_view, std::size_t>> index;
    };
    static constexpr std::size_t kIndexFrom = 32;

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

    bool at_char(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

    void expect(char c, std::string_view parsing) {
        if (!at_char(c))
            fail(parsing, "unexpected " + here() + "; expected '" + std::string(1, c) + "'");
        ++pos_;
    }

    // Most calls find a token at once (our messages carry no whitespace): that test is inlined
    // at every call, the walk is not.
    [[gnu::always_inline]] void space() {
        if (pos_ < text_.size() && static_cast<unsigned char>(text_[pos_]) > ' ' && text_[pos_] != '/')
            return;
        skip_space();
    }

    [[gnu::noinline]] void skip_space() {
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
        if (at_char('/')) {
            const std::size_t eol = text_.find_first_of("\n\r", pos_);
            pos_ = eol == text_.npos ? text_.size() : eol;
        } else if (at_char('*')) {
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

    // Pushes the value at pos_ (an object member's when `key` is set).
    void value(std::string_view parsing, std::optional<std::string_view> key) {
        if (pos_ >= text_.size())
            fail(parsing, "unexpected end of input; expected '[', '{', or a literal");
        const std::size_t at = nodes_.size();
        nodes_.emplace_back();
        if (key)
            B::set_key(nodes_[at], key->data(), key->size());
        switch (text_[pos_]) {
        case '{': object(at); return;
        case '[': array(at); return;
        case '"': {
            const std::string_view s = string();
            B::set_string(nodes_[at], s.data(), s.size());
            return;
        }
        case 't': literal("true", parsing); B::set_bool(nodes_[at], true); return;
        case 'f': literal("false", parsing); B::set_bool(nodes_[at], false); return;
        case 'n': literal("null", parsing); return;
        default:
            if (text_[pos_] == '-' || is_digit(text_[pos_])) {
                number(nodes_[at]);
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

    // Opens the container at node `at`, or fails when that would nest deeper than allowed.
    void open(std::size_t at, Value::Type type) {
        if (open_.size() >= options_.max_depth) {
            const std::string where = pointer_here();
            throw Syntax{pos_, (where.empty() ? std::string("document") : where) +
                                   ": nested deeper than " + std::to_string(options_.max_depth) +
                                   " levels",
                         false};
        }
        B::set_type(nodes_[at], type);
        open_.emplace_back();
        open_.back().node = at;
        ++pos_;
        space();
    }

    void close() {
        Frame &f = open_.back();
        B::close(nodes_[f.node], nodes_.size() - f.node, f.live);
        open_.pop_back();
    }

    void object(std::size_t at) {
        open(at, Value::Type::object);
        if (at_char('}')) {
            ++pos_;
            close();
            return;
        }
        for (;;) {
            if (!at_char('"'))
                fail("object key", "unexpected " + here() + "; expected string literal");
            const std::string_view key = string();
            space();
            expect(':', "object separator");
            space();
            member(key);
            value("object value", key);
            space();
            if (at_char(',')) {
                ++pos_;
                space();
                continue;
            }
            expect('}', "object");
            close();
            return;
        }
    }

    // Counts the member about to be pushed (at nodes_.size()); a duplicate key shadows the
    // member before it, so that the last value wins, as json::parse has it.
    void member(std::string_view key) {
        Frame &f = open_.back();
        f.key = key;
        const std::size_t next = nodes_.size();
        if (!f.index && f.live + 1 >= kIndexFrom) {
            f.index = std::make_unique<std::unordered_map<std::string_view, std::size_t>>();
            for (std::size_t i = f.node + 1; i < next; i += B::span(nodes_[i]))
                if (!B::shadowed(nodes_[i]))
                    (*f.index)[nodes_[i].key()] = i;
        }
        std::optional<std::size_t> earlier;
        if (f.index) {
            auto [it, inserted] = f.index->try_emplace(key, next);
            if (!inserted) {
                earlier = it->second;
                it->second = next;
            }
        } else {
            for (std::size_t i = f.node + 1; i < next; i += B::span(nodes_[i]))
                if (!B::shadowed(nodes_[i]) && nodes_[i].has_key(key)) {
                    earlier = i;
                    break;
                }
        }
        if (earlier) {
            B::shadow(nodes_[*earlier]);
            if (!duplicate)
                duplicate.emplace(pointer_here(), "duplicate key");
        } else {
            ++f.live;
        }
    }

    void array(std::size_t at) {
        open(at, Value::Type::array);
        if (at_char(']')) {
            ++pos_;
            close();
            return;
        }
        for (;;) {
            ++open_.back().live;
            value("array element", {});
            space();
            if (at_char(',')) {
                ++pos_;
                space();
                continue;
            }
            expect(']', "array");
            close();
            return;
        }
    }

    // At the opening quote. Plain runs stay where they are; from the first escape on, the
    // string is rewritten unescaped at `out`, which never passes the byte being read. Other
    // bytes must be well-formed UTF-8 (RFC 8259 section 8.1).
    std::string_view string() {
        ++pos_;
        char *const first = buf_ + pos_;
        char *out = first;
        for (;;) {
            std::size_t run = pos_;
            while (run < text_.size() && kPlainByte[static_cast<unsigned char>(text_[run])])
                ++run;
            out = copy(out, pos_, run - pos_);
            pos_ = run;
            if (pos_ >= text_.size())
                fail("string", "missing closing quote");
            const auto c = static_cast<unsigned char>(text_[pos_]);
            if (c == '"') {
                ++pos_;
                return {first, static_cast<std::size_t>(out - first)};
            }
            if (c == '\\') {
                out = escape(out);
            } else if (c < 0x20) {
                fail("string", "control character " + here() + " must be escaped");
            } else {
                const std::size_t n = utf8_sequence(text_, pos_);
                if (n == 0)
                    fail("string", "invalid UTF-8 byte " + here());
                out = copy(out, pos_, n);
                pos_ += n;
            }
        }
    }

    // Moves n bytes of the text at `from` to `out` (the same place until the first escape).
    char *copy(char *out, std::size_t from, std::size_t n) {
        if (out != buf_ + from)
            std::memmove(out, buf_ + from, n);
        return out + n;
    }

    char *escape(char *out) {
        ++pos_;
        if (pos_ >= text_.size())
            fail("string", "missing closing quote");
        const char c = text_[pos_++];
        switch (c) {
        case '"': *out = '"'; return out + 1;
        case '\\': *out = '\\'; return out + 1;
        case '/': *out = '/'; return out + 1;
        case 'b': *out = '\b'; return out + 1;
        case 'f': *out = '\f'; return out + 1;
        case 'n': *out = '\n'; return out + 1;
        case 'r': *out = '\r'; return out + 1;
        case 't': *out = '\t'; return out + 1;
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
        return put_code_point(out, cp);
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
    void number(Value &slot) {
        const std::size_t start = pos_;
        const auto digits = [&] {
            const std::size_t from = pos_;
            while (pos_ < text_.size() && is_digit(text_[pos_]))
                ++pos_;
            return pos_ > from;
        };
        const bool negative = at_char('-');
        if (negative)
            ++pos_;
        if (at_char('0'))
            ++pos_;
        else if (!digits())
            fail("number", "unexpected " + here() + "; expected a digit");
        bool integral = true;
        if (at_char('.')) {
            ++pos_;
            integral = false;
            if (!digits())
                fail("number", "unexpected " + here() + "; expected a digit after '.'");
        }
        if (at_char('e') || at_char('E')) {
            ++pos_;
            integral = false;
            if (at_char('+') || at_char('-'))
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
                    B::set_int(slot, v);
                    return;
                }
            } else {
                std::uint64_t v = 0;
                if (std::from_chars(first, last, v).ec == std::errc()) {
                    B::set_uint(slot, v);
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
        B::set_double(slot, d);
    }

    // The JSON pointer of the value being read now: the path through the open containers.
    std::string pointer_here() const {
        std::string out;
        for (const Frame &f : open_) {
            if (nodes_[f.node].is_array())
                out = pointer_to(out, f.live - 1);
            else
                out = pointer_to(out, f.key);
        }
        return out;
    }

    std::string_view text_;
    char *buf_;
    std::vector<Value> &nodes_;
    const ParseOptions &options_;
    std::size_t pos_ = 0;
    // The containers being filled, root first. Kept per thread between parses: a message's
    // parse would otherwise begin with an allocation for it.
    static std::vector<Frame> &frames() {
        thread_local std::vector<Frame> kept;
        kept.clear();
        return kept;
    }
    std::vector<Frame> &open_ = frames();
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

Document::Document(const Document &other) : text_(other.text_), nodes_(other.nodes_) {
    // The copies' keys and strings point into the other's text: move them to this one's.
    const char *from = other.text_.data();
    char *to = text_.data();
    const auto rebase = [&](const char *&p) {
        if (p)
            p = to + (p - from);
    };
    for (Value &v : nodes_) {
        rebase(v.key_);
        rebase(v.text_);
    }
}

Parsed parse(std::string_view text, const ParseOptions &options) {
    Parsed out;
    if (const void *nul = std::memchr(text.data(), '\0', text.size())) {
        out.syntax_error = "NUL byte at offset " +
                           std::to_string(static_cast<const char *>(nul) - text.data());
        return out;
    }
    char *buf = DocumentBuilder::adopt(out.document, text);
    Parser parser(text, buf, DocumentBuilder::nodes(out.document), options);
    try {
        parser.document();
    } catch (const Syntax &e) {
        out.syntax_error = e.positioned ? position(text, e.offset) + ": " + e.message : e.message;
        DocumentBuilder::reset(out.document); // whatever was built is partial
        return out;
    }
    out.duplicate = std::move(parser.duplicate);
    return out;
}

} // namespace mcastd::json_check
