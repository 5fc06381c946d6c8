// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include <cstdio>

#include "format.hpp"
#include "table.hpp"

namespace ctl {

std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string bits_text(std::uint8_t bits) {
    return bits ? rdmamcast::join_state_name(bits) : "-";
}

Json bits_json(std::uint8_t bits) {
    Json out = Json::array();
    for (unsigned i = 0; i < 4; ++i)
        if (bits & (1u << i))
            out.push_back(rdmamcast::join_state_name(static_cast<std::uint8_t>(1u << i)));
    return out;
}

namespace {

std::string rate_text(std::uint8_t rate) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%u (%g Gb/s)", rate, rdmamcast::rate_gbps(rate));
    return buf;
}

} // namespace

std::string record_text(const rdmamcast::Record &r, std::uint64_t membership, std::string_view netdev) {
    Table t({"membership", std::to_string(membership)});
    t.add({"mgid", rdmamcast::gid_to_string(r.mgid)});
    t.add({"port_gid", rdmamcast::gid_to_string(r.port_gid)});
    t.add({"mlid", hex(r.mlid)});
    t.add({"qkey", hex(r.qkey)});
    t.add({"pkey", hex(r.pkey)});
    t.add({"sl", std::to_string(r.sl)});
    t.add({"mtu", std::to_string(r.mtu)});
    t.add({"rate", rate_text(r.rate)});
    t.add({"flow_label", hex(r.flow_label)});
    t.add({"traffic_class", std::to_string(r.traffic_class)});
    t.add({"hop_limit", std::to_string(r.hop_limit)});
    t.add({"scope", std::to_string(r.scope)});
    t.add({"join_state", rdmamcast::join_state_name(r.join_state)});
    t.add({"link_layer", rdmamcast::link_layer_name(rdmamcast::link_layer(r))});
    if (rdmamcast::is_roce(r)) {
        t.add({"gid_type", rdmamcast::gid_type_name(static_cast<rdmamcast::GidType>(r.gid_type))});
        t.add({"sgid_index", std::to_string(r.sgid_index)});
        t.add({"netdev", netdev.empty() ? "-" : std::string(netdev)});
        t.add({"ip", rdmamcast::ip_to_string(r.ip)});
        t.add({"dmac", rdmamcast::mac_to_string(r.dmac)});
    }
    return t.render();
}

Json record_json(const rdmamcast::Record &r, std::string_view netdev) {
    Json out{{"mgid", rdmamcast::gid_to_string(r.mgid)},
                {"port_gid", rdmamcast::gid_to_string(r.port_gid)},
                {"mlid", r.mlid},
                {"qkey", r.qkey},
                {"pkey", r.pkey},
                {"sl", r.sl},
                {"mtu", r.mtu},
                {"rate", r.rate},
                {"rate_gbps", rdmamcast::rate_gbps(r.rate)},
                {"flow_label", r.flow_label},
                {"traffic_class", r.traffic_class},
                {"hop_limit", r.hop_limit},
                {"scope", r.scope},
                {"join_state", rdmamcast::join_state_name(r.join_state)},
                {"link_layer", rdmamcast::link_layer_name(rdmamcast::link_layer(r))}};
    // As the protocol's RECORD: RoCE's keys on an Ethernet port only.
    if (rdmamcast::is_roce(r)) {
        out["gid_type"] = rdmamcast::gid_type_name(static_cast<rdmamcast::GidType>(r.gid_type));
        out["sgid_index"] = r.sgid_index;
        out["netdev"] = std::string(netdev);
        out["ip"] = rdmamcast::ip_to_string(r.ip);
        out["dmac"] = rdmamcast::mac_to_string(r.dmac);
    }
    return out;
}

Json membership_json(const rdmamcast::Record &r, std::uint64_t membership, std::string_view netdev) {
    Json out{{"membership", membership}};
    out.update(record_json(r, netdev));
    return out;
}

