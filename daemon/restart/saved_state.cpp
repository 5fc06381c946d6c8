// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "restart/saved_state.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <tuple>

#include "common/json_check.hpp"
#include "common/named_group.hpp"
#include "common/utf8.hpp"
#include "common/json_writer.hpp"
#include "proto/protocol.hpp"
#include "restart/state_json.hpp"

namespace mcastd::restart {

using json_check::json;
using json_check::ObjectReader;

namespace json_form {

constexpr std::size_t kDrainAt = 64 * 1024;

// ---- writing ----

void write_gid(proto::JsonWriter &w, std::string_view key, const Gid &g) { w.member(key, std::string_view(format_gid(g))); }

void write_record(proto::JsonWriter &w, const McRecord &r) {
    w.begin_object();
    write_gid(w, "mgid", r.mgid);
    write_gid(w, "port_gid", r.port_gid);
    w.member("qkey", r.qkey);
    w.member("mlid", r.mlid);
    w.member("mtu_selector", static_cast<std::uint8_t>(r.mtu_selector));
    w.member("mtu", r.mtu);
    w.member("tclass", r.tclass);
    w.member("pkey", r.pkey);
    w.member("rate_selector", static_cast<std::uint8_t>(r.rate_selector));
    w.member("rate", r.rate);
    w.member("life_selector", static_cast<std::uint8_t>(r.life_selector));
    w.member("packet_life", r.packet_life);
    w.member("sl", r.sl);
    w.member("flow_label", r.flow_label);
    w.member("hop_limit", r.hop_limit);
    w.member("scope", r.scope);
    w.member("join_state", r.join_state);
    w.member("proxy_join", r.proxy_join);
    if (r.link_layer == LinkLayer::ethernet) { // a RoCE group's: where it is sent from
        w.member("link_layer", link_layer_name(r.link_layer));
        w.member("gid_type", gid_type_name(r.gid_type));
        w.member("sgid_index", r.sgid_index);
        w.member("netdev", std::string_view(r.netdev));
    }
    w.end_object();
}

void write_selected(proto::JsonWriter &w, std::string_view key, const std::optional<Selected> &s) {
    if (!s)
        return;
    w.key(key);
    w.begin_object();
    w.member("selector", static_cast<std::uint8_t>(s->selector));
    w.member("value", s->value);
    w.end_object();
}

template <class T> void write_opt(proto::JsonWriter &w, std::string_view key, const std::optional<T> &v) {
    if (v)
        w.member(key, *v);
}

void write_params(proto::JsonWriter &w, const GroupParams &p) {
    w.begin_object();
    write_opt(w, "qkey", p.qkey);
    write_opt(w, "pkey", p.pkey);
    write_opt(w, "sl", p.sl);
    write_opt(w, "tclass", p.tclass);
    write_opt(w, "flow_label", p.flow_label);
    write_opt(w, "hop_limit", p.hop_limit);
    write_selected(w, "mtu", p.mtu);
    write_selected(w, "rate", p.rate);
    w.end_object();
}

void write_roce(proto::JsonWriter &w, const roce::KeptRoce &r) {
    w.begin_object();
    w.key("groups");
    w.begin_array();
    for (const roce::KeptGroup &g : r.groups) {
        w.begin_object();
        w.member("device", std::string_view(g.device));
        w.member("port", g.port);
        write_gid(w, "mgid", g.mgid);
        w.member("gid_type", gid_type_name(g.type));
        if (g.source) {
            w.key("source");
            w.begin_object();
            w.member("index", g.source->index);
            write_gid(w, "gid", g.source->gid);
            w.member("netdev", std::string_view(g.source->netdev));
            w.member("ifindex", g.source->ifindex);
            w.member("mtu", g.source->mtu);
            w.end_object();
        }
        w.end_object();
    }
    w.end_array();
    w.key("sockets");
    w.begin_array();
    for (const roce::KeptSocket &k : r.sockets) {
        w.begin_object();
        w.member("socket", k.id);
        w.member("netns", k.netns);
        w.member("family", k.v6 ? "ipv6" : "ipv4");
        w.key("memberships");
        w.begin_array();
        for (const roce::KeptMembership &m : k.memberships) {
            w.begin_object();
            w.member("group", std::string_view(format_ip(m.group)));
            w.member("ifindex", std::int64_t{m.ifindex});
            w.member("netdev", std::string_view(m.netdev));
            w.key("members");
            w.begin_array();
            for (std::uint64_t id : m.members)
                w.value(id);
            w.end_array();
            w.end_object();
        }
        w.end_array();
        w.end_object();
    }
    w.end_array();
    w.end_object();
}

void write_group(proto::JsonWriter &w, const SavedGroup &g) {
    w.begin_object();
    write_gid(w, "mgid", g.mgid);
    w.member("held", g.held);
    w.member("uncertain", g.uncertain);
    if (g.record) {
        w.key("record");
        write_record(w, *g.record);
    }
    w.end_object();
}

// The session's members up to its memberships (the caller writes them and ends the object).
void write_session_head(proto::JsonWriter &w, const SavedSession &s) {
    w.begin_object();
    w.member("session", s.id);
    w.member("token", std::string_view(s.token));
    w.member("door", s.door == SavedDoor::socket ? "socket" : "dbus");
    w.member("pid", std::int64_t{s.who.pid});
    w.member("uid", std::uint64_t{s.who.uid});
    w.member("gid", std::uint64_t{s.who.unix_gid});
    if (!s.groups.empty()) {
        w.key("groups");
        w.begin_array();
        for (gid_t g : s.groups)
            w.value(std::uint64_t{g});
        w.end_array();
    }
    if (!s.cgroup.empty())
        w.member("cgroup", std::string_view(s.cgroup));
    if (!s.cgroup_unattested.empty())
        w.member("cgroup_unattested", std::string_view(s.cgroup_unattested));
    w.member("comm", std::string_view(s.who.comm));
    w.member("start_time", s.start_time);
    w.member("version", s.version);
    w.member("monitor", s.monitor);
    if (s.inode)
        w.member("inode", s.inode);
    if (!s.bus_name.empty())
        w.member("bus_name", std::string_view(s.bus_name));
}

void write_membership(proto::JsonWriter &w, const SavedMembership &m) {
    w.begin_object();
    w.member("membership", m.id);
    w.member("device", std::string_view(m.device));
    w.member("port", m.port);
    write_gid(w, "mgid", m.mgid);
    w.member("join_state", m.join_state);
    w.key("params");
    write_params(w, m.params);
    if (!m.rule.empty())
        w.member("rule", std::string_view(m.rule));
    if (m.created)
        w.member("created", true);
    if (m.sa_assigned)
        w.member("sa_assigned", true);
    if (!m.name.empty())
        w.member("name", std::string_view(m.name));
    w.end_object();
}

// ---- reading ----

Gid read_gid(const ObjectReader &in, std::string_view key) {
    const std::string_view text = in.required_string(key);
    auto g = parse_gid(text);
    if (!g)
        in.fail(key, "not a GID");
    return *g;
}

Selector read_selector(const ObjectReader &in, std::string_view key) {
    return static_cast<Selector>(in.required_uint(key, 0, 3));
}

McRecord read_record(const ObjectReader &in) {
    in.require_only({"mgid", "port_gid", "qkey", "mlid", "mtu_selector", "mtu", "tclass", "pkey", "rate_selector",
                     "rate", "life_selector", "packet_life", "sl", "flow_label", "hop_limit", "scope", "join_state",
                     "proxy_join", "link_layer", "gid_type", "sgid_index", "netdev"});
    McRecord r;
    r.mgid = read_gid(in, "mgid");
    r.port_gid = read_gid(in, "port_gid");
    r.qkey = static_cast<std::uint32_t>(in.required_uint("qkey", 0, 0xffffffff));
    r.mlid = static_cast<std::uint16_t>(in.required_uint("mlid", 0, 0xffff));
    r.mtu_selector = read_selector(in, "mtu_selector");
    r.mtu = static_cast<std::uint8_t>(in.required_uint("mtu", 0, 0x3f));
    r.tclass = static_cast<std::uint8_t>(in.required_uint("tclass", 0, 0xff));
    r.pkey = static_cast<std::uint16_t>(in.required_uint("pkey", 0, 0xffff));
    r.rate_selector = read_selector(in, "rate_selector");
    r.rate = static_cast<std::uint8_t>(in.required_uint("rate", 0, 0x3f));
    r.life_selector = read_selector(in, "life_selector");
    r.packet_life = static_cast<std::uint8_t>(in.required_uint("packet_life", 0, 0x3f));
    r.sl = static_cast<std::uint8_t>(in.required_uint("sl", 0, 15));
    r.flow_label = static_cast<std::uint32_t>(in.required_uint("flow_label", 0, 0xfffff));
    r.hop_limit = static_cast<std::uint8_t>(in.required_uint("hop_limit", 0, 0xff));
    r.scope = static_cast<std::uint8_t>(in.required_uint("scope", 0, 15));
    r.join_state = static_cast<std::uint8_t>(in.required_uint("join_state", 0, 15));
    const auto proxy = in.boolean("proxy_join");
    if (!proxy)
        in.fail("proxy_join", "required");
    r.proxy_join = *proxy;
    // A RoCE group's keys: all four or none (an InfiniBand record, or an older daemon's file).
    if (const auto layer = in.string("link_layer")) {
        if (*layer != "Ethernet")
            in.fail("link_layer", "must be \"Ethernet\" (an InfiniBand record has none)");
        r.link_layer = LinkLayer::ethernet;
        const auto type = parse_roce_gid_type(in.required_string("gid_type"));
        if (!type)
            in.fail("gid_type", "must be \"roce_v1\" or \"roce_v2\"");
        r.gid_type = *type;
        r.sgid_index = static_cast<std::uint8_t>(in.required_uint("sgid_index", 0, 0xff));
        r.netdev = std::string(in.required_string("netdev"));
    } else {
        for (std::string_view key : {"gid_type", "sgid_index", "netdev"})
            if (in.has(key))
                in.fail(key, "is a RoCE record's key, and this record has no link_layer");
    }
    return r;
}

std::optional<Selected> read_selected(const ObjectReader &in, std::string_view key) {
    const json *v = in.object(key);
    if (!v)
        return std::nullopt;
    const ObjectReader s(*v, in.pointer(key));
    s.require_only({"selector", "value"});
    return Selected{read_selector(s, "selector"), static_cast<std::uint8_t>(s.required_uint("value", 0, 0x3f))};
}

GroupParams read_params(const ObjectReader &in) {
    in.require_only({"qkey", "pkey", "sl", "tclass", "flow_label", "hop_limit", "mtu", "rate"});
    GroupParams p;
    p.qkey = in.uint_as<std::uint32_t>("qkey", 0, 0xffffffff);
    p.pkey = in.uint_as<std::uint16_t>("pkey", 0, 0xffff);
    p.sl = in.uint_as<std::uint8_t>("sl", 0, 15);
    p.tclass = in.uint_as<std::uint8_t>("tclass", 0, 0xff);
    p.flow_label = in.uint_as<std::uint32_t>("flow_label", 0, 0xfffff);
    p.hop_limit = in.uint_as<std::uint8_t>("hop_limit", 0, 0xff);
    p.mtu = read_selected(in, "mtu");
    p.rate = read_selected(in, "rate");
    return p;
}

// Calls `f(reader)` for each object of the array `key` (required).
template <class F> void each_object(const ObjectReader &in, std::string_view key, F f) {
    const json *arr = in.array(key);
    if (!arr)
        in.fail(key, "required");
    std::size_t i = 0;
    for (const json &v : *arr)
        f(ObjectReader(v, json_check::pointer_to(in.pointer(key), i++)));
}

std::uint8_t read_bits(const ObjectReader &in, std::string_view key) {
    return static_cast<std::uint8_t>(in.required_uint(key, 0, join::all));
}

SavedPort read_port(const ObjectReader &in) {
    in.require_only({"device", "port", "port_gid", "groups"});
    SavedPort p;
    p.device = in.required_string("device");
    p.port = static_cast<std::uint8_t>(in.required_uint("port", 1, 254));
    p.port_gid = read_gid(in, "port_gid");
    each_object(in, "groups", [&](const ObjectReader &g) { p.groups.push_back(read_group(g)); });
    return p;
}

SavedGroup read_group(const ObjectReader &g) {
    g.require_only({"mgid", "held", "uncertain", "record"});
    SavedGroup out;
    out.mgid = read_gid(g, "mgid");
    if (is_zero(out.mgid))
        g.fail("mgid", "is zero");
    out.held = read_bits(g, "held");
    out.uncertain = read_bits(g, "uncertain");
    if (const json *rec = g.object("record"))
        out.record = read_record(ObjectReader(*rec, g.pointer("record")));
    return out;
}

roce::KeptRoce read_roce(const ObjectReader &in) {
    in.require_only({"groups", "sockets"});
    roce::KeptRoce r;
    each_object(in, "groups", [&](const ObjectReader &g) {
        g.require_only({"device", "port", "mgid", "gid_type", "source"});
        roce::KeptGroup out;
        out.device = g.required_string("device");
        out.port = static_cast<std::uint8_t>(g.required_uint("port", 1, 254));
        out.mgid = read_gid(g, "mgid");
        const auto type = parse_roce_gid_type(g.required_string("gid_type"));
        if (!type)
            g.fail("gid_type", "must be \"roce_v1\" or \"roce_v2\"");
        out.type = *type;
        if (const json *src = g.object("source")) {
            const ObjectReader s(*src, g.pointer("source"));
            s.require_only({"index", "gid", "netdev", "ifindex", "mtu"});
            out.source = roce::KeptSource{static_cast<unsigned>(s.required_uint("index", 0, UINT32_MAX)),
                                          read_gid(s, "gid"), std::string(s.required_string("netdev")),
                                          static_cast<int>(s.required_uint("ifindex", 0, INT32_MAX)),
                                          static_cast<unsigned>(s.required_uint("mtu", 0, UINT32_MAX))};
        }
        r.groups.push_back(std::move(out));
    });
    each_object(in, "sockets", [&](const ObjectReader &k) {
        k.require_only({"socket", "netns", "family", "memberships"});
        roce::KeptSocket out;
        out.id = k.required_uint("socket", 1, UINT64_MAX);
        out.netns = k.required_uint("netns", 1, UINT64_MAX);
        const std::string_view family = k.required_string("family");
        if (family != "ipv4" && family != "ipv6")
            k.fail("family", "must be \"ipv4\" or \"ipv6\"");
        out.v6 = family == "ipv6";
        each_object(k, "memberships", [&](const ObjectReader &m) {
            m.require_only({"group", "ifindex", "netdev", "members"});
            roce::KeptMembership km;
            const auto group = parse_ip(m.required_string("group"));
            if (!group || !is_multicast_group(*group) || group->is_v4() == out.v6)
                m.fail("group", std::string("not an ") + (out.v6 ? "IPv6" : "IPv4") + " multicast group");
            km.group = *group;
            km.ifindex = static_cast<int>(m.required_uint("ifindex", 1, INT32_MAX));
            km.netdev = m.required_string("netdev");
            const json *members = m.array("members");
            if (!members)
                m.fail("members", "required");
            std::size_t i = 0;
            for (const json &id : *members)
                km.members.push_back(
                    json_check::check_uint(id, json_check::pointer_to(m.pointer("members"), i++), 1, UINT64_MAX));
            out.memberships.push_back(std::move(km));
        });
        r.sockets.push_back(std::move(out));
    });
    return r;
}

void write_roce_adding(proto::JsonWriter &w, const roce::KeptAdding &a) {
    w.begin_object();
    w.member("socket", a.socket);
    w.member("group", std::string_view(format_ip(a.group)));
    w.member("ifindex", a.ifindex);
    w.end_object();
}

roce::KeptAdding read_roce_adding(const ObjectReader &in) {
    in.require_only({"socket", "group", "ifindex"});
    roce::KeptAdding a;
    a.socket = in.required_uint("socket", 1, UINT64_MAX);
    const auto group = parse_ip(in.required_string("group"));
    if (!group || !is_multicast_group(*group))
        in.fail("group", "not an IP multicast group");
    a.group = *group;
    a.ifindex = static_cast<int>(in.required_uint("ifindex", 1, INT32_MAX));
    return a;
}

bool lower_hex(std::string_view s, std::size_t n) {
    return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

// A unique bus name as the D-Bus specification has them: ':' and two or more '.'-separated
// elements of [A-Za-z0-9_-], 255 bytes at most (":1.42").
bool unique_bus_name(std::string_view s) {
    if (s.size() < 4 || s.size() > 255 || s[0] != ':')
        return false;
    std::size_t elements = 0;
    for (std::string_view rest = s.substr(1);;) {
        const auto dot = rest.find('.');
        const std::string_view e = rest.substr(0, dot);
        if (e.empty() || !std::all_of(e.begin(), e.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
            }))
            return false;
        ++elements;
        if (dot == rest.npos)
            break;
        rest.remove_prefix(dot + 1);
    }
    return elements >= 2;
}

SavedSession read_session(const ObjectReader &in) {
    in.require_only({"session", "token", "door", "pid", "uid", "gid", "groups", "cgroup", "cgroup_unattested", "comm",
                     "start_time", "version", "monitor", "inode", "bus_name", "memberships"});
    SavedSession s;
    s.id = in.required_uint("session", 1, UINT64_MAX);
    s.token = in.required_string("token");
    if (!proto::is_session_token(s.token))
        in.fail("token", "must be " + std::to_string(proto::kTokenChars) + " lowercase hex digits");
    const std::string_view door = in.required_string("door");
    if (door == "socket")
        s.door = SavedDoor::socket;
    else if (door == "dbus")
        s.door = SavedDoor::dbus;
    else
        in.fail("door", "must be \"socket\" or \"dbus\"");
    s.who.pid = static_cast<pid_t>(in.required_uint("pid", 0, INT32_MAX));
    s.who.uid = static_cast<uid_t>(in.required_uint("uid", 0, UINT32_MAX));
    s.who.unix_gid = static_cast<gid_t>(in.required_uint("gid", 0, UINT32_MAX));
    if (const json *groups = in.array("groups")) {
        std::size_t i = 0;
        for (const json &g : *groups)
            s.groups.push_back(static_cast<gid_t>(
                json_check::check_uint(g, json_check::pointer_to(in.pointer("groups"), i++), 0, UINT32_MAX)));
    }
    s.cgroup = in.string("cgroup").value_or("");
    s.cgroup_unattested = in.string("cgroup_unattested").value_or("");
    if (in.find("cgroup_unattested") && s.cgroup_unattested.empty())
        in.fail("cgroup_unattested", "is empty (leave it out when the cgroup was attested)");
    if (!s.cgroup_unattested.empty() && !s.cgroup.empty())
        in.fail("cgroup_unattested", "is given with a cgroup: an unattested cgroup is unknown");
    // Cleaned as when it was read from /proc: an older daemon saved it as it was.
    s.who.comm = printable_utf8(in.required_string("comm"));
    s.start_time = in.required_uint("start_time", 0, UINT64_MAX);
    s.version = static_cast<unsigned>(in.required_uint("version", 0, UINT32_MAX));
    s.monitor = in.boolean("monitor").value_or(false);
    s.inode = in.uint("inode", 0, UINT64_MAX).value_or(0);
    s.bus_name = in.string("bus_name").value_or("");
    if (in.find("bus_name") && (s.door != SavedDoor::dbus || !unique_bus_name(s.bus_name)))
        in.fail("bus_name", s.door != SavedDoor::dbus ? "is for a D-Bus session only"
                                                      : "must be a unique bus name (\":1.42\")");
    each_object(in, "memberships", [&](const ObjectReader &m) { s.memberships.push_back(read_membership(m)); });
    return s;
}

SavedMembership read_membership(const ObjectReader &m) {
    m.require_only({"membership", "device", "port", "mgid", "join_state", "params", "rule", "created",
                    "sa_assigned", "name"});
    SavedMembership out;
    out.id = m.required_uint("membership", 1, UINT64_MAX);
    out.device = m.required_string("device");
    out.port = static_cast<std::uint8_t>(m.required_uint("port", 1, 254));
    out.mgid = read_gid(m, "mgid");
    out.join_state = read_bits(m, "join_state");
    if (!out.join_state)
        m.fail("join_state", "is zero");
    if (const json *p = m.object("params"))
        out.params = read_params(ObjectReader(*p, m.pointer("params")));
    out.rule = m.string("rule").value_or("");
    out.created = m.boolean("created").value_or(false);
    out.sa_assigned = m.boolean("sa_assigned").value_or(false);
    out.name = m.string("name").value_or("");
    if (m.find("name"))
        if (auto why = group_name_problem(out.name))
            m.fail("name", "the group name " + *why);
    return out;
}

} // namespace json_form

using namespace json_form;

void encode(const SavedState &st, const std::function<void(std::string &)> &drain) {
    std::string out;
    out.reserve(kDrainAt + 4096);
    proto::JsonWriter w(out);
    // The file can hold a million memberships: hand it over in pieces as it grows.
    auto maybe_drain = [&] {
        if (out.size() >= kDrainAt) {
            drain(out);
            out.clear();
        }
    };
    w.begin_object();
    w.member("format", kFormatName);
    w.member("version", kFormatVersion);
    w.member("boot_id", std::string_view(st.boot_id));
    w.member("daemon", std::string_view(st.daemon));
    w.member("clean", st.clean);
    w.member("next_session", st.next_session);
    w.member("generation", st.generation);
    if (!st.bus_id.empty())
        w.member("bus_id", std::string_view(st.bus_id));
    w.key("ports");
    w.begin_array();
    for (const SavedPort &p : st.ports) {
        w.begin_object();
        w.member("device", std::string_view(p.device));
        w.member("port", p.port);
        write_gid(w, "port_gid", p.port_gid);
        w.key("groups");
        w.begin_array();
        for (const SavedGroup &g : p.groups) {
            write_group(w, g);
            maybe_drain();
        }
        w.end_array();
        w.end_object();
    }
    w.end_array();
    w.key("sessions");
    w.begin_array();
    for (const SavedSession &s : st.sessions) {
        write_session_head(w, s);
        w.key("memberships");
        w.begin_array();
        for (const SavedMembership &m : s.memberships) {
            write_membership(w, m);
            maybe_drain();
        }
        w.end_array();
        w.end_object();
    }
    w.end_array();
    if (!st.roce.empty()) {
        w.key("roce");
        write_roce(w, st.roce);
    }
    w.end_object();
    out += '\n';
    drain(out);
}

std::string encode(const SavedState &st) {
    std::string text;
    encode(st, [&](std::string &piece) { text += piece; });
    return text;
}

namespace json_form {

// The format first: a file of another kind or version is named as such, not by its first
// unknown key.
void check_format(const ObjectReader &in, std::string_view name, unsigned version, std::string_view kind) {
    if (in.string("format") != std::optional<std::string_view>(name))
        in.fail("format", "not an rdma-mcastd " + std::string(kind));
    const auto v = in.required_uint("version", 0, UINT32_MAX);
    if (v != version)
        in.fail("version", "format version " + std::to_string(v) + " is not " + std::to_string(version) +
                               ", the one this daemon reads");
}

} // namespace json_form

std::variant<SavedState, std::string> decode(std::string_view text) {
    if (text.empty())
        return std::string("the file is empty");
    SavedState st;
    std::string why = read_object(text, [&](const ObjectReader &in) {
        // Version 1 (the release before the change log) has no generation: it is read as
        // generation 0, which no change log of this release follows (state_file.hpp).
        const bool v1 = in.string("format") == std::optional<std::string_view>(kFormatName) &&
                        in.uint("version", 0, UINT32_MAX) == std::optional<std::uint64_t>(kFormatVersionWithoutLog);
        if (!v1)
            check_format(in, kFormatName, kFormatVersion, "state file");
        in.require_only({"format", "version", "boot_id", "daemon", "clean", "next_session", "generation", "bus_id",
                         "ports", "sessions", "roce"});
        if (v1 && in.find("generation"))
            in.fail("generation", "is not in format version 1");
        st.generation = v1 ? 0 : in.required_uint("generation", 0, UINT64_MAX);
        st.boot_id = in.required_string("boot_id");
        st.daemon = in.required_string("daemon");
        st.clean = in.boolean("clean").value_or(false);
        st.next_session = in.required_uint("next_session", 1, UINT64_MAX);
        st.bus_id = in.string("bus_id").value_or("");
        if (in.find("bus_id") && !lower_hex(st.bus_id, 32))
            in.fail("bus_id", "must be 32 lowercase hex digits");
        each_object(in, "ports", [&](const ObjectReader &p) { st.ports.push_back(read_port(p)); });
        each_object(in, "sessions", [&](const ObjectReader &s) {
            st.sessions.push_back(read_session(s));
            if (st.sessions.back().id >= st.next_session)
                s.fail("session", "is not below next_session");
        });
        if (const json *r = in.object("roce"))
            st.roce = read_roce(ObjectReader(*r, in.pointer("roce")));
    });
    if (!why.empty())
        return why;
    return st;
}

std::string encode_sets_header(std::string_view boot_id, std::string_view daemon) {
    return header_line(kSetsFormatName, kSetsFormatVersion, boot_id, daemon, std::nullopt);
}

namespace json_form {

std::string header_line(std::string_view format, unsigned version, std::string_view boot_id, std::string_view daemon,
                        std::optional<std::uint64_t> generation) {
    std::string out;
    proto::JsonWriter w(out);
    w.begin_object();
    w.member("format", format);
    w.member("version", version);
    w.member("boot_id", boot_id);
    w.member("daemon", daemon);
    if (generation)
        w.member("generation", *generation);
    w.end_object();
    return out + '\n';
}

} // namespace json_form

std::string encode_set(const SavedSet &s) {
    std::string out;
    proto::JsonWriter w(out);
    write_set(w, s);
    return out + '\n';
}

namespace json_form {

void write_set(proto::JsonWriter &w, const SavedSet &s) {
    w.begin_object();
    w.member("device", std::string_view(s.device));
    w.member("port", s.port);
    write_gid(w, "port_gid", s.port_gid);
    write_gid(w, "mgid", s.mgid);
    w.member("bits", s.bits);
    w.end_object();
}

SavedSet read_set(const ObjectReader &in) {
    in.require_only({"device", "port", "port_gid", "mgid", "bits"});
    SavedSet s;
    s.device = in.required_string("device");
    s.port = static_cast<std::uint8_t>(in.required_uint("port", 1, 254));
    s.port_gid = read_gid(in, "port_gid");
    s.mgid = read_gid(in, "mgid");
    if (is_zero(s.mgid))
        in.fail("mgid", "is zero");
    s.bits = read_bits(in, "bits");
    return s;
}

std::variant<std::vector<std::string>, std::string>
read_lines(std::string_view text, const std::function<void(const ObjectReader &)> &header,
           const std::function<void(const ObjectReader &)> &line) {
    if (text.empty())
        return std::string("the file is empty");
    std::vector<std::string> skipped;
    for (std::size_t number = 1; !text.empty(); ++number) {
        const std::size_t end = text.find('\n');
        std::string why;
        if (end == std::string_view::npos) { // every line is written with its '\n'
            why = "torn (no end of line)";
            text = {};
        } else {
            why = read_object(text.substr(0, end), number == 1 ? header : line);
            text.remove_prefix(end + 1);
        }
        if (why.empty())
            continue;
        why = "line " + std::to_string(number) + ": " + why;
        if (number == 1)
            return why;
        skipped.push_back(std::move(why));
    }
    return skipped;
}

void read_sets_header(const ObjectReader &in, SetsLog &log) {
    check_format(in, kSetsFormatName, kSetsFormatVersion, "sets log");
    in.require_only({"format", "version", "boot_id", "daemon"});
    log.boot_id = in.required_string("boot_id");
    log.daemon = in.required_string("daemon");
}

} // namespace json_form

std::variant<SetsLog, std::string> decode_sets(std::string_view text) {
    SetsLog log;
    auto read = read_lines(text, [&](const ObjectReader &in) { read_sets_header(in, log); },
                           [&](const ObjectReader &in) { log.sets.push_back(read_set(in)); });
    if (auto *why = std::get_if<std::string>(&read))
        return std::move(*why);
    log.skipped = std::move(std::get<std::vector<std::string>>(read));
    return log;
}

} // namespace mcastd::restart
