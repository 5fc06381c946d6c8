// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/gid_table.hpp"

#include <algorithm>

namespace mcastd::port {

namespace {

bool same_address(const GidEntry &a, const GidEntry &b) {
    return a.gid == b.gid && a.type == b.type && a.netdev == b.netdev;
}

const GidEntry *find_address(std::span<const GidEntry> table, const GidEntry &e) {
    const auto it = std::find_if(table.begin(), table.end(), [&](const GidEntry &x) { return same_address(x, e); });
    return it == table.end() ? nullptr : &*it;
}

} // namespace

std::string_view trim_sysfs_text(std::string_view s) {
    constexpr std::string_view space = " \t\n\r";
    const auto first = s.find_first_not_of(space);
    if (first == std::string_view::npos)
        return {};
    return s.substr(first, s.find_last_not_of(space) - first + 1);
}

std::optional<Gid> parse_sysfs_gid(std::string_view text) { return parse_gid(trim_sysfs_text(text)); }

std::optional<GidType> parse_sysfs_gid_type(std::string_view text, LinkLayer link_layer) {
    const std::string_view t = trim_sysfs_text(text);
    if (t == "IB/RoCE v1")
        return link_layer == LinkLayer::ethernet ? GidType::roce_v1 : GidType::ib;
    if (t == "RoCE v2")
        return GidType::roce_v2;
    return std::nullopt;
}

bool unused_gid_text(std::string_view text) {
    const auto gid = parse_sysfs_gid(text);
    return gid && is_zero(*gid);
}

GidTable parse_gid_table(std::span<const GidFiles> files, LinkLayer link_layer) {
    GidTable t;
    for (const GidFiles &f : files) {
        const std::string where = std::to_string(f.index);
        if (!f.gid)
            continue;
        const auto gid = parse_sysfs_gid(*f.gid);
        if (!gid) {
            t.problems.push_back("gids/" + where + ": '" + std::string(trim_sysfs_text(*f.gid)) + "' is not a GID");
            continue;
        }
        if (is_zero(*gid) || !f.type)
            continue;
        const auto type = parse_sysfs_gid_type(*f.type, link_layer);
        if (!type) {
            t.problems.push_back("gid_attrs/types/" + where + ": unknown GID type '" +
                                 std::string(trim_sysfs_text(*f.type)) + "'");
            continue;
        }
        const std::string netdev(f.netdev ? trim_sysfs_text(*f.netdev) : std::string_view{});
        if (link_layer == LinkLayer::ethernet && netdev.empty())
            continue;
        t.entries.push_back(GidEntry{f.index, *gid, *type, netdev});
    }
    std::sort(t.entries.begin(), t.entries.end(),
              [](const GidEntry &a, const GidEntry &b) { return a.index < b.index; });
    return t;
}

GidTableChange diff_gid_tables(std::span<const GidEntry> before, std::span<const GidEntry> after) {
    GidTableChange c;
    for (const GidEntry &old : before)
        if (!find_address(after, old))
            c.removed.push_back(old);
    for (const GidEntry &now : after) {
        const GidEntry *old = find_address(before, now);
        if (!old)
            c.added.push_back(now);
        else if (old->index != now.index)
            c.moved.push_back(now);
        else if (old->netdev_gone != now.netdev_gone || old->ifindex != now.ifindex || old->mtu != now.mtu)
            c.netdev.push_back(now);
    }
    return c;
}

std::string describe(const GidEntry &e) {
    std::string s = std::to_string(e.index) + " " + format_gid(e.gid) + " " + std::string(gid_type_name(e.type));
    if (!e.netdev.empty())
        s += " " + e.netdev;
    if (e.netdev_gone)
        s += " (not in the daemon's network namespace)";
    else if (e.ifindex)
        s += " (ifindex " + std::to_string(e.ifindex) + ", MTU " + std::to_string(e.mtu) + ")";
    return s;
}

std::string describe(const GidTableChange &c) {
    std::string out;
    const auto part = [&out](const char *what, const std::vector<GidEntry> &entries) {
        if (entries.empty())
            return;
        out += (out.empty() ? "" : "; ") + std::string(what);
        for (std::size_t i = 0; i < entries.size(); ++i)
            out += (i ? ", " : " ") + describe(entries[i]);
    };
    part("removed", c.removed);
    part("added", c.added);
    part("moved", c.moved);
    part("netdev", c.netdev);
    return out;
}

} // namespace mcastd::port
