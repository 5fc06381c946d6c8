// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `rdma-mcastctl metrics`: the daemon's status in the Prometheus text exposition format
// (version 0.0.4), for node_exporter's textfile collector or any scraper. Names start with
// rdma_mcastd_, carry their unit (_seconds, _bytes) and, for counters, _total; labels are only
// of low cardinality (device, port, link_layer, state, join_state, kind, reason, uid and user),
// never an MGID or a pid. rdma-mcastctl(1), METRICS, lists every metric.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <rdmamcast/client.hpp>

namespace ctl {

// The exposition of `s`: every family with at least one sample, each with one HELP and one TYPE
// line before its samples, in a fixed order; rdma_mcastd_up 1 first.
std::string metrics_text(const rdmamcast::Status &s);
// What a scraper reads when the daemon cannot be asked: rdma_mcastd_up 0, and nothing else.
std::string metrics_unreachable_text();

// The format's escapes: in a label value, backslash, double quote and line feed; in HELP text,
// backslash and line feed.
std::string escape_label_value(std::string_view v);
std::string escape_help(std::string_view v);

// Builds an exposition one family at a time. A family's HELP and TYPE lines are written with its
// first sample, so a family without samples (no users, no port with an SA window) is left out.
class Exposition {
public:
    using Labels = std::vector<std::pair<std::string_view, std::string>>;

    // The family the next samples belong to; `type` is "gauge" or "counter".
    void family(std::string_view name, std::string_view type, std::string_view help);
    void sample(const Labels &labels, double value);
    void sample(const Labels &labels, std::uint64_t value);
    const std::string &text() const { return out_; }

private:
    void begin_sample(const Labels &labels);

    std::string out_;
    std::string name_, type_, help_;
    bool announced_ = false;
};

} // namespace ctl
