// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/json_check.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

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

// Where a value is. Its JSON pointer is made only for an error: a reply's every field would
// otherwise cost a string (most pointers are longer than the short-string buffer).
struct Place {
    std::string_view parent;
    std::optional<std::string_view> key; // none: `parent` is the whole pointer
    std::string text() const { return key ? pointer_to(parent, *key) : std::string(parent); }
};

[[noreturn]] void throw_type(const json &v, const Place &at, std::string expected) {
    throw FieldError(at.text(), "expected " + std::move(expected) + ", got " + describe_value(v));
}

std::uint64_t uint_at(const json &v, const Place &at, std::uint64_t lo, std::uint64_t hi) {
    if (v.is_number_unsigned()) {
        const auto u = v.unsigned_integer();
        if (u < lo || u > hi)
            throw FieldError(at.text(), to_decimal(u) + " out of range " + range_text(lo, hi));
        return u;
    }
    if (v.is_number_integer()) { // signed storage: the parser uses it for negatives only
        const auto i = v.integer();
        if (i < 0 || static_cast<std::uint64_t>(i) < lo || static_cast<std::uint64_t>(i) > hi)
            throw FieldError(at.text(), to_decimal(i) + " out of range " + range_text(lo, hi));
        return static_cast<std::uint64_t>(i);
    }
    throw_type(v, at, "an integer in " + range_text(lo, hi));
}

std::int64_t sint_at(const json &v, const Place &at, std::int64_t lo, std::int64_t hi) {
    if (v.is_number_unsigned()) {
        const auto u = v.unsigned_integer();
        if (hi < 0 || u > static_cast<std::uint64_t>(hi) || (lo > 0 && u < static_cast<std::uint64_t>(lo)))
            throw FieldError(at.text(), to_decimal(u) + " out of range " + range_text(lo, hi));
        return static_cast<std::int64_t>(u);
    }
    if (v.is_number_integer()) {
        const auto i = v.integer();
        if (i < lo || i > hi)
            throw FieldError(at.text(), to_decimal(i) + " out of range " + range_text(lo, hi));
        return i;
    }
    throw_type(v, at, "an integer in " + range_text(lo, hi));
}

std::string_view string_at(const json &v, const Place &at) {
    if (!v.is_string())
        throw_type(v, at, "a string");
    return v.string();
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
    // nlohmann-json writes the scalars: the same text as everywhere else we write JSON.
    using Type = json::Type;
    switch (v.type()) {
    case Type::object: return "an object";
    case Type::array: return "an array";
    case Type::string: return describe_string(v.string());
    case Type::null: return "null";
    case Type::boolean: return v.boolean() ? "true" : "false";
    case Type::integer: return to_decimal(v.integer());
    case Type::unsigned_integer: return to_decimal(v.unsigned_integer());
    case Type::floating: return nlohmann::json(v.number()).dump();
    }
    return "a value";
}

std::string describe_string(std::string_view s) {
    constexpr auto replace = nlohmann::json::error_handler_t::replace;
    constexpr std::size_t kMax = 40;
    if (s.size() <= kMax)
        return nlohmann::json(s).dump(-1, ' ', false, replace);
    // Cut at a UTF-8 character boundary, not inside a sequence.
    std::size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80)
        --cut;
    return nlohmann::json(s.substr(0, cut)).dump(-1, ' ', false, replace) + "...";
}

// ---- single values ----

std::uint64_t check_uint(const json &v, const std::string &pointer, std::uint64_t lo,
                         std::uint64_t hi) {
    return uint_at(v, Place{pointer, std::nullopt}, lo, hi);
}

std::int64_t check_sint(const json &v, const std::string &pointer, std::int64_t lo,
                        std::int64_t hi) {
    return sint_at(v, Place{pointer, std::nullopt}, lo, hi);
}

std::string_view check_string(const json &v, const std::string &pointer) {
    return string_at(v, Place{pointer, std::nullopt});
}

const json &check_array(const json &v, const std::string &pointer) {
    if (!v.is_array())
        throw_type(v, Place{pointer, std::nullopt}, "an array");
    return v;
}

// ---- ObjectReader ----

