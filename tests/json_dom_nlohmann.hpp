// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Tests build and edit JSON documents with nlohmann-json; the code under test reads only what
// json_check::parse() gives. These two cross between them.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

#include "common/json_check.hpp"

namespace mcastd::testing_json {

// A parsed value as nlohmann's DOM, for comparing and printing (a duplicate key's last value).
inline nlohmann::json to_nlohmann(const json_check::Value &v) {
    using Type = json_check::Value::Type;
    switch (v.type()) {
    case Type::null: return nullptr;
    case Type::boolean: return v.boolean();
    case Type::integer: return v.integer();
    case Type::unsigned_integer: return v.unsigned_integer();
    case Type::floating: return v.number();
    case Type::string: return std::string(v.string());
    case Type::array: {
        nlohmann::json out = nlohmann::json::array();
        for (const json_check::Value &e : v)
            out.push_back(to_nlohmann(e));
        return out;
    }
    case Type::object: {
        nlohmann::json out = nlohmann::json::object();
        for (const json_check::Value &m : v)
            out[std::string(m.key())] = to_nlohmann(m);
        return out;
    }
    }
    return nullptr;
}

// An nlohmann document as the code under test reads it: written out and parsed. Converts to the
// parsed value, so a temporary can be passed where a decoder takes `const Value &`.
class Parsed {
public:
    static Parsed from(const nlohmann::json &j) { return Parsed(j.dump()); }
    // Throws std::invalid_argument when the text is not JSON.
    static Parsed from_text(std::string_view text) { return Parsed(text); }
    const json_check::Value &value() const { return parsed_.value(); }
    operator const json_check::Value &() const { return value(); }

private:
    explicit Parsed(std::string_view text) : parsed_(json_check::parse(text)) {
        if (parsed_.syntax_error)
            throw std::invalid_argument(*parsed_.syntax_error);
    }
    json_check::Parsed parsed_;
};

} // namespace mcastd::testing_json
