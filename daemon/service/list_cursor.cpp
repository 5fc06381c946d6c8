// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "service/list_cursor.hpp"

#include <charconv>
#include <vector>

namespace mcastd {

namespace {

// Decimal digits and nothing else (no sign, no space), within T.
template <class T> std::optional<T> number(std::string_view s) {
    T v{};
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size())
        return std::nullopt;
    return v;
}

} // namespace

std::string format_cursor(const GroupCursor &c) {
    return std::to_string(c.group.port) + "," + format_gid(c.group.mgid) + "," + std::to_string(c.group.unassigned) +
           "," + (c.member ? std::to_string(*c.member) : "-");
}

std::optional<GroupCursor> parse_cursor(std::string_view text) {
    std::vector<std::string_view> fields;
    for (std::size_t start = 0;;) {
        const std::size_t comma = text.find(',', start);
        fields.push_back(text.substr(start, comma - start));
        if (comma == std::string_view::npos)
            break;
        start = comma + 1;
    }
    if (fields.size() != 4)
        return std::nullopt;
    GroupCursor c;
    const auto port = number<PortIndex>(fields[0]);
    const auto mgid = parse_gid(fields[1]);
    const auto unassigned = number<std::uint64_t>(fields[2]);
    if (!port || !mgid || !unassigned || (*unassigned && !is_zero(*mgid)))
        return std::nullopt;
    c.group = GroupKey{*port, *mgid, *unassigned};
    if (fields[3] != "-") {
        c.member = number<MembershipId>(fields[3]);
        if (!c.member)
            return std::nullopt;
    }
    return c;
}

} // namespace mcastd
