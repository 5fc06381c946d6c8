// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `list`, both ways: the request (`own`, `after`) and its result, one page of the groups the
// daemon handles per port (the daemon's encoder, the client's decoder); how a client puts the
// pages together, and what each part of a reply costs the daemon's page.
#include "codec.hpp"

#include <algorithm>

namespace mcastd::proto {

using codec::for_each_element;
using json_check::FieldError;
using json_check::json;
using json_check::ObjectReader;

namespace codec {

namespace {

// A cursor (`after`, `next`): a string of at most kMaxCursorBytes bytes; what it says is the
// daemon's business.
std::optional<std::string> read_cursor(const ObjectReader &in, std::string_view key) {
    const auto cursor = in.string(key);
    if (!cursor)
        return std::nullopt;
    if (cursor->size() > kMaxCursorBytes)
        in.fail(key, "a cursor of " + std::to_string(cursor->size()) + " bytes; at most " +
                         std::to_string(kMaxCursorBytes) + " (pass back the one a page returned)");
    return std::string(*cursor);
}

} // namespace

List decode_list_request(const ObjectReader &in) {
    in.require_only({"own", "after"}, kEnvelopeKeys);
    List l;
    l.own = in.boolean("own").value_or(false);
    l.after = read_cursor(in, "after");
    return l;
}

void write_request(JsonWriter &w, const List &l) {
    if (l.own)
        w.member("own", true);
    if (l.after)
        w.member("after", std::string_view(*l.after));
}

// ---- the result: the daemon writes ----

namespace {

void write_bits_as_names(JsonWriter &w, std::uint8_t bits) {
    w.begin_array();
    for (std::size_t i = 0; i < kJoinStateNames.size(); ++i)
        if (bits & (1u << i))
            w.value(kJoinStateNames[i]);
    w.end_array();
}

void write_member(JsonWriter &w, const MemberInfo &m) {
    w.begin_object();
    w.member("membership", m.membership);
    w.key("join_state");
    write_join_state(w, m.join_state);
    w.member("state", std::string_view(m.state));
    w.member("pid", std::int64_t{m.pid});
    w.member("uid", std::uint64_t{m.uid});
    w.member("comm", std::string_view(m.comm));
    w.member("rule", std::string_view(m.rule));
    w.member("created", m.created);
    if (!m.flagged.empty())
        w.member("flagged", std::string_view(m.flagged));
    if (!m.name.empty())
        w.member("name", std::string_view(m.name));
    w.end_object();
}

// `members`: false writes the group with none (ListReplySize).
void write_group(JsonWriter &w, const GroupInfo &g, bool members = true) {
    w.begin_object();
    w.key("mgid");
    write_gid(w, g.mgid);
    w.member("mlid", g.mlid);
    w.member("qkey", g.qkey);
    w.member("busy", g.busy);
    w.key("held");
    write_bits_as_names(w, g.held);
    w.key("foreign");
    write_bits_as_names(w, g.foreign);
    w.key("counts");
    write_join_state_counts(w, g.counts);
    if (g.roce)
        write_roce_source(w, *g.roce);
    w.key("members");
    w.begin_array();
    if (members)
        for (const MemberInfo &m : g.members)
            write_member(w, m);
    w.end_array();
    w.end_object();
}

// `groups`: false writes the port with none (ListReplySize).
void write_port(JsonWriter &w, const PortGroups &p, bool groups = true) {
    w.begin_object();
    w.member("device", std::string_view(p.device));
    w.member("port", p.port);
    w.key("port_gid");
    write_gid(w, p.port_gid);
    write_link_layer(w, p.link_layer);
    w.key("groups");
    w.begin_array();
    if (groups)
        for (const GroupInfo &g : p.groups)
            write_group(w, g);
    w.end_array();
    w.end_object();
}

} // namespace

void write_result(JsonWriter &w, const ListResult &r) {
    w.key("ports");
    w.begin_array();
    for (const PortGroups &p : r.ports)
        write_port(w, p);
    w.end_array();
    if (r.next)
        w.member("next", std::string_view(*r.next));
}

} // namespace codec

// ---- the result: the client reads ----

namespace {

using codec::read_cursor;

std::uint8_t bits_from_names(const ObjectReader &in, std::string_view key) {
    std::uint8_t bits = 0;
    for_each_element(in, key, [&](const json &v, const std::string &ptr) {
        const auto name = json_check::check_string(v, ptr);
        const auto bit = join_state_from_name(name);
        if (!bit)
            throw FieldError(ptr, json_check::describe_value(v) + " is not a join state");
        bits |= *bit;
    });
    return bits;
}

GroupInfo read_group(const ObjectReader &in) {
    GroupInfo g;
    g.mgid = codec::read_gid(in, "mgid");
    g.mlid = static_cast<std::uint16_t>(in.required_uint("mlid", 0, 0xffff));
    g.qkey = static_cast<std::uint32_t>(in.required_uint("qkey", 0, 0xffffffff));
    g.busy = in.required_boolean("busy");
    g.held = bits_from_names(in, "held");
    g.foreign = bits_from_names(in, "foreign");
    g.counts = codec::read_join_state_counts<std::uint32_t>(in, "counts");
    g.roce = codec::read_optional_roce_source(in);
    for_each_element(in, "members", [&](const json &v, const std::string &ptr) {
        const ObjectReader m(v, ptr);
        MemberInfo info;
        info.membership = m.required_uint("membership", 0, UINT64_MAX);
        info.join_state = codec::read_join_state(m, "join_state");
        info.state = m.required_string("state");
        info.pid = static_cast<pid_t>(m.required_uint("pid", 0, INT32_MAX));
        info.uid = static_cast<uid_t>(m.required_uint("uid", 0, UINT32_MAX));
        info.comm = m.required_string("comm");
        // Absent from a daemon older than the access policy.
        info.rule = m.string("rule").value_or("");
        info.created = m.boolean("created").value_or(false);
        info.flagged = m.string("flagged").value_or("");
        info.name = m.string("name").value_or(""); // absent: not a named membership
        g.members.push_back(std::move(info));
    });
    return g;
}

ListResult read_list(const ObjectReader &in) {
    ListResult r;
    r.next = read_cursor(in, "next"); // absent: the last page, or a daemon older than pages
    for_each_element(in, "ports", [&](const json &v, const std::string &ptr) {
        const ObjectReader p(v, ptr);
        PortGroups pg;
        pg.device = p.required_string("device");
        pg.port = static_cast<std::uint8_t>(p.required_uint("port", 0, 255));
        pg.port_gid = codec::read_gid(p, "port_gid");
        pg.link_layer = codec::read_link_layer(p);
        for_each_element(p, "groups", [&](const json &gv, const std::string &gptr) {
            pg.groups.push_back(read_group(ObjectReader(gv, gptr)));
        });
        r.ports.push_back(std::move(pg));
    });
    return r;
}

} // namespace

std::variant<ListResult, Error> decode_list_result(const json_check::json &result) {
    return codec::decode_value<ListResult>(result, read_list);
}

// ---- the pages of a list: the client puts them together ----

void append_list_page(ListResult &into, ListResult page) {
    bool first = true; // the page's first group is still to come
    for (PortGroups &p : page.ports) {
        auto to = std::find_if(into.ports.begin(), into.ports.end(), [&p](const PortGroups &q) {
            return q.device == p.device && q.port == p.port;
        });
        if (to == into.ports.end()) {
            first = first && p.groups.empty();
            into.ports.push_back(std::move(p));
            continue;
        }
        auto g = p.groups.begin();
        if (first && g != p.groups.end() && !to->groups.empty() && !is_zero(g->mgid) &&
            to->groups.back().mgid == g->mgid) {
            auto &members = to->groups.back().members;
            members.insert(members.end(), std::make_move_iterator(g->members.begin()),
                           std::make_move_iterator(g->members.end()));
            ++g;
        }
        first = first && p.groups.empty();
        to->groups.insert(to->groups.end(), std::make_move_iterator(g),
                          std::make_move_iterator(p.groups.end()));
    }
    into.next = std::move(page.next);
}

// ---- the size of a reply's parts: the daemon cuts its pages ----

std::size_t ListReplySize::envelope() {
    ListResult empty;
    empty.next = std::string(kMaxCursorBytes, 'x');
    return encode_reply(kMaxId, empty).size();
}

std::size_t ListReplySize::port(const PortGroups &p) {
    scratch_.clear();
    JsonWriter w(scratch_);
    codec::write_port(w, p, false);
    return scratch_.size();
}

std::size_t ListReplySize::group(const GroupInfo &g) {
    scratch_.clear();
    JsonWriter w(scratch_);
    codec::write_group(w, g, false);
    return scratch_.size();
}

std::size_t ListReplySize::member(const MemberInfo &m) {
    scratch_.clear();
    JsonWriter w(scratch_);
    codec::write_member(w, m);
    return scratch_.size();
}

} // namespace mcastd::proto
