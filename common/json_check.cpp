#include "common/json_check.hpp"

#include "common/utf8.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

namespace mcastd::json_check {

std::string FieldError::describe() const {
    if (pointer.empty())
        return reason;
    std::string out;
    out.reserve(pointer.size() + 2 + reason.size());
    out += pointer;
    out += ": ";
    out += reason;
    return out;
}

namespace {

void append_escaped_token(std::string &out, std::string_view token) {
    for (char c : token) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
}

std::string to_decimal(std::uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string to_decimal(std::int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string range_text(std::uint64_t lo, std::uint64_t hi) {
    return "[" + to_decimal(lo) + ", " + to_decimal(hi) + "]";
}

std::string range_text(std::int64_t lo, std::int64_t hi) {
    return "[" + to_decimal(lo) + ", " + to_decimal(hi) + "]";
}

// At most `max` bytes of `s` as valid UTF-8 without control characters: bytes that are not
// UTF-8 become U+FFFD, controls "\xNN". The library's syntax errors quote the input ("last
// read: '...'"), which may be anything, and the message goes into a JSON reply and a log line.
std::string printable(std::string_view s, std::size_t max) {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        if (out.size() >= max) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t n = proto::utf8_sequence(s, i);
        if (c < 0x20 || c == 0x7f) {
            static constexpr char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
            ++i;
        } else if (n == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(s.data() + i, n);
            i += n;
        }
    }
    return out;
}

// "[json.exception.parse_error.101] parse error at line 1, column 8: syntax error ..." ->
// "line 1, column 8: syntax error ...": the library's prefix says nothing to a user.
std::string describe_syntax_error(std::string_view what) {
    if (auto end = what.find("] "); what.starts_with("[json.exception.") && end != what.npos)
        what.remove_prefix(end + 2);
    for (std::string_view p : {std::string_view("parse error at "), std::string_view("parse error: ")})
        if (what.starts_with(p)) {
            what.remove_prefix(p.size());
            break;
        }
    return printable(what, 200);
}

// A SAX consumer that builds the same DOM as json::parse() does, but (a) reports the first
// duplicate key with its pointer, which the library's own parser drops silently, (b) bounds the
// nesting depth, and (c) turns a syntax error into a message instead of an exception.
//
// Values go in through the public API (push_back, operator[]) so that JSON_DIAGNOSTICS' parent
// pointers stay right. Only the containers on the path from the root are kept by pointer, and
// a container is never modified while one of its children is open, so no pointer dangles.
class DomBuilder {
public:
    using string_t = json::string_t;

    DomBuilder(json &root, std::size_t max_depth) : root_(root), max_depth_(max_depth) {}

    bool null() { return place(json(nullptr)); }
    bool boolean(bool v) { return place(json(v)); }
    bool number_integer(json::number_integer_t v) { return place(json(v)); }
    bool number_unsigned(json::number_unsigned_t v) { return place(json(v)); }
    bool number_float(json::number_float_t v, const string_t &) { return place(json(v)); }
    // The parser hands us its token buffer and clears it before the next token: ours to move.
    bool string(string_t &v) { return place(json(std::move(v))); }
    bool binary(json::binary_t &) { // only the binary formats (CBOR, ...) produce these
        syntax_error = "binary value in JSON text";
        return false;
    }

    bool start_object(std::size_t) { return open(json::value_t::object); }
    bool start_array(std::size_t) { return open(json::value_t::array); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(string_t &k) {
        Open &top = stack_.back();
        if (!duplicate && top.container->contains(k))
            duplicate.emplace(pointer_to(top.pointer, k), "duplicate key");
        key_ = std::move(k);
        return true;
    }

    bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &ex) {
        syntax_error = describe_syntax_error(ex.what());
        return false;
    }

    std::optional<std::string> syntax_error;
    std::optional<FieldError> duplicate;

private:
    struct Open {
        json *container;
        std::string pointer; // built once per container, used only in messages
    };

    // Where the next value goes: the root, the end of the open array, or the open object under
    // the last key (replacing an earlier value of a duplicate key, as json::parse does).
    json &slot_for(json &&v, std::string *pointer) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return root_;
        }
        Open &top = stack_.back();
        if (top.container->is_array()) {
            if (pointer)
                *pointer = pointer_to(top.pointer, top.container->size());
            top.container->push_back(std::move(v));
            return top.container->back();
        }
        if (pointer)
            *pointer = pointer_to(top.pointer, key_);
        json &slot = (*top.container)[std::move(key_)];
        slot = std::move(v);
        return slot;
    }

