// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's config file: defaults, every key landing where it belongs, every rejection
// naming the file and the key, comments, duplicates, hex strings, and missing files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config/config.hpp"
#include "common/gid.hpp"

namespace mcastd::config {
namespace {

using std::chrono::milliseconds;

DaemonConfig ok(std::string_view text) {
    auto r = parse_config(text, "test.json");
    if (auto *e = std::get_if<Error>(&r)) {
        ADD_FAILURE() << text << "\n  rejected: " << e->message;
        return {};
    }
    return std::get<DaemonConfig>(std::move(r));
}

std::string rejected(std::string_view text) {
    auto r = parse_config(text, "test.json");
    if (auto *e = std::get_if<Error>(&r)) {
        EXPECT_EQ(e->code, Errc::invalid_argument);
        return e->message;
    }
    ADD_FAILURE() << text << "\n  was accepted";
    return {};
}

// The schema's defaults (config/README.md), field by field.
void expect_defaults(const DaemonConfig &c) {
    EXPECT_EQ(c.socket, "/run/rdma-mcastd.sock");
    EXPECT_EQ(c.log_level, "info");
    EXPECT_TRUE(c.host.ports.empty());
    const auto &sa = c.host.sa;
    EXPECT_EQ(sa.first_timeout, milliseconds(300));
    EXPECT_EQ(sa.max_timeout, milliseconds(2000));
    EXPECT_EQ(sa.max_tries, 6u);
    EXPECT_EQ(sa.window, 16u);
    EXPECT_EQ(sa.pacing_rate, 1000.0);
    EXPECT_TRUE(sa.congestion.enabled);
    EXPECT_EQ(sa.congestion.rtt_target, milliseconds(50));
    const auto &e = c.engine;
    EXPECT_FALSE(e.allow_ipoib_mgids);
    EXPECT_FALSE(e.allow_rdma_cm_mgids);
    EXPECT_EQ(e.create.qkey, 0x01234567u);
    EXPECT_EQ(e.create.pkey, 0xffff);
    EXPECT_EQ(e.create.sl, 0);
    EXPECT_EQ(e.create.tclass, 0);
    EXPECT_EQ(e.create.flow_label, 0u);
    EXPECT_EQ(e.create.scope, 5);
    EXPECT_FALSE(c.roce.ipv6_on_roce_v2) << "rdma_cm refuses IPv6 groups on RoCE v2";
    EXPECT_EQ(c.roce.default_qkey, e.create.qkey);
    EXPECT_TRUE(c.names.enabled);
    EXPECT_EQ(format_name_prefix(c.names.prefix), "ff15:6e61:6d65::/64");
    EXPECT_EQ(c.names.pkey, 0xffff);
    // Owned: the named groups' prefix alone, since names are enabled.
    ASSERT_EQ(e.owned_prefixes.size(), 1u);
    EXPECT_EQ(format_name_prefix(e.owned_prefixes[0]), "ff15:6e61:6d65::/64");
    EXPECT_EQ(e.retry_min, milliseconds(1000));
    EXPECT_EQ(e.retry_max, milliseconds(16000));
    const auto &m = c.host.monitor;
    EXPECT_EQ(m.portinfo_interval, milliseconds(1000));
    EXPECT_EQ(m.sminfo_interval, milliseconds(10000));
    EXPECT_EQ(m.sminfo_timeout, milliseconds(1000));
    EXPECT_EQ(m.audit_per_second, 0.2);
    EXPECT_EQ(m.jitter_percent, 10u);
    EXPECT_EQ(c.limits.max_message_bytes, 65536u);
    EXPECT_EQ(c.limits.max_requests_in_flight, 64u);
    EXPECT_EQ(c.limits.max_memberships_per_client, 4096u);
    EXPECT_EQ(c.limits.max_clients, 1024u);
    EXPECT_EQ(c.limits.max_queued_bytes, 4u << 20);
    EXPECT_EQ(c.limits.max_monitor_queued_bytes, 256u << 10);
    EXPECT_EQ(c.limits.hello_timeout, milliseconds(5000));
    EXPECT_EQ(c.limits.root_reserved_clients, 8u);
    EXPECT_EQ(c.limits.max_queued_bytes_total, 64u << 20);
    EXPECT_EQ(c.limits.max_memberships, 262144u);
    EXPECT_EQ(c.limits.max_clients_per_uid, 256u);
    EXPECT_EQ(c.limits.max_monitors_per_uid, 4u);
    EXPECT_EQ(c.limits.max_queued_bytes_per_uid, 8u << 20);
    EXPECT_EQ(c.limits.subuid_file, "/etc/subuid");
    EXPECT_EQ(c.log_routine.burst, 50u);
    EXPECT_EQ(c.log_routine.per_minute, 120u);
    EXPECT_TRUE(c.access.allow_uids.empty());
    EXPECT_TRUE(c.access.allow_gids.empty());
    EXPECT_TRUE(c.access.rules.empty());
    EXPECT_EQ(c.access.quotas, (policy::Quotas{4096, 64, 1024, 256, 50, 200}));
    EXPECT_TRUE(c.static_groups.empty());
    EXPECT_TRUE(c.dbus.enabled);
    EXPECT_EQ(c.restart.grace, std::chrono::milliseconds(5000));
}

TEST(ConfigDefaults, EmptyObjectIsEveryDefault) {
    const auto c = ok("{}");
    expect_defaults(c);
    EXPECT_EQ(c.origin, "test.json");
    // ... which are also the defaults of the structs the config fills.
    expect_defaults(DaemonConfig{});
}

TEST(ConfigDefaults, EmptySectionsAreDefaultsToo) {
    expect_defaults(ok(R"({"sa":{},"groups":{"create":{}},"retry":{},"monitor":{},"limits":{},
                           "access":{},"dbus":{},"ports":[],"static_groups":[]})"));
}

TEST(ConfigDefaults, TheShippedFileHasEveryKeyAtItsDefault) {
    const std::string path = MCASTD_SOURCE_DIR "/config/rdma-mcastd.json";
    auto r = load_config(path, false);
    ASSERT_TRUE(std::holds_alternative<DaemonConfig>(r)) << std::get<Error>(r).message;
    expect_defaults(std::get<DaemonConfig>(r));
    // Every key: the shipped file documents the whole schema.
    std::string text(std::filesystem::file_size(path), '\0');
    std::ifstream(path).read(text.data(), static_cast<std::streamsize>(text.size()));
    for (const char *key :
         {"socket", "socket_group", "log_level", "ports", "sa", "timeout_ms", "max_timeout_ms", "tries", "window",
          "max_rate", "congestion_control", "rtt_target_ms", "groups", "allow_ipoib_mgids", "allow_rdma_cm_mgids", "roce_ipv6", "create", "qkey",
          "pkey", "sl", "traffic_class", "flow_label", "scope", "retry", "min_ms", "max_ms",
          "rejoin", "jitter_ms", "monitor", "portinfo_interval_ms", "sminfo_interval_ms", "sminfo_timeout_ms",
          "audit_per_second", "jitter_percent", "limits", "max_message_bytes", "max_requests_in_flight", "max_memberships_per_client",
          "max_clients", "max_queued_bytes", "max_monitor_queued_bytes", "hello_timeout_ms", "root_reserved_clients",
          "max_queued_bytes_total", "max_memberships", "max_clients_per_uid", "max_monitors_per_uid",
          "max_queued_bytes_per_uid", "subuid_file", "log_routine_burst", "log_routine_per_minute", "groups_per_port_per_uid", "sa_mads_per_second", "sa_mads_burst",
          "access", "allow_uids", "allow_gids", "rules", "name", "users", "groups", "units",
          "cgroups", "mgids", "ips", "pkeys", "join_states", "controlled_qkeys", "memberships_per_uid", "creates_per_uid",
          "quotas", "groups_per_port", "dbus", "enabled", "restart", "grace_ms", "static_groups", "names",
          "prefix", "owned_prefixes", "fabric", "hosts", "sa_budget"})
        EXPECT_NE(text.find("\"" + std::string(key) + "\":"), std::string::npos) << key;
}

// Root's reserve left out follows a small max_clients: an eighth of it, so that a small daemon
// keeps most of its slots for everyone.
TEST(ConfigKeys, TheRootReserveDefaultsToAnEighthOfASmallMaxClients) {
    EXPECT_EQ(ok(R"({"limits":{"max_clients":40}})").limits.root_reserved_clients, 5u);
    EXPECT_EQ(ok(R"({"limits":{"max_clients":3}})").limits.root_reserved_clients, 0u);
    EXPECT_EQ(ok(R"({"limits":{"max_clients":100000}})").limits.root_reserved_clients, 8u);
}

TEST(ConfigKeys, EveryKeyIsAcceptedAndLandsInItsField) {
    const auto c = ok(R"({
        "socket": "/run/mc/test.sock",
        "socket_group": "root",
        "log_level": "debug",
        "ports": ["mlx5_0", "mlx5_1/2"],
        "sa": {"timeout_ms": 100, "max_timeout_ms": 5000, "tries": 3, "window": 256,
               "max_rate": 500, "congestion_control": false, "rtt_target_ms": 200},
        "groups": {"allow_ipoib_mgids": true, "allow_rdma_cm_mgids": true, "roce_ipv6": true,
                   "create": {"qkey": 305419896, "pkey": 32769, "sl": 15, "traffic_class": 255,
                              "flow_label": 1048575, "scope": 14}},
        "retry": {"min_ms": 10, "max_ms": 3600000},
        "rejoin": {"jitter_ms": 0},
        "monitor": {"portinfo_interval_ms": 100, "sminfo_interval_ms": 3600000,
                    "sminfo_timeout_ms": 60000, "audit_per_second": 0.05, "jitter_percent": 50},
        "limits": {"max_message_bytes": 1024, "max_requests_in_flight": 100000,
                   "max_memberships_per_client": 10000000, "max_clients": 1,
                   "max_queued_bytes": 262144, "max_monitor_queued_bytes": 4096, "hello_timeout_ms": 100,
                   "root_reserved_clients": 0, "max_queued_bytes_total": 1048576, "max_memberships": 1,
                   "max_clients_per_uid": 100000, "max_monitors_per_uid": 0, "max_queued_bytes_per_uid": 262144,
                   "subuid_file": "", "log_routine_burst": 10000, "log_routine_per_minute": 1},
        "access": {"allow_uids": [0, 1000, 4294967294], "allow_gids": [27],
                   "rules": [{"name": "hpc", "users": ["root", 1000], "groups": ["root", 27],
                              "units": ["slurmstepd.scope"], "cgroups": ["/system.slice"],
                              "mgids": ["ff15:a:1::/48", "ff12::1"], "ips": ["239.1.0.0/16", "ff3e::1"],
                              "pkeys": ["0x8001", 32770],
                              "join_states": ["full", "sendonly-full"], "create": "mgid",
                              "controlled_qkeys": true, "memberships_per_uid": 10, "creates_per_uid": 0},
                             {}],
                   "quotas": {"memberships_per_uid": 0, "creates_per_uid": 7, "groups_per_port": 16383,
                              "groups_per_port_per_uid": 0, "sa_mads_per_second": 100000, "sa_mads_burst": 1}},
        "dbus": {"enabled": false},
        "restart": {"grace_ms": 0},
        "static_groups": [
            {"device": "mlx5_0", "port": 1, "mgid": "ff15::1:2", "join_state": "sendonly-full",
             "qkey": 7, "pkey": 65535, "sl": 1, "traffic_class": 2, "flow_label": 3,
             "hop_limit": 4, "mtu": 4096, "mtu_selector": "less", "rate": 7,
             "rate_selector": "greater"},
            {"device": "mlx5_1", "port": 2, "create": true, "scope": 2}
        ]
    })");
    EXPECT_EQ(c.socket, "/run/mc/test.sock");
    EXPECT_EQ(c.socket_group, "root");
    EXPECT_EQ(c.socket_gid, 0u);
    EXPECT_EQ(ok(R"({"socket_group": 27})").socket_gid, 27u);
    EXPECT_EQ(ok(R"({"socket_group": ""})").socket_gid, std::nullopt) << "root alone";
    EXPECT_EQ(c.log_level, "debug");
    EXPECT_EQ(c.host.ports, (std::vector<std::string>{"mlx5_0", "mlx5_1/2"}));
    EXPECT_EQ(c.host.sa.first_timeout, milliseconds(100));
    EXPECT_EQ(c.host.sa.max_timeout, milliseconds(5000));
    EXPECT_EQ(c.host.sa.max_tries, 3u);
    EXPECT_EQ(c.host.sa.window, 256u);
    EXPECT_EQ(c.host.sa.pacing_rate, 500.0);
    EXPECT_FALSE(c.host.sa.congestion.enabled);
    EXPECT_EQ(c.host.sa.congestion.rtt_target, milliseconds(200));
    const auto &e = c.engine;
    EXPECT_TRUE(e.allow_ipoib_mgids);
    EXPECT_TRUE(e.allow_rdma_cm_mgids);
    EXPECT_TRUE(c.roce.ipv6_on_roce_v2);
    EXPECT_EQ(c.roce.default_qkey, 305419896u) << "a RoCE group's Q_Key is groups.create.qkey too";
    EXPECT_EQ(e.create.qkey, 305419896u);
    EXPECT_EQ(e.create.pkey, 32769);
    EXPECT_EQ(e.create.sl, 15);
    EXPECT_EQ(e.create.tclass, 255);
    EXPECT_EQ(e.create.flow_label, 1048575u);
    EXPECT_EQ(e.create.scope, 14);
    EXPECT_EQ(e.retry_min, milliseconds(10));
    EXPECT_EQ(e.retry_max, milliseconds(3600000));
    EXPECT_EQ(c.engine.rejoin_jitter, milliseconds(0));
    EXPECT_EQ(c.host.monitor.portinfo_interval, milliseconds(100));
    EXPECT_EQ(c.host.monitor.sminfo_interval, milliseconds(3600000));
    EXPECT_EQ(c.host.monitor.sminfo_timeout, milliseconds(60000));
    EXPECT_EQ(c.host.monitor.audit_per_second, 0.05);
    EXPECT_EQ(c.host.monitor.jitter_percent, 50u);
    EXPECT_EQ(c.limits.max_message_bytes, 1024u);
    EXPECT_EQ(c.limits.max_requests_in_flight, 100000u);
    EXPECT_EQ(c.limits.max_memberships_per_client, 10000000u);
    EXPECT_EQ(c.limits.max_clients, 1u);
    EXPECT_EQ(c.limits.max_queued_bytes, 262144u);
    EXPECT_EQ(c.limits.max_monitor_queued_bytes, 4096u);
    EXPECT_EQ(c.limits.hello_timeout, milliseconds(100));
    EXPECT_EQ(c.limits.root_reserved_clients, 0u);
    EXPECT_EQ(c.limits.max_queued_bytes_total, 1048576u);
    EXPECT_EQ(c.limits.max_memberships, 1u);
    EXPECT_EQ(c.limits.max_clients_per_uid, 100000u);
    EXPECT_EQ(c.limits.max_monitors_per_uid, 0u);
    EXPECT_EQ(c.limits.max_queued_bytes_per_uid, 262144u);
    EXPECT_EQ(c.limits.subuid_file, "");
    EXPECT_EQ(c.log_routine.burst, 10000u);
    EXPECT_EQ(c.log_routine.per_minute, 1u);
    EXPECT_EQ(c.access.allow_uids, (std::vector<uid_t>{0, 1000, 4294967294u}));
    EXPECT_EQ(c.access.allow_gids, (std::vector<gid_t>{27}));
    ASSERT_EQ(c.access.rules.size(), 2u);
    const policy::Rule &r = c.access.rules[0];
    EXPECT_EQ(r.name, "hpc");
    EXPECT_EQ(r.uids, (std::vector<uid_t>{0, 1000}));
    EXPECT_EQ(r.gids, (std::vector<gid_t>{0, 27}));
    EXPECT_EQ(r.units, std::vector<std::string>{"slurmstepd.scope"});
    EXPECT_EQ(r.cgroups, std::vector<std::string>{"/system.slice"});
    ASSERT_EQ(r.mgids.size(), 2u);
    EXPECT_EQ(r.mgids[0].text(), "ff15:a:1::/48");
    EXPECT_EQ(r.mgids[1].text(), "ff12::1/128");
    ASSERT_EQ(r.ips.size(), 2u);
    EXPECT_EQ(r.ips[0].text(), "239.1.0.0/16");
    EXPECT_EQ(r.ips[1].text(), "ff3e::1/128");
    EXPECT_EQ(r.pkeys, (std::vector<std::uint16_t>{0x8001, 0x8002}));
    EXPECT_EQ(r.join_states, join::full | join::send_only_full);
    EXPECT_EQ(r.create, policy::Create::mgid);
    EXPECT_TRUE(r.controlled_qkeys);
    EXPECT_EQ(r.memberships_per_uid, 10u);
    EXPECT_EQ(r.creates_per_uid, 0u);
    EXPECT_EQ(c.access.rules[1], (policy::Rule{.name = "access.rules[1]"})); // {} matches all, allows all but creates
    EXPECT_EQ(c.access.quotas, (policy::Quotas{0, 7, 16383, 0, 100000, 1}));
    EXPECT_FALSE(c.dbus.enabled);
    EXPECT_EQ(c.restart.grace, std::chrono::milliseconds(0));
    ASSERT_EQ(c.static_groups.size(), 2u);
    const JoinRequest &s = c.static_groups[0];
    EXPECT_EQ(s.device, "mlx5_0");
    EXPECT_EQ(s.port, 1);
    EXPECT_EQ(s.mgid, parse_gid("ff15::1:2"));
    EXPECT_EQ(s.join_state, join::send_only_full);
    EXPECT_EQ(s.params.qkey, 7u);
    EXPECT_EQ(s.params.pkey, 65535);
    EXPECT_EQ(s.params.sl, 1);
    EXPECT_EQ(s.params.tclass, 2);
    EXPECT_EQ(s.params.flow_label, 3u);
    EXPECT_EQ(s.params.hop_limit, 4);
    EXPECT_EQ(s.params.mtu, (Selected{Selector::less, 5}));
    EXPECT_EQ(s.params.rate, (Selected{Selector::greater, 7}));
    const JoinRequest &created = c.static_groups[1];
    EXPECT_TRUE(is_zero(created.mgid));
    EXPECT_EQ(created.scope, 2);
    EXPECT_EQ(created.join_state, join::full);
}

TEST(ConfigKeys, EveryLogLevel) {
    for (auto level : kLogLevels)
        EXPECT_EQ(ok(R"({"log_level":")" + std::string(level) + "\"}").log_level, level);
}

