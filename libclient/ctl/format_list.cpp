// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `list` and `status` output.
#include <cstdio>

#include "format.hpp"
#include "table.hpp"

namespace ctl {

namespace {

std::string gbps_text(double gbps) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g Gb/s", gbps);
    return buf;
}

std::string guid_text(std::uint64_t guid) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(guid));
    return buf;
}

// Seconds for people: "4.2 s", "5m10s", "3h12m", "2d3h".
std::string age_text(double s) {
    char buf[40];
    const auto whole = static_cast<unsigned long long>(s < 0 ? 0 : s);
    if (s < 60)
        std::snprintf(buf, sizeof buf, "%.1f s", s < 0 ? 0.0 : s);
    else if (whole < 3600)
        std::snprintf(buf, sizeof buf, "%llum%llus", whole / 60, whole % 60);
    else if (whole < 86400)
        std::snprintf(buf, sizeof buf, "%lluh%llum", whole / 3600, whole % 3600 / 60);
    else
        std::snprintf(buf, sizeof buf, "%llud%lluh", whole / 86400, whole % 86400 / 3600);
    return buf;
}

std::string duration_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f s", s);
    return buf;
}

// Per port: the master SM, and the latest re-join of the port's groups.
std::string sm_rejoin_table(const std::vector<rdmamcast::PortStatus> &ports) {
    Table t({"DEVICE", "PORT", "SM_LID", "SM_GUID", "SM_ACT_COUNT", "REJOINS", "REJOINED", "DURATION",
             "GROUPS", "REASON"});
    for (const auto &p : ports) {
        std::vector<std::string> row{p.device, std::to_string(p.port), std::to_string(p.sm_lid),
                                     p.sm_guid ? guid_text(*p.sm_guid) : "-",
                                     p.sm_act_count ? std::to_string(*p.sm_act_count) : "-",
                                     std::to_string(p.rejoins)};
        if (const auto &r = p.last_rejoin) {
            row.push_back(age_text(r->started_ago_s) + " ago");
            row.push_back(r->duration_s ? duration_text(*r->duration_s) : "running");
            row.push_back(std::to_string(r->groups));
            row.push_back(r->reason);
        } else {
            row.insert(row.end(), {"never", "-", "-", "-"});
        }
        t.add(std::move(row));
    }
    return t.render();
}

Json rejoin_json(const std::optional<rdmamcast::Rejoin> &r) {
    if (!r)
        return nullptr;
    return Json{{"reason", r->reason},
                {"started_ago_s", r->started_ago_s},
                {"duration_s", r->duration_s ? Json(*r->duration_s) : Json(nullptr)},
                {"groups", r->groups}};
}

// A learned quantity for people: three significant digits, "16", "3.5", "0.0156", "612".
std::string amount_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v < 100 ? "%.3g" : "%.0f", v);
    return buf;
}

// Per port with congestion control: the SA window, the smoothed round trip and a first try's
// timeout ("-" before the first answer). Empty when no port has one.
std::string sa_window_table(const std::vector<rdmamcast::PortStatus> &ports) {
    Table t({"DEVICE", "PORT", "SA_WINDOW", "SRTT", "TRY_TIMEOUT"});
    bool any = false;
    for (const auto &p : ports) {
        if (!p.sa)
            continue;
        const auto &w = *p.sa;
        t.add({p.device, std::to_string(p.port),
               amount_text(w.window) + (w.slow_start ? " (slow start)" : ""),
               w.srtt_ms ? amount_text(*w.srtt_ms) + " ms" : "-",
               w.timeout_ms ? amount_text(*w.timeout_ms) + " ms" : "-"});
        any = true;
    }
    return any ? t.render() : "";
}

Json sa_window_json(const rdmamcast::PortSa &w) {
    return Json{{"window", w.window},
                {"slow_start", w.slow_start},
                {"srtt_ms", w.srtt_ms ? Json(*w.srtt_ms) : Json(nullptr)},
                {"timeout_ms", w.timeout_ms ? Json(*w.timeout_ms) : Json(nullptr)}};
}

const char *const kBitNames[4] = {"full", "nonmember", "sendonly-nonmember", "sendonly-full"};