namespace {

// One of 64 bits for a key, from its size and its first and last bytes.
std::uint64_t key_bit(std::string_view key) {
    const unsigned mix = key.empty() ? 0u
                                     : static_cast<unsigned char>(key.front()) * 5u +
                                           static_cast<unsigned char>(key.back());
    return std::uint64_t{1} << ((key.size() * 7u + mix) & 63u);
}

} // namespace

ObjectReader::ObjectReader(const json &value, std::string pointer)
    : obj_(&value), pointer_(std::move(pointer)) {
    if (!value.is_object())
        throw_type(value, Place{pointer_, std::nullopt}, "an object");
}

const json *ObjectReader::find(std::string_view key) const {
    // A reader asks for every key it knows, and a request names a handful of a join's twenty:
    // after the first miss, a mask of the keys present refuses most absent ones without a walk
    // of the members. (A reply's reader finds nearly every key it asks for, in order, and never
    // pays for the mask.)
    if (keys_known_ && !(keys_ & key_bit(key)))
        return nullptr;
    const json *found = obj_->find_from(key, next_);
    if (!found && !keys_known_) {
        for (const json &member : *obj_)
            keys_ |= key_bit(member.key());
        keys_known_ = true;
    }
    return found;
}

void ObjectReader::require_only(std::span<const std::string_view> allowed,
                                std::span<const std::string_view> also_allowed) const {
    auto listed = [](const json &member, std::span<const std::string_view> keys) {
        return std::any_of(keys.begin(), keys.end(), [&](std::string_view k) { return member.has_key(k); });
    };
    for (const json &member : *obj_)
        if (!listed(member, allowed) && !listed(member, also_allowed))
            fail(member.key(), "unknown key");
}

void ObjectReader::fail(std::string_view key, std::string reason) const {
    throw FieldError(pointer(key), std::move(reason));
}

std::optional<std::uint64_t> ObjectReader::uint(std::string_view key, std::uint64_t lo,
                                                std::uint64_t hi) const {
    const json *v = find(key);
    if (!v)
        return std::nullopt;
    return uint_at(*v, Place{pointer_, key}, lo, hi);
}

std::uint64_t ObjectReader::required_uint(std::string_view key, std::uint64_t lo,
                                          std::uint64_t hi) const {
    return uint_at(required(key), Place{pointer_, key}, lo, hi);
}

std::optional<std::int64_t> ObjectReader::sint(std::string_view key, std::int64_t lo,
                                               std::int64_t hi) const {
    const json *v = find(key);
    if (!v)
        return std::nullopt;
    return sint_at(*v, Place{pointer_, key}, lo, hi);
}

std::optional<double> ObjectReader::number(std::string_view key) const {
    const json *v = find(key);
    if (!v)
        return std::nullopt;
    if (!v->is_number())
        throw_type(*v, Place{pointer_, key}, "a number");
    return v->number(); // finite: the parser refuses "1e400" (number overflow)
}

std::optional<std::string_view> ObjectReader::string(std::string_view key) const {
    const json *v = find(key);
    if (!v)
        return std::nullopt;
    return string_at(*v, Place{pointer_, key});
}

std::string_view ObjectReader::required_string(std::string_view key) const {
    return string_at(required(key), Place{pointer_, key});
}

std::optional<bool> ObjectReader::boolean(std::string_view key) const {
    const json *v = find(key);
    if (!v)
        return std::nullopt;
    if (!v->is_boolean())
        throw_type(*v, Place{pointer_, key}, "true or false");
    return v->boolean();
}

bool ObjectReader::required_boolean(std::string_view key) const {
    if (auto b = boolean(key))
        return *b;
    fail(key, "required key is missing");
}

const json *ObjectReader::array(std::string_view key) const {
    const json *v = find(key);
    if (v && !v->is_array())
        throw_type(*v, Place{pointer_, key}, "an array");
    return v;
}

const json *ObjectReader::object(std::string_view key) const {
    const json *v = find(key);
    if (v && !v->is_object())
        throw_type(*v, Place{pointer_, key}, "an object");
    return v;
}

const json &ObjectReader::required(std::string_view key) const {
    const json *v = find(key);
    if (!v)
        fail(key, "required key is missing");
    return *v;
}

} // namespace mcastd::json_check