TEST(ConfigKeys, CommentsAreAllowed) {
    const auto c = ok(R"(// leading
        /* block
           comment */
        {
          "sa": { /* inline */ "tries": 2 }, // trailing
          "log_level": "error"
        }
        // after)");
    EXPECT_EQ(c.host.sa.max_tries, 2u);
    EXPECT_EQ(c.log_level, "error");
}

TEST(ConfigKeys, QkeyAndPkeyTakeHexStrings) {
    auto c = ok(R"({"groups":{"create":{"qkey":"0x80010000","pkey":"0X7FFF"}}})");
    EXPECT_EQ(c.engine.create.qkey, 0x80010000u);
    EXPECT_EQ(c.engine.create.pkey, 0x7fff);
    c = ok(R"({"groups":{"create":{"qkey":"0xffffffff","pkey":"0x1"}}})");
    EXPECT_EQ(c.engine.create.qkey, 0xffffffffu);
    EXPECT_EQ(c.engine.create.pkey, 1);
    EXPECT_EQ(ok(R"({"groups":{"create":{"qkey":"0x0"}}})").engine.create.qkey, 0u);
}

TEST(ConfigKeys, NamedGroups) {
    auto c = ok(R"({"groups":{"names":{"enabled":false,"prefix":"ff12:a:2:3000::/52","pkey":"0x8001"}}})");
    EXPECT_FALSE(c.names.enabled);
    EXPECT_EQ(format_name_prefix(c.names.prefix), "ff12:a:2:3000::/52");
    EXPECT_EQ(c.names.pkey, 0x8001);
    c = ok(R"({"groups":{"names":{"prefix":"ff15:6e61::/32"}}})");
    EXPECT_TRUE(c.names.enabled);
    EXPECT_EQ(c.names.prefix.length, 32u);
    // A static group may be named; the daemon maps it as it maps a client's.
    c = ok(R"({"static_groups":[{"device":"mlx5_0","port":1,"name":"job-42"}]})");
    EXPECT_EQ(c.static_groups.at(0).name, "job-42");
    EXPECT_TRUE(is_zero(c.static_groups.at(0).mgid));
}

// groups.owned_prefixes: the prefixes listed, plus the named groups' prefix while names are
// enabled (listed or not, never twice); a whole MGID is a /128.
TEST(ConfigKeys, OwnedPrefixes) {
    auto texts = [](const DaemonConfig &c) {
        std::vector<std::string> out;
        for (const NamePrefix &p : c.engine.owned_prefixes)
            out.push_back(format_name_prefix(p));
        return out;
    };
    using V = std::vector<std::string>;
    EXPECT_EQ(texts(ok(R"({"groups":{"owned_prefixes":["ff15:aa::/32","ff12:bb:1:2::7/128"]}})")),
              (V{"ff15:aa::/32", "ff12:bb:1:2::7/128", "ff15:6e61:6d65::/64"}));
    EXPECT_EQ(texts(ok(R"({"groups":{"owned_prefixes":["ff15:6e61:6d65::/64"]}})")), (V{"ff15:6e61:6d65::/64"}));
    EXPECT_EQ(texts(ok(R"({"groups":{"owned_prefixes":["ff15:aa::/32"],"names":{"enabled":false}}})")),
              (V{"ff15:aa::/32"}));
    EXPECT_EQ(texts(ok(R"({"groups":{"names":{"enabled":false}}})")), V{});
    EXPECT_EQ(texts(ok(R"({"groups":{"names":{"prefix":"ff15:1::/48"}}})")), (V{"ff15:1::/48"}));
    EXPECT_EQ(texts(ok(R"({"groups":{"owned_prefixes":[]}})")), (V{"ff15:6e61:6d65::/64"}));
    const auto c = ok(R"({"groups":{"owned_prefixes":["ff15:aa::/32"]}})");
    EXPECT_TRUE(c.engine.owns(*parse_gid("ff15:aa:1::1")));
    EXPECT_TRUE(c.engine.owns(*parse_gid("ff15:6e61:6d65:0:1::1")));
    EXPECT_FALSE(c.engine.owns(*parse_gid("ff15:ab::1")));
}

// config/README.md's example: 5000 ports sharing 2000 MAD/s get 0.4 MAD/s each, one per 2.5 s,
// and a re-join spread over 2.5 s.
TEST(ConfigKeys, AFabricBudgetSetsEachPortsPacingAndTheRejoinJitter) {
    const auto c = ok(R"({"fabric": {"hosts": 5000, "sa_budget": 2000}})");
    EXPECT_EQ(c.fabric, (sa::FabricBudget{5000, 2000}));
    EXPECT_DOUBLE_EQ(c.host.sa.pacing_rate, 0.4);
    EXPECT_EQ(c.engine.rejoin_jitter, milliseconds(2500));

    // The lower rate and the longer jitter win.
    const auto tighter = ok(R"({"sa": {"max_rate": 100}, "rejoin": {"jitter_ms": 500},
                                "fabric": {"hosts": 10, "sa_budget": 2000}})");
    EXPECT_DOUBLE_EQ(tighter.host.sa.pacing_rate, 100) << "sa.max_rate is below the share of 200";
    EXPECT_EQ(tighter.engine.rejoin_jitter, milliseconds(500)) << "rejoin.jitter_ms is above 10 / 2000 s";
    const auto looser = ok(R"({"sa": {"max_rate": 1000}, "fabric": {"hosts": 10, "sa_budget": 2000}})");
    EXPECT_DOUBLE_EQ(looser.host.sa.pacing_rate, 200);

    const auto none = ok(R"({"fabric": {"hosts": 0, "sa_budget": 0}})");
    EXPECT_EQ(none.host.sa.pacing_rate, 1000.0) << "sa.max_rate's default";
    EXPECT_EQ(none.engine.rejoin_jitter, milliseconds(500));

    // sa.max_rate's default caps a share above it: a budget only ever lowers a port's rate.
    const auto small = ok(R"({"fabric": {"hosts": 2, "sa_budget": 6000}})");
    EXPECT_DOUBLE_EQ(small.host.sa.pacing_rate, 1000);
    const auto unpaced = ok(R"({"sa": {"max_rate": 0}, "fabric": {"hosts": 2, "sa_budget": 6000}})");
    EXPECT_DOUBLE_EQ(unpaced.host.sa.pacing_rate, 3000) << "with sa.max_rate 0 the share alone";
}

