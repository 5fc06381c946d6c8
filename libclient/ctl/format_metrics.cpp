// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's status as Prometheus metrics (metrics.hpp). Every family here is listed, with
// its labels and one sample line, in rdma-mcastctl(1), METRICS: keep the two in step.
#include <charconv>
#include <cmath>

#include "metrics.hpp"

namespace ctl {

namespace {

// A value as the format writes it: Go's float syntax, shortest form that reads back the same.
std::string number_text(double v) {
    if (std::isnan(v))
        return "NaN";
    if (std::isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string escaped(std::string_view v, bool quotes) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else if (c == '"' && quotes)
            out += "\\\"";
        else
            out += c;
    }
    return out;
}

const char *const kJoinStates[4] = {"full", "nonmember", "sendonly-nonmember", "sendonly-full"};

using Labels = Exposition::Labels;

Labels port_labels(const rdmamcast::PortStatus &p) { return {{"device", p.device}, {"port", std::to_string(p.port)}}; }

Labels with(Labels labels, std::string_view name, std::string value) {
    labels.emplace_back(name, std::move(value));
    return labels;
}

// One family with one sample per port that `value` gives one for.
template <class F>
void per_port(Exposition &e, const rdmamcast::Status &s, std::string_view name, std::string_view type,
              std::string_view help, F value) {
    e.family(name, type, help);
    for (const auto &p : s.ports)
        if (const auto v = value(p))
            e.sample(port_labels(p), *v);
}

void ports(Exposition &e, const rdmamcast::Status &s) {
    e.family("rdma_mcastd_port_info", "gauge",
             "A port the daemon serves, always 1: its link layer and state (ACTIVE only while an SM serves it).");
    for (const auto &p : s.ports)
        e.sample(with(with(port_labels(p), "link_layer", p.link_layer), "state", p.state), std::uint64_t{1});
    per_port(e, s, "rdma_mcastd_port_up", "gauge", "1 when the port is ACTIVE with a subnet manager, else 0.",
             [](const rdmamcast::PortStatus &p) { return std::optional<std::uint64_t>(p.state == "ACTIVE"); });
    per_port(e, s, "rdma_mcastd_port_groups", "gauge", "Multicast groups the daemon handles on the port.",
             [](const rdmamcast::PortStatus &p) { return std::optional<std::uint64_t>(p.groups); });
    per_port(e, s, "rdma_mcastd_port_max_groups", "gauge",
             "The port's cap on groups (access.quotas.groups_per_port); absent when there is none.",
             [](const rdmamcast::PortStatus &p) {
                 return p.max_groups ? std::optional<std::uint64_t>(p.max_groups) : std::nullopt;
             });
    e.family("rdma_mcastd_port_memberships", "gauge",
             "Active memberships on the port by join state; one of several bits counts under each.");
    for (const auto &p : s.ports)
        for (std::size_t b = 0; b < 4; ++b)
            e.sample(with(port_labels(p), "join_state", kJoinStates[b]), p.memberships[b]);
    per_port(e, s, "rdma_mcastd_port_rejoins_total", "counter",
             "Re-joins of the port's groups started since the daemon started (SM restart or failover, LID "
             "change, port down and up, ...).",
             [](const rdmamcast::PortStatus &p) { return std::optional<std::uint64_t>(p.rejoins); });
    per_port(e, s, "rdma_mcastd_port_rejoining", "gauge", "1 while a re-join of the port's groups is under way.",
             [](const rdmamcast::PortStatus &p) { return std::optional<std::uint64_t>(p.rejoining); });
    // The learned SA window: only for ports that have one (sa.congestion_control).
    per_port(e, s, "rdma_mcastd_port_sa_window", "gauge",
             "SA transactions the port may have in flight, as learned from the SA's round trips.",
             [](const rdmamcast::PortStatus &p) { return p.sa ? std::optional<double>(p.sa->window) : std::nullopt; });
    per_port(e, s, "rdma_mcastd_port_sa_slow_start", "gauge",
             "1 while the port's SA window still doubles per round trip.", [](const rdmamcast::PortStatus &p) {
                 return p.sa ? std::optional<std::uint64_t>(p.sa->slow_start) : std::nullopt;
             });
    per_port(e, s, "rdma_mcastd_port_sa_srtt_seconds", "gauge",
             "The smoothed round trip to the SA; absent before its first answer.", [](const rdmamcast::PortStatus &p) {
                 return p.sa && p.sa->srtt_ms ? std::optional<double>(*p.sa->srtt_ms / 1000) : std::nullopt;
             });
    per_port(e, s, "rdma_mcastd_port_sa_timeout_seconds", "gauge",
             "The timeout of the next first try of an SA transaction; absent before the SA's first answer.",
             [](const rdmamcast::PortStatus &p) {
                 return p.sa && p.sa->timeout_ms ? std::optional<double>(*p.sa->timeout_ms / 1000) : std::nullopt;
             });
}

void counter(Exposition &e, std::string_view name, std::string_view help, std::uint64_t v) {
    e.family(name, "counter", help);
    e.sample({}, v);
}

void counters(Exposition &e, const rdmamcast_counters &c) {
    counter(e, "rdma_mcastd_sa_mads_sent_total", "SA MADs sent, retransmissions included.", c.sa_mads_sent);
    counter(e, "rdma_mcastd_sa_retransmits_total", "SA MADs sent again after a try timed out.", c.sa_retransmits);
    counter(e, "rdma_mcastd_sa_timeouts_total", "SA transactions that timed out after their last try.", c.sa_timeouts);
    counter(e, "rdma_mcastd_sa_bounces_total", "SA MADs the fabric returned undelivered.", c.sa_bounces);
    counter(e, "rdma_mcastd_sa_responses_total", "SA transactions answered.", c.sa_responses);
    counter(e, "rdma_mcastd_sa_late_responses_total",
            "SA answers that came for no live transaction (to a try already given up, or a duplicate).", c.sa_late);
    e.family("rdma_mcastd_sa_transactions_total", "counter",
             "MCMemberRecord transactions the daemon started, by method (set, delete, get).");
    e.sample({{"kind", "set"}}, c.sa_sets);
    e.sample({{"kind", "delete"}}, c.sa_deletes);
    e.sample({{"kind", "get"}}, c.sa_gets);
    e.family("rdma_mcastd_sa_amplification_ratio", "gauge",
             "SA MADs sent per SA transaction ended (answered or timed out), 0 before any; above 1.2 the SA "
             "spends its time on retransmits.");
    e.sample({}, c.sa_amplification);
    counter(e, "rdma_mcastd_joins_total", "Join requests.", c.joins);
    counter(e, "rdma_mcastd_joins_local_total", "Joins answered from the cached record, without SA traffic.",
            c.joins_local);
    counter(e, "rdma_mcastd_joins_failed_total", "Joins answered with an error.", c.joins_failed);
    counter(e, "rdma_mcastd_leaves_total", "Memberships released (a leave, or the client gone).", c.leaves);
    counter(e, "rdma_mcastd_memberships_restored_total",
            "Restored events told to clients, one per membership: it holds again, or its record changed.",
            c.restored);
    counter(e, "rdma_mcastd_memberships_lost_total",
            "Lost events told to clients, one per membership: the SA no longer holds it, or its port went down.",
            c.lost);
}

Labels user_labels(const rdmamcast::UserUsage &u) { return {{"uid", std::to_string(u.uid)}, {"user", u.user}}; }

// A uid's use of each shared resource, and its share where it has one.
struct Resource {
    const char *name;
    std::uint64_t rdmamcast::UserUsage::*used, rdmamcast::UserUsage::*quota;
};
constexpr Resource kResources[] = {
    {"memberships", &rdmamcast::UserUsage::memberships, &rdmamcast::UserUsage::memberships_quota},
    {"creates", &rdmamcast::UserUsage::creates, &rdmamcast::UserUsage::creates_quota},
    {"groups_per_port", &rdmamcast::UserUsage::groups_per_port, &rdmamcast::UserUsage::groups_per_port_quota},
    {"clients", &rdmamcast::UserUsage::clients, &rdmamcast::UserUsage::clients_quota},
    {"monitors", &rdmamcast::UserUsage::monitors, &rdmamcast::UserUsage::monitors_quota},
    {"queued_bytes", &rdmamcast::UserUsage::queued_bytes, &rdmamcast::UserUsage::queued_bytes_quota},
};

void users(Exposition &e, const std::vector<rdmamcast::UserUsage> &users) {
    e.family("rdma_mcastd_user_usage", "gauge",
             "What a uid with a client of the daemon uses of a shared resource: memberships (held or waiting), "
             "creates (groups its joins created), groups_per_port (on its busiest port), clients, monitors, "
             "queued_bytes (owed to its connections).");
    for (const auto &u : users)
        for (const Resource &r : kResources)
            e.sample(with(user_labels(u), "resource", r.name), u.*r.used);
    e.family("rdma_mcastd_user_quota", "gauge",
             "The uid's quota or share of the resource (access.quotas, limits); absent when it has none, as root.");
    for (const auto &u : users)
        for (const Resource &r : kResources)
            if (u.*r.quota)
                e.sample(with(user_labels(u), "resource", r.name), u.*r.quota);
    e.family("rdma_mcastd_user_flagged_memberships", "gauge",
             "The uid's memberships that the access rules in force now would refuse (kept, flagged).");
    for (const auto &u : users)
        e.sample(user_labels(u), u.flagged);
    e.family("rdma_mcastd_user_sa_tokens", "gauge",
             "SA MADs the uid may send now (below 0: a debt its next join waits out); absent without an SA budget.");
    for (const auto &u : users)
        if (u.sa_mads_per_second)
            e.sample(user_labels(u), u.sa_tokens);
    e.family("rdma_mcastd_user_sa_mads_per_second", "gauge",
             "The rate of the uid's SA budget (access.quotas.sa_mads_per_second); absent without one.");
    for (const auto &u : users)
        if (u.sa_mads_per_second)
            e.sample(user_labels(u), u.sa_mads_per_second);
}

} // namespace

std::string escape_label_value(std::string_view v) { return escaped(v, true); }
std::string escape_help(std::string_view v) { return escaped(v, false); }

void Exposition::family(std::string_view name, std::string_view type, std::string_view help) {
    name_ = name;
    type_ = type;
    help_ = help;
    announced_ = false;
}

void Exposition::begin_sample(const Labels &labels) {
    if (!announced_) {
        out_ += "# HELP " + name_ + ' ' + escape_help(help_) + '\n';
        out_ += "# TYPE " + name_ + ' ' + type_ + '\n';
        announced_ = true;
    }
    out_ += name_;
    if (!labels.empty()) {
        out_ += '{';
        for (std::size_t i = 0; i < labels.size(); ++i) {
            if (i)
                out_ += ',';
            out_ += labels[i].first;
            out_ += "=\"" + escape_label_value(labels[i].second) + '"';
        }
        out_ += '}';
    }
    out_ += ' ';
}

void Exposition::sample(const Labels &labels, double value) {
    begin_sample(labels);
    out_ += number_text(value) + '\n';
}

void Exposition::sample(const Labels &labels, std::uint64_t value) {
    begin_sample(labels);
    out_ += std::to_string(value) + '\n';
}

namespace {

void up(Exposition &e, std::uint64_t v) {
    e.family("rdma_mcastd_up", "gauge", "1 when rdma-mcastctl could read the daemon's status, 0 when it could not.");
    e.sample({}, v);
}

} // namespace

std::string metrics_text(const rdmamcast::Status &s) {
    Exposition e;
    up(e, 1);
    e.family("rdma_mcastd_info", "gauge", "The daemon's name and version, and the protocol it speaks, always 1.");
    e.sample({{"daemon", s.daemon}, {"protocol", std::to_string(s.protocol)}}, std::uint64_t{1});
    e.family("rdma_mcastd_uptime_seconds", "gauge", "Seconds since the daemon started.");
    e.sample({}, s.uptime_s);
    e.family("rdma_mcastd_clients", "gauge", "Clients of the daemon: socket connections and D-Bus callers.");
    e.sample({}, s.clients);
    ports(e, s);
    counters(e, s.counters);
    users(e, s.users);
    e.family("rdma_mcastd_refusals_total", "counter",
             "What the daemon refused since it started, by reason: the config key of the rule, quota or limit "
             "that refused, or identity (a caller whose credentials could not be read).");
    for (const auto &r : s.refused)
        e.sample({{"reason", r.reason}}, r.count);
    return e.text();
}

std::string metrics_unreachable_text() {
    Exposition e;
    up(e, 0);
    return e.text();
}

} // namespace ctl
