// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// plan_reload: which changed top-level keys a SIGHUP applies live and which wait for a restart.
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "reload.hpp"

namespace mcastd {
namespace {

using Strings = std::vector<std::string>;

config::DaemonConfig parse(const std::string &text) {
    auto r = config::parse_config(text, "test.json");
    if (auto *e = std::get_if<Error>(&r))
        throw std::runtime_error(e->message);
    return std::get<config::DaemonConfig>(std::move(r));
}

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

TEST(PlanReload, AFabricBudgetNeedsARestartAndNamesWhatItChanges) {
    // The budget is applied to the SA pacing and the re-join jitter, which are fixed at start.
    EXPECT_EQ(plan_reload(parse("{}"), parse(R"({"fabric":{"hosts":5000,"sa_budget":2000}})")).restart,
              (Strings{"sa", "rejoin", "fabric"}));
}

TEST(PlanReload, NamedGroupsNeedARestart) {
    // A name must keep meaning the group it means while the daemon holds it.
    EXPECT_EQ(plan_reload(parse("{}"), parse(R"({"groups":{"names":{"prefix":"ff15:1::/32"}}})")).restart,
              (Strings{"groups"}));
    EXPECT_EQ(plan_reload(parse("{}"), parse(R"({"groups":{"names":{"pkey":"0x8001"}}})")).restart,
              (Strings{"groups"}));
}

} // namespace
} // namespace mcastd