// sa.max_rate defaults to 1,000 MADs/s per port (config/README.md); 0 is still accepted, and
// means unpaced, as the SA layer's own default.
TEST(ConfigKeys, MaxRateDefaultsTo1000AndZeroIsUnpaced) {
    EXPECT_EQ(ok("{}").host.sa.pacing_rate, 1000.0);
    EXPECT_EQ(ok(R"({"sa": {"window": 8}})").host.sa.pacing_rate, 1000.0);
    EXPECT_EQ(ok(R"({"sa": {"max_rate": 0}})").host.sa.pacing_rate, 0.0);
    EXPECT_EQ(ok(R"({"sa": {"max_rate": 100000}})").host.sa.pacing_rate, 100000.0);
    EXPECT_EQ(sa::TransactionConfig{}.pacing_rate, 0.0) << "the SA layer alone stays unpaced";
}

TEST(ConfigKeys, MaxTimeoutFollowsALargerTimeoutWhenLeftOut) {
    auto c = ok(R"({"sa":{"timeout_ms":5000}})");
    EXPECT_EQ(c.host.sa.max_timeout, milliseconds(5000));
    c = ok(R"({"sa":{"timeout_ms":100}})");
    EXPECT_EQ(c.host.sa.max_timeout, milliseconds(2000));
    c = ok(R"({"retry":{"min_ms":60000}})");
    EXPECT_EQ(c.engine.retry_max, milliseconds(60000));
    // Equal is fine.
    c = ok(R"({"sa":{"timeout_ms":700,"max_timeout_ms":700}})");
    EXPECT_EQ(c.host.sa.max_timeout, milliseconds(700));
}