    bool place(json &&v) {
        slot_for(std::move(v), nullptr);
        return true;
    }

    bool open(json::value_t type) {
        std::string pointer;
        json &c = slot_for(json(type), &pointer);
        if (stack_.size() >= max_depth_) {
            syntax_error = (pointer.empty() ? std::string("document") : pointer) +
                           ": nested deeper than " + std::to_string(max_depth_) + " levels";
            return false;
        }
        stack_.push_back(Open{&c, std::move(pointer)});
        return true;
    }

    bool close() {
        stack_.pop_back();
        return true;
    }

    json &root_;
    std::size_t max_depth_;
    std::vector<Open> stack_;
    string_t key_;
};

[[noreturn]] void throw_type(const json &v, const std::string &pointer, std::string expected) {
    throw FieldError(pointer, "expected " + std::move(expected) + ", got " + describe_value(v));
}

} // namespace

std::string pointer_to(std::string_view parent, std::string_view key) {
    std::string out;
    out.reserve(parent.size() + 1 + key.size());
    out += parent;
    out += '/';
    append_escaped_token(out, key);
    return out;
}

std::string pointer_to(std::string_view parent, std::size_t index) {
    std::string out(parent);
    out += '/';
    out += to_decimal(std::uint64_t{index});
    return out;
}

std::string describe_value(const json &v) {
    switch (v.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::binary: return "binary data";
    case json::value_t::string: {
        constexpr std::size_t kMax = 40;
        const auto &s = v.get_ref<const json::string_t &>();
        if (s.size() <= kMax)
            return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
        // Cut at a UTF-8 character boundary, not inside a sequence.
        std::size_t cut = kMax;
        while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80)
            --cut;
        return json(s.substr(0, cut)).dump(-1, ' ', false, json::error_handler_t::replace) +
               "...";
    }
    default: return v.dump(-1, ' ', false, json::error_handler_t::replace);
    }
}

Parsed parse(std::string_view text, const ParseOptions &options) {
    Parsed out;
    // The lexer takes a NUL byte for the end of input and would accept "{}\0anything"; JSON
    // text has no raw NUL anywhere (inside strings it must be escaped).
    if (auto nul = text.find('\0'); nul != text.npos) {
        out.syntax_error = "NUL byte at offset " + std::to_string(nul);
        return out;
    }
    DomBuilder builder(out.value, options.max_depth);
    const char *begin = text.data();
    const bool ok = json::sax_parse(begin, begin + text.size(), &builder, json::input_format_t::json,
                                    /*strict=*/true, options.comments);
    if (!ok || builder.syntax_error) {
        out.syntax_error = builder.syntax_error ? std::move(*builder.syntax_error)
                                                : std::string("not valid JSON");
        out.value = json(); // whatever was built is partial
        return out;
    }
    out.duplicate = std::move(builder.duplicate);
    return out;
}

// ---- single values ----

std::uint64_t check_uint(const json &v, const std::string &pointer, std::uint64_t lo,
                         std::uint64_t hi) {
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u < lo || u > hi)
            throw FieldError(pointer, to_decimal(u) + " out of range " + range_text(lo, hi));
        return u;
    }
    if (v.is_number_integer()) { // signed storage: the parser uses it for negatives only
        const auto i = v.get<std::int64_t>();
        if (i < 0 || static_cast<std::uint64_t>(i) < lo || static_cast<std::uint64_t>(i) > hi)
            throw FieldError(pointer, to_decimal(i) + " out of range " + range_text(lo, hi));
        return static_cast<std::uint64_t>(i);
    }
    throw_type(v, pointer, "an integer in " + range_text(lo, hi));
}

