// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/record_dict.hpp"

#include "common/gid.hpp"

namespace mcastd::dbus {

std::vector<RecordEntry> record_entries(const McRecord &r, bool every_key) {
    std::vector<RecordEntry> out{
        {"mgid", "MGID", format_gid(r.mgid)},
        {"port_gid", "PortGID", format_gid(r.port_gid)},
        {"mlid", "MLID", r.mlid},
        {"qkey", "QKey", r.qkey},
        {"pkey", "PKey", r.pkey},
        {"sl", "SL", r.sl},
        {"mtu", "MTU", std::uint32_t{mtu_bytes(r.mtu)}},
        {"rate", "Rate", r.rate},
        {"rate_gbps", "RateGbps", rate_mbps(r.rate) / 1000.0},
        {"flow_label", "FlowLabel", r.flow_label},
        {"traffic_class", "TrafficClass", r.tclass},
        {"hop_limit", "HopLimit", r.hop_limit},
        {"scope", "Scope", r.scope},
        {"join_state", "JoinState", join_state_name(r.join_state)},
        {"link_layer", "LinkLayer", std::string(link_layer_name(r.link_layer))},
    };
    // A RoCE record's keys, as the socket protocol's RECORD has them ("ip" and "dmac" follow from
    // the MGID); as properties, every membership has them, empty on InfiniBand.
    const bool roce = r.link_layer == LinkLayer::ethernet;
    if (!roce && !every_key)
        return out;
    const auto ip = roce ? roce_ip_group(r.mgid) : std::nullopt;
    out.push_back({"gid_type", "GidType", std::string(gid_type_name(r.gid_type))});
    out.push_back({"sgid_index", "SgidIndex", r.sgid_index});
    out.push_back({"netdev", "Netdev", r.netdev});
    out.push_back({"ip", "IP", ip ? format_ip(*ip) : std::string()});
    out.push_back({"dmac", "DMAC", roce ? format_mac(roce_dmac(r.mgid)) : std::string()});
    return out;
}

std::optional<Value> record_property(const McRecord &record, std::string_view property) {
    for (auto &e : record_entries(record, true))
        if (e.property == property)
            return std::move(e.value);
    return std::nullopt;
}

} // namespace mcastd::dbus