TEST(ConfigKeys, MonitorRangeEndsAndRates) {
    auto c = ok(R"({"monitor":{"portinfo_interval_ms":600000,"sminfo_interval_ms":100,
                               "sminfo_timeout_ms":1,"audit_per_second":100,"jitter_percent":0}})");
    EXPECT_EQ(c.host.monitor.portinfo_interval, milliseconds(600000));
    EXPECT_EQ(c.host.monitor.sminfo_interval, milliseconds(100));
    EXPECT_EQ(c.host.monitor.sminfo_timeout, milliseconds(1));
    EXPECT_EQ(c.host.monitor.audit_per_second, 100.0);
    EXPECT_EQ(c.host.monitor.jitter_percent, 0u);
    // audit_per_second is the one number with a fraction; integers are numbers too.
    EXPECT_EQ(ok(R"({"monitor":{"audit_per_second":0}})").host.monitor.audit_per_second, 0.0);
    EXPECT_EQ(ok(R"({"monitor":{"audit_per_second":1}})").host.monitor.audit_per_second, 1.0);
    EXPECT_EQ(ok(R"({"monitor":{"audit_per_second":2.5e-1}})").host.monitor.audit_per_second, 0.25);
    // Every value the file accepts is one the monitor accepts.
    for (const char *text : {R"({"monitor":{"portinfo_interval_ms":100,"sminfo_interval_ms":100,
                                            "sminfo_timeout_ms":1,"audit_per_second":0,
                                            "jitter_percent":50}})",
                             R"({"monitor":{"audit_per_second":1e-300}})"})
        EXPECT_EQ(port::check_monitor_config(ok(text).host.monitor), std::nullopt) << text;
}

// ---- rejections: the file, the key's pointer, the cause ----

struct Rejection {
    const char *rule;
    std::string text;
    std::string message; // the whole message, or its start when it ends with "..."
};
std::ostream &operator<<(std::ostream &os, const Rejection &r) { return os << r.rule; }

class ConfigRejection : public ::testing::TestWithParam<Rejection> {};

TEST_P(ConfigRejection, NamesFileAndKey) {
    const auto msg = rejected(GetParam().text);
    std::string want = GetParam().message;
    if (want.ends_with("...")) {
        want.resize(want.size() - 3);
        EXPECT_TRUE(msg.starts_with(want)) << msg << "\n  wanted: " << want;
    } else {
        EXPECT_EQ(msg, want);
    }
}