std::int64_t check_sint(const json &v, const std::string &pointer, std::int64_t lo,
                        std::int64_t hi) {
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (hi < 0 || u > static_cast<std::uint64_t>(hi) ||
            (lo > 0 && u < static_cast<std::uint64_t>(lo)))
            throw FieldError(pointer, to_decimal(u) + " out of range " + range_text(lo, hi));
        return static_cast<std::int64_t>(u);
    }
    if (v.is_number_integer()) {
        const auto i = v.get<std::int64_t>();
        if (i < lo || i > hi)
            throw FieldError(pointer, to_decimal(i) + " out of range " + range_text(lo, hi));
        return i;
    }
    throw_type(v, pointer, "an integer in " + range_text(lo, hi));
}

std::string_view check_string(const json &v, const std::string &pointer) {
    if (!v.is_string())
        throw_type(v, pointer, "a string");
    return v.get_ref<const json::string_t &>();
}

const json &check_array(const json &v, const std::string &pointer) {
    if (!v.is_array())
        throw_type(v, pointer, "an array");
    return v;
}

// ---- ObjectReader ----

ObjectReader::ObjectReader(const json &value, std::string pointer)
    : obj_(&value), pointer_(std::move(pointer)) {
    if (!value.is_object())
        throw_type(value, pointer_, "an object");
}

const json *ObjectReader::find(std::string_view key) const {
    // std::less<> is the object comparator: a string_view key finds without allocating.
    auto it = obj_->find(key);
    return it == obj_->end() ? nullptr : &*it;
}

void ObjectReader::require_only(std::initializer_list<std::string_view> allowed,
                                std::span<const std::string_view> also_allowed) const {
    for (const auto &[k, v] : obj_->items()) {
        const std::string_view key = k;
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end() &&
            std::find(also_allowed.begin(), also_allowed.end(), key) == also_allowed.end())
            fail(key, "unknown key");
    }
}

void ObjectReader::fail(std::string_view key, std::string reason) const {
    throw FieldError(pointer(key), std::move(reason));
}

std::optional<std::uint64_t> ObjectReader::uint(std::string_view key, std::uint64_t lo,
                                                std::uint64_t hi) const {
    const json *v = find(key);
    if (!v)
        return std::nullopt;
    return check_uint(*v, pointer(key), lo, hi);
}

std::uint64_t ObjectReader::required_uint(std::string_view key, std::uint64_t lo,
                                          std::uint64_t hi) const {
    return check_uint(required(key), pointer(key), lo, hi);
}

std::optional<std::int64_t> ObjectReader::sint(std::string_view key, std::int64_t lo,
                                               std::int64_t hi) const {
    const json *v = find(key);
    if (!v)
        return std::nullopt;
    return check_sint(*v, pointer(key), lo, hi);
}

std::optional<double> ObjectReader::number(std::string_view key) const {
    const json *v = find(key);
    if (!v)
        return std::nullopt;
    if (!v->is_number())
        throw_type(*v, pointer(key), "a number");
    // "1e400" parses as infinity, which no encoder can write back (JSON has none).
    const auto d = v->get<double>();
    if (!std::isfinite(d))
        throw FieldError(pointer(key), "a number beyond the range of a double");
    return d;
}

std::optional<std::string_view> ObjectReader::string(std::string_view key) const {
    const json *v = find(key);
    if (!v)
        return std::nullopt;
    return check_string(*v, pointer(key));
}

std::string_view ObjectReader::required_string(std::string_view key) const {
    return check_string(required(key), pointer(key));
}

std::optional<bool> ObjectReader::boolean(std::string_view key) const {
    const json *v = find(key);
    if (!v)
        return std::nullopt;
    if (!v->is_boolean())
        throw_type(*v, pointer(key), "true or false");
    return v->get<bool>();
}

const json *ObjectReader::array(std::string_view key) const {
    const json *v = find(key);
    if (v && !v->is_array())
        throw_type(*v, pointer(key), "an array");
    return v;
}

const json *ObjectReader::object(std::string_view key) const {
    const json *v = find(key);
    if (v && !v->is_object())
        throw_type(*v, pointer(key), "an object");
    return v;
}

const json &ObjectReader::required(std::string_view key) const {
    const json *v = find(key);
    if (!v)
        fail(key, "required key is missing");
    return *v;
}

} // namespace mcastd::json_check
