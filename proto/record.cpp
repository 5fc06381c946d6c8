// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// RECORD and the values that several messages share (GIDs, join states, selectors, MTUs), both
// ways: the daemon writes them, the client reads them back.
#include "codec.hpp"

#include "common/gid.hpp"

namespace mcastd::proto {

namespace {
constexpr std::array<std::string_view, 4> kSelectorNames{"greater", "less", "exactly", "best"};
} // namespace

std::optional<std::uint8_t> join_state_from_name(std::string_view name) {
    for (std::size_t i = 0; i < codec::kJoinStateNames.size(); ++i)
        if (codec::kJoinStateNames[i] == name)
            return static_cast<std::uint8_t>(1u << i);
    return std::nullopt;
}

std::optional<std::uint8_t> join_state_bits_from_name(std::string_view name) {
    if (name == "none")
        return std::uint8_t{0};
    std::uint8_t bits = 0;
    while (true) {
        const auto plus = name.find('+');
        const auto bit = join_state_from_name(name.substr(0, plus));
        if (!bit || (bits & *bit))
            return std::nullopt;
        bits |= *bit;
        if (plus == name.npos)
            return bits;
        name.remove_prefix(plus + 1);
    }
}

std::optional<Selector> selector_from_name(std::string_view name) {
    for (std::size_t i = 0; i < kSelectorNames.size(); ++i)
        if (kSelectorNames[i] == name)
            return static_cast<Selector>(i);
    return std::nullopt;
}

std::string_view selector_name(Selector s) {
    const auto i = static_cast<std::size_t>(s);
    return i < kSelectorNames.size() ? kSelectorNames[i] : std::string_view("?");
}

std::optional<std::uint8_t> mtu_enum_from_bytes(unsigned bytes) {
    for (std::uint8_t e = 1; e <= 5; ++e)
        if (mtu_bytes(e) == bytes)
            return e;
    return std::nullopt;
}

namespace codec {

using json_check::ObjectReader;

void write_gid(JsonWriter &w, const Gid &g) { w.value(gid_text(g).view()); }

void write_join_state(JsonWriter &w, std::uint8_t bits) {
    // One bit is the common case: its name without building a string.
    for (std::size_t i = 0; i < kJoinStateNames.size(); ++i)
        if (bits == (1u << i)) {
            w.value(kJoinStateNames[i]);
            return;
        }
    w.value(std::string_view(join_state_name(bits)));
}

void write_record(JsonWriter &w, const McRecord &r) {
    w.begin_object();
    w.key("mgid");
    write_gid(w, r.mgid);
    w.key("port_gid");
    write_gid(w, r.port_gid);
    w.member("mlid", r.mlid);
    w.member("qkey", r.qkey);
    w.member("pkey", r.pkey);
    w.member("sl", r.sl);
    w.member("mtu", mtu_bytes(r.mtu));
    w.member("rate", r.rate);
    w.member("rate_gbps", rate_mbps(r.rate) / 1000.0);
    w.member("flow_label", r.flow_label);
    w.member("traffic_class", r.tclass);
    w.member("hop_limit", r.hop_limit);
    w.member("scope", r.scope);
    w.key("join_state");
    write_join_state(w, r.join_state);
    write_link_layer(w, r.link_layer);
    if (r.link_layer == LinkLayer::ethernet) {
        // RoCE's keys; "ip" and "dmac" follow from the MGID, for people and scripts.
        write_roce_source(w, *roce_source(r));
        if (auto ip = roce_ip_group(r.mgid))
            w.member("ip", std::string_view(format_ip(*ip)));
        w.member("dmac", std::string_view(format_mac(roce_dmac(r.mgid))));
    }
    w.end_object();
}

void write_roce_source(JsonWriter &w, const RoceSource &s) {
    w.member("gid_type", gid_type_name(s.gid_type));
    w.member("sgid_index", s.sgid_index);
    w.member("netdev", std::string_view(s.netdev));
}

RoceSource read_roce_source(const ObjectReader &in) {
    RoceSource s;
    const auto type = in.required_string("gid_type");
    auto t = parse_roce_gid_type(type);
    if (!t)
        in.fail("gid_type",
                json_check::describe_string(type) + " is not a RoCE GID type (roce_v1 or roce_v2)");
    s.gid_type = *t;
    s.sgid_index = static_cast<std::uint8_t>(in.required_uint("sgid_index", 0, 255));
    s.netdev = in.required_string("netdev");
    return s;
}

std::optional<RoceSource> read_optional_roce_source(const ObjectReader &in) {
    if (!in.find("gid_type") && !in.find("sgid_index") && !in.find("netdev"))
        return std::nullopt;
    return read_roce_source(in);
}

void write_link_layer(JsonWriter &w, LinkLayer layer) { w.member("link_layer", link_layer_name(layer)); }

LinkLayer read_link_layer(const ObjectReader &in) {
    const auto name = in.string("link_layer");
    if (!name)
        return LinkLayer::infiniband; // an older daemon, which serves InfiniBand ports only
    auto layer = parse_link_layer(*name);
    if (!layer)
        in.fail("link_layer", json_check::describe_string(*name) +
                                  " is not a link layer (InfiniBand or Ethernet)");
    return *layer;
}

Gid read_gid(const ObjectReader &in, std::string_view key) {
    const auto text = in.required_string(key);
    auto g = parse_gid(text);
    if (!g)
        in.fail(key, json_check::describe_string(text) + " is not a GID");
    return *g;
}

std::uint8_t read_join_state(const ObjectReader &in, std::string_view key) {
    const auto name = in.required_string(key);
    auto bits = join_state_bits_from_name(name);
    if (!bits)
        in.fail(key, json_check::describe_string(name) +
                         " is not a join state");
    return *bits;
}

McRecord read_record(const ObjectReader &in) {
    McRecord r;
    r.mgid = read_gid(in, "mgid");
    r.port_gid = read_gid(in, "port_gid");
    r.mlid = static_cast<std::uint16_t>(in.required_uint("mlid", 0, 0xffff));
    r.qkey = static_cast<std::uint32_t>(in.required_uint("qkey", 0, 0xffffffff));
    r.pkey = static_cast<std::uint16_t>(in.required_uint("pkey", 0, 0xffff));
    r.sl = static_cast<std::uint8_t>(in.required_uint("sl", 0, 15));
    // 0 is what the daemon writes for an MTU enum it does not know.
    const auto mtu = static_cast<unsigned>(in.required_uint("mtu", 0, 4096));
    if (mtu != 0) {
        auto e = mtu_enum_from_bytes(mtu);
        if (!e)
            in.fail("mtu", std::to_string(mtu) + " is not an MTU (256, 512, 1024, 2048 or 4096)");
        r.mtu = *e;
    }
    r.rate = static_cast<std::uint8_t>(in.required_uint("rate", 0, 63)); // a 6-bit field
    (void)in.number("rate_gbps"); // derived from rate: type-checked, not kept
    r.flow_label = static_cast<std::uint32_t>(in.required_uint("flow_label", 0, 0xfffff));
    r.tclass = static_cast<std::uint8_t>(in.required_uint("traffic_class", 0, 255));
    r.hop_limit = static_cast<std::uint8_t>(in.required_uint("hop_limit", 0, 255));
    r.scope = static_cast<std::uint8_t>(in.required_uint("scope", 0, 15));
    r.join_state = read_join_state(in, "join_state");
    r.link_layer = read_link_layer(in);
    if (r.link_layer == LinkLayer::ethernet) {
        RoceSource src = read_roce_source(in);
        r.gid_type = src.gid_type;
        r.sgid_index = src.sgid_index;
        r.netdev = std::move(src.netdev);
        // Derived from the MGID: checked for their form, not kept (rdmamcast_record derives
        // them again, so that they always agree with the MGID it carries).
        if (auto ip = in.string("ip"); ip && !parse_ip(*ip))
            in.fail("ip", json_check::describe_string(*ip) + " is not an IP address");
        if (auto mac = in.string("dmac"); mac && !parse_mac(*mac))
            in.fail("dmac", json_check::describe_string(*mac) + " is not a MAC address");
    }
    return r;
}

} // namespace codec
} // namespace mcastd::proto