const Rejection kRejections[] = {
    // The document.
    {"empty file", "", "test.json: line 1, column 1: syntax error while parsing value..."},
    {"syntax error", "{\n  \"sa\": {\"tries\": 1,}\n}",
     "test.json: line 2, column 21: syntax error while parsing object key..."},
    {"trailing comma", R"({"log_level":"info",})", "test.json: line 1, column 21: syntax error..."},
    {"not an object", "[]", "test.json: expected an object, got an array"},
    {"unterminated comment", "{} /* x", "test.json: line 1, column 8: syntax error..."},
    {"NUL byte", std::string("{}\0", 3), "test.json: NUL byte at offset 2"},
    {"duplicate top-level key", R"({"socket":"/a","socket":"/b"})",
     "test.json: /socket: duplicate key"},
    {"duplicate nested key", R"({"sa":{"tries":1,"window":2,"tries":3}})",
     "test.json: /sa/tries: duplicate key"},
    {"duplicate in a static group",
     R"({"static_groups":[{"device":"d","port":1,"create":true,"port":2}]})",
     "test.json: /static_groups/0/port: duplicate key"},

    // Unknown keys at every level.
    {"unknown top-level key", R"({"sockets":"/run/x"})", "test.json: /sockets: unknown key"},
    {"unknown sa key", R"({"sa":{"timeout":1}})", "test.json: /sa/timeout: unknown key"},
    {"unknown groups key", R"({"groups":{"allow_all":true}})",
     "test.json: /groups/allow_all: unknown key"},
    {"unknown create key", R"({"groups":{"create":{"qkye":1}}})",
     "test.json: /groups/create/qkye: unknown key"},
    {"unknown retry key", R"({"retry":{"jitter":1}})", "test.json: /retry/jitter: unknown key"},
    {"unknown names key", R"({"groups":{"names":{"prefx":"ff15:1::/32"}}})",
     "test.json: /groups/names/prefx: unknown key"},
    {"names prefix without length", R"({"groups":{"names":{"prefix":"ff15:1::"}}})",
     "test.json: /groups/names/prefix: \"ff15:1::\" has no prefix length..."},
    {"names prefix too short", R"({"groups":{"names":{"prefix":"ff15::/16"}}})",
     "test.json: /groups/names/prefix: \"ff15::/16\" prefix length 16 out of range [32, 64]"},
    {"names prefix too long", R"({"groups":{"names":{"prefix":"ff15:1::/72"}}})",
     "test.json: /groups/names/prefix: \"ff15:1::/72\" prefix length 72 out of range [32, 64]"},
    {"names prefix not multicast", R"({"groups":{"names":{"prefix":"fe80::/64"}}})",
     "test.json: /groups/names/prefix: \"fe80::/64\" is not a multicast GID prefix (those begin with ff)"},
    {"names prefix bits past it", R"({"groups":{"names":{"prefix":"ff15:1::1/64"}}})",
     "test.json: /groups/names/prefix: \"ff15:1::1/64\" has bits set past its length 64..."},
    {"names prefix IPoIB", R"({"groups":{"names":{"prefix":"ff12:401b::/32"}}})",
     "test.json: /groups/names/prefix: \"ff12:401b::/32\" has the signature 0x401b, which IPoIB, rdma_cm "
     "or the SA's assigned MGIDs use"},
    {"names prefix scope 0", R"({"groups":{"names":{"prefix":"ff10:1::/32"}}})",
     "test.json: /groups/names/prefix: \"ff10:1::/32\" has scope 0, which is reserved"},
    {"names prefix a number", R"({"groups":{"names":{"prefix":64}}})",
     "test.json: /groups/names/prefix: expected a string..."},
    {"owned prefixes not a list", R"({"groups":{"owned_prefixes":"ff15:aa::/32"}})",
     "test.json: /groups/owned_prefixes: expected an array..."},
    {"owned prefix a number", R"({"groups":{"owned_prefixes":[7]}})",
     "test.json: /groups/owned_prefixes/0: expected a string..."},
    {"owned prefix without length", R"({"groups":{"owned_prefixes":["ff15:aa::/32","ff15:1::1"]}})",
     "test.json: /groups/owned_prefixes/1: \"ff15:1::1\" has no prefix length..."},
    {"owned prefix too short", R"({"groups":{"owned_prefixes":["ff15::/16"]}})",
     "test.json: /groups/owned_prefixes/0: \"ff15::/16\" prefix length 16 out of range [32, 128]"},
    {"owned prefix not multicast", R"({"groups":{"owned_prefixes":["fe80::/64"]}})",
     "test.json: /groups/owned_prefixes/0: \"fe80::/64\" is not a multicast GID prefix (those begin with ff)"},
    {"owned prefix bits past it", R"({"groups":{"owned_prefixes":["ff15:1::1/64"]}})",
     "test.json: /groups/owned_prefixes/0: \"ff15:1::1/64\" has bits set past its length 64"},
    {"owned prefix IPoIB", R"({"groups":{"owned_prefixes":["ff12:601b::/32"]}})",
     "test.json: /groups/owned_prefixes/0: \"ff12:601b::/32\" has the signature 0x601b, which IPoIB, rdma_cm "
     "or the SA's assigned MGIDs use"},
    {"owned prefix rdma_cm", R"({"groups":{"owned_prefixes":["ff15:4001:1::/48"]}})",
     "test.json: /groups/owned_prefixes/0: \"ff15:4001:1::/48\" has the signature 0x4001, which IPoIB, rdma_cm "
     "or the SA's assigned MGIDs use"},
    {"owned prefix scope 0", R"({"groups":{"owned_prefixes":["ff10:1::/32"]}})",
     "test.json: /groups/owned_prefixes/0: \"ff10:1::/32\" has scope 0, which is reserved"},
    {"names pkey invalid", R"({"groups":{"names":{"pkey":"0x8000"}}})",
     "test.json: /groups/names/pkey: 0x8000 is the invalid P_Key"},
    {"names enabled a string", R"({"groups":{"names":{"enabled":"yes"}}})",
     "test.json: /groups/names/enabled: expected true or false..."},
    {"named static group, names disabled",
     R"({"groups":{"names":{"enabled":false}},"static_groups":[{"device":"d","port":1,"name":"a"}]})",
     "test.json: /static_groups/0/name: named groups are disabled (/groups/names/enabled)"},
    {"static group with name and mgid",
     R"({"static_groups":[{"device":"d","port":1,"name":"a","mgid":"ff15::1"}]})",
     "test.json: /static_groups/0/name: name and mgid exclude each other (the daemon maps the name to its mgid)"},
    {"unknown dbus key", R"({"dbus":{"enable":true}})", "test.json: /dbus/enable: unknown key"},
    {"unknown restart key", R"({"restart":{"grace":1}})", "test.json: /restart/grace: unknown key"},
    {"grace too long", R"({"restart":{"grace_ms":3600001}})", "test.json: /restart/grace_ms: 3600001 out of range [0, 3600000]"},
    {"unknown monitor key", R"({"monitor":{"portinfo_interval":1000}})",
     "test.json: /monitor/portinfo_interval: unknown key"},
    {"unknown limits key", R"({"limits":{"max_queued":1}})", "test.json: /limits/max_queued: unknown key"},
    {"unknown access key", R"({"access":{"allow_users":["root"]}})",
     "test.json: /access/allow_users: unknown key"},
    {"protocol envelope in a static group",
     R"({"static_groups":[{"id":1,"op":"join","device":"d","port":1,"create":true}]})",
     "test.json: /static_groups/0/id: unknown key"},

    // Types.
    {"socket not a string", R"({"socket":1})", "test.json: /socket: expected a string, got 1"},
    {"section not an object", R"({"sa":[]})", "test.json: /sa: expected an object, got an array"},
    {"create not an object", R"({"groups":{"create":true}})",
     "test.json: /groups/create: expected an object, got true"},
    {"float", R"({"sa":{"timeout_ms":300.0}})",
     "test.json: /sa/timeout_ms: expected an integer in [1, 60000], got 300.0"},
    {"number as string", R"({"sa":{"tries":"6"}})",
     "test.json: /sa/tries: expected an integer in [1, 100], got \"6\""},
    {"monitor not an object", R"({"monitor":1000})",
     "test.json: /monitor: expected an object, got 1000"},
    {"bool as a rate", R"({"monitor":{"audit_per_second":true}})",
     "test.json: /monitor/audit_per_second: expected a number, got true"},
    {"string as a rate", R"({"monitor":{"audit_per_second":"0.2"}})",
     "test.json: /monitor/audit_per_second: expected a number, got \"0.2\""},
    {"null as a rate", R"({"monitor":{"audit_per_second":null}})",
     "test.json: /monitor/audit_per_second: expected a number, got null"},
    {"fraction as an interval", R"({"monitor":{"sminfo_interval_ms":1500.5}})",
     "test.json: /monitor/sminfo_interval_ms: expected an integer in [100, 3600000], got 1500.5"},
    {"bool as number", R"({"limits":{"max_clients":true}})",
     "test.json: /limits/max_clients: expected an integer in [1, 100000], got true"},
    {"number as bool", R"({"groups":{"allow_ipoib_mgids":1}})",
     "test.json: /groups/allow_ipoib_mgids: expected true or false, got 1"},
    {"roce_ipv6 not a bool", R"({"groups":{"roce_ipv6":"yes"}})",
     "test.json: /groups/roce_ipv6: expected true or false, got \"yes\""},
    {"dbus enabled not a bool", R"({"dbus":{"enabled":"yes"}})",
     "test.json: /dbus/enabled: expected true or false, got \"yes\""},
    {"ports not an array", R"({"ports":"mlx5_0"})",
     "test.json: /ports: expected an array, got \"mlx5_0\""},
    {"port entry not a string", R"({"ports":[1]})",
     "test.json: /ports/0: expected a string, got 1"},
    {"unknown socket group", R"({"socket_group":"no-such-group-mcastd"})",
     "test.json: /socket_group: no group \"no-such-group-mcastd\" on this host (getgrnam)"},
    {"unknown user name", R"({"access":{"allow_uids":["no-such-user-mcastd"]}})",
     "test.json: /access/allow_uids/0: no user \"no-such-user-mcastd\" on this host (getpwnam)"},
    {"uid neither number nor name", R"({"access":{"allow_uids":[true]}})",
     "test.json: /access/allow_uids/0: true is neither a uid nor a user name"},
    {"unknown group name", R"({"access":{"rules":[{"groups":["no-such-group-mcastd"]}]}})",
     "test.json: /access/rules/0/groups/0: no group \"no-such-group-mcastd\" on this host (getgrnam)"},
    {"unknown rule key", R"({"access":{"rules":[{"user":[1000]}]}})",
     "test.json: /access/rules/0/user: unknown key"},
    {"rule name taken twice", R"({"access":{"rules":[{"name":"a"},{"name":"a"}]}})",
     "test.json: /access/rules/1/name: \"a\" is already the name of /access/rules/0"},
    {"rule name reserved", R"({"access":{"rules":[{"name":"root"}]}})",
     "test.json: /access/rules/0/name: \"root\" is what list shows for memberships no rule admitted"},
    {"mgid prefix with bits past its length", R"({"access":{"rules":[{"mgids":["ff15:a:1::5/48"]}]}})",
     "test.json: /access/rules/0/mgids/0: ff15:a:1::5 has bits set after its first 48 (did you mean ff15:a:1::/48?)"},
    {"mgid prefix not multicast", R"({"access":{"rules":[{"mgids":["fe80::/16"]}]}})",
     "test.json: /access/rules/0/mgids/0: fe80:: is not a multicast GID (it must start with ff)"},
    {"ip prefix with bits past its length", R"({"access":{"rules":[{"ips":["239.1.2.3/16"]}]}})",
     "test.json: /access/rules/0/ips/0: 239.1.2.3 has bits set after its first 16 (did you mean 239.1.0.0/16?)"},
    {"ip prefix not multicast", R"({"access":{"rules":[{"ips":["10.0.0.0/8"]}]}})",
     "test.json: /access/rules/0/ips/0: 10.0.0.0 is not an IP multicast group (224.0.0.0/4 or ff00::/8)"},
    {"ip prefix not an address", R"({"access":{"rules":[{},{"ips":["239.1.0.0/16", "eth0"]}]}})",
     "test.json: /access/rules/1/ips/1: \"eth0\" is not an IPv4 or IPv6 address"},
    {"ip prefix length out of range", R"({"access":{"rules":[{"ips":["239.0.0.0/33"]}]}})",
     "test.json: /access/rules/0/ips/0: the length after '/' must be a number in [4, 32]"},
    {"ips not an array", R"({"access":{"rules":[{"ips":"239.0.0.0/8"}]}})",
     "test.json: /access/rules/0/ips: expected an array, got \"239.0.0.0/8\""},
    {"mgid prefix length out of range", R"({"access":{"rules":[{"mgids":["ff15::/129"]}]}})",
     "test.json: /access/rules/0/mgids/0: the length after '/' must be a number in [8, 128]"},
    {"invalid pkey in a rule", R"({"access":{"rules":[{"pkeys":["0x8000"]}]}})",
     "test.json: /access/rules/0/pkeys/0: 0x8000 is the invalid P_Key"},
    {"empty join_states", R"({"access":{"rules":[{"join_states":[]}]}})",
     "test.json: /access/rules/0/join_states: is empty, which would allow nothing; leave the key out to allow every "
     "join state"},
    {"unknown join state", R"({"access":{"rules":[{"join_states":["half"]}]}})",
     "test.json: /access/rules/0/join_states/0: \"half\" is not a join state (full, nonmember, sendonly-nonmember, "
     "sendonly-full)"},
    {"create neither bool nor kind", R"({"access":{"rules":[{"create":"yes"}]}})",
     "test.json: /access/rules/0/create: \"yes\" is not true, false, \"mgid\" or \"sa-assigned\""},
    {"unit without suffix", R"({"access":{"rules":[{"units":["tenant-a"]}]}})",
     "test.json: /access/rules/0/units/0: \"tenant-a\" is not a unit name ending in .service, .scope or .slice"},
    {"cgroup not absolute", R"({"access":{"rules":[{"cgroups":["system.slice"]}]}})",
     "test.json: /access/rules/0/cgroups/0: \"system.slice\" is not a cgroup path such as "
     "\"/system.slice/tenant-a.slice\""},
    {"quota out of range", R"({"access":{"quotas":{"groups_per_port":20000}}})",
     "test.json: /access/quotas/groups_per_port: 20000 out of range [0, 16383]"},
    {"static_groups not an array", R"({"static_groups":{}})",
     "test.json: /static_groups: expected an array, got an object"},
    {"static group not an object", R"({"static_groups":["ff15::1"]})",
     "test.json: /static_groups/0: expected an object, got \"ff15::1\""},

    // Ranges.
    {"timeout 0", R"({"sa":{"timeout_ms":0}})",
     "test.json: /sa/timeout_ms: 0 out of range [1, 60000]"},
    {"timeout too long", R"({"sa":{"timeout_ms":60001}})",
     "test.json: /sa/timeout_ms: 60001 out of range [1, 60000]"},
    {"max_timeout below timeout", R"({"sa":{"timeout_ms":500,"max_timeout_ms":400}})",
     "test.json: /sa/max_timeout_ms: 400 out of range [500, 600000]"},
    {"max_timeout too long", R"({"sa":{"max_timeout_ms":600001}})",
     "test.json: /sa/max_timeout_ms: 600001 out of range [300, 600000]"},
    {"tries 0", R"({"sa":{"tries":0}})", "test.json: /sa/tries: 0 out of range [1, 100]"},
    {"tries 101", R"({"sa":{"tries":101}})", "test.json: /sa/tries: 101 out of range [1, 100]"},
    {"fabric hosts without a budget", R"({"fabric":{"hosts":5000}})",
     "test.json: /fabric/sa_budget: missing or 0 while /fabric/hosts is set: a budget needs both, the ports "
     "that share it and the MADs per second they share"},
    {"fabric budget without hosts", R"({"fabric":{"hosts":0,"sa_budget":2000}})",
     "test.json: /fabric/hosts: missing or 0 while /fabric/sa_budget is set: a budget needs both, the ports "
     "that share it and the MADs per second they share"},
    {"fabric hosts too many", R"({"fabric":{"hosts":1000001,"sa_budget":1}})",
     "test.json: /fabric/hosts: 1000001 out of range [0, 1000000]"},
    {"fabric budget as a string", R"({"fabric":{"hosts":1,"sa_budget":"2000"}})",
     "test.json: /fabric/sa_budget: expected an integer in [0, 10000000], got \"2000\""},
    {"fabric unknown key", R"({"fabric":{"ports":8}})", "test.json: /fabric/ports: unknown key"},
    {"window 0", R"({"sa":{"window":0}})", "test.json: /sa/window: 0 out of range [1, 256]"},
    {"window 257", R"({"sa":{"window":257}})", "test.json: /sa/window: 257 out of range [1, 256]"},
    {"negative max_rate", R"({"sa":{"max_rate":-1}})",
     "test.json: /sa/max_rate: -1 out of range [0, 100000]"},
    {"max_rate too high", R"({"sa":{"max_rate":100001}})",
     "test.json: /sa/max_rate: 100001 out of range [0, 100000]"},
    {"rtt target 0", R"({"sa":{"rtt_target_ms":0}})", "test.json: /sa/rtt_target_ms: 0 out of range [1, 10000]"},
    {"congestion control not a bool", R"({"sa":{"congestion_control":1}})",
     "test.json: /sa/congestion_control: expected true or false, got 1"},
    {"qkey 2^32", R"({"groups":{"create":{"qkey":4294967296}}})",
     "test.json: /groups/create/qkey: 4294967296 out of range [0, 4294967295]"},
    {"hex qkey too large", R"({"groups":{"create":{"qkey":"0x100000000"}}})",
     "test.json: /groups/create/qkey: 0x100000000 out of range [0x0, 0xffffffff]"},
    {"hex far beyond 64 bits", R"({"groups":{"create":{"qkey":"0x1000000000000000000"}}})",
     "test.json: /groups/create/qkey: 0x1000000000000000000 out of range [0x0, 0xffffffff]"},
    {"hex without 0x", R"({"groups":{"create":{"qkey":"1b"}}})",
     "test.json: /groups/create/qkey: \"1b\" is neither an integer nor a hex string such as "
     "\"0x1b\""},
    {"0x alone", R"({"groups":{"create":{"qkey":"0x"}}})",
     "test.json: /groups/create/qkey: \"0x\" is neither an integer nor a hex string such as "
     "\"0x1b\""},
    {"hex with junk", R"({"groups":{"create":{"pkey":"0xffzz"}}})",
     "test.json: /groups/create/pkey: \"0xffzz\" is neither an integer nor..."},
    {"hex with sign", R"({"groups":{"create":{"pkey":"0x-1"}}})",
     "test.json: /groups/create/pkey: \"0x-1\" is neither an integer nor..."},
    {"decimal string", R"({"groups":{"create":{"pkey":"65535"}}})",
     "test.json: /groups/create/pkey: \"65535\" is neither an integer nor..."},
    {"pkey 0x10000", R"({"groups":{"create":{"pkey":"0x10000"}}})",
     "test.json: /groups/create/pkey: 0x10000 out of range [0x0, 0xffff]"},
    {"pkey 65536", R"({"groups":{"create":{"pkey":65536}}})",
     "test.json: /groups/create/pkey: 65536 out of range [0, 65535]"},
    {"invalid pkey 0", R"({"groups":{"create":{"pkey":0}}})",
     "test.json: /groups/create/pkey: 0x0 is the invalid P_Key"},
    {"invalid pkey 0x8000", R"({"groups":{"create":{"pkey":"0x8000"}}})",
     "test.json: /groups/create/pkey: 0x8000 is the invalid P_Key"},
    {"sl 16", R"({"groups":{"create":{"sl":16}}})",
     "test.json: /groups/create/sl: 16 out of range [0, 15]"},
    {"traffic_class 256", R"({"groups":{"create":{"traffic_class":256}}})",
     "test.json: /groups/create/traffic_class: 256 out of range [0, 255]"},
    {"flow_label 2^20", R"({"groups":{"create":{"flow_label":1048576}}})",
     "test.json: /groups/create/flow_label: 1048576 out of range [0, 1048575]"},
    {"scope 0", R"({"groups":{"create":{"scope":0}}})",
     "test.json: /groups/create/scope: 0 out of range [1, 15]"},
    {"scope 16", R"({"groups":{"create":{"scope":16}}})",
     "test.json: /groups/create/scope: 16 out of range [1, 15]"},
    {"retry min 9", R"({"retry":{"min_ms":9}})",
     "test.json: /retry/min_ms: 9 out of range [10, 3600000]"},
    {"retry max below min", R"({"retry":{"min_ms":5000,"max_ms":4999}})",
     "test.json: /retry/max_ms: 4999 out of range [5000, 3600000]"},
    {"retry max below default min", R"({"retry":{"max_ms":999}})",
     "test.json: /retry/max_ms: 999 out of range [1000, 3600000]"},
    {"portinfo interval 99", R"({"monitor":{"portinfo_interval_ms":99}})",
     "test.json: /monitor/portinfo_interval_ms: 99 out of range [100, 600000]"},
    {"portinfo interval too long", R"({"monitor":{"portinfo_interval_ms":600001}})",
     "test.json: /monitor/portinfo_interval_ms: 600001 out of range [100, 600000]"},
    {"sminfo interval 99", R"({"monitor":{"sminfo_interval_ms":99}})",
     "test.json: /monitor/sminfo_interval_ms: 99 out of range [100, 3600000]"},
    {"sminfo interval over an hour", R"({"monitor":{"sminfo_interval_ms":3600001}})",
     "test.json: /monitor/sminfo_interval_ms: 3600001 out of range [100, 3600000]"},
    {"sminfo timeout 0", R"({"monitor":{"sminfo_timeout_ms":0}})",
     "test.json: /monitor/sminfo_timeout_ms: 0 out of range [1, 60000]"},
    {"sminfo timeout too long", R"({"monitor":{"sminfo_timeout_ms":60001}})",
     "test.json: /monitor/sminfo_timeout_ms: 60001 out of range [1, 60000]"},
    {"negative audit rate", R"({"monitor":{"audit_per_second":-0.1}})",
     "test.json: /monitor/audit_per_second: -0.1 out of range [0, 100]"},
    {"audit rate too high", R"({"monitor":{"audit_per_second":100.5}})",
     "test.json: /monitor/audit_per_second: 100.5 out of range [0, 100]"},
    {"audit rate beyond a double", R"({"monitor":{"audit_per_second":1e400}})",
     "test.json: line 1, column 32: number overflow parsing '1e400'"},
    {"jitter 51", R"({"monitor":{"jitter_percent":51}})",
     "test.json: /monitor/jitter_percent: 51 out of range [0, 50]"},
    {"negative jitter", R"({"monitor":{"jitter_percent":-1}})",
     "test.json: /monitor/jitter_percent: -1 out of range [0, 50]"},
    {"root reserve of every slot", R"({"limits":{"max_clients":10,"root_reserved_clients":10}})",
     "test.json: /limits/root_reserved_clients: 10 out of range [0, 9]"},
    {"queue below a reply", R"({"limits":{"max_queued_bytes":65536}})",
     "test.json: /limits/max_queued_bytes: 65536 out of range [262144, 1073741824]"},
    {"hello deadline too short", R"({"limits":{"hello_timeout_ms":99}})",
     "test.json: /limits/hello_timeout_ms: 99 out of range [100, 600000]"},
    {"SA burst of nothing", R"({"access":{"quotas":{"sa_mads_burst":0}}})",
     "test.json: /access/quotas/sa_mads_burst: 0 out of range [1, 10000000]"},
    {"uid share of groups beyond the MLIDs", R"({"access":{"quotas":{"groups_per_port_per_uid":16384}}})",
     "test.json: /access/quotas/groups_per_port_per_uid: 16384 out of range [0, 16383]"},
    {"message limit too small", R"({"limits":{"max_message_bytes":1023}})",
     "test.json: /limits/max_message_bytes: 1023 out of range [1024, 65536]"},
    {"message limit beyond the protocol", R"({"limits":{"max_message_bytes":65537}})",
     "test.json: /limits/max_message_bytes: 65537 out of range [1024, 65536]"},
    {"requests in flight 0", R"({"limits":{"max_requests_in_flight":0}})",
     "test.json: /limits/max_requests_in_flight: 0 out of range [1, 100000]"},
    {"memberships too many", R"({"limits":{"max_memberships_per_client":10000001}})",
     "test.json: /limits/max_memberships_per_client: 10000001 out of range [1, 10000000]"},
    {"clients 0", R"({"limits":{"max_clients":0}})",
     "test.json: /limits/max_clients: 0 out of range [1, 100000]"},
    {"routine burst 0", R"({"limits":{"log_routine_burst":0}})",
     "test.json: /limits/log_routine_burst: 0 out of range [1, 10000]"},
    {"routine burst beyond journald's", R"({"limits":{"log_routine_burst":10001}})",
     "test.json: /limits/log_routine_burst: 10001 out of range [1, 10000]"},
    {"routine rate 0", R"({"limits":{"log_routine_per_minute":0}})",
     "test.json: /limits/log_routine_per_minute: 0 out of range [1, 20000]"},
    {"routine rate as text", R"({"limits":{"log_routine_per_minute":"120"}})",
     "test.json: /limits/log_routine_per_minute: expected an integer in [1, 20000], got \"120\""},
    {"uid -1", R"({"access":{"allow_uids":[1000,-1]}})",
     "test.json: /access/allow_uids/1: -1 out of range [0, 4294967294]"},
    {"gid 4294967295", R"({"access":{"allow_gids":[4294967295]}})",
     "test.json: /access/allow_gids/0: 4294967295 out of range [0, 4294967294]"},

    // Values with a shape.
    {"relative socket", R"({"socket":"run/x.sock"})",
     "test.json: /socket: must be an absolute path"},
    {"empty socket", R"({"socket":""})", "test.json: /socket: must be an absolute path"},
    {"relative subuid file", R"({"limits":{"subuid_file":"etc/subuid"}})",
     "test.json: /limits/subuid_file: must be an absolute path, or \"\" to charge every uid to itself"},
    {"socket too long", R"({"socket":"/)" + std::string(107, 's') + "\"}",
     "test.json: /socket: longer than 107 bytes, the most a Unix socket address holds"},
    {"socket with NUL", R"({"socket":"/run/a\u0000b"})",
     "test.json: /socket: contains a NUL character"},
    {"unknown log level", R"({"log_level":"verbose"})",
     "test.json: /log_level: \"verbose\" is not a log level (trace, debug, info, warning, "
     "error, critical or off)"},
    {"log level is case sensitive", R"({"log_level":"INFO"})",
     "test.json: /log_level: \"INFO\" is not a log level..."},
    {"empty port name", R"({"ports":[""]})",
     "test.json: /ports/0: \"\" does not start with a device name (\"mlx5_0\" or \"mlx5_0/1\")"},
    {"port without device", R"({"ports":["/1"]})",
     "test.json: /ports/0: \"/1\" does not start with a device name..."},
    {"port device not a device name", R"({"ports":["mlx5 0/1"]})",
     "test.json: /ports/0: \"mlx5 0\" is not an RDMA device name: byte 4 is not printable ASCII..."},
    {"port device with a control character", R"({"ports":["mlx5\u001b"]})",
     "test.json: /ports/0: \"mlx5\\x1b\" is not an RDMA device name..."},
    {"static group device with a control character",
     R"({"static_groups":[{"device":"mlx5_0\n","port":1,"mgid":"ff15::1"}]})",
     "test.json: /static_groups/0/device: \"mlx5_0\\x0a\" is not an RDMA device name..."},
    {"static group device too long",
     R"({"static_groups":[{"device":")" + std::string(64, 'd') + R"(","port":1,"mgid":"ff15::1"}]})",
     "test.json: /static_groups/0/device: \"" + std::string(64, 'd') + "\" is not an RDMA device name: it is 64 bytes long..."},
    {"port number 0", R"({"ports":["mlx5_0/0"]})",
     "test.json: /ports/0: \"mlx5_0/0\": the port after '/' must be a number in [1, 254]"},
    {"port number 255", R"({"ports":["mlx5_0/255"]})",
     "test.json: /ports/0: \"mlx5_0/255\": the port after '/' must be..."},
    {"port number with leading zero", R"({"ports":["mlx5_0/01"]})",
     "test.json: /ports/0: \"mlx5_0/01\": the port after '/' must be..."},
    {"port number not a number", R"({"ports":["mlx5_0/one"]})",
     "test.json: /ports/0: \"mlx5_0/one\": the port after '/' must be..."},
    {"port number empty", R"({"ports":["mlx5_0/"]})",
     "test.json: /ports/0: \"mlx5_0/\": the port after '/' must be..."},
    {"two slashes", R"({"ports":["mlx5_0/1/2"]})",
     "test.json: /ports/0: \"mlx5_0/1/2\": the port after '/' must be..."},
    {"port listed twice", R"({"ports":["mlx5_0/1","mlx5_1","mlx5_0/1"]})",
     "test.json: /ports/2: \"mlx5_0/1\" is already listed at /ports/0"},

    // static_groups: the protocol's join decoder, with its messages.
    {"static group without device", R"({"static_groups":[{"port":1,"create":true}]})",
     "test.json: /static_groups/0/device: required key is missing"},
    {"static group qkey out of range",
     R"({"static_groups":[{"device":"d","port":1,"create":true},
                          {"device":"d","port":1,"mgid":"ff15::1","qkey":4294967296}]})",
     "test.json: /static_groups/1/qkey: 4294967296 out of range [0, 4294967295]"},
    {"static group hex qkey is not the protocol's",
     R"({"static_groups":[{"device":"d","port":1,"mgid":"ff15::1","qkey":"0x1"}]})",
     "test.json: /static_groups/0/qkey: expected an integer in [0, 4294967295], got \"0x1\""},
    {"static group bad mgid", R"({"static_groups":[{"device":"d","port":1,"mgid":"ff15:::1"}]})",
     "test.json: /static_groups/0/mgid: \"ff15:::1\" is not a GID in IPv6 text form"},
    {"static group mgid and create",
     R"({"static_groups":[{"device":"d","port":1,"mgid":"ff15::1","create":true}]})",
     "test.json: /static_groups/0/create: mgid and create exclude each other"},
    {"static group scope without create",
     R"({"static_groups":[{"device":"d","port":1,"mgid":"ff15::1","scope":2}]})",
     "test.json: /static_groups/0/scope: needs create: an existing group's scope is part of its "
     "mgid"},
    {"static group unknown join state",
     R"({"static_groups":[{"device":"d","port":1,"create":true,"join_state":"member"}]})",
     "test.json: /static_groups/0/join_state: \"member\" is not a join state..."},
    {"static group selector without value",
     R"({"static_groups":[{"device":"d","port":1,"create":true,"rate_selector":"best"}]})",
     "test.json: /static_groups/0/rate_selector: needs rate: a selector compares a value"},
    {"static group on a port not served",
     R"({"ports":["mlx5_0/1","mlx5_1"],"static_groups":[
          {"device":"mlx5_1","port":3,"create":true},
          {"device":"mlx5_0","port":2,"create":true}]})",
     "test.json: /static_groups/1/device: mlx5_0/2 is not one of the ports the daemon serves "
     "(/ports)"},
};