// Per port: its active memberships by join state.
std::string memberships_table(const std::vector<rdmamcast::PortStatus> &ports) {
    Table t({"DEVICE", "PORT", "FULL", "NONMEMBER", "SENDONLY-NONMEMBER", "SENDONLY-FULL"});
    for (const auto &p : ports)
        t.add({p.device, std::to_string(p.port), std::to_string(p.memberships[0]), std::to_string(p.memberships[1]),
               std::to_string(p.memberships[2]), std::to_string(p.memberships[3])});
    return t.render();
}

Json memberships_json(const std::array<std::uint64_t, 4> &counts) {
    Json j = Json::object();
    for (std::size_t b = 0; b < 4; ++b)
        j[kBitNames[b]] = counts[b];
    return j;
}

// What the daemon refused since it started, the reasons it refused any for.
std::string refused_table(const std::vector<rdmamcast::Refusal> &refused) {
    Table t({"REFUSED", "REASON"});
    bool any = false;
    for (const auto &r : refused)
        if (r.count) {
            t.add({std::to_string(r.count), r.reason});
            any = true;
        }
    return any ? t.render() : "nothing refused\n";
}

// A count against its quota: "3/4096", or "3" when there is none (0).
std::string of_quota(std::uint64_t n, std::uint64_t quota) {
    return quota ? std::to_string(n) + "/" + std::to_string(quota) : std::to_string(n);
}

// Each uid's share of the daemon against its quotas.
std::string users_table(const std::vector<rdmamcast::UserUsage> &users) {
    if (users.empty())
        return "no users\n";
    Table t({"UID", "USER", "MEMBERSHIPS", "CREATED", "GROUPS/PORT", "CLIENTS", "MONITORS", "QUEUED", "SA_TOKENS",
             "FLAGGED"});
    for (const auto &u : users)
        t.add({std::to_string(u.uid), u.user.empty() ? "-" : u.user,
               of_quota(u.memberships, u.memberships_quota), of_quota(u.creates, u.creates_quota),
               of_quota(u.groups_per_port, u.groups_per_port_quota), of_quota(u.clients, u.clients_quota),
               of_quota(u.monitors, u.monitors_quota), of_quota(u.queued_bytes, u.queued_bytes_quota),
               // What it may send now and its rate; no budget (root, or none configured): "-".
               u.sa_mads_per_second ? amount_text(u.sa_tokens) + " (" + std::to_string(u.sa_mads_per_second) + "/s)"
                                    : "-",
               std::to_string(u.flagged)});
    return t.render();
}

} // namespace

std::string list_text(const std::vector<rdmamcast::PortGroups> &ports) {
    if (ports.empty())
        return "no ports\n";
    std::string out;
    for (const auto &p : ports) {
        if (!out.empty())
            out += '\n';
        out += p.device + " port " + std::to_string(p.port) + "  " + p.link_layer + "  gid " +
               rdmamcast::gid_to_string(p.port_gid) + "  " + std::to_string(p.groups.size()) +
               (p.groups.size() == 1 ? " group\n" : " groups\n");
        if (p.groups.empty())
            continue;
        // One table of groups, then one of their members, each aligned across the port. A RoCE
        // port's groups say where they are sent from.
        const bool roce = p.link_layer == "Ethernet";
        Table groups(roce ? std::vector<std::string>{"MGID", "NETDEV", "GID_TYPE", "SGID_INDEX", "QKEY", "STATE",
                                                     "FULL", "NONMEMBER", "SENDONLY-NONMEMBER", "SENDONLY-FULL"}
                          : std::vector<std::string>{"MGID", "MLID", "QKEY", "STATE", "HELD", "FOREIGN", "FULL",
                                                     "NONMEMBER", "SENDONLY-NONMEMBER", "SENDONLY-FULL"});
        Table members({"MGID", "MEMBERSHIP", "JOIN_STATE", "STATE", "PID", "UID", "COMM", "RULE",
                       "CREATED", "NAME", "FLAGGED"});
        bool any_member = false;
        for (const auto &g : p.groups) {
            const std::string mgid = rdmamcast::gid_to_string(g.mgid);
            if (roce) // no MLID, and the kernel's IGMP/MLD membership is what is held
                groups.add({mgid, g.netdev.empty() ? "-" : g.netdev,
                            g.netdev.empty() ? "-" : rdmamcast::gid_type_name(g.gid_type),
                            g.netdev.empty() ? "-" : std::to_string(g.sgid_index), hex(g.qkey),
                            g.busy ? "busy" : "idle", std::to_string(g.counts[0]), std::to_string(g.counts[1]),
                            std::to_string(g.counts[2]), std::to_string(g.counts[3])});
            else
                groups.add({mgid, hex(g.mlid), hex(g.qkey), g.busy ? "busy" : "idle",
                            bits_text(g.held), bits_text(g.foreign), std::to_string(g.counts[0]),
                            std::to_string(g.counts[1]), std::to_string(g.counts[2]),
                            std::to_string(g.counts[3])});
            for (const auto &m : g.members) {
                // FLAGGED last: the reason is free text, and the last column is not padded.
                members.add({mgid, std::to_string(m.membership), bits_text(m.join_state),
                             m.state, std::to_string(m.pid), std::to_string(m.uid), m.comm,
                             m.rule.empty() ? "-" : m.rule, m.created ? "yes" : "no",
                             m.name.empty() ? "-" : m.name, m.flagged.empty() ? "-" : m.flagged});
                any_member = true;
            }
        }
        out += groups.render("  ");
        if (any_member)
            out += '\n' + members.render("  ");
    }
    return out;
}

