// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Strict reading of untrusted JSON, shared by the protocol codec, the daemon's config parser
// and its restart state.
//
// Nothing converts silently here: 3.7 is not 3, 300 not a uint8 44, true not 1, -1 not
// 4294967295. Every getter checks a value's type and range before it converts, duplicates are
// caught while parsing (the last value wins, as in nlohmann-json, but the first duplicate is
// reported), and every complaint names its place as a JSON pointer ("/sa/timeout_ms").
//
// Errors inside a decoder are thrown as FieldError and caught at the decoder's public entry
// point, which turns them into the caller's error type: decoders nest (a record inside an
// event inside a reply) and the first error ends them all, which is exactly what an exception
// does. Nothing here throws anything else except std::bad_alloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "common/json_dom.hpp"

namespace mcastd::json_check {

// The values a parse gives (json_dom.hpp); the name is what every reader already calls them.
using json = Value;

// A problem at one place of a document. `pointer` is a JSON pointer ("" = the whole document)
// and `reason` a phrase without the pointer ("0 out of range [1, 60000]").
struct FieldError : std::exception {
    FieldError(std::string pointer_, std::string reason_)
        : pointer(std::move(pointer_)), reason(std::move(reason_)) {}
    const char *what() const noexcept override { return reason.c_str(); }
    // "/sa/timeout_ms: 0 out of range [1, 60000]", or the bare reason for the whole document.
    std::string describe() const;

    std::string pointer;
    std::string reason;
};

// RFC 6901: "~" -> "~0", "/" -> "~1", then "/" in front.
std::string pointer_to(std::string_view parent, std::string_view key);
std::string pointer_to(std::string_view parent, std::size_t index);

// A short rendering of a value for a message: scalars as JSON (long strings cut), containers
// by type ("an object").
std::string describe_value(const json &v);
// A string as describe_value() renders one: quoted as JSON, cut after 40 bytes.
std::string describe_string(std::string_view s);

// ---- parsing ----

struct ParseOptions {
    bool comments = false;      // allow /* */ and // (config files, not the protocol)
    std::size_t max_depth = 32; // deeper nesting is an error; our documents are shallow
};

struct Parsed {
    Document document;
    const json &value() const { return document.root(); }
    // Set when the text is not JSON at all (or nests too deep); `value()` is then null.
    // The reason carries the position: "line 1, column 8: syntax error while parsing ...".
    std::optional<std::string> syntax_error;
    // The first key that occurs twice in one object. The document is otherwise complete (the
    // last value won), so a caller can still read what is not ambiguous, e.g. a request's id.
    std::optional<FieldError> duplicate;
};

// Parses without throwing (except std::bad_alloc), even on bad input.
Parsed parse(std::string_view text, const ParseOptions &options = {});

// ---- reading one object ----

// One JSON object and its pointer, with getters that check type and range before converting.
// Absent keys are nullopt (or a FieldError "required" for the required_* forms); a present key
// of the wrong type or out of range is always a FieldError.
class ObjectReader {
public:
    // Throws FieldError when `value` is not an object.
    ObjectReader(const json &value, std::string pointer);

    const json &value() const { return *obj_; }
    const std::string &pointer() const { return pointer_; }
    std::string pointer(std::string_view key) const { return pointer_to(pointer_, key); }

    bool has(std::string_view key) const { return find(key) != nullptr; }
    const json *find(std::string_view key) const;

    // Every key must be in one of the lists ("<ptr>/<key>: unknown key").
    void require_only(std::span<const std::string_view> allowed,
                      std::span<const std::string_view> also_allowed = {}) const;
    void require_only(std::initializer_list<std::string_view> allowed,
                      std::span<const std::string_view> also_allowed = {}) const {
        require_only(std::span<const std::string_view>(allowed.begin(), allowed.size()), also_allowed);
    }

    // Integers: is_number_integer() (no floats, no booleans), then [lo, hi] compared in the
    // 64-bit domain of the value's own signedness, then the cast.
    std::optional<std::uint64_t> uint(std::string_view key, std::uint64_t lo,
                                      std::uint64_t hi) const;
    std::uint64_t required_uint(std::string_view key, std::uint64_t lo, std::uint64_t hi) const;
    template <class T>
    std::optional<T> uint_as(std::string_view key, std::uint64_t lo, std::uint64_t hi) const {
        if (auto v = uint(key, lo, hi))
            return static_cast<T>(*v);
        return std::nullopt;
    }
    std::optional<std::int64_t> sint(std::string_view key, std::int64_t lo, std::int64_t hi) const;

    // Any number (integer or float), for values people read, e.g. uptime_s.
    std::optional<double> number(std::string_view key) const;

    std::optional<std::string_view> string(std::string_view key) const;
    std::string_view required_string(std::string_view key) const;
    std::optional<bool> boolean(std::string_view key) const;
    bool required_boolean(std::string_view key) const;

    // The member, type-checked; nullptr when absent.
    const json *array(std::string_view key) const;
    const json *object(std::string_view key) const;
    const json &required(std::string_view key) const; // any type, present

    [[noreturn]] void fail(std::string_view key, std::string reason) const;

private:
    const json *obj_;
    mutable const json *next_ = nullptr; // where find() starts: after the member found last
    mutable std::uint64_t keys_ = 0;      // key_bit() of every member's key, once keys_known_
    mutable bool keys_known_ = false;
    std::string pointer_;
};

// The checks above on a value that is not an object member (array elements, top-level values),
// with its pointer.
std::uint64_t check_uint(const json &v, const std::string &pointer, std::uint64_t lo,
                         std::uint64_t hi);
std::int64_t check_sint(const json &v, const std::string &pointer, std::int64_t lo,
                        std::int64_t hi);
std::string_view check_string(const json &v, const std::string &pointer);
const json &check_array(const json &v, const std::string &pointer);

} // namespace mcastd::json_check
