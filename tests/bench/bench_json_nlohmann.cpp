// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The comparison encoder of mcastd-bench-json (bench_json_nlohmann.hpp).
#include <cmath>

#include <nlohmann/json.hpp>

#include "bench_json_nlohmann.hpp"
#include "common/gid.hpp"

namespace bench_nlohmann {

namespace {

using nlohmann::ordered_json;
using namespace mcastd;
using namespace mcastd::proto;

constexpr const char *kJoinStateNames[4] = {"full", "nonmember", "sendonly-nonmember",
                                            "sendonly-full"};

// JsonWriter's rules for a double: NaN and infinities are null, an integral value within 2^53
// (and -0.0) is written as the integer, anything else as nlohmann writes a double. nlohmann
// alone writes 100.0 as "100.0" where JsonWriter writes "100".
ordered_json number(double v) {
    if (!std::isfinite(v))
        return nullptr;
    if (std::trunc(v) == v && std::fabs(v) < 9007199254740992.0)
        return static_cast<std::int64_t>(v);
    return v;
}

std::string join_state_text(std::uint8_t bits) {
    for (std::size_t i = 0; i < 4; ++i)
        if (bits == (1u << i))
            return kJoinStateNames[i];
    return join_state_name(bits);
}

ordered_json bits_as_names(std::uint8_t bits) {
    ordered_json a = ordered_json::array();
    for (std::size_t i = 0; i < 4; ++i)
        if (bits & (1u << i))
            a.push_back(kJoinStateNames[i]);
    return a;
}

ordered_json record(const McRecord &r, bool plain_doubles) {
    ordered_json j = ordered_json::object();
    j["mgid"] = format_gid(r.mgid);
    j["port_gid"] = format_gid(r.port_gid);
    j["mlid"] = r.mlid;
    j["qkey"] = r.qkey;
    j["pkey"] = r.pkey;
    j["sl"] = r.sl;
    j["mtu"] = mtu_bytes(r.mtu);
    j["rate"] = r.rate;
    const double gbps = rate_mbps(r.rate) / 1000.0;
    j["rate_gbps"] = plain_doubles ? ordered_json(gbps) : number(gbps);
    j["flow_label"] = r.flow_label;
    j["traffic_class"] = r.tclass;
    j["hop_limit"] = r.hop_limit;
    j["scope"] = r.scope;
    j["join_state"] = join_state_text(r.join_state);
    return j;
}

ordered_json group(const GroupInfo &g) {
    ordered_json j = ordered_json::object();
    j["mgid"] = format_gid(g.mgid);
    j["mlid"] = g.mlid;
    j["qkey"] = g.qkey;
    j["busy"] = g.busy;
    j["held"] = bits_as_names(g.held);
    j["foreign"] = bits_as_names(g.foreign);
    ordered_json counts = ordered_json::object();
    for (std::size_t i = 0; i < g.counts.size(); ++i)
        counts[kJoinStateNames[i]] = g.counts[i];
    j["counts"] = std::move(counts);
    ordered_json members = ordered_json::array();
    for (const MemberInfo &m : g.members) {
        ordered_json o = ordered_json::object();
        o["membership"] = m.membership;
        o["join_state"] = join_state_text(m.join_state);
        o["state"] = m.state;
        o["pid"] = std::int64_t{m.pid};
        o["uid"] = std::uint64_t{m.uid};
        o["comm"] = m.comm;
        o["rule"] = m.rule;
        o["created"] = m.created;
        if (!m.flagged.empty())
            o["flagged"] = m.flagged;
        if (!m.name.empty())
            o["name"] = m.name;
        members.push_back(std::move(o));
    }
    j["members"] = std::move(members);
    return j;
}

std::string reply(std::uint64_t id, ordered_json result) {
    ordered_json j = ordered_json::object();
    j["id"] = id;
    j["ok"] = true;
    j["result"] = std::move(result);
    return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

std::string join_reply(std::uint64_t id, const JoinResult &r, bool plain_doubles) {
    ordered_json result = ordered_json::object();
    result["membership"] = r.membership;
    result["record"] = record(r.record, plain_doubles);
    return reply(id, std::move(result));
}

} // namespace

std::string encode_join_reply(std::uint64_t id, const JoinResult &r) {
    return join_reply(id, r, false);
}

std::string encode_join_reply_plain_doubles(std::uint64_t id, const JoinResult &r) {
    return join_reply(id, r, true);
}

std::string encode_list_reply(std::uint64_t id, const ListResult &r) {
    ordered_json ports = ordered_json::array();
    for (const PortGroups &p : r.ports) {
        ordered_json j = ordered_json::object();
        j["device"] = p.device;
        j["port"] = p.port;
        j["port_gid"] = format_gid(p.port_gid);
        ordered_json groups = ordered_json::array();
        for (const GroupInfo &g : p.groups)
            groups.push_back(group(g));
        j["groups"] = std::move(groups);
        ports.push_back(std::move(j));
    }
    ordered_json result = ordered_json::object();
    result["ports"] = std::move(ports);
    return reply(id, std::move(result));
}

} // namespace bench_nlohmann