Json list_json(const std::vector<rdmamcast::PortGroups> &ports) {
    Json jports = Json::array();
    for (const auto &p : ports) {
        Json groups = Json::array();
        for (const auto &g : p.groups) {
            Json counts = Json::object();
            for (std::size_t b = 0; b < 4; ++b)
                counts[kBitNames[b]] = g.counts[b];
            Json members = Json::array();
            for (const auto &m : g.members) {
                Json jm{{"membership", m.membership},
                        {"join_state", bits_text(m.join_state)},
                        {"state", m.state},
                        {"pid", m.pid},
                        {"uid", m.uid},
                        {"comm", m.comm},
                        {"rule", m.rule},
                        {"created", m.created}};
                if (!m.flagged.empty()) // as the protocol: only when set
                    jm["flagged"] = m.flagged;
                if (!m.name.empty())
                    jm["name"] = m.name;
                members.push_back(std::move(jm));
            }
            Json jg{{"mgid", rdmamcast::gid_to_string(g.mgid)},
                    {"mlid", g.mlid},
                    {"qkey", g.qkey},
                    {"busy", g.busy},
                    {"held", bits_json(g.held)},
                    {"foreign", bits_json(g.foreign)},
                    {"counts", counts},
                    {"members", members}};
            if (!g.netdev.empty()) { // a RoCE group, as the protocol's list has it
                jg["gid_type"] = rdmamcast::gid_type_name(g.gid_type);
                jg["sgid_index"] = g.sgid_index;
                jg["netdev"] = g.netdev;
            }
            groups.push_back(std::move(jg));
        }
        jports.push_back(Json{{"device", p.device},
                              {"port", p.port},
                              {"port_gid", rdmamcast::gid_to_string(p.port_gid)},
                              {"link_layer", p.link_layer},
                              {"groups", groups}});
    }
    return Json{{"ports", jports}};
}

std::string status_text(const rdmamcast::Status &s) {
    char head[160];
    std::snprintf(head, sizeof head, "%s, protocol %u, up %.1f s, %llu client%s\n",
                  s.daemon.c_str(), s.protocol, s.uptime_s,
                  static_cast<unsigned long long>(s.clients), s.clients == 1 ? "" : "s");
    std::string out = head;
    out += '\n';
    if (s.ports.empty()) {
        out += "no ports\n";
    } else {
        Table t({"DEVICE", "PORT", "STATE", "LID", "SM_LID", "SM_SL", "LINK", "RATE", "MTU",
                 "GROUPS", "PORT_GID"});
        for (const auto &p : s.ports)
            t.add({p.device, std::to_string(p.port), p.state, std::to_string(p.lid),
                   std::to_string(p.sm_lid), std::to_string(p.sm_sl), p.link_layer,
                   gbps_text(p.rate_gbps), p.mtu ? std::to_string(p.mtu) : "-",
                   of_quota(p.groups, p.max_groups), rdmamcast::gid_to_string(p.port_gid)});
        out += t.render();
        out += '\n' + sm_rejoin_table(s.ports);
        if (std::string sa = sa_window_table(s.ports); !sa.empty())
            out += '\n' + sa;
        out += '\n' + memberships_table(s.ports);
    }
    out += '\n' + users_table(s.users);
    out += '\n' + refused_table(s.refused);
    out += '\n';
    const auto &c = s.counters;
    Table t({"SA MADs sent", std::to_string(c.sa_mads_sent)});
    t.add({"SA retransmits", std::to_string(c.sa_retransmits)});
    t.add({"SA timeouts", std::to_string(c.sa_timeouts)});
    t.add({"SA bounces", std::to_string(c.sa_bounces)});
    t.add({"SA answers", std::to_string(c.sa_responses)});
    t.add({"SA late answers", std::to_string(c.sa_late)});
    // MADs sent per transaction ended; 0 until one has.
    t.add({"SA amplification", c.sa_amplification > 0 ? amount_text(c.sa_amplification) : "-"});
    t.add({"SA Sets", std::to_string(c.sa_sets)});
    t.add({"SA Deletes", std::to_string(c.sa_deletes)});
    t.add({"SA Gets", std::to_string(c.sa_gets)});
    t.add({"joins", std::to_string(c.joins)});
    t.add({"joins answered locally", std::to_string(c.joins_local)});
    t.add({"joins failed", std::to_string(c.joins_failed)});
    t.add({"leaves", std::to_string(c.leaves)});
    t.add({"restored events", std::to_string(c.restored)});
    t.add({"lost events", std::to_string(c.lost)});
    return out + t.render();
}

