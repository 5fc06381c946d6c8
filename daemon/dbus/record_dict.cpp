// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/record_dict.hpp"

#include "common/gid.hpp"

namespace mcastd::dbus {

std::vector<RecordEntry> record_entries(const McRecord &r) {
    return {
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
    };
}

std::optional<Value> record_property(const McRecord &record, std::string_view property) {
    for (auto &e : record_entries(record))
        if (e.property == property)
            return std::move(e.value);
    return std::nullopt;
}

} // namespace mcastd::dbus
