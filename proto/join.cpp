// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `join`, both ways: the request's keys and their validators (decode_join, join_decoder.hpp,
// which the daemon config's static_groups entries also go through), the client's encoder of
// the request, and the result (the daemon's encoder, the client's decoder).
#include "codec.hpp"
#include "join_decoder.hpp"

#include <iterator>
#include <vector>

#include "common/device_name.hpp"
#include "common/join_bounds.hpp"
#include "common/named_group.hpp"
#include "common/roce_address.hpp"

namespace mcastd::proto {

using json_check::describe_value;
using json_check::json;
using json_check::ObjectReader;

// ---- the request ----

namespace {

std::string quoted(std::string_view s) { return json_check::describe_string(s); }

// `<kind>` and `<kind>_selector`: the value comes through `value`, the selector only with it.
std::optional<Selected> selected(const ObjectReader &in, std::string_view key,
                                 std::string_view selector_key,
                                 std::optional<std::uint8_t> value) {
    std::optional<Selector> sel;
    if (auto name = in.string(selector_key)) {
        sel = selector_from_name(*name);
        if (!sel)
            in.fail(selector_key,
                    quoted(*name) + " is not a selector (exactly, greater, less or best)");
        if (!value)
            in.fail(selector_key, "needs " + std::string(key) + ": a selector compares a value");
    }
    if (!value)
        return std::nullopt;
    return Selected{sel.value_or(Selector::exactly), *value};
}

} // namespace

namespace {

// The join keys; with `roce`, RoCE's "ip", "gid_type" and "ifname" too (else they are unknown
// keys).
Join read_join(const ObjectReader &in, std::span<const std::string_view> also_allowed, bool roce) {
    // The last three are RoCE's.
    static constexpr std::string_view kKeys[] = {
        "device", "port", "mgid", "create", "name", "scope", "join_state", "qkey", "pkey", "sl", "traffic_class",
        "flow_label", "hop_limit", "mtu", "mtu_selector", "rate", "rate_selector", "ip", "gid_type", "ifname"};
    in.require_only(std::span<const std::string_view>(kKeys, std::size(kKeys) - (roce ? 0 : 3)), also_allowed);
    Join join;
    JoinRequest &r = join.request;

    const auto device = in.required_string("device");
    if (auto why = device_name_problem(device))
        in.fail("device", *why);
    r.device = device;
    r.port = static_cast<std::uint8_t>(in.required_uint("port", 1, 254));

    // Exactly one of mgid, create, name and (RoCE) ip.
    const auto mgid_text = in.string("mgid");
    const auto create = in.boolean("create");
    const auto group_name = in.string("name");
    const auto ip_text = in.string("ip");
    if (create && !*create)
        in.fail("create", "must be true when given (join an existing group by its mgid)");
    if (mgid_text && create)
        in.fail("create", "mgid and create exclude each other");
    if (group_name && (mgid_text || create))
        in.fail("name", std::string("name and ") + (mgid_text ? "mgid" : "create") +
                            " exclude each other (the daemon maps the name to its mgid)");
    if (ip_text && (mgid_text || create || group_name))
        in.fail("ip", std::string("ip and ") + (mgid_text ? "mgid" : create ? "create" : "name") +
                          " exclude each other (the daemon maps the IP group to its mgid)");
    if (!mgid_text && !create && !group_name && !ip_text)
        in.fail("mgid", roce ? "required key is missing (or create: true for a new group, name for a named group, "
                               "or ip for an IP multicast group on a RoCE port)"
                             : "required key is missing (or create: true for a new group, or name for a named group)");
    if (ip_text) {
        auto ip = parse_ip(*ip_text);
        if (!ip)
            in.fail("ip", quoted(*ip_text) + " is not an IPv4 or IPv6 address");
        if (!is_multicast_group(*ip))
            in.fail("ip", quoted(*ip_text) + " is not an IP multicast group (224.0.0.0/4 or ff00::/8)");
        join.ip = ip;
    }
    if (auto type = in.string("gid_type")) {
        join.gid_type = parse_roce_gid_type(*type);
        if (!join.gid_type)
            in.fail("gid_type", quoted(*type) + " is not a RoCE GID type (roce_v1 or roce_v2)");
    }
    if (auto ifname = in.string("ifname")) {
        if (auto why = interface_name_problem(*ifname))
            in.fail("ifname", *why);
        join.ifname = *ifname;
    }
    if (group_name) {
        if (auto why = group_name_problem(*group_name))
            in.fail("name", "the group name " + *why);
        r.name = *group_name;
    }
    if (mgid_text) {
        auto g = parse_gid(*mgid_text);
        if (!g)
            in.fail("mgid", quoted(*mgid_text) + " is not a GID in IPv6 text form");
        // RoCE v2's MGID of an IPv4 group, ::ffff:a.b.c.d, is the one multicast MGID outside
        // ff00::/8 (a daemon refuses it on an InfiniBand port).
        const auto group = roce ? roce_ip_group(*g) : std::nullopt;
        if ((*g)[0] != 0xff && !(group && group->is_v4()))
            in.fail("mgid", quoted(*mgid_text) +
                                (roce ? " is not a multicast GID (those begin with ff, or are RoCE v2's "
                                        "::ffff:a.b.c.d of an IPv4 multicast group)"
                                      : " is not a multicast GID (those begin with ff)"));
        r.mgid = *g;
    }
    if (auto scope = in.uint_as<std::uint8_t>("scope", join_bounds::kScopeMin, join_bounds::kScopeMax)) {
        if (!create)
            in.fail("scope", "needs create: an existing group's scope is part of its mgid");
        r.scope = scope;
    }

    if (auto name = in.string("join_state")) {
        auto bit = join_state_from_name(*name);
        if (!bit)
            in.fail("join_state", quoted(*name) + " is not a join state (full, nonmember, "
                                                  "sendonly-nonmember or sendonly-full)");
        r.join_state = *bit;
    }

    GroupParams &p = r.params;
    p.qkey = in.uint_as<std::uint32_t>("qkey", 0, 0xffffffff);
    p.pkey = in.uint_as<std::uint16_t>("pkey", 0, 0xffff);
    p.sl = in.uint_as<std::uint8_t>("sl", 0, join_bounds::kSlMax);
    p.tclass = in.uint_as<std::uint8_t>("traffic_class", 0, 255);
    p.flow_label = in.uint_as<std::uint32_t>("flow_label", 0, join_bounds::kFlowLabelMax);
    p.hop_limit = in.uint_as<std::uint8_t>("hop_limit", 0, 255);

    std::optional<std::uint8_t> mtu;
    if (auto bytes = in.uint("mtu", 256, 4096)) {
        mtu = mtu_enum_from_bytes(static_cast<unsigned>(*bytes));
        if (!mtu)
            in.fail("mtu", std::to_string(*bytes) +
                               " is not an MTU (256, 512, 1024, 2048 or 4096)");
    }
    p.mtu = selected(in, "mtu", "mtu_selector", mtu);

    std::optional<std::uint8_t> rate;
    if (auto e = in.uint_as<std::uint8_t>("rate", 2, 22))
        rate = e; // 2..22 are all defined today; the bounds check below asks the table
    p.rate = selected(in, "rate", "rate_selector", rate);
    // The bounds every front checks (read above with the same ranges, for the same wording of
    // a value too large for its type).
    if (auto no = join_field_problem(r))
        in.fail(no->field, no->reason);
    return join;
}

} // namespace

Join decode_join_with_ip(const ObjectReader &in, std::span<const std::string_view> also_allowed) {
    Join join = read_join(in, also_allowed, true);
    // What the daemon's RoCE backend gets of them (the transport adds the socket it carried).
    if (join.ip || join.gid_type || !join.ifname.empty())
        join.request.roce = std::make_shared<const RoceJoin>(join.ip, join.gid_type, -1, join.ifname);
    return join;
}

JoinRequest decode_join(const ObjectReader &in, std::span<const std::string_view> also_allowed) {
    return read_join(in, also_allowed, false).request;
}

namespace codec {

Join decode_join_request(const ObjectReader &in) { return decode_join_with_ip(in, kEnvelopeKeys); }

void write_request(JsonWriter &w, const Join &j) {
    const JoinRequest &r = j.request;
    w.member("device", std::string_view(r.device));
    w.member("port", r.port);
    if (j.ip) {
        w.member("ip", std::string_view(format_ip(*j.ip)));
    } else if (!r.name.empty()) {
        w.member("name", std::string_view(r.name));
    } else if (is_zero(r.mgid)) {
        w.member("create", true);
    } else {
        w.key("mgid");
        write_gid(w, r.mgid);
    }
    if (j.gid_type)
        w.member("gid_type", gid_type_name(*j.gid_type));
    if (!j.ifname.empty())
        w.member("ifname", std::string_view(j.ifname));
    if (r.scope)
        w.member("scope", *r.scope);
    w.key("join_state");
    write_join_state(w, r.join_state);
    const GroupParams &p = r.params;
    if (p.qkey)
        w.member("qkey", *p.qkey);
    if (p.pkey)
        w.member("pkey", *p.pkey);
    if (p.sl)
        w.member("sl", *p.sl);
    if (p.tclass)
        w.member("traffic_class", *p.tclass);
    if (p.flow_label)
        w.member("flow_label", *p.flow_label);
    if (p.hop_limit)
        w.member("hop_limit", *p.hop_limit);
    if (p.mtu) {
        w.member("mtu", mtu_bytes(p.mtu->value));
        if (p.mtu->selector != Selector::exactly)
            w.member("mtu_selector", selector_name(p.mtu->selector));
    }
    if (p.rate) {
        w.member("rate", p.rate->value);
        if (p.rate->selector != Selector::exactly)
            w.member("rate_selector", selector_name(p.rate->selector));
    }
}

// ---- the result ----

void write_result(JsonWriter &w, const JoinResult &r) {
    w.member("membership", r.membership);
    w.key("record");
    write_record(w, r.record);
}

} // namespace codec

std::variant<JoinResult, Error> decode_join_result(const json_check::json &result) {
    return codec::decode_value<JoinResult>(result, [](const ObjectReader &in) {
        JoinResult r;
        r.membership = in.required_uint("membership", 0, UINT64_MAX);
        r.record = codec::read_record(ObjectReader(in.required("record"), in.pointer("record")));
        return r;
    });
}

} // namespace mcastd::proto