namespace {

// A record key's value as record_text() shows it.
std::string field_text(const rdmamcast::Record &r, std::string_view name, std::string_view netdev) {
    if (name == "mlid") return hex(r.mlid);
    if (name == "mgid") return rdmamcast::gid_to_string(r.mgid);
    if (name == "port_gid") return rdmamcast::gid_to_string(r.port_gid);
    if (name == "qkey") return hex(r.qkey);
    if (name == "pkey") return hex(r.pkey);
    if (name == "sl") return std::to_string(r.sl);
    if (name == "mtu") return std::to_string(r.mtu);
    if (name == "rate") return rate_text(r.rate);
    if (name == "flow_label") return hex(r.flow_label);
    if (name == "traffic_class") return std::to_string(r.traffic_class);
    if (name == "hop_limit") return std::to_string(r.hop_limit);
    if (name == "scope") return std::to_string(r.scope);
    if (name == "join_state") return rdmamcast::join_state_name(r.join_state);
    if (name == "sgid_index") return std::to_string(r.sgid_index);
    if (name == "netdev") return netdev.empty() ? "-" : std::string(netdev);
    return "?";
}

// "changed mlid=0xc00a sl=4 (mgid ff15::1:2)": the new values, MLID first as the event lists
// them; or "unchanged (mgid ff15::1:2 mlid 0xc001)" when the membership merely holds again.
std::string changed_text(const rdmamcast::RestoredEvent &r, std::string_view netdev) {
    std::string out;
    for (auto name : r.changed_names())
        out += (out.empty() ? "changed " : " ") + std::string(name) + "=" + field_text(r.record, name, netdev);
    const std::string mgid = rdmamcast::gid_to_string(r.record.mgid);
    if (out.empty())
        return "unchanged (mgid " + mgid + " mlid " + hex(r.record.mlid) + ")";
    return out + " (mgid " + mgid + ")";
}

Json error_json(const std::string &code, const std::string &message,
                std::optional<std::uint16_t> sa_status) {
    Json e{{"code", code}, {"message", message}};
    if (sa_status)
        e["sa_status"] = *sa_status;
    return e;
}

} // namespace

std::string event_text(const rdmamcast::Event &ev, std::string_view netdev) {
    if (const auto *r = std::get_if<rdmamcast::RestoredEvent>(&ev)) {
        return "restored: membership " + std::to_string(r->membership) + ": " + changed_text(*r, netdev);
    }
    if (const auto *l = std::get_if<rdmamcast::LostEvent>(&ev))
        return "lost: membership " + std::to_string(l->membership) + ": " + l->code_name + ": " +
               l->message;
    const auto &m = std::get<rdmamcast::MonitorEvent>(ev);
    std::string line = m.kind_name + ": " + m.device + "/" + std::to_string(m.port) + " " +
                       rdmamcast::gid_to_string(m.mgid) + " mlid " + hex(m.mlid) + " " +
                       bits_text(m.join_state) + " pid " + std::to_string(m.pid) + " uid " +
                       std::to_string(m.uid) + " (" + m.comm + ")";
    if (!m.message.empty())
        line += ": " + m.message;
    return line;
}

Json event_json(const rdmamcast::Event &ev, std::string_view netdev) {
    if (const auto *r = std::get_if<rdmamcast::RestoredEvent>(&ev)) {
        Json changed = Json::array();
        for (auto name : r->changed_names())
            changed.push_back(std::string(name));
        return Json{{"event", "restored"},
                    {"membership", r->membership},
                    {"changed", changed},
                    {"record", record_json(r->record, netdev)}};
    }
    if (const auto *l = std::get_if<rdmamcast::LostEvent>(&ev))
        return Json{{"event", "lost"},
                    {"membership", l->membership},
                    {"error", error_json(l->code_name, l->message, l->sa_status)}};
    const auto &m = std::get<rdmamcast::MonitorEvent>(ev);
    Json out{{"event", "monitor"},
             {"kind", m.kind_name},
             {"device", m.device},
             {"port", m.port},
             {"mgid", rdmamcast::gid_to_string(m.mgid)},
             {"mlid", m.mlid},
             {"join_state", m.join_state ? rdmamcast::join_state_name(m.join_state) : ""},
             {"pid", m.pid},
             {"uid", m.uid},
             {"comm", m.comm},
             {"message", m.message}};
    if (m.sa_status)
        out["sa_status"] = *m.sa_status;
    if (!m.netdev.empty()) { // a RoCE group, as the protocol's event has it
        out["gid_type"] = rdmamcast::gid_type_name(m.gid_type);
        out["sgid_index"] = m.sgid_index;
        out["netdev"] = m.netdev;
    }
    return out;
}

bool emit(const std::string &text) {
    return std::fputs(text.c_str(), stdout) >= 0 && std::fflush(stdout) == 0;
}

bool emit(const Json &j) {
    // Replace rather than throw on bytes that are not UTF-8: output must not abort a hold.
    return emit(j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
}

} // namespace ctl
