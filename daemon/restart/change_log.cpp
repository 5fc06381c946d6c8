// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "restart/change_log.hpp"

#include <algorithm>
#include <map>

#include "common/json_writer.hpp"
#include "restart/state_json.hpp"

namespace mcastd::restart {

using namespace json_form;
using json_check::json;

namespace {

template <class... F> struct Visit : F... {
    using F::operator()...;
};

void write_port(proto::JsonWriter &w, const PortKey &p) {
    w.begin_object();
    w.member("device", std::string_view(p.device));
    w.member("port", p.port);
    write_gid(w, "port_gid", p.port_gid);
    w.end_object();
}

PortKey read_port_key(const ObjectReader &in) {
    in.require_only({"device", "port", "port_gid"});
    return PortKey{std::string(in.required_string("device")), static_cast<std::uint8_t>(in.required_uint("port", 1, 254)),
                   read_gid(in, "port_gid")};
}

// The object at `key` (required).
ObjectReader object_at(const ObjectReader &in, std::string_view key) {
    const json *v = in.object(key);
    if (!v)
        in.fail(key, "required");
    return ObjectReader(*v, in.pointer(key));
}

Change read_change(const ObjectReader &in) {
    if (in.find("set")) {
        in.require_only({"set"});
        return read_set(object_at(in, "set"));
    }
    if (in.find("group")) {
        in.require_only({"port", "group"});
        return GroupChange{read_port_key(object_at(in, "port")), read_group(object_at(in, "group"))};
    }
    if (in.find("membership")) {
        in.require_only({"session", "membership"});
        return MembershipChange{in.required_uint("session", 1, UINT64_MAX),
                                read_membership(object_at(in, "membership"))};
    }
    if (in.find("session")) {
        in.require_only({"session"});
        SessionChange c{read_session(object_at(in, "session"))};
        if (!c.session.memberships.empty())
            in.fail("session", "carries memberships (each is a line of its own)");
        return c;
    }
    if (in.find("session_gone")) {
        in.require_only({"session_gone"});
        return SessionGone{in.required_uint("session_gone", 1, UINT64_MAX)};
    }
    if (in.find("membership_gone")) {
        in.require_only({"membership_gone"});
        return MembershipGone{in.required_uint("membership_gone", 1, UINT64_MAX)};
    }
    if (in.find("next_session")) {
        in.require_only({"next_session"});
        return NextSession{in.required_uint("next_session", 1, UINT64_MAX)};
    }
    if (in.find("roce")) {
        in.require_only({"roce"});
        return RoceChange{read_roce(object_at(in, "roce"))};
    }
    if (in.find("roce_adding")) {
        in.require_only({"roce_adding"});
        return RoceAdding{read_roce_adding(object_at(in, "roce_adding"))};
    }
    in.fail("", "not a change (set, group, session, session_gone, membership, membership_gone, next_session, roce, "
                "roce_adding)");
}

} // namespace

std::string encode_log_header(std::string_view boot_id, std::string_view daemon, std::uint64_t generation) {
    return header_line(kLogFormatName, kLogFormatVersion, boot_id, daemon, generation);
}

std::string encode_change(const Change &c) {
    std::string out;
    proto::JsonWriter w(out);
    w.begin_object();
    std::visit(Visit{
                   [&](const SavedSet &s) {
                       w.key("set");
                       write_set(w, s);
                   },
                   [&](const GroupChange &g) {
                       w.key("port");
                       write_port(w, g.port);
                       w.key("group");
                       write_group(w, g.group);
                   },
                   [&](const SessionChange &s) {
                       w.key("session");
                       write_session_head(w, s.session);
                       w.key("memberships");
                       w.begin_array();
                       w.end_array();
                       w.end_object();
                   },
                   [&](const SessionGone &s) { w.member("session_gone", s.id); },
                   [&](const MembershipChange &m) {
                       w.member("session", m.session);
                       w.key("membership");
                       write_membership(w, m.membership);
                   },
                   [&](const MembershipGone &m) { w.member("membership_gone", m.id); },
                   [&](const NextSession &n) { w.member("next_session", n.next); },
                   [&](const RoceChange &r) {
                       w.key("roce");
                       write_roce(w, r.roce);
                   },
                   [&](const RoceAdding &a) {
                       w.key("roce_adding");
                       write_roce_adding(w, a.adding);
                   },
               },
               c);
    w.end_object();
    return out + '\n';
}

std::variant<ChangeLog, std::string> decode_log(std::string_view text) {
    ChangeLog log;
    auto read = read_lines(
        text,
        [&](const ObjectReader &in) {
            check_format(in, kLogFormatName, kLogFormatVersion, "change log");
            in.require_only({"format", "version", "boot_id", "daemon", "generation"});
            log.boot_id = in.required_string("boot_id");
            log.daemon = in.required_string("daemon");
            log.generation = in.required_uint("generation", 0, UINT64_MAX);
        },
        [&](const ObjectReader &in) { log.changes.push_back(read_change(in)); });
    if (auto *why = std::get_if<std::string>(&read))
        return std::move(*why);
    log.skipped = std::move(std::get<std::vector<std::string>>(read));
    return log;
}

void replay(SavedState &state, std::span<const Change> changes) {
    if (changes.empty())
        return;
    // Keyed copies to apply the changes to (a log can hold a million lines), then back.
    std::map<PortKey, std::size_t> port_of;
    std::vector<GidMap<SavedGroup>> groups;
    for (SavedPort &p : state.ports) {
        port_of.emplace(PortKey{p.device, p.port, p.port_gid}, groups.size());
        auto &g = groups.emplace_back();
        for (SavedGroup &sg : p.groups)
            g.emplace(sg.mgid, std::move(sg));
    }
    auto groups_of = [&](const PortKey &k) -> GidMap<SavedGroup> & {
        auto [it, added] = port_of.emplace(k, groups.size());
        if (added) {
            state.ports.push_back(SavedPort{k.device, k.port, k.port_gid, {}});
            groups.emplace_back();
        }
        return groups[it->second];
    };
    std::map<std::uint64_t, SavedSession> sessions;
    std::map<std::uint64_t, MembershipChange> members;
    for (SavedSession &s : state.sessions) {
        for (SavedMembership &m : s.memberships)
            members.insert_or_assign(m.id, MembershipChange{s.id, std::move(m)});
        s.memberships.clear();
        const std::uint64_t id = s.id;
        sessions.insert_or_assign(id, std::move(s));
    }
    for (const Change &change : changes)
        std::visit(Visit{
                       [&](const SavedSet &s) {
                           auto &g = groups_of(PortKey{s.device, s.port, s.port_gid});
                           SavedGroup &group = g.try_emplace(s.mgid, SavedGroup{s.mgid, 0, 0, std::nullopt}).first->second;
                           group.uncertain |= static_cast<std::uint8_t>(s.bits & ~group.held);
                       },
                       [&](const GroupChange &c) {
                           auto &g = groups_of(c.port);
                           if (c.group.held | c.group.uncertain)
                               g.insert_or_assign(c.group.mgid, c.group);
                           else
                               g.erase(c.group.mgid);
                       },
                       [&](const SessionChange &c) { sessions.insert_or_assign(c.session.id, c.session); },
                       [&](const SessionGone &c) { sessions.erase(c.id); },
                       [&](const MembershipChange &c) { members.insert_or_assign(c.membership.id, c); },
                       [&](const MembershipGone &c) { members.erase(c.id); },
                       [&](const NextSession &c) { state.next_session = c.next; },
                       [&](const RoceChange &c) { state.roce = c.roce; },
                       [&](const RoceAdding &c) {
                           auto &a = state.roce.adding;
                           if (std::find(a.begin(), a.end(), c.adding) == a.end())
                               a.push_back(c.adding);
                       },
                   },
                   change);
    for (std::size_t i = 0; i < state.ports.size(); ++i) {
        state.ports[i].groups.clear();
        for (auto &[mgid, g] : groups[i])
            state.ports[i].groups.push_back(std::move(g));
    }
    for (auto &[id, m] : members)
        if (auto s = sessions.find(m.session); s != sessions.end())
            s->second.memberships.push_back(std::move(m.membership)); // a gone session's go with it
    state.sessions.clear();
    for (auto &[id, s] : sessions) {
        state.next_session = std::max(state.next_session, id + 1);
        state.sessions.push_back(std::move(s));
    }
}

void add_uncertain(SavedState &state, std::span<const SavedSet> sets) {
    replay(state, std::vector<Change>(sets.begin(), sets.end()));
}

} // namespace mcastd::restart
