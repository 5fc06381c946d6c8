// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastctl, run as a process against the fake daemon: flags, output shapes, exit codes.
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "client_testing.hpp"
#include "metrics.hpp"
#include "process.hpp"

namespace {

using namespace fake;
namespace proto = mcastd::proto;
using nlohmann::json;

const std::string kCtl = RDMA_MCASTCTL_PATH;

// Runs rdma-mcastctl with `args` against `d` (through --socket), without the environment
// variable, so that only what the test says reaches it.
Finished ctl(const FakeDaemon &d, std::vector<std::string> args) {
    args.insert(args.begin(), {kCtl, "--socket", d.path()});
    return run(args, {{RDMAMCAST_SOCKET_ENV, std::nullopt}});
}

FakeDaemon::Handler join_reply(std::uint64_t membership = 7) {
    return [membership](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.reply(env.id, proto::JoinResult{membership, sample_record()});
        return true;
    };
}

FakeDaemon::Handler join_fails(mcastd::Errc code, std::string message,
                               std::optional<std::uint16_t> sa_status = std::nullopt) {
    return [=](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.fail(env.id, code, message, sa_status);
        return true;
    };
}

const std::vector<std::string> kJoin = {"join", "--device", "mlx5_0", "--port", "1",
                                        "--mgid", "ff15::1:2"};

// The command line of `join --hold` against `d` (with --json if `as_json`), then `more`.
std::vector<std::string> hold_args(const FakeDaemon &d, bool as_json,
                                   const std::vector<std::string> &more = {}) {
    std::vector<std::string> args = {kCtl, "--socket", d.path()};
    if (as_json)
        args.push_back("--json");
    args.insert(args.end(), kJoin.begin(), kJoin.end());
    args.push_back("--hold");
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// True once `d` has received `n` requests of type T.
template <class T> bool received(FakeDaemon &d, std::size_t n) {
    return d.wait_for([n](const std::vector<Received> &reqs) {
        std::size_t k = 0;
        for (const auto &r : reqs)
            k += std::holds_alternative<T>(r.envelope.request);
        return k >= n;
    });
}

// ---- usage ----

TEST(CtlUsage, HelpAndVersion) {
    auto r = run({kCtl, "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("Usage: rdma-mcastctl"), std::string::npos);
    EXPECT_NE(r.out.find("Exit status"), std::string::npos);
    for (const char *cmd : {"join", "list", "status", "monitor", "evict", "metrics"}) {
        auto h = run({kCtl, cmd, "--help"});
        EXPECT_EQ(h.exit_code, 0) << cmd;
        EXPECT_NE(h.out.find(std::string("Usage: rdma-mcastctl ") + cmd), std::string::npos)
            << h.out;
    }
    auto v = run({kCtl, "--version"});
    EXPECT_EQ(v.exit_code, 0);
    EXPECT_EQ(v.out.rfind("rdma-mcastctl ", 0), 0u) << v.out;
}

struct UsageCase {
    const char *name;
    std::vector<std::string> args;
    const char *stderr_has;
};
// Names the case in test listings instead of dumping its bytes.
void PrintTo(const UsageCase &c, std::ostream *os) { *os << c.name; }


class CtlUsageErrors : public ::testing::TestWithParam<UsageCase> {};

TEST_P(CtlUsageErrors, ExitTwoWithAReason) {
    std::vector<std::string> args = {kCtl, "--socket", "/nonexistent/sock"};
    args.insert(args.end(), GetParam().args.begin(), GetParam().args.end());
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(GetParam().stderr_has), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--help"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CtlUsageErrors,
    ::testing::Values(
        UsageCase{"no_command", {}, "no command"},
        UsageCase{"unknown_command", {"frobnicate"}, "unknown command \"frobnicate\""},
        UsageCase{"unknown_global_option", {"--frob", "list"}, "unknown option --frob"},
        UsageCase{"unknown_join_option", {"join", "--frob"}, "join: unknown option --frob"},
        UsageCase{"no_device", {"join", "--port", "1", "--mgid", "ff15::1"}, "--device is required"},
        UsageCase{"no_port", {"join", "--device", "d", "--mgid", "ff15::1"}, "--port is required"},
        UsageCase{"mgid_and_create",
                  {"join", "--device", "d", "--port", "1", "--mgid", "ff15::1", "--create"},
                  "exactly one of --mgid (or --mgid-file), --create, --name and --ip"},
        UsageCase{"bad_mgid_among_several",
                  {"join", "--device", "d", "--port", "1", "--mgid", "ff15::1", "--mgid", "ff15::zz"},
                  "--mgid \"ff15::zz\" is not a GID in IPv6 form"},
        UsageCase{"missing_mgid_file",
                  {"join", "--device", "d", "--port", "1", "--mgid-file", "/nonexistent/mgids"},
                  "--mgid-file /nonexistent/mgids: No such file or directory"},
        UsageCase{"neither_mgid_nor_create", {"join", "--device", "d", "--port", "1"},
                  "exactly one of --mgid (or --mgid-file), --create, --name and --ip"},
        UsageCase{"name_and_mgid",
                  {"join", "--device", "d", "--port", "1", "--mgid", "ff15::1", "--name", "job-42"},
                  "exactly one of --mgid (or --mgid-file), --create, --name and --ip"},
        UsageCase{"name_and_scope",
                  {"join", "--device", "d", "--port", "1", "--name", "job-42", "--scope", "2"},
                  "--scope applies only with --create"},
        UsageCase{"scope_without_create",
                  {"join", "--device", "d", "--port", "1", "--mgid", "ff15::1", "--scope", "2"},
                  "--scope applies only with --create"},
        UsageCase{"bad_mgid", {"join", "--device", "d", "--port", "1", "--mgid", "nope"},
                  "--mgid \"nope\""},
        UsageCase{"ip_and_mgid",
                  {"join", "--device", "d", "--port", "1", "--mgid", "ff15::1", "--ip", "239.1.2.3"},
                  "exactly one of --mgid (or --mgid-file), --create, --name and --ip"},
        UsageCase{"ip_and_name",
                  {"join", "--device", "d", "--port", "1", "--name", "job", "--ip", "239.1.2.3"},
                  "exactly one of --mgid (or --mgid-file), --create, --name and --ip"},
        UsageCase{"ip_not_an_address", {"join", "--device", "d", "--port", "1", "--ip", "239.1.2"},
                  "--ip \"239.1.2\" is not an IPv4 or IPv6 address"},
        UsageCase{"ip_unicast", {"join", "--device", "d", "--port", "1", "--ip", "239.1.2.3", "--ip", "10.0.0.1"},
                  "--ip \"10.0.0.1\" is not an IP multicast group (224.0.0.0/4 or ff00::/8)"},
        UsageCase{"bad_gid_type",
                  {"join", "--device", "d", "--port", "1", "--ip", "239.1.2.3", "--gid-type", "RoCE v2"},
                  "--gid-type \"RoCE v2\" is not one of roce_v1, roce_v2"},
        UsageCase{"port_zero", {"join", "--device", "d", "--port", "0", "--create"},
                  "--port \"0\" is not an integer in 1..254"},
        UsageCase{"negative_qkey",
                  {"join", "--device", "d", "--port", "1", "--create", "--qkey", "-1"},
                  "--qkey \"-1\""},
        UsageCase{"qkey_too_big",
                  {"join", "--device", "d", "--port", "1", "--create", "--qkey", "0x100000000"},
                  "--qkey"},
        UsageCase{"bad_join_state",
                  {"join", "--device", "d", "--port", "1", "--create", "--join-state", "half"},
                  "--join-state \"half\""},
        UsageCase{"bad_mtu", {"join", "--device", "d", "--port", "1", "--create", "--mtu", "1500"},
                  "--mtu \"1500\""},
        UsageCase{"missing_value", {"join", "--device"}, "option --device needs a value"},
        UsageCase{"positional", {"list", "extra"}, "unexpected argument \"extra\""},
        UsageCase{"evict_nothing", {"evict"}, "exactly one of --uid and --membership"},
        UsageCase{"evict_both", {"evict", "--uid", "1", "--membership", "2"},
                  "exactly one of --uid and --membership"},
        UsageCase{"evict_uid_minus_one", {"evict", "--uid", "4294967295"},
                  "--uid \"4294967295\" is not an integer in 0..4294967294"},
        UsageCase{"evict_unknown_user", {"evict", "--uid", "no-such-user-rdmamcast"},
                  "--uid \"no-such-user-rdmamcast\" is neither a uid nor a known user name"},
        UsageCase{"evict_negative_membership", {"evict", "--membership", "-3"},
                  "--membership \"-3\""}),
    [](const auto &p) { return std::string(p.param.name); });

// ---- join ----

TEST(CtlJoin, JsonRecordHasEveryKey) {
    FakeDaemon d(join_reply());
    auto args = kJoin;
    args.insert(args.begin(), "--json");
    auto r = ctl(d, args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = json::parse(r.out);
    EXPECT_EQ(j["membership"], 7);
    EXPECT_EQ(j["mgid"], "ff15::1:2");
    EXPECT_EQ(j["port_gid"], "fe80::2:c903:0:1");
    EXPECT_EQ(j["mlid"], 0xc001);
    EXPECT_EQ(j["qkey"], 0x12345678);
    EXPECT_EQ(j["pkey"], 0xffff);
    EXPECT_EQ(j["sl"], 3);
    EXPECT_EQ(j["mtu"], 2048);
    EXPECT_EQ(j["rate"], 3);
    EXPECT_EQ(j["rate_gbps"], 10.0);
    EXPECT_EQ(j["flow_label"], 0xabcde);
    EXPECT_EQ(j["traffic_class"], 0x20);
    EXPECT_EQ(j["hop_limit"], 7);
    EXPECT_EQ(j["scope"], 5);
    EXPECT_EQ(j["join_state"], "full");
    EXPECT_EQ(j["link_layer"], "InfiniBand");
    for (const char *roce : {"gid_type", "sgid_index", "netdev", "ip", "dmac"})
        EXPECT_FALSE(j.contains(roce)) << roce << " on an InfiniBand port";
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one object, one line";
    // Without --hold the membership is left before exiting.
    auto leaves = d.requests_of<proto::Leave>();
    ASSERT_EQ(leaves.size(), 1u);
    EXPECT_EQ(leaves[0].membership, 7u);
}

TEST(CtlJoin, HumanRecordIsKeyValueLines) {
    FakeDaemon d(join_reply());
    auto r = ctl(d, kJoin);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("mgid           ff15::1:2\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("mlid           0xc001\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("rate           3 (10 Gb/s)\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("join_state     full\n"), std::string::npos) << r.out;
}

TEST(CtlJoin, OptionsReachTheRequest) {
    FakeDaemon d(join_reply());
    auto r = ctl(d, {"join", "--device", "mlx5_1", "--port", "2", "--create", "--scope", "2",
                     "--join-state", "sendonly-full", "--qkey", "0x1234", "--pkey", "32769",
                     "--sl", "0xf", "--mtu", "4096", "--mtu-selector", "less", "--rate", "16",
                     "--rate-selector", "best", "--traffic-class", "8", "--flow-label",
                     "0xfffff", "--hop-limit", "64"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto joins = d.requests_of<proto::Join>();
    ASSERT_EQ(joins.size(), 1u);
    const auto &q = joins[0].request;
    EXPECT_EQ(q.device, "mlx5_1");
    EXPECT_EQ(q.port, 2);
    EXPECT_TRUE(mcastd::is_zero(q.mgid));
    EXPECT_EQ(q.scope, 2);
    EXPECT_EQ(q.join_state, mcastd::join::send_only_full);
    EXPECT_EQ(q.params.qkey, 0x1234u);
    EXPECT_EQ(q.params.pkey, 0x8001);
    EXPECT_EQ(q.params.sl, 15);
    EXPECT_EQ(q.params.mtu, (mcastd::Selected{mcastd::Selector::less, 5}));
    EXPECT_EQ(q.params.rate, (mcastd::Selected{mcastd::Selector::best, 16}));
    EXPECT_EQ(q.params.tclass, 8);
    EXPECT_EQ(q.params.flow_label, 0xfffffu);
    EXPECT_EQ(q.params.hop_limit, 64);
}

TEST(CtlJoin, ByNameSendsTheNameAndPrintsTheRecordWithItsMgid) {
    FakeDaemon d(join_reply());
    auto r = ctl(d, {"join", "--device", "mlx5_0", "--port", "1", "--name", "job-42", "--qkey", "7"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto joins = d.requests_of<proto::Join>();
    ASSERT_EQ(joins.size(), 1u);
    EXPECT_EQ(joins[0].request.name, "job-42");
    EXPECT_TRUE(mcastd::is_zero(joins[0].request.mgid)) << "the daemon maps the name";
    EXPECT_EQ(joins[0].request.params.qkey, 7u);
    EXPECT_NE(r.out.find("mgid           ff15::1:2\n"), std::string::npos) << r.out;
    // A bad name is the library's to refuse, before anything is sent, with the protocol's words.
    FakeDaemon d2(join_reply());
    auto bad = ctl(d2, {"join", "--device", "mlx5_0", "--port", "1", "--name", "a\tb"});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("the group name has a control character at byte 1"), std::string::npos) << bad.err;
    EXPECT_TRUE(d2.requests_of<proto::Join>().empty());
}

// On a RoCE port: the IP group and GID type go out, a UDP socket with the join, and the record
// comes back with RoCE's keys, the netdev included.
FakeDaemon::Handler roce_join_reply() {
    return [next = std::uint64_t{20}](Session &s, const proto::RequestEnvelope &env) mutable {
        const auto *j = std::get_if<proto::Join>(&env.request);
        if (!j)
            return false;
        auto rec = sample_roce_record();
        if (j->ip)
            rec.mgid = mcastd::roce_mgid(*j->ip, rec.gid_type);
        s.reply(env.id, proto::JoinResult{next++, rec});
        return true;
    };
}

TEST(CtlJoin, ByIpOnARocePort) {
    FakeDaemon d(roce_join_reply());
    auto r = ctl(d, {"--json", "join", "--device", "rxe0", "--port", "1", "--ip", "239.1.2.3", "--gid-type",
                     "roce_v2", "--qkey", "0x01234567", "--ifname", "eth0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto joins = d.requests_of<proto::Join>();
    ASSERT_EQ(joins.size(), 1u);
    EXPECT_EQ(mcastd::format_ip(*joins[0].ip), "239.1.2.3");
    EXPECT_EQ(joins[0].gid_type, mcastd::GidType::roce_v2);
    EXPECT_EQ(joins[0].ifname, "eth0");
    EXPECT_TRUE(mcastd::is_zero(joins[0].request.mgid));
    EXPECT_EQ(joins[0].request.params.qkey, 0x01234567u);
    const auto sockets = d.requests();
    const auto join_msg = std::find_if(sockets.begin(), sockets.end(), [](const Received &q) {
        return std::holds_alternative<proto::Join>(q.envelope.request);
    });
    ASSERT_EQ(join_msg->fds.size(), 1u) << "the socket for the host's IGMP membership";
    EXPECT_EQ(join_msg->fds[0].domain, AF_INET);

    auto j = json::parse(r.out);
    EXPECT_EQ(j["membership"], 20);
    EXPECT_EQ(j["mgid"], "::ffff:239.1.2.3");
    EXPECT_EQ(j["mlid"], 0);
    EXPECT_EQ(j["link_layer"], "Ethernet");
    EXPECT_EQ(j["gid_type"], "roce_v2");
    EXPECT_EQ(j["sgid_index"], 3);
    EXPECT_EQ(j["netdev"], "eth7");
    EXPECT_EQ(j["ip"], "239.1.2.3");
    EXPECT_EQ(j["dmac"], "01:00:5e:01:02:03");

    auto human = ctl(d, {"join", "--device", "rxe0", "--port", "1", "--ip", "ff0e::1:2", "--ip", "239.1.2.4"});
    ASSERT_EQ(human.exit_code, 0) << human.err;
    for (const char *line : {"link_layer     Ethernet\n", "gid_type       roce_v2\n", "sgid_index     3\n",
                             "netdev         eth7\n", "ip             ff0e::1:2\n", "dmac           33:33:00:01:00:02\n",
                             "ip             239.1.2.4\n", "dmac           01:00:5e:01:02:04\n"})
        EXPECT_NE(human.out.find(line), std::string::npos) << line << human.out;
    EXPECT_EQ(d.requests_of<proto::Join>().size(), 3u);
}

TEST(CtlJoin, HumanRecordOfAnInfinibandPortSaysSoAndNoMore) {
    FakeDaemon d(join_reply());
    auto r = ctl(d, kJoin);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("link_layer     InfiniBand\n"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("netdev"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("dmac"), std::string::npos) << r.out;
}

TEST(CtlJoin, GlobalOptionsAlsoWorkAfterTheCommand) {
    FakeDaemon d(join_reply());
    auto args = kJoin;
    args.insert(args.end(), {"--json", "--socket", d.path()});
    args.insert(args.begin(), kCtl);
    auto r = run(args, {{RDMAMCAST_SOCKET_ENV, "/nonexistent/env.sock"}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["mlid"], 0xc001);
}

// ---- which socket ----

TEST(CtlSocket, EnvironmentVariableIsUsed) {
    FakeDaemon d(join_reply());
    auto args = kJoin;
    args.insert(args.begin(), kCtl);
    auto r = run(args, {{RDMAMCAST_SOCKET_ENV, d.path()}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(d.requests_of<proto::Join>().size(), 1u);
}

TEST(CtlSocket, OptionWinsOverTheEnvironment) {
    FakeDaemon d(join_reply());
    auto args = kJoin;
    args.insert(args.begin(), {kCtl, "--socket", d.path()});
    auto r = run(args, {{RDMAMCAST_SOCKET_ENV, "/nonexistent/env.sock"}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CtlSocket, NoDaemonIsExitThree) {
    auto args = kJoin;
    args.insert(args.begin(), {kCtl, "--socket", "/nonexistent/rdma-mcastd.sock"});
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.err.rfind("rdma-mcastctl: join: connect to /nonexistent/rdma-mcastd.sock: ", 0), 0u)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// ---- errors ----

struct ExitCase {
    const char *name;
    mcastd::Errc code;
    int exit_code;
};
// Names the case in test listings instead of dumping its bytes.
void PrintTo(const ExitCase &c, std::ostream *os) { *os << c.name; }


class CtlExitCodes : public ::testing::TestWithParam<ExitCase> {};

TEST_P(CtlExitCodes, OneLineOnStderrAndTheClassExitCode) {
    const auto &c = GetParam();
    const bool sa = c.code == mcastd::Errc::sa_error;
    FakeDaemon d(join_fails(c.code, "the reason", sa ? std::optional<std::uint16_t>(0x0200)
                                                     : std::nullopt));
    auto r = ctl(d, kJoin);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_EQ(r.err, "rdma-mcastctl: join: " + std::string(mcastd::errc_name(c.code)) +
                         ": the reason\n");
    EXPECT_TRUE(r.out.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Codes, CtlExitCodes,
    ::testing::Values(ExitCase{"invalid_argument", mcastd::Errc::invalid_argument, 8},
                      ExitCase{"no_such_device", mcastd::Errc::no_such_device, 6},
                      ExitCase{"no_such_port", mcastd::Errc::no_such_port, 6},
                      ExitCase{"port_not_active", mcastd::Errc::port_not_active, 6},
                      ExitCase{"conflict", mcastd::Errc::conflict, 7},
                      ExitCase{"sa_error", mcastd::Errc::sa_error, 5},
                      ExitCase{"sa_timeout", mcastd::Errc::sa_timeout, 5},
                      ExitCase{"denied", mcastd::Errc::denied, 4},
                      ExitCase{"too_large", mcastd::Errc::too_large, 8},
                      ExitCase{"not_found", mcastd::Errc::not_found, 8},
                      ExitCase{"cancelled", mcastd::Errc::cancelled, 8},
                      ExitCase{"limit", mcastd::Errc::limit, 4},
                      ExitCase{"internal", mcastd::Errc::internal, 1}),
    [](const auto &p) { return std::string(p.param.name); });

// The rule or quota reaches stderr even when the daemon's message does not name it, once.
TEST(CtlErrors, TheAccessPolicysRuleOrQuotaIsPrinted) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        const auto *j = std::get_if<proto::Join>(&env.request);
        if (!j)
            return false;
        if (j->request.port == 1)
            s.fail(env.id, policy_failure(mcastd::Errc::denied, "no rule admits uid 1000",
                                          {"hpc", "", 0}));
        else if (j->request.port == 2)
            s.fail(env.id, policy_failure(mcastd::Errc::limit,
                                          "uid 1000 holds 4096 memberships: quota "
                                          "memberships_per_uid",
                                          {"", "memberships_per_uid", 4096}));
        else
            s.fail(env.id, policy_failure(mcastd::Errc::limit, "too many groups",
                                          {"", "groups_per_port", 8}));
        return true;
    });
    auto r = ctl(d, kJoin);
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_EQ(r.err, "rdma-mcastctl: join: denied: no rule admits uid 1000 (rule hpc)\n");
    auto named = ctl(d, {"join", "--device", "mlx5_0", "--port", "2", "--mgid", "ff15::1"});
    EXPECT_EQ(named.exit_code, 4);
    EXPECT_EQ(named.err, "rdma-mcastctl: join: limit: uid 1000 holds 4096 memberships: quota "
                         "memberships_per_uid\n");
    auto quota = ctl(d, {"join", "--device", "mlx5_0", "--port", "3", "--mgid", "ff15::1"});
    EXPECT_EQ(quota.exit_code, 4);
    EXPECT_EQ(quota.err,
              "rdma-mcastctl: join: limit: too many groups (quota groups_per_port = 8)\n");
}

TEST(CtlErrors, DeniedAtHelloIsExitFour) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        s.fail(env.id, mcastd::Errc::denied, "uid 1000 may not use rdma-mcastd");
        s.close();
        return true;
    });
    auto r = ctl(d, {"status"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_EQ(r.err, "rdma-mcastctl: status: denied: uid 1000 may not use rdma-mcastd\n");
}

TEST(CtlErrors, DaemonGoneDuringJoinIsExitThree) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Join>(env.request))
            return false;
        s.close();
        return true;
    });
    auto r = ctl(d, kJoin);
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.err, "rdma-mcastctl: join: rdma-mcastd closed the connection\n");
}

// ---- hold ----

// Reads the human record join --hold prints first, up to its last line (`last`: an InfiniBand
// record's, or "dmac", a RoCE one's); false if it never came.
bool read_record(Child &child, std::string_view last = "link_layer") {
    for (;;) {
        auto l = child.read_line();
        if (!l)
            return false;
        if (l->rfind(last, 0) == 0)
            return true;
    }
}

// A RoCE membership's address moved to another GID index and netdev: the line says both.
TEST(CtlHold, ARoceRestoreSaysTheNewSourceIndexAndNetdev) {
    FakeDaemon d(roce_join_reply());
    Child child({kCtl, "--socket", d.path(), "join", "--device", "rxe0", "--port", "1", "--ip", "239.1.2.3",
                 "--hold"});
    ASSERT_TRUE(read_record(child, "dmac"));
    proto::RestoredEvent re{20, sample_roce_record(), mcastd::field::sgid_index | mcastd::field::netdev};
    re.record.sgid_index = 9;
    re.record.netdev = "eth7.100";
    d.broadcast(re);
    auto line = child.read_line();
    ASSERT_TRUE(line);
    EXPECT_EQ(*line, "restored: membership 20: changed sgid_index=9 netdev=eth7.100 (mgid ::ffff:239.1.2.3)");
    child.signal(SIGTERM);
    EXPECT_EQ(child.wait().exit_code, 0);
}

TEST(CtlHold, PrintsEventsAndLeavesOnSigterm) {
    FakeDaemon d(join_reply());
    Child child(hold_args(d, true));
    auto first = child.read_line();
    ASSERT_TRUE(first) << "no record printed";
    EXPECT_EQ(json::parse(*first)["mlid"], 0xc001);

    proto::RestoredEvent re;
    re.membership = 7;
    re.record = sample_record();
    re.record.mlid = 0xc00a;
    re.changed = mcastd::field::mlid;
    d.broadcast(re);
    auto line = child.read_line();
    ASSERT_TRUE(line);
    auto ev = json::parse(*line);
    EXPECT_EQ(ev["event"], "restored");
    EXPECT_EQ(ev["membership"], 7);
    EXPECT_EQ(ev["changed"], json::array({"mlid"}));
    EXPECT_EQ(ev["record"]["mlid"], 0xc00a);

    proto::LostEvent lo;
    lo.membership = 7;
    lo.why.error = mcastd::Error{mcastd::Errc::sa_error, "gone", 0x0300};
    d.broadcast(lo);
    line = child.read_line();
    ASSERT_TRUE(line);
    ev = json::parse(*line);
    EXPECT_EQ(ev["event"], "lost");
    EXPECT_EQ(ev["error"]["code"], "sa-error");
    EXPECT_EQ(ev["error"]["sa_status"], 0x0300);

    EXPECT_TRUE(d.requests_of<proto::Leave>().empty()) << "held until the signal";
    child.signal(SIGTERM);
    auto f = child.wait();
    EXPECT_EQ(f.exit_code, 0) << f.err;
    auto leaves = d.requests_of<proto::Leave>();
    ASSERT_EQ(leaves.size(), 1u);
    EXPECT_EQ(leaves[0].membership, 7u);
}

TEST(CtlHold, HumanEventLinesAndSigint) {
    FakeDaemon d(join_reply());
    Child child(hold_args(d, false));
    ASSERT_TRUE(read_record(child));
    proto::LostEvent lo;
    lo.membership = 7;
    lo.why.error = mcastd::Error{mcastd::Errc::sa_timeout, "the SA stopped answering", std::nullopt};
    d.broadcast(lo);
    auto line = child.read_line();
    ASSERT_TRUE(line);
    EXPECT_EQ(*line, "lost: membership 7: sa-timeout: the SA stopped answering");

    // What changed, with the new values, MLID first; then a restore that changed nothing.
    proto::RestoredEvent re;
    re.membership = 7;
    re.record = sample_record();
    re.record.mlid = 0xc00a;
    re.record.sl = 4;
    re.changed = mcastd::field::sl | mcastd::field::mlid;
    d.broadcast(re);
    line = child.read_line();
    ASSERT_TRUE(line);
    EXPECT_EQ(*line, "restored: membership 7: changed mlid=0xc00a sl=4 (mgid ff15::1:2)");
    re.changed = 0;
    d.broadcast(re);
    line = child.read_line();
    ASSERT_TRUE(line);
    EXPECT_EQ(*line, "restored: membership 7: unchanged (mgid ff15::1:2 mlid 0xc00a)");
    child.signal(SIGINT);
    EXPECT_EQ(child.wait().exit_code, 0);
    EXPECT_EQ(d.requests_of<proto::Leave>().size(), 1u);
}

TEST(CtlHold, DaemonGoingAwayEndsTheHoldWithExitThree) {
    FakeDaemon d(join_reply());
    Child child(hold_args(d, true));
    ASSERT_TRUE(child.read_line());
    d.close_all();
    auto f = child.wait();
    EXPECT_EQ(f.exit_code, 3);
    EXPECT_EQ(f.err, "rdma-mcastctl: join: rdma-mcastd closed the connection\n");
}

TEST(CtlHold, AnEvictionEndsTheHoldWithExitFourAndLeavesNothingBehind) {
    FakeDaemon d(join_reply());
    Child child(hold_args(d, false));
    ASSERT_TRUE(read_record(child));
    proto::LostEvent lo;
    lo.membership = 7;
    lo.why.error = mcastd::Error{mcastd::Errc::denied, "evicted by an administrator (rdma-mcastctl, pid 1); it will "
                                                       "not be restored",
                                 std::nullopt};
    d.broadcast(lo);
    auto f = child.wait();
    EXPECT_EQ(f.exit_code, 4) << "refused, as the daemon's denied is";
    EXPECT_NE(f.err.find("denied: evicted by an administrator"), std::string::npos) << f.err;
    EXPECT_EQ(d.requests_of<proto::Leave>().size(), 1u) << "it still leaves (the daemon says yes to an evicted id)";
}

// `join --hold` printed membership 8, the same group joined again, and ends on SIGTERM with
// status 0.
Finished joined_again_then_ended(FakeDaemon &d, Child &child) {
    auto again = child.read_line();
    EXPECT_TRUE(again);
    if (again) {
        EXPECT_EQ(json::parse(*again)["membership"], 8);
        EXPECT_EQ(json::parse(*again)["mgid"], "ff15::1:2");
    }
    auto joins = d.requests_of<proto::Join>();
    EXPECT_EQ(joins.size(), 2u);
    if (joins.size() == 2) {
        EXPECT_EQ(joins[1].request.mgid, joins[0].request.mgid);
    }
    child.signal(SIGTERM);
    auto f = child.wait();
    EXPECT_EQ(f.exit_code, 0) << f.err;
    return f;
}

// A RoCE membership the restarted daemon could not keep arrives as `lost` with `cancelled` on
// the kept connection: it will not come back by itself, so --hold joins it again.
TEST(CtlHold, JoinsAgainWhatTheDaemonReleasedAsItRestarted) {
    FakeDaemon d(joins_from(7));
    Child child(hold_args(d, true));
    auto first = child.read_line();
    ASSERT_TRUE(first);
    EXPECT_EQ(json::parse(*first)["membership"], 7);
    proto::LostEvent lo;
    lo.membership = 7;
    lo.why.error = mcastd::Error{mcastd::Errc::cancelled,
                                 "the daemon restarted and could not keep this RoCE membership: ...; join again",
                                 std::nullopt};
    d.broadcast(lo);
    auto event = child.read_line();
    ASSERT_TRUE(event);
    EXPECT_EQ(json::parse(*event)["event"], "lost");
    const Finished f = joined_again_then_ended(d, child);
    EXPECT_EQ(f.err, "rdma-mcastctl: join: joining membership 7 again\n");
    auto leaves = d.requests_of<proto::Leave>();
    ASSERT_EQ(leaves.size(), 2u) << "the released one (the daemon says yes) and the new one";
}

// ---- a daemon restart during join --hold and monitor ----

proto::RestoredEvent restored_event(std::uint64_t membership) {
    proto::RestoredEvent re;
    re.membership = membership;
    re.record = sample_record();
    return re;
}

TEST(CtlHold, SurvivesADaemonRestartThatKeepsTheSession) {
    FakeDaemon d(version2(resume_gives({7}), join_reply(7)));
    Child child(hold_args(d, true));
    ASSERT_TRUE(child.read_line());
    d.close_all();
    ASSERT_TRUE(received<proto::Hello>(d, 2));
    // Still holding, on the new connection.
    d.broadcast(restored_event(7));
    auto line = child.read_line();
    ASSERT_TRUE(line);
    EXPECT_EQ(json::parse(*line)["event"], "restored");
    child.signal(SIGTERM);
    auto f = child.wait();
    EXPECT_EQ(f.exit_code, 0) << f.err;
    EXPECT_EQ(f.err.rfind("rdma-mcastctl: join: rdma-mcastd restarted; reconnected after ", 0), 0u)
        << f.err;
    EXPECT_NE(f.err.find(" ms, session resumed; 1 membership kept\n"), std::string::npos) << f.err;
    EXPECT_EQ(std::count(f.err.begin(), f.err.end(), '\n'), 1) << f.err;
    auto leaves = d.requests_of<proto::Leave>();
    ASSERT_EQ(leaves.size(), 1u);
    EXPECT_EQ(leaves[0].membership, 7u);
    EXPECT_EQ(d.requests_of<proto::Join>().size(), 1u);
}

TEST(CtlHold, JoinsAgainWhatTheRestartLost) {
    FakeDaemon d(version2(resume_refused(), joins_from(7)));
    Child child(hold_args(d, true));
    auto first = child.read_line();
    ASSERT_TRUE(first);
    EXPECT_EQ(json::parse(*first)["membership"], 7);
    d.close_all();
    // The new membership's record, as after the first join.
    const Finished f = joined_again_then_ended(d, child);
    EXPECT_NE(f.err.find("rdma-mcastctl: join: rdma-mcastd restarted; reconnected after "),
              std::string::npos) << f.err;
    EXPECT_NE(f.err.find(" ms, new session; 0 memberships kept, lost: 7; joining membership 7 "
                         "again\n"),
              std::string::npos) << f.err;
    auto leaves = d.requests_of<proto::Leave>();
    ASSERT_EQ(leaves.size(), 1u);
    EXPECT_EQ(leaves[0].membership, 8u);
}

TEST(CtlHold, NoReconnectEndsTheHoldAtARestart) {
    FakeDaemon d(version2(resume_gives({7}), join_reply(7)));
    // --no-reconnect is a global option, also accepted after the command.
    Child child(hold_args(d, false, {"--no-reconnect"}));
    ASSERT_TRUE(child.read_line());
    d.close_all();
    auto f = child.wait();
    EXPECT_EQ(f.exit_code, 3);
    EXPECT_EQ(f.err, "rdma-mcastctl: join: rdma-mcastd closed the connection\n");
    EXPECT_EQ(d.requests_of<proto::Hello>().size(), 1u);
}

TEST(CtlUsage, NoReconnectIsAGlobalOption) {
    auto r = run({kCtl, "--help"});
    EXPECT_NE(r.out.find("--no-reconnect"), std::string::npos) << r.out;
    auto j = run({kCtl, "join", "--help"});
    EXPECT_NE(j.out.find("--no-reconnect"), std::string::npos) << j.out;
    // Before the command; with nothing listening it gets as far as connecting.
    auto n = run({kCtl, "--no-reconnect", "--socket", "/nonexistent/sock", "status"});
    EXPECT_EQ(n.exit_code, 3) << n.err;
    auto m = run({kCtl, "monitor", "--no-reconnect", "--socket", "/nonexistent/sock"});
    EXPECT_EQ(m.exit_code, 3) << m.err;
    auto bad = run({kCtl, "--no-reconnect=1", "status"});
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

// ---- list, status, monitor ----

FakeDaemon::Handler views() {
    return [](Session &s, const proto::RequestEnvelope &env) {
        if (std::holds_alternative<proto::List>(env.request)) {
            proto::ListResult l;
            proto::GroupInfo g;
            g.mgid = gid("ff15::1:2");
            g.mlid = 0xc001;
            g.qkey = 0x12345678;
            g.held = mcastd::join::full;
            g.counts = {2, 0, 0, 1};
            g.members.push_back({7, mcastd::join::full, "active", 4242, 1000, "my-app", "hpc",
                                 true, "no rule admits uid 1000 since the reload"});
            g.members.push_back({3, mcastd::join::send_only_full, "pending", 77, 0, "sender",
                                 "root", false, "", "job-42"});
            l.ports.push_back({"mlx5_0", 1, gid("fe80::10:3"), {g}});
            proto::GroupInfo roce; // a RoCE group: where it is sent from, no MLID
            roce.mgid = gid("::ffff:239.1.2.3");
            roce.qkey = 0x01234567;
            roce.counts = {1, 0, 0, 0};
            roce.roce = mcastd::RoceSource{mcastd::GidType::roce_v2, 3, "veth1"};
            roce.members.push_back({9, mcastd::join::full, "active", 5, 1000, "app", "video", false, ""});
            l.ports.push_back({"rxe0", 1, gid("::ffff:192.168.7.1"), {roce}, mcastd::LinkLayer::ethernet});
            s.reply(env.id, l);
            return true;
        }
        if (std::holds_alternative<proto::Status>(env.request)) {
            proto::StatusResult st;
            st.daemon = "rdma-mcastd 0.1.0";
            st.uptime_s = 12.5;
            st.clients = 3;
            st.ports.push_back({"mlx5_0", 1, "ACTIVE", 3, 1, 0, gid("fe80::10:3"),
                                "InfiniBand", 100, 4, 4096, 0x0002c90300000001, 5123, false,
                                proto::RejoinStatus{"SM changed", 310.2, 0.42, 4}});
            // Port 2 has not heard from its SM yet and is re-joining; port 3 never re-joined.
            st.ports.push_back({"mlx5_0", 2, "ACTIVE", 4, 1, 0, gid("fe80::10:4"),
                                "InfiniBand", 100, 2, 0, std::nullopt, std::nullopt, true,
                                proto::RejoinStatus{"port active again", 3.25, std::nullopt, 2}});
            st.ports.push_back({"mlx5_1", 1, "DOWN", 0, 0, 0, gid("fe80::10:5"),
                                "InfiniBand", 0, 0});
            st.counters = {10, 1, 2, 0, 12, 8, 1, 5};
            st.counters.sa_responses = 9;
            st.counters.sa_late = 3;
            st.counters.sa_amplification = 1.0225;
            st.counters.sa_sets = 6;
            st.counters.sa_deletes = 2;
            st.counters.sa_gets = 11;
            st.ports[1].max_groups = 1024;
            // Port 1's SA window; port 2's has had no answer yet; mlx5_1 has none.
            st.ports[0].sa = proto::SaCongestion{16, false, 0.41, 300};
            st.ports[1].sa = proto::SaCongestion{3.5, true, std::nullopt, std::nullopt};
            st.users.push_back({0, "root", 1, 0, 0, 0, 0, 2, 0, 1, 0, 0, 0, 1, 256, 0, 0});
            st.users.push_back({1000, "alice", 3, 4096, 1, 64, 1, 1, 256, 0, 4, 512, 8388608, 2, 256, 199.5, 50});
            st.users.push_back({4242, "", 2, 4096, 0, 64, 0, 1, 256, 1, 4, 0, 8388608, 1, 256, -2, 50});
            st.ports[0].memberships = {6, 1, 0, 2};
            st.ports[0].rejoins = 3;
            st.ports[1].rejoins = 1;
            st.counters.restored = 14;
            st.counters.lost = 7;
            st.refused = {{"access.allow_uids,access.allow_gids", 0}, {"access.rules", 2},
                          {"limits.hello_timeout_ms", 11}};
            s.reply(env.id, st);
            return true;
        }
        return false;
    };
}

TEST(CtlList, JsonShape) {
    FakeDaemon d(views());
    auto r = ctl(d, {"--json", "list"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = json::parse(r.out);
    const auto &port = j["ports"].at(0);
    EXPECT_EQ(port["device"], "mlx5_0");
    EXPECT_EQ(port["port"], 1);
    EXPECT_EQ(port["port_gid"], "fe80::10:3");
    EXPECT_EQ(port["link_layer"], "InfiniBand");
    EXPECT_EQ(j["ports"].at(1)["link_layer"], "Ethernet");
    const auto &g = port["groups"].at(0);
    EXPECT_EQ(g["mgid"], "ff15::1:2");
    EXPECT_EQ(g["mlid"], 0xc001);
    EXPECT_EQ(g["held"], json::array({"full"}));
    EXPECT_EQ(g["counts"]["full"], 2);
    EXPECT_EQ(g["counts"]["sendonly-full"], 1);
    const auto &m = g["members"].at(0);
    EXPECT_EQ(m["pid"], 4242);
    EXPECT_EQ(m["uid"], 1000);
    EXPECT_EQ(m["comm"], "my-app");
    EXPECT_EQ(m["state"], "active");
    EXPECT_EQ(m["join_state"], "full");
    EXPECT_EQ(m["rule"], "hpc");
    EXPECT_EQ(m["created"], true);
    EXPECT_EQ(m["flagged"], "no rule admits uid 1000 since the reload");
    const auto &m2 = g["members"].at(1);
    EXPECT_EQ(m2["rule"], "root");
    EXPECT_EQ(m2["created"], false);
    EXPECT_FALSE(m2.contains("flagged")); // as the protocol: only when set
    EXPECT_EQ(m2["name"], "job-42");
    EXPECT_FALSE(m.contains("name")); // only for a membership that joined by name
}

TEST(CtlList, HumanTableIsAligned) {
    FakeDaemon d(views());
    auto r = ctl(d, {"list"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("mlx5_0 port 1  InfiniBand  gid fe80::10:3  1 group"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("rxe0 port 1  Ethernet  gid ::ffff:192.168.7.1  1 group"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ff15::1:2  0xc001  0x12345678"), std::string::npos) << r.out;
    // The members' columns line up: "4242" and "77" start at the same offset.
    auto line_of = [&](const std::string &needle) {
        auto pos = r.out.find(needle);
        auto start = r.out.rfind('\n', pos) + 1;
        return std::make_pair(start, pos - start);
    };
    EXPECT_EQ(line_of("4242").second, line_of("77 ").second) << r.out;
    EXPECT_NE(r.out.find("my-app"), std::string::npos);
    EXPECT_NE(r.out.find("sender"), std::string::npos);
    // The rule, whether the join created the group, and why it is flagged (the last column).
    EXPECT_NE(r.out.find("COMM    RULE  CREATED  NAME    FLAGGED\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("my-app  hpc   yes      -       no rule admits uid 1000 since the reload\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("sender  root  no       job-42  -\n"), std::string::npos) << r.out;
}

// A RoCE port's groups say where they are sent from, in the table and in --json.
TEST(CtlList, ARocePortsGroupsShowTheirNetdevGidTypeAndSgidIndex) {
    FakeDaemon d(views());
    auto r = ctl(d, {"list"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("  MGID              NETDEV  GID_TYPE  SGID_INDEX  QKEY       STATE  FULL"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("  ::ffff:239.1.2.3  veth1   roce_v2   3           0x1234567  idle   1"), std::string::npos)
        << r.out;
    auto js = ctl(d, {"--json", "list"});
    ASSERT_EQ(js.exit_code, 0) << js.err;
    const auto j = json::parse(js.out);
    const auto &g = j["ports"].at(1)["groups"].at(0);
    EXPECT_EQ(g["netdev"], "veth1");
    EXPECT_EQ(g["gid_type"], "roce_v2");
    EXPECT_EQ(g["sgid_index"], 3);
    EXPECT_FALSE(j["ports"].at(0)["groups"].at(0).contains("netdev")) << "an InfiniBand group has none";
}

TEST(CtlList, PrintsEveryPage) {
    FakeDaemon d(list_pages(sample_pages()));
    auto r = ctl(d, {"list", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = json::parse(r.out);
    EXPECT_EQ(j["ports"].at(0)["groups"].at(0)["members"].size(), 3u) << r.out;
    EXPECT_EQ(j["ports"].at(1)["groups"].at(0)["members"].at(0)["comm"], "last-page");
    EXPECT_FALSE(j.contains("next"));
    auto text = ctl(d, {"list"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("last-page"), std::string::npos) << text.out;
    for (const auto &l : d.requests_of<proto::List>())
        EXPECT_FALSE(l.own);
}

TEST(CtlList, OwnAsksForTheConnectionsOwnMemberships) {
    FakeDaemon d(list_pages(sample_pages()));
    auto r = ctl(d, {"list", "--own"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto asked = d.requests_of<proto::List>();
    ASSERT_EQ(asked.size(), 3u);
    for (const auto &l : asked)
        EXPECT_TRUE(l.own);
    auto bad = run({kCtl, "list", "--own=1"});
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    auto help = run({kCtl, "list", "--help"});
    EXPECT_NE(help.out.find("--own"), std::string::npos) << help.out;
}

TEST(CtlStatus, JsonAndHuman) {
    FakeDaemon d(views());
    auto r = ctl(d, {"status", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = json::parse(r.out);
    EXPECT_EQ(j["daemon"], "rdma-mcastd 0.1.0");
    EXPECT_EQ(j["ports"].at(0)["state"], "ACTIVE");
    EXPECT_EQ(j["ports"].at(0)["lid"], 3);
    EXPECT_EQ(j["ports"].at(0)["sm_lid"], 1);
    EXPECT_EQ(j["ports"].at(0)["mtu"], 4096);
    EXPECT_EQ(j["ports"].at(0)["sm_guid"], "0x0002c90300000001");
    EXPECT_EQ(j["ports"].at(0)["sm_act_count"], 5123);
    EXPECT_EQ(j["ports"].at(0)["rejoining"], false);
    EXPECT_EQ(j["ports"].at(0)["last_rejoin"], json::parse(R"({"reason": "SM changed",
        "started_ago_s": 310.2, "duration_s": 0.42, "groups": 4})"));
    EXPECT_TRUE(j["ports"].at(1)["sm_guid"].is_null());
    EXPECT_TRUE(j["ports"].at(1)["sm_act_count"].is_null());
    EXPECT_EQ(j["ports"].at(1)["rejoining"], true);
    EXPECT_TRUE(j["ports"].at(1)["last_rejoin"]["duration_s"].is_null());
    EXPECT_TRUE(j["ports"].at(2)["last_rejoin"].is_null());
    EXPECT_EQ(j["counters"]["sa_mads_sent"], 10);
    EXPECT_EQ(j["counters"]["sa_retransmits"], 1);
    EXPECT_EQ(j["counters"]["sa_timeouts"], 2);
    EXPECT_EQ(j["counters"]["joins"], 12);
    EXPECT_EQ(j["counters"]["leaves"], 5);
    EXPECT_EQ(j["ports"].at(0)["max_groups"], 0);
    EXPECT_EQ(j["ports"].at(1)["max_groups"], 1024);
    ASSERT_EQ(j["users"].size(), 3u);
    EXPECT_EQ(j["users"].at(1), json::parse(R"({"uid": 1000, "user": "alice", "memberships": 3,
        "memberships_quota": 4096, "creates": 1, "creates_quota": 64, "flagged": 1,
        "clients": 1, "clients_quota": 256, "monitors": 0, "monitors_quota": 4, "queued_bytes": 512,
        "queued_bytes_quota": 8388608, "groups_per_port": 2, "groups_per_port_quota": 256,
        "sa_tokens": 199.5, "sa_mads_per_second": 50})"));
    EXPECT_EQ(j["ports"].at(0)["memberships"], json::parse(R"({"full": 6, "nonmember": 1,
        "sendonly-nonmember": 0, "sendonly-full": 2})"));
    EXPECT_EQ(j["ports"].at(0)["rejoins"], 3);
    EXPECT_EQ(j["counters"]["restored"], 14);
    EXPECT_EQ(j["counters"]["lost"], 7);
    EXPECT_EQ(j["refused"], json::parse(R"({"access.allow_uids,access.allow_gids": 0,
        "access.rules": 2, "limits.hello_timeout_ms": 11})"));
    EXPECT_EQ(j["ports"].at(0)["sa"],
              json::parse(R"({"window": 16, "slow_start": false, "srtt_ms": 0.41, "timeout_ms": 300})"));
    EXPECT_EQ(j["ports"].at(1)["sa"], json::parse(R"({"window": 3.5, "slow_start": true,
        "srtt_ms": null, "timeout_ms": null})"));
    EXPECT_FALSE(j["ports"].at(2).contains("sa")); // as the protocol: absent when off
    EXPECT_EQ(j["counters"]["sa_responses"], 9);
    EXPECT_EQ(j["counters"]["sa_late"], 3);
    EXPECT_EQ(j["counters"]["sa_amplification"], 1.0225);
    EXPECT_EQ(j["counters"]["sa_sets"], 6);
    EXPECT_EQ(j["counters"]["sa_deletes"], 2);
    EXPECT_EQ(j["counters"]["sa_gets"], 11);

    auto h = ctl(d, {"status"});
    ASSERT_EQ(h.exit_code, 0) << h.err;
    EXPECT_NE(h.out.find("rdma-mcastd 0.1.0, protocol 2, up 12.5 s, 3 clients"), std::string::npos)
        << h.out;
    EXPECT_NE(h.out.find("DEVICE  PORT  STATE   LID  SM_LID"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("mlx5_0  1     ACTIVE  3    1"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("SA MADs sent"), std::string::npos) << h.out;
}

TEST(CtlStatus, HumanShowsEachUsersShareAndEachPortsCap) {
    FakeDaemon d(views());
    auto h = ctl(d, {"status"});
    ASSERT_EQ(h.exit_code, 0) << h.err;
    // Port 2's GROUPS against its cap; the others have none.
    EXPECT_NE(h.out.find("100 Gb/s  -     2/1024"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("100 Gb/s  4096  4 "), std::string::npos) << h.out;
    // Users after the ports, before the counters; no quota shows the bare count.
    const auto users = h.out.find(
        "UID   USER   MEMBERSHIPS  CREATED  GROUPS/PORT  CLIENTS  MONITORS  QUEUED       SA_TOKENS   FLAGGED\n"
        "0     root   1            0        1/256        2        1         0            -           0\n"
        "1000  alice  3/4096       1/64     2/256        1/256    0/4       512/8388608  200 (50/s)  1\n"
        "4242  -      2/4096       0/64     1/256        1/256    1/4       0/8388608    -2 (50/s)   0\n");
    ASSERT_NE(users, std::string::npos) << h.out;
    EXPECT_LT(h.out.find("SM_GUID"), users);
    EXPECT_GT(h.out.find("SA MADs sent"), users);
}

TEST(CtlStatus, HumanShowsEachPortsMembershipsByJoinStateTheRefusalsAndTheEvents) {
    FakeDaemon d(views());
    auto h = ctl(d, {"status"});
    ASSERT_EQ(h.exit_code, 0) << h.err;
    const auto memberships = h.out.find("DEVICE  PORT  FULL  NONMEMBER  SENDONLY-NONMEMBER  SENDONLY-FULL\n"
                                        "mlx5_0  1     6     1          0                   2\n"
                                        "mlx5_0  2     0     0          0                   0\n");
    ASSERT_NE(memberships, std::string::npos) << h.out;
    // The reasons refused at all, after the users and before the counters.
    const auto refused = h.out.find("REFUSED  REASON\n"
                                    "2        access.rules\n"
                                    "11       limits.hello_timeout_ms\n\n");
    ASSERT_NE(refused, std::string::npos) << h.out;
    EXPECT_LT(h.out.find("UID"), refused);
    EXPECT_GT(h.out.find("SA MADs sent"), refused);
    EXPECT_NE(h.out.find("restored events         14\nlost events             7\n"), std::string::npos) << h.out;
}

TEST(CtlStatus, AnOlderDaemonHasNoUsers) {
    FakeDaemon d; // its default status: no ports, no users
    auto h = ctl(d, {"status"});
    ASSERT_EQ(h.exit_code, 0) << h.err;
    EXPECT_NE(h.out.find("no ports\n\nno users\n\nnothing refused\n"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("SA amplification        -\n"), std::string::npos) << h.out; // none ended
}

TEST(CtlStatus, HumanShowsEachPortsSaWindowAndTheSaCounters) {
    FakeDaemon d(views());
    auto h = ctl(d, {"status"});
    ASSERT_EQ(h.exit_code, 0) << h.err;
    // After the SM table; a port without congestion control has no row.
    const auto sa = h.out.find("DEVICE  PORT  SA_WINDOW         SRTT     TRY_TIMEOUT\n"
                               "mlx5_0  1     16                0.41 ms  300 ms\n"
                               "mlx5_0  2     3.5 (slow start)  -        -\n\n");
    ASSERT_NE(sa, std::string::npos) << h.out;
    EXPECT_LT(h.out.find("SM_GUID"), sa);
    EXPECT_EQ(h.out.substr(sa, h.out.find("\n\n", sa) - sa).find("mlx5_1  1"), std::string::npos) << h.out;
    // The SA counters with the others, after the users.
    const auto counters = h.out.find("SA bounces              0\n"
                                     "SA answers              9\n"
                                     "SA late answers         3\n"
                                     "SA amplification        1.02\n"
                                     "SA Sets                 6\n"
                                     "SA Deletes              2\n"
                                     "SA Gets                 11\n");
    ASSERT_NE(counters, std::string::npos) << h.out;
    EXPECT_GT(counters, h.out.find("UID"));
}

TEST(CtlStatus, NoPortWithASaWindowShowsNoSaTable) {
    FakeDaemon d([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Status>(env.request))
            return false;
        proto::StatusResult st;
        st.ports.push_back({"mlx5_0", 1, "ACTIVE", 3, 1, 0, gid("fe80::10:3"), "InfiniBand", 100,
                            0, 4096});
        s.reply(env.id, st);
        return true;
    });
    auto h = ctl(d, {"status"});
    ASSERT_EQ(h.exit_code, 0) << h.err;
    EXPECT_EQ(h.out.find("SA_WINDOW"), std::string::npos) << h.out;
    auto r = ctl(d, {"--json", "status"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(json::parse(r.out)["ports"].at(0).contains("sa"));
}

// ---- metrics ----

TEST(CtlMetrics, PrintsTheStatusAsPrometheusTextWithUpOne) {
    FakeDaemon d(views());
    auto r = ctl(d, {"metrics"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("# HELP rdma_mcastd_up ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("\nrdma_mcastd_up 1\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\nrdma_mcastd_port_memberships{device=\"mlx5_0\",port=\"1\",join_state=\"full\"} 6\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("\nrdma_mcastd_user_quota{uid=\"1000\",user=\"alice\",resource=\"queued_bytes\"} 8388608\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("\nrdma_mcastd_refusals_total{reason=\"limits.hello_timeout_ms\"} 11\n"), std::string::npos)
        << r.out;
    EXPECT_TRUE(r.err.empty()) << r.err;
}

// A scratch directory for --output, removed with everything in it.
struct Scratch {
    Scratch() {
        char tmpl[] = "/tmp/mcastctl-out-XXXXXX";
        dir = ::mkdtemp(tmpl);
    }
    ~Scratch() { std::filesystem::remove_all(dir); }
    std::vector<std::string> entries() const {
        std::vector<std::string> out;
        for (const auto &e : std::filesystem::directory_iterator(dir))
            out.push_back(e.path().filename());
        return out;
    }
    std::string read(const std::string &name) const {
        std::ifstream f(dir + "/" + name);
        std::stringstream b;
        b << f.rdbuf();
        return b.str();
    }
    std::string dir;
};

TEST(CtlMetrics, OutputWritesTheFileWholeAndNothingElse) {
    FakeDaemon d(views());
    Scratch out;
    const std::string file = out.dir + "/rdma-mcastd.prom";
    auto r = ctl(d, {"metrics", "--output", file});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_EQ(out.entries(), std::vector<std::string>{"rdma-mcastd.prom"}) << "no temporary left";
    EXPECT_EQ(out.read("rdma-mcastd.prom"), ctl(d, {"metrics"}).out);
}

TEST(CtlMetrics, ADaemonThatCannotBeAskedIsUpZeroWithTheExitStatusOfWhy) {
    Scratch out;
    const std::string file = out.dir + "/rdma-mcastd.prom";
    auto r = run({kCtl, "--socket", out.dir + "/no-daemon.sock", "metrics", "--output", file});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("rdma-mcastctl: metrics: "), std::string::npos) << r.err;
    EXPECT_EQ(out.read("rdma-mcastd.prom"), ctl::metrics_unreachable_text());
    auto printed = run({kCtl, "--socket", out.dir + "/no-daemon.sock", "metrics"});
    EXPECT_EQ(printed.exit_code, 3);
    EXPECT_EQ(printed.out, ctl::metrics_unreachable_text());
    // A daemon that refuses the caller is up to nobody either: 0, and exit status 4.
    FakeDaemon refusing([](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::Status>(env.request))
            return false;
        s.fail(env.id, mcastd::Errc::denied, "uid 1000 may not use rdma-mcastd");
        return true;
    });
    auto denied = ctl(refusing, {"metrics"});
    EXPECT_EQ(denied.exit_code, 4) << denied.err;
    EXPECT_EQ(denied.out, ctl::metrics_unreachable_text());
}

TEST(CtlMetrics, JsonAndAnEmptyOutputAreUsageErrors) {
    auto r = run({kCtl, "--json", "metrics"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--json does not apply"), std::string::npos) << r.err;
    r = run({kCtl, "metrics", "--output", ""});
    EXPECT_EQ(r.exit_code, 2);
    r = run({kCtl, "metrics", "--output"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--output needs a value"), std::string::npos) << r.err;
}

// ---- evict ----

FakeDaemon::Handler evicts() {
    return [](Session &s, const proto::RequestEnvelope &env) {
        const auto *e = std::get_if<proto::Evict>(&env.request);
        if (!e)
            return false;
        if (e->uid && *e->uid == 1001)
            s.fail(env.id, mcastd::Errc::denied, "evict is for root only (caller uid 1001)");
        else if (e->membership && *e->membership == 404)
            s.fail(env.id, mcastd::Errc::not_found, "no membership 404");
        else
            s.reply(env.id, proto::EvictResult{e->uid ? 3u : 1u, e->disconnect ? 2u : 0u});
        return true;
    };
}

TEST(CtlEvict, DisconnectClosesTheUidsConnectionsToo) {
    FakeDaemon d(evicts());
    auto r = ctl(d, {"evict", "--uid", "1000", "--disconnect"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "released 3 memberships, disconnected 2 clients\n");
    r = ctl(d, {"--json", "evict", "--uid", "1000", "--disconnect"});
    EXPECT_EQ(json::parse(r.out), json::parse(R"({"released": 3, "disconnected": 2})"));
    auto evicts = d.requests_of<proto::Evict>();
    ASSERT_EQ(evicts.size(), 2u);
    EXPECT_TRUE(evicts[0].disconnect);
    EXPECT_EQ(evicts[0].uid, 1000u);
    r = ctl(d, {"evict", "--membership", "7", "--disconnect"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--disconnect goes with --uid"), std::string::npos) << r.err;
}

TEST(CtlEvict, ByUidByUserAndByMembership) {
    FakeDaemon d(evicts());
    auto r = ctl(d, {"evict", "--uid", "1000"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "released 3 memberships\n");
    r = ctl(d, {"evict", "--membership", "7"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "released 1 membership\n");
    r = ctl(d, {"--json", "evict", "--uid", "root"}); // a name: root is uid 0 everywhere
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out), json::parse(R"({"released": 3})"));
    auto evicts = d.requests_of<proto::Evict>();
    ASSERT_EQ(evicts.size(), 3u);
    EXPECT_EQ(evicts[0].uid, 1000u);
    EXPECT_EQ(evicts[1].membership, 7u);
    EXPECT_EQ(evicts[2].uid, 0u);
}

TEST(CtlEvict, RefusalsHaveTheirExitCodes) {
    FakeDaemon d(evicts());
    auto r = ctl(d, {"evict", "--uid", "1001"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_EQ(r.err, "rdma-mcastctl: evict: denied: evict is for root only (caller uid 1001)\n");
    EXPECT_TRUE(r.out.empty());
    r = ctl(d, {"evict", "--membership", "404"});
    EXPECT_EQ(r.exit_code, 8);
    EXPECT_EQ(r.err, "rdma-mcastctl: evict: not-found: no membership 404\n");
}

TEST(CtlStatus, HumanShowsEachPortsSmAndLastRejoin) {
    FakeDaemon d(views());
    auto h = ctl(d, {"status"});
    ASSERT_EQ(h.exit_code, 0) << h.err;
    EXPECT_NE(h.out.find("RATE      MTU   GROUPS"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("100 Gb/s  4096  4"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("DEVICE  PORT  SM_LID  SM_GUID             SM_ACT_COUNT  REJOINS  REJOINED   "
                         "DURATION  GROUPS  REASON\n"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("mlx5_0  1     1       0x0002c90300000001  5123          3        5m10s ago  "
                         "0.420 s   4       SM changed\n"), std::string::npos) << h.out;
    // Unknown SM, a re-join under way, and none ever.
    EXPECT_NE(h.out.find("mlx5_0  2     1       -                   -             1        3.2 s ago  "
                         "running   2       port active again\n"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("mlx5_1  1     0       -                   -             0        never      "
                         "-         -       -\n"), std::string::npos) << h.out;
}

// True once `d` has received the monitor request.
bool monitor_requested(FakeDaemon &d) { return received<proto::Monitor>(d, 1); }

// `rdma-mcastctl --json monitor`'s line for `m`, then SIGINT; null when none came.
json monitor_json_line(const proto::MonitorEvent &m) {
    FakeDaemon d;
    Child child({kCtl, "--socket", d.path(), "--json", "monitor"});
    EXPECT_TRUE(monitor_requested(d));
    d.broadcast(m);
    // The monitor request may still be waiting for its reply when the event goes out; either
    // way the event comes out as one line.
    auto line = child.read_line();
    EXPECT_TRUE(line);
    child.signal(SIGINT);
    EXPECT_EQ(child.wait().exit_code, 0);
    return line ? json::parse(*line) : json();
}

TEST(CtlMonitor, StreamsUntilInterrupted) {
    proto::MonitorEvent m = sample_monitor_event();
    m.kind = "join-failed";
    m.mgid = gid("ff15::9");
    m.pid = 55;
    m.message = "SA said no";
    m.sa_status = 0x0200;
    const json j = monitor_json_line(m);
    EXPECT_EQ(j["event"], "monitor");
    EXPECT_EQ(j["kind"], "join-failed");
    EXPECT_EQ(j["mgid"], "ff15::9");
    EXPECT_EQ(j["pid"], 55);
    EXPECT_EQ(j["sa_status"], 0x0200);
    EXPECT_FALSE(j.contains("netdev")) << "an InfiniBand group's entry has none of RoCE's keys";
}

// An entry about a RoCE group says where the group is sent from.
TEST(CtlMonitor, ARoceGroupsEntryHasItsNetdevGidTypeAndSgidIndex) {
    proto::MonitorEvent m = sample_monitor_event();
    m.device = "rxe0";
    m.mgid = gid("::ffff:239.1.2.3");
    m.roce = mcastd::RoceSource{mcastd::GidType::roce_v1, 4, "veth1"};
    const json j = monitor_json_line(m);
    EXPECT_EQ(j["netdev"], "veth1");
    EXPECT_EQ(j["gid_type"], "roce_v1");
    EXPECT_EQ(j["sgid_index"], 4);
}

// A restart that loses the session: the library subscribes the new one, and monitoring goes on.
TEST(CtlMonitor, GoesOnAfterADaemonRestart) {
    FakeDaemon d(version2(resume_refused()));
    Child child({kCtl, "--socket", d.path(), "--json", "monitor"});
    ASSERT_TRUE(monitor_requested(d));
    d.close_all();
    ASSERT_TRUE(received<proto::Monitor>(d, 2));
    d.broadcast(sample_monitor_event());
    auto line = child.read_line();
    ASSERT_TRUE(line);
    EXPECT_EQ(json::parse(*line)["kind"], "joined");
    child.signal(SIGINT);
    auto f = child.wait();
    EXPECT_EQ(f.exit_code, 0) << f.err;
    EXPECT_EQ(f.err.rfind("rdma-mcastctl: monitor: rdma-mcastd restarted; reconnected after ", 0),
              0u) << f.err;
    EXPECT_NE(f.err.find(" ms, new session\n"), std::string::npos) << f.err;
}

TEST(CtlMonitor, HumanLinesForLostAndRestored) {
    FakeDaemon d;
    Child child({kCtl, "--socket", d.path(), "monitor"});
    ASSERT_TRUE(monitor_requested(d));
    proto::MonitorEvent m = sample_monitor_event();
    m.kind = "lost";
    m.message = "lost ff15::1:2 on mlx5_0/1: the SM restarted";
    d.broadcast(m);
    auto line = child.read_line();
    ASSERT_TRUE(line);
    EXPECT_EQ(*line, "lost: mlx5_0/1 ff15::1:2 mlid 0xc001 full pid 4242 uid 1000 (my-app): "
                     "lost ff15::1:2 on mlx5_0/1: the SM restarted");
    m.kind = "restored";
    m.mlid = 0xc00b;
    m.message = "record of ff15::1:2 on mlx5_0/1 changed";
    d.broadcast(m);
    line = child.read_line();
    ASSERT_TRUE(line);
    EXPECT_EQ(*line, "restored: mlx5_0/1 ff15::1:2 mlid 0xc00b full pid 4242 uid 1000 (my-app): "
                     "record of ff15::1:2 on mlx5_0/1 changed");
    child.signal(SIGINT);
    EXPECT_EQ(child.wait().exit_code, 0);
}

} // namespace