Json status_json(const rdmamcast::Status &s) {
    Json ports = Json::array();
    for (const auto &p : s.ports) {
        ports.push_back(Json{{"device", p.device},
                             {"port", p.port},
                             {"state", p.state},
                             {"lid", p.lid},
                             {"sm_lid", p.sm_lid},
                             {"sm_sl", p.sm_sl},
                             {"port_gid", rdmamcast::gid_to_string(p.port_gid)},
                             {"link_layer", p.link_layer},
                             {"rate_gbps", p.rate_gbps},
                             {"groups", p.groups},
                             {"mtu", p.mtu},
                             {"sm_guid", p.sm_guid ? Json(guid_text(*p.sm_guid)) : Json(nullptr)},
                             {"sm_act_count", p.sm_act_count ? Json(*p.sm_act_count) : Json(nullptr)},
                             {"rejoining", p.rejoining},
                             {"last_rejoin", rejoin_json(p.last_rejoin)},
                             {"max_groups", p.max_groups}});
        if (p.sa) // as the protocol: absent with congestion control off
            ports.back()["sa"] = sa_window_json(*p.sa);
        ports.back()["memberships"] = memberships_json(p.memberships);
        ports.back()["rejoins"] = p.rejoins;
    }
    Json users = Json::array();
    for (const auto &u : s.users)
        users.push_back(Json{{"uid", u.uid},
                             {"user", u.user},
                             {"memberships", u.memberships},
                             {"memberships_quota", u.memberships_quota},
                             {"creates", u.creates},
                             {"creates_quota", u.creates_quota},
                             {"flagged", u.flagged},
                             {"clients", u.clients},
                             {"clients_quota", u.clients_quota},
                             {"monitors", u.monitors},
                             {"monitors_quota", u.monitors_quota},
                             {"queued_bytes", u.queued_bytes},
                             {"queued_bytes_quota", u.queued_bytes_quota},
                             {"groups_per_port", u.groups_per_port},
                             {"groups_per_port_quota", u.groups_per_port_quota},
                             {"sa_tokens", u.sa_tokens},
                             {"sa_mads_per_second", u.sa_mads_per_second}});
    Json refused = Json::object();
    for (const auto &r : s.refused)
        refused[r.reason] = r.count;
    const auto &c = s.counters;
    return Json{{"daemon", s.daemon},
                {"protocol", s.protocol},
                {"uptime_s", s.uptime_s},
                {"clients", s.clients},
                {"ports", ports},
                {"counters", Json{{"sa_mads_sent", c.sa_mads_sent},
                                  {"sa_retransmits", c.sa_retransmits},
                                  {"sa_timeouts", c.sa_timeouts},
                                  {"sa_bounces", c.sa_bounces},
                                  {"joins", c.joins},
                                  {"joins_local", c.joins_local},
                                  {"joins_failed", c.joins_failed},
                                  {"leaves", c.leaves},
                                  {"sa_responses", c.sa_responses},
                                  {"sa_late", c.sa_late},
                                  {"sa_amplification", c.sa_amplification},
                                  {"sa_sets", c.sa_sets},
                                  {"sa_deletes", c.sa_deletes},
                                  {"sa_gets", c.sa_gets},
                                  {"restored", c.restored},
                                  {"lost", c.lost}}},
                {"users", users},
                {"refused", refused}};
}

} // namespace ctl
