// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A SIGHUP reload (daemon/app/reload.hpp): every key of the shipped config walked through the same
// code Daemon::reload runs, and the docs' lists of live and restart keys held to the table.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/json_check.hpp"
#include "config/config.hpp"
#include "app/reload.hpp"

namespace mcastd {
namespace {

using config::DaemonConfig;
using nlohmann::json; // edited here as documents, then read as text
using Strings = std::vector<std::string>;

DaemonConfig parse(const std::string &text) {
    auto r = config::parse_config(text, "test.json");
    if (auto *e = std::get_if<Error>(&r))
        throw std::runtime_error(e->message);
    return std::get<DaemonConfig>(std::move(r));
}

json parse_json(const std::string &text) {
    return json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
}

std::string read_source(const std::string &relative) {
    std::ifstream in(std::filesystem::path(MCASTD_SOURCE_DIR) / relative);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Records which live keys a reload handed to the daemon.
struct Recorder final : LiveParts {
    Strings calls;
    void set_log_level(const std::string &) override { calls.emplace_back("log_level"); }
    void set_limits(const frontend::Limits &, const logging::RoutineLimits &) override { calls.emplace_back("limits"); }
    void set_access(const policy::Policy &) override { calls.emplace_back("access"); }
    void set_static_groups(const std::vector<JoinRequest> &) override { calls.emplace_back("static_groups"); }
};

Strings table_keys(bool live) {
    Strings out;
    for (const ReloadKey &k : reload_keys())
        if (k.live() == live)
            out.emplace_back(k.key);
    return out;
}

// ---- every key ----

// For each key of the config (a leaf: arrays are leaves), a valid value other than its default,
// one line per key, and rarely what the rest of the file must say for that value to be valid
// (merged into both files).
struct Alternative {
    const char *pointer;
    const char *value; // JSON
    const char *base = nullptr;
};

constexpr const char *kBudget = R"({"fabric": {"hosts": 100, "sa_budget": 5000}})";

const Alternative kAlternatives[] = {
    {"/socket", R"("/run/other.sock")"},
    {"/socket_group", "0"}, // only a comment in the shipped file: naming a group that is missing is an error
    {"/log_level", R"("debug")"},
    {"/ports", R"(["mlx5_0"])"},
    {"/sa/timeout_ms", "500"},
    {"/sa/max_timeout_ms", "4000"},
    {"/sa/tries", "3"},
    {"/sa/window", "4"},
    {"/sa/max_rate", "500"},
    {"/sa/congestion_control", "false"},
    {"/sa/rtt_target_ms", "100"},
    {"/groups/allow_ipoib_mgids", "true"},
    {"/groups/allow_rdma_cm_mgids", "true"},
    {"/groups/roce_ipv6", "true"},
    {"/groups/owned_prefixes", R"(["ff15:aa::/32"])"},
    {"/groups/create/qkey", R"("0x11111111")"},
    {"/groups/create/pkey", R"("0x8001")"},
    {"/groups/create/sl", "3"},
    {"/groups/create/traffic_class", "1"},
    {"/groups/create/flow_label", "1"},
    {"/groups/create/scope", "2"},
    {"/groups/names/enabled", "false"},
    {"/groups/names/prefix", R"("ff15:1::/32")"},
    {"/groups/names/pkey", R"("0x8001")"},
    {"/retry/min_ms", "500"},
    {"/retry/max_ms", "32000"},
    {"/rejoin/jitter_ms", "0"},
    {"/fabric/hosts", "200", kBudget}, // a budget needs both keys
    {"/fabric/sa_budget", "10000", kBudget},
    {"/monitor/portinfo_interval_ms", "2000"},
    {"/monitor/sminfo_interval_ms", "20000"},
    {"/monitor/sminfo_timeout_ms", "500"},
    {"/monitor/audit_per_second", "0.5"},
    {"/monitor/jitter_percent", "20"},
    {"/limits/max_message_bytes", "4096"},
    {"/limits/max_requests_in_flight", "8"},
    {"/limits/max_memberships_per_client", "100"},
    {"/limits/max_queued_bytes", "1048576"},
    {"/limits/max_monitor_queued_bytes", "8192"},
    {"/limits/hello_timeout_ms", "1000"},
    {"/limits/max_clients", "2048"},
    {"/limits/root_reserved_clients", "2"},
    {"/limits/max_queued_bytes_total", "2097152"},
    {"/limits/max_memberships", "1000"},
    {"/limits/max_clients_per_uid", "16"},
    {"/limits/max_monitors_per_uid", "1"},
    {"/limits/max_queued_bytes_per_uid", "1048576"},
    {"/limits/subuid_file", R"("/etc/subuid.d/test")"},
    {"/limits/log_routine_burst", "5"},
    {"/limits/log_routine_per_minute", "10"},
    {"/access/allow_uids", "[0]"},
    {"/access/allow_gids", "[0]"},
    {"/access/rules", R"([{"name": "all", "mgids": ["ff15::/16"]}])"},
    {"/access/quotas/memberships_per_uid", "100"},
    {"/access/quotas/creates_per_uid", "1"},
    {"/access/quotas/groups_per_port", "512"},
    {"/access/quotas/groups_per_port_per_uid", "16"},
    {"/access/quotas/sa_mads_per_second", "10"},
    {"/access/quotas/sa_mads_burst", "20"},
    {"/dbus/enabled", "false"},
    {"/restart/grace_ms", "1000"},
    {"/static_groups", R"([{"device": "mlx5_0", "port": 1, "mgid": "ff15::1"}])"},
};

// The JSON pointers of every leaf under `v`.
void leaves(const json &v, const std::string &pointer, std::set<std::string> &out) {
    if (!v.is_object()) {
        out.insert(pointer);
        return;
    }
    for (const auto &[key, child] : v.items())
        leaves(child, pointer + "/" + key, out);
}

std::string section_of(const std::string &pointer) { return pointer.substr(1, pointer.find('/', 1) - 1); }

const ReloadKey *row(const std::string &key) {
    for (const ReloadKey &k : reload_keys())
        if (k.key == key)
            return &k;
    return nullptr;
}

// One key changed: the plan names its section, the daemon is handed it when it is live, the
// config in force has the new value (live) or keeps the running one (restart), and reloading the
// same file again names a restart key again.
void walk(const json &shipped, const Alternative &alt) {
    SCOPED_TRACE(alt.pointer);
    json file = shipped;
    if (alt.base)
        file.merge_patch(parse_json(alt.base));
    json changed = file;
    changed[json::json_pointer(alt.pointer)] = parse_json(alt.value);
    ASSERT_NE(changed, file) << alt.pointer << ": its alternative is its default";
    const DaemonConfig running = parse(file.dump());
    const DaemonConfig next = parse(changed.dump());

    const std::string section = section_of(alt.pointer);
    const ReloadKey *k = row(section);
    ASSERT_TRUE(k) << alt.pointer << ": no row for \"" << section << "\" in reload.cpp's table";
    const Strings named{section};

    Recorder parts;
    const Reloaded r = apply_reload(running, next, parts);
    EXPECT_EQ(r.plan.live, k->live() ? named : Strings{}) << alt.pointer;
    EXPECT_EQ(r.plan.restart, k->live() ? Strings{} : named) << alt.pointer;
    EXPECT_EQ(parts.calls, k->live() ? named : Strings{}) << alt.pointer;
    EXPECT_TRUE(r.in_force == (k->live() ? next : running))
        << alt.pointer << ": the config in force must have " << (k->live() ? "the new value" : "the running value");

    Recorder again;
    const Reloaded r2 = apply_reload(r.in_force, next, again);
    EXPECT_TRUE(r2.plan.live.empty()) << alt.pointer;
    EXPECT_EQ(r2.plan.restart, k->live() ? Strings{} : named) << alt.pointer << ": pending until a restart";
    EXPECT_TRUE(again.calls.empty()) << alt.pointer;
    EXPECT_TRUE(r2.in_force == r.in_force) << alt.pointer;
}

TEST(ReloadEveryKey, EachKeyIsAppliedOrKeptAsTheTableSays) {
    const json shipped = parse_json(read_source("config/rdma-mcastd.json"));
    std::set<std::string> keys;
    leaves(shipped, "", keys);
    ASSERT_GT(keys.size(), 40u) << "the shipped file was not read";
    std::map<std::string, const Alternative *> alternatives;
    for (const Alternative &a : kAlternatives)
        ASSERT_TRUE(alternatives.emplace(a.pointer, &a).second) << a.pointer << " is in kAlternatives twice";
    for (const std::string &key : keys)
        if (!alternatives.contains(key))
            ADD_FAILURE() << key << ": no alternative value in kAlternatives (tests/unit/config/test_reload.cpp), "
                                    "so a reload of it is not checked";
    // Keys the shipped file leaves out (socket_group) are walked too.
    std::set<std::string> sections;
    for (const auto &[pointer, alt] : alternatives) {
        walk(shipped, *alt);
        sections.insert(section_of(pointer));
    }
    for (const ReloadKey &k : reload_keys())
        EXPECT_TRUE(sections.contains(k.key)) << k.key << ": a row of the table no key walks";
}

// ---- the plan ----

TEST(PlanReload, TheSameFileChangesNothing) {
    const auto a = parse(R"({"log_level":"debug","static_groups":[{"device":"mlx5_0","port":1,"mgid":"ff15::1"}]})");
    auto b = a;
    b.engine.seed = a.engine.seed + 1; // random per start, not config
    const ReloadPlan p = plan_reload(a, b);
    EXPECT_TRUE(p.live.empty());
    EXPECT_TRUE(p.restart.empty());
    // The journal's per-uid limit is under "limits" too, and live.
    EXPECT_EQ(plan_reload(parse("{}"), parse(R"({"limits":{"log_routine_per_minute":60}})")).live,
              Strings{"limits"});
}

TEST(PlanReload, LiveKeys) {
    const ReloadPlan p = plan_reload(parse("{}"), parse(R"({"log_level":"debug","limits":{"max_clients":5},
        "access":{"allow_gids":[7]},"static_groups":[{"device":"mlx5_0","port":1,"mgid":"ff15::1"}]})"));
    EXPECT_EQ(p.live, (Strings{"log_level", "limits", "access", "static_groups"}));
    EXPECT_TRUE(p.restart.empty());
}

TEST(PlanReload, KeysThatNeedARestart) {
    const ReloadPlan p = plan_reload(parse("{}"), parse(R"({"socket":"/run/x.sock","ports":["mlx5_0"],
        "sa":{"window":4},"groups":{"create":{"sl":3}},"retry":{"min_ms":500},"rejoin":{"jitter_ms":0},
        "monitor":{"portinfo_interval_ms":2000},"dbus":{"enabled":false}})"));
    EXPECT_TRUE(p.live.empty());
    EXPECT_EQ(p.restart, (Strings{"socket", "ports", "sa", "groups", "retry", "rejoin", "monitor", "dbus"}));
}

TEST(PlanReload, NamedGroupsNeedARestart) {
    // A name must keep meaning the group it means while the daemon holds it.
    EXPECT_EQ(plan_reload(parse("{}"), parse(R"({"groups":{"names":{"prefix":"ff15:1::/32"}}})")).restart,
              (Strings{"groups"}));
    EXPECT_EQ(plan_reload(parse("{}"), parse(R"({"groups":{"names":{"pkey":"0x8001"}}})")).restart,
              (Strings{"groups"}));
}

// ---- the fabric budget, applied over sa and rejoin when the file is read ----

TEST(ReloadFabric, ABudgetAloneIsNamedAloneAndThePacingInForceStays) {
    const DaemonConfig running = parse("{}");
    Recorder parts;
    const Reloaded r = apply_reload(running, parse(R"({"fabric":{"hosts":5000,"sa_budget":2000}})"), parts);
    EXPECT_TRUE(r.plan.live.empty());
    EXPECT_EQ(r.plan.restart, Strings{"fabric"}) << "sa and rejoin as the file wrote them did not change";
    EXPECT_EQ(r.in_force.host.sa.pacing_rate, config::kDefaultSaMaxRate);
    EXPECT_EQ(r.in_force.engine.rejoin_jitter, running.engine.rejoin_jitter);
    EXPECT_EQ(r.in_force.fabric, sa::FabricBudget{});
}

TEST(ReloadFabric, UnderABudgetAChangedMaxRateIsNamedAndThePacingInForceStays) {
    // 10 ports share 2000 MAD/s: 200 each, below the default max_rate.
    const DaemonConfig running = parse(R"({"fabric":{"hosts":10,"sa_budget":2000}})");
    ASSERT_EQ(running.host.sa.pacing_rate, 200.0);
    Recorder parts;
    const Reloaded r =
        apply_reload(running, parse(R"({"sa":{"max_rate":100},"fabric":{"hosts":10,"sa_budget":2000}})"), parts);
    EXPECT_EQ(r.plan.restart, Strings{"sa"});
    EXPECT_EQ(r.in_force.host.sa.pacing_rate, 200.0);
    EXPECT_TRUE(r.in_force == running);
}

TEST(ReloadFabric, LiveKeysKeepTheBudgetInForce) {
    const DaemonConfig running = parse(R"({"fabric":{"hosts":10,"sa_budget":2000}})");
    Recorder parts;
    const Reloaded r = apply_reload(
        running, parse(R"({"log_level":"debug","fabric":{"hosts":10,"sa_budget":2000}})"), parts);
    EXPECT_EQ(r.plan.live, Strings{"log_level"});
    EXPECT_EQ(r.in_force.host.sa.pacing_rate, 200.0);
    EXPECT_EQ(r.in_force.written.sa_max_rate, config::kDefaultSaMaxRate);
}

TEST(Reload, WhatIsNotConfigStaysAndTheOriginIsTheNewFile) {
    DaemonConfig running = parse("{}");
    running.engine.seed = 42;
    running.state_dir = "/run/rdma-mcastd";
    DaemonConfig next = parse(R"({"limits":{"max_clients":5}})");
    next.origin = "/etc/rdma-mcastd/rdma-mcastd.json";
    Recorder parts;
    const Reloaded r = apply_reload(running, next, parts);
    EXPECT_EQ(r.in_force.engine.seed, 42u);
    EXPECT_EQ(r.in_force.state_dir, "/run/rdma-mcastd");
    EXPECT_EQ(r.in_force.origin, next.origin);
    EXPECT_EQ(r.in_force.limits.max_clients, 5u);
}

// ---- the docs say what the table says ----

// The keys a README list names: the `key`s from `marker` to the end of its sentence.
Strings readme_list(const std::string &text, const std::string &marker) {
    Strings out;
    const auto at = text.find(marker);
    if (at == std::string::npos)
        return {"(no \"" + marker + "\")"};
    const auto begin = at + marker.size();
    const std::string sentence = text.substr(begin, text.find(". ", begin) - begin);
    for (std::size_t i = sentence.find('`'); i != std::string::npos; i = sentence.find('`', i + 1)) {
        const auto end = sentence.find('`', i + 1);
        out.push_back(sentence.substr(i + 1, end - i - 1));
        i = end;
    }
    return out;
}

// The keys a man page list names: the `.BR key ,` lines after the line `marker`, up to the one
// that ends the sentence (`.BR key .`).
Strings man_list(const std::string &text, const std::string &marker) {
    Strings out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line) && line != marker) {
    }
    if (!in)
        return {"(no line \"" + marker + "\")"};
    while (std::getline(in, line) && line.starts_with(".BR ")) {
        std::istringstream words(line);
        std::string macro, key;
        words >> macro >> key;
        out.push_back(key);
        if (line.ends_with(" ."))
            break;
    }
    return out;
}

TEST(ReloadDocs, ConfigReadmeListsTheTable) {
    const std::string readme = read_source("config/README.md");
    EXPECT_EQ(readme_list(readme, "Applied at once:"), table_keys(true));
    EXPECT_EQ(readme_list(readme, "Applied at the next start:"), table_keys(false));
}

TEST(ReloadDocs, ManPagesListTheTable) {
    for (const char *page : {"daemon/rdma-mcastd.8", "config/rdma-mcastd.json.5"}) {
        const std::string text = read_source(page);
        EXPECT_EQ(man_list(text, "Applied at once:"), table_keys(true)) << page;
        EXPECT_EQ(man_list(text, "Applied at the next start:"), table_keys(false)) << page;
    }
}

} // namespace
} // namespace mcastd