INSTANTIATE_TEST_SUITE_P(Table, ConfigRejection, ::testing::ValuesIn(kRejections),
                         [](const auto &param_info) {
                             std::string name;
                             for (const char *p = param_info.param.rule; *p; ++p)
                                 name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
                             return name;
                         });

// ---- files ----

class ConfigFile : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/mcastd-config-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::string write(const std::string &name, const std::string &text) {
        const auto path = dir_ / name;
        std::ofstream(path) << text;
        return path;
    }

    std::filesystem::path dir_;
};

TEST_F(ConfigFile, AMissingDefaultPathMeansTheDefaults) {
    const std::string path = dir_ / "absent.json";
    auto r = load_config(path, /*path_is_default=*/true);
    ASSERT_TRUE(std::holds_alternative<DaemonConfig>(r)) << std::get<Error>(r).message;
    expect_defaults(std::get<DaemonConfig>(r));
    EXPECT_EQ(std::get<DaemonConfig>(r).origin, "built-in defaults (no " + path + ")");
}

TEST_F(ConfigFile, AMissingFileTheOperatorNamedIsAnError) {
    const std::string path = dir_ / "absent.json";
    auto r = load_config(path, /*path_is_default=*/false);
    ASSERT_TRUE(std::holds_alternative<Error>(r));
    EXPECT_EQ(std::get<Error>(r).message, path + ": cannot open: No such file or directory");
}

