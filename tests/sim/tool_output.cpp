// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sim/tool_output.hpp"

#include <cctype>
#include <charconv>
#include <stdexcept>

namespace mcastd::sim {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto &c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

template <typename Fn> void for_each_line(std::string_view text, Fn fn) {
    while (!text.empty()) {
        auto nl = text.find('\n');
        fn(text.substr(0, nl));
        if (nl == std::string_view::npos)
            break;
        text.remove_prefix(nl + 1);
    }
}

} // namespace

std::optional<std::pair<std::string, std::string>> parse_field_line(std::string_view line) {
    // The label ends at the first ':' or '.'; what follows must be an optional ':' and then
    // a dot leader. smpquery pads some labels with a single dot
    // ("McastPkeyTrapSuppressionEnabled:.0"), so one dot is enough after a colon.
    auto end = line.find_first_of(":.");
    if (end == std::string_view::npos)
        return std::nullopt;
    std::string_view label = trim(line.substr(0, end));
    std::string_view rest = line.substr(end);
    bool colon = rest.front() == ':';
    if (colon)
        rest.remove_prefix(1);
    std::size_t dots = 0;
    while (dots < rest.size() && rest[dots] == '.')
        ++dots;
    if (label.empty() || dots == 0 || (!colon && dots < 2))
        return std::nullopt;
    return std::pair{lower(label), std::string(trim(rest.substr(dots)))};
}

ToolRecord parse_fields(std::string_view text) {
    ToolRecord rec;
    for_each_line(text, [&](std::string_view line) {
        if (auto f = parse_field_line(line))
            rec.insert(std::move(*f)); // the first occurrence wins
    });
    return rec;
}

std::vector<ToolRecord> parse_records(std::string_view text, std::string_view header) {
    std::vector<ToolRecord> records;
    for_each_line(text, [&](std::string_view line) {
        if (trim(line) == header) {
            records.emplace_back();
            return;
        }
        if (records.empty())
            return;
        if (auto f = parse_field_line(line))
            records.back().insert(std::move(*f));
    });
    return records;
}

std::optional<std::uint64_t> parse_number(std::string_view text, std::uint64_t max) {
    text = trim(text);
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        base = 16;
        text.remove_prefix(2);
    }
    if (text.empty())
        return std::nullopt;
    std::uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (ec != std::errc{} || ptr != text.data() + text.size() || value > max)
        return std::nullopt;
    return value;
}

std::uint64_t field_number(const ToolRecord &rec, const std::string &key, std::uint64_t max) {
    auto it = rec.find(key);
    if (it == rec.end())
        throw std::runtime_error("tool output has no '" + key + "' field");
    auto v = parse_number(it->second, max);
    if (!v)
        throw std::runtime_error("tool output field '" + key + "' is not a number <= " +
                                 std::to_string(max) + ": '" + it->second + "'");
    return *v;
}

Gid field_gid(const ToolRecord &rec, const std::string &key) {
    auto it = rec.find(key);
    if (it == rec.end())
        throw std::runtime_error("tool output has no '" + key + "' field");
    auto g = parse_gid(it->second);
    if (!g)
        throw std::runtime_error("tool output field '" + key + "' is not a GID: '" + it->second +
                                 "'");
    return *g;
}

namespace {

// The value of " key=" in `line` up to the next blank.
std::optional<std::string_view> dump_value(std::string_view line, std::string_view key) {
    const std::string needle = " " + std::string(key) + "=";
    auto at = line.find(needle);
    if (at == std::string_view::npos)
        return std::nullopt;
    std::string_view v = line.substr(at + needle.size());
    return v.substr(0, v.find(' '));
}

// "0x<hi>:0x<lo>", two 64-bit halves as OpenSM prints a GID.
std::optional<Gid> dump_gid(std::string_view text) {
    auto colon = text.find(':');
    if (colon == std::string_view::npos)
        return std::nullopt;
    auto hi = parse_number(text.substr(0, colon)), lo = parse_number(text.substr(colon + 1));
    if (!hi || !lo)
        return std::nullopt;
    return make_gid(*hi, *lo);
}

} // namespace

std::vector<SaDumpGroup> parse_sa_dump(std::string_view text) {
    std::vector<SaDumpGroup> groups;
    for_each_line(text, [&](std::string_view line) {
        auto bad = [&](const char *why) {
            throw std::runtime_error(std::string("opensm-sa.dump: ") + why + ": '" +
                                     std::string(line) + "'");
        };
        if (line.starts_with("MC Group ")) {
            auto mgid = dump_value(line, "mgid");
            auto mlid = dump_value(line, "mlid");
            if (!mgid || !mlid)
                bad("a group line without mgid= or mlid=");
            auto g = dump_gid(*mgid);
            auto l = parse_number(*mlid, 0xffff);
            if (!g || !l)
                bad("a group line with a malformed mgid or mlid");
            groups.push_back(SaDumpGroup{*g, static_cast<std::uint16_t>(*l),
                                         line.find("(well known)") != std::string_view::npos, {}});
        } else if (line.starts_with("mcm_port:")) {
            if (groups.empty())
                bad("a member before any group");
            auto gid = dump_value(line, "port_gid");
            auto ss = dump_value(line, "scope_state");
            std::optional<Gid> g = gid ? dump_gid(*gid) : std::nullopt;
            std::optional<std::uint64_t> s = ss ? parse_number(*ss, 0xff) : std::nullopt;
            if (!g || !s)
                bad("a member line with a malformed port_gid or scope_state");
            // scope_state: scope in the high nibble, JoinState in the low one.
            groups.back().members[*g] = static_cast<std::uint8_t>(*s & 0xf);
        }
    });
    return groups;
}

} // namespace mcastd::sim
