// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/list_reply.hpp"

#include <cstring>
#include <string>

#include "common/utf8.hpp"
#include "dbus/wire.hpp"

namespace mcastd::dbus {

namespace {

template <class T> int basic(sd_bus_message *m, const char *key, char type, T v) {
    const char sig[2] = {type, '\0'};
    return append_entry(m, key, sig, [&] { return sd_bus_message_append_basic(m, type, &v); });
}

int text(sd_bus_message *m, const char *key, std::string_view s) {
    const std::string valid = valid_utf8(s);
    return append_entry(m, key, "s", [&] { return sd_bus_message_append_basic(m, 's', valid.c_str()); });
}

int flag(sd_bus_message *m, const char *key, bool b) { return basic(m, key, 'b', int{b}); }

int names(sd_bus_message *m, const char *key, std::uint8_t bits) {
    return append_entry(m, key, "as", [&] { return append_join_state_names(m, bits); });
}

int member(sd_bus_message *m, const proto::MemberInfo &mem) {
    int r = sd_bus_message_open_container(m, 'a', "{sv}");
    if (r >= 0) r = basic(m, "membership", 't', std::uint64_t{mem.membership});
    if (r >= 0) r = text(m, "join_state", join_state_name(mem.join_state));
    if (r >= 0) r = text(m, "state", mem.state);
    if (r >= 0) r = basic(m, "pid", 'u', static_cast<std::uint32_t>(mem.pid));
    if (r >= 0) r = basic(m, "uid", 'u', static_cast<std::uint32_t>(mem.uid));
    if (r >= 0) r = text(m, "comm", mem.comm);
    if (r >= 0) r = text(m, "rule", mem.rule);
    if (r >= 0) r = flag(m, "created", mem.created);
    if (r >= 0 && !mem.flagged.empty()) r = text(m, "flagged", mem.flagged);
    if (r >= 0 && !mem.name.empty()) r = text(m, "name", mem.name);
    if (r >= 0) r = sd_bus_message_close_container(m);
    return r;
}

int group(sd_bus_message *m, const proto::PortGroups &p, const proto::GroupInfo &g) {
    int r = sd_bus_message_open_container(m, 'a', "{sv}");
    if (r >= 0) r = text(m, "device", p.device);
    if (r >= 0) r = basic(m, "port", 'q', std::uint16_t{p.port});
    if (r >= 0) r = text(m, "port_gid", format_gid(p.port_gid));
    if (r >= 0) r = text(m, "link_layer", link_layer_name(p.link_layer));
    if (r >= 0) r = text(m, "mgid", format_gid(g.mgid));
    if (r >= 0) r = basic(m, "mlid", 'q', g.mlid);
    if (r >= 0) r = basic(m, "qkey", 'u', g.qkey);
    if (r >= 0) r = flag(m, "busy", g.busy);
    if (r >= 0) r = names(m, "held", g.held);
    if (r >= 0) r = names(m, "foreign", g.foreign);
    if (r >= 0 && g.roce) { // a RoCE group: where it is sent from, as `list` on the socket
        r = text(m, "gid_type", gid_type_name(g.roce->gid_type));
        if (r >= 0) r = basic(m, "sgid_index", 'y', g.roce->sgid_index);
        if (r >= 0) r = text(m, "netdev", g.roce->netdev);
    }
    if (r >= 0)
        r = append_entry(m, "counts", "a{su}", [&] {
            int k = sd_bus_message_open_container(m, 'a', "{su}");
            for (std::size_t i = 0; k >= 0 && i < g.counts.size(); ++i)
                k = sd_bus_message_append(m, "{su}", join_state_name(static_cast<std::uint8_t>(1u << i)).c_str(),
                                          g.counts[i]);
            if (k >= 0) k = sd_bus_message_close_container(m);
            return k;
        });
    if (r >= 0)
        r = append_entry(m, "members", "aa{sv}", [&] {
            int k = sd_bus_message_open_container(m, 'a', "a{sv}");
            for (const auto &mem : g.members)
                if (k >= 0)
                    k = member(m, mem);
            if (k >= 0) k = sd_bus_message_close_container(m);
            return k;
        });
    if (r >= 0) r = sd_bus_message_close_container(m);
    return r;
}

// ---- sizes: each value's bytes with the padding before it at its largest ----

constexpr std::size_t kPad = 7;                                     // before an 8-aligned value
constexpr std::size_t kGidText = 39;                                // the longest IPv6 text
std::size_t str(std::size_t n) { return 3 + 4 + n + 1; }           // 4-aligned length, text, NUL
std::size_t sig(std::size_t n) { return 1 + n + 1; }               // a variant's signature
std::size_t entry(std::string_view key, std::size_t value_sig, std::size_t value) {
    return kPad + str(key.size()) + sig(value_sig) + kPad + value; // {sv}: 8-aligned, then v
}
std::size_t array_of(std::size_t items) { return 3 + 4 + kPad + items; } // length, 8-aligned items
std::size_t state_names(std::uint8_t bits) {
    std::size_t n = 0;
    for (unsigned i = 0; i < 8; ++i)
        if (bits & (1u << i))
            n += str(join_state_name(static_cast<std::uint8_t>(1u << i)).size());
    return array_of(n);
}

std::size_t member_bytes(const proto::MemberInfo &mem) {
    std::size_t n = entry("membership", 1, 8) + entry("join_state", 1, str(join_state_name(mem.join_state).size())) +
                    entry("state", 1, str(mem.state.size())) + entry("pid", 1, 4) + entry("uid", 1, 4) +
                    entry("comm", 1, str(valid_utf8(mem.comm).size())) + entry("rule", 1, str(mem.rule.size())) +
                    entry("created", 1, 4);
    if (!mem.flagged.empty())
        n += entry("flagged", 1, str(mem.flagged.size()));
    if (!mem.name.empty())
        n += entry("name", 1, str(valid_utf8(mem.name).size()));
    return kPad + array_of(n);
}

std::size_t group_bytes(const proto::PortGroups &p, const proto::GroupInfo &g) {
    std::size_t n = entry("device", 1, str(p.device.size())) + entry("port", 1, 2) +
                    entry("port_gid", 1, str(kGidText)) + entry("link_layer", 1, str(std::strlen(link_layer_name(p.link_layer)))) +
                    entry("mgid", 1, str(kGidText)) + entry("mlid", 1, 2) + entry("qkey", 1, 4) + entry("busy", 1, 4) +
                    entry("held", 2, state_names(g.held)) + entry("foreign", 2, state_names(g.foreign));
    if (g.roce)
        n += entry("gid_type", 1, str(gid_type_name(g.roce->gid_type).size())) + entry("sgid_index", 1, 1) +
             entry("netdev", 1, str(g.roce->netdev.size()));
    std::size_t counts = 0;
    for (std::size_t i = 0; i < g.counts.size(); ++i)
        counts += kPad + str(join_state_name(static_cast<std::uint8_t>(1u << i)).size()) + 3 + 4;
    n += entry("counts", 5, array_of(counts));
    std::size_t members = 0;
    for (const auto &mem : g.members)
        members += member_bytes(mem);
    n += entry("members", 6, array_of(members));
    return kPad + array_of(n);
}

std::size_t group_bytes_v1(const proto::PortGroups &p, const proto::GroupInfo &g) {
    constexpr std::size_t q = 1 + 2, u = 3 + 4, t = kPad + 8;
    std::size_t n = kPad + str(p.device.size()) + q + str(kGidText) + q + u + state_names(g.held) +
                    state_names(g.foreign);
    std::size_t members = 0;
    for (const auto &mem : g.members)
        members += kPad + t + str(join_state_name(mem.join_state).size()) + str(mem.state.size()) + u + u +
                   str(valid_utf8(mem.comm).size());
    return n + array_of(members);
}

} // namespace

std::size_t reply_bytes_at_most(const proto::ListResult &list, bool v2) {
    std::size_t groups = 0;
    for (const auto &p : list.ports)
        for (const auto &g : p.groups)
            groups += v2 ? group_bytes(p, g) : group_bytes_v1(p, g);
    return array_of(groups);
}

int append_groups_v1(sd_bus_message *m, const proto::ListResult &list) {
    int r = sd_bus_message_open_container(m, 'a', "(sqsquasasa(tssuus))");
    for (const auto &p : list.ports)
        for (const auto &g : p.groups) {
            const std::string mgid = format_gid(g.mgid);
            if (r >= 0) r = sd_bus_message_open_container(m, 'r', "sqsquasasa(tssuus)");
            if (r >= 0) r = sd_bus_message_append(m, "sqsqu", p.device.c_str(), std::uint16_t{p.port}, mgid.c_str(),
                                                  g.mlid, g.qkey);
            if (r >= 0) r = append_join_state_names(m, g.held);
            if (r >= 0) r = append_join_state_names(m, g.foreign);
            if (r >= 0) r = sd_bus_message_open_container(m, 'a', "(tssuus)");
            for (const auto &mem : g.members)
                if (r >= 0)
                    r = sd_bus_message_append(m, "(tssuus)", std::uint64_t{mem.membership},
                                              join_state_name(mem.join_state).c_str(), mem.state.c_str(),
                                              static_cast<std::uint32_t>(mem.pid), static_cast<std::uint32_t>(mem.uid),
                                              valid_utf8(mem.comm).c_str());
            if (r >= 0) r = sd_bus_message_close_container(m);
            if (r >= 0) r = sd_bus_message_close_container(m);
        }
    if (r >= 0) r = sd_bus_message_close_container(m);
    return r;
}

int append_groups(sd_bus_message *m, const proto::ListResult &list) {
    int r = sd_bus_message_open_container(m, 'a', "a{sv}");
    for (const auto &p : list.ports)
        for (const auto &g : p.groups)
            if (r >= 0)
                r = group(m, p, g);
    if (r >= 0) r = sd_bus_message_close_container(m);
    return r;
}

} // namespace mcastd::dbus