TEST_F(ConfigFile, ReadsAndParsesTheFile) {
    const auto path = write("c.json", R"({"log_level": "warning", "sa": {"window": 4}})");
    for (bool is_default : {true, false}) {
        auto r = load_config(path, is_default);
        ASSERT_TRUE(std::holds_alternative<DaemonConfig>(r)) << std::get<Error>(r).message;
        EXPECT_EQ(std::get<DaemonConfig>(r).log_level, "warning");
        EXPECT_EQ(std::get<DaemonConfig>(r).host.sa.window, 4u);
        EXPECT_EQ(std::get<DaemonConfig>(r).origin, path);
    }
}

TEST_F(ConfigFile, ErrorsInTheFileNameIt) {
    const auto path = write("bad.json", "{\n  \"limits\": {\"max_clients\": 0}\n}\n");
    auto r = load_config(path, true); // an existing default file is checked like any other
    ASSERT_TRUE(std::holds_alternative<Error>(r));
    EXPECT_EQ(std::get<Error>(r).message,
              path + ": /limits/max_clients: 0 out of range [1, 100000]");
}

TEST_F(ConfigFile, ADirectoryIsNotAConfig) {
    auto r = load_config(dir_, true);
    ASSERT_TRUE(std::holds_alternative<Error>(r));
    EXPECT_EQ(std::get<Error>(r).message, dir_.string() + ": not a regular file");
}

TEST_F(ConfigFile, AnEmptyFileIsASyntaxError) {
    const auto path = write("empty.json", "");
    auto r = load_config(path, false);
    ASSERT_TRUE(std::holds_alternative<Error>(r));
    EXPECT_TRUE(std::get<Error>(r).message.starts_with(path + ": line 1, column 1: syntax error"))
        << std::get<Error>(r).message;
}

TEST_F(ConfigFile, AHugeFileIsRefusedUnread) {
    const auto path = dir_ / "huge.json";
    std::filesystem::resize_file(write("huge.json", ""), 2u << 20);
    auto r = load_config(path, false);
    ASSERT_TRUE(std::holds_alternative<Error>(r));
    EXPECT_NE(std::get<Error>(r).message.find("more than a config file may hold"),
              std::string::npos);
}

} // namespace
} // namespace mcastd::config
