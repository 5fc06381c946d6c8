// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The sim harness against a live ibsim + OpenSM: startup and teardown, isolation, the ibsim
// console, OpenSM restart, and the SA assertions (checked against saquery's own answers and
// against raw SA joins made with mcastd-sim-join).
#include <gtest/gtest.h>

#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "sim/fabric.hpp"
#include "sim/tool_output.hpp"

namespace mcastd::sim {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// The IPoIB broadcast group OpenSM creates by itself: MGID ff12:401b:ffff::ffff:ffff, the
// first MLID of the multicast range, Q_Key 0x0B1B and the default P_Key (OpenSM defaults;
// doc/sa-multicast.md §7, §8, §18).
const Gid kBroadcastMgid = *parse_gid("ff12:401b:ffff::ffff:ffff");
constexpr std::uint16_t kFirstMulticastLid = 0xC000;
constexpr std::uint32_t kIpoibQkey = 0x0B1B;
constexpr std::uint16_t kDefaultPkey = 0xFFFF;

// Polls `done` until it holds or `timeout` passes (console commands act asynchronously).
template <typename Fn> bool eventually(std::chrono::milliseconds timeout, Fn done) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(50ms);
    }
    return true;
}

// The live PortInfo of `node`'s port 1, as smpquery prints it.
ToolRecord portinfo(Fabric &f, const std::string &node) {
    auto r = f.run_on(node, {"smpquery", "-D", "portinfo", "0", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return parse_fields(r.out);
}

// Runs mcastd-sim-join on `node`; returns its key=value lines and exit code.
struct JoinResult {
    int exit_code = -1;
    std::map<std::string, std::string> fields;
    std::string err;
};
JoinResult sim_join(Fabric &f, const std::string &node, std::vector<std::string> args) {
    args.insert(args.begin(), MCASTD_SIM_JOIN);
    auto r = f.run_on(node, args);
    JoinResult j{r.exit_code, {}, r.err};
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);)
        if (auto eq = line.find('='); eq != std::string::npos)
            j.fields[line.substr(0, eq)] = line.substr(eq + 1);
    return j;
}

std::uint64_t num(const JoinResult &j, const std::string &key) {
    auto it = j.fields.find(key);
    if (it == j.fields.end())
        throw std::runtime_error("mcastd-sim-join printed no " + key + "; stderr: " + j.err);
    auto v = parse_number(it->second);
    if (!v)
        throw std::runtime_error("mcastd-sim-join " + key + "=" + it->second);
    return *v;
}

TEST(Fabric, ComesUpWithItsOwnScratchAndSocket) {
    Fabric f;
    EXPECT_TRUE(fs::is_directory(f.scratch()));
    EXPECT_TRUE(fs::exists(f.scratch() / "net"));
    EXPECT_NE(f.sockname().find(std::to_string(::getpid())), std::string::npos);
    EXPECT_EQ(f.nodes(), (std::vector<std::string>{"S1", "H1", "H2", "H3", "H4"}));
    for (const auto &node : {"H2", "H3", "H4"}) {
        auto r = f.run_on(node, {"saquery", "-s"});
        EXPECT_EQ(r.exit_code, 0) << node << ": " << r.err;
    }
    // umad2sim writes ./sys-<pid> into the client's cwd: the per-node dir, not the test's.
    EXPECT_TRUE(fs::is_directory(f.scratch() / "cli-H2"));
    auto env = f.node_env("H2");
    EXPECT_EQ(env.at("SIM_HOST"), "H2");
    EXPECT_EQ(env.at("IBSIM_SOCKNAME"), f.sockname());
    EXPECT_THROW(f.node_env("H5"), std::invalid_argument);
    EXPECT_THROW(f.node_env("X"), std::invalid_argument);
}

TEST(Fabric, PortIdentityMatchesTheSa) {
    Fabric f;
    Gid gid = f.port_gid("H2");
    std::uint16_t lid = f.lid("H2");
    ASSERT_NE(lid, 0);
    // The SA's PathRecord from H2's LID to itself carries H2's GID as SGID and DGID.
    auto pr = f.run_on("H4", {"saquery", "PR", "--slid", std::to_string(lid), "--dlid",
                              std::to_string(lid)});
    ASSERT_EQ(pr.exit_code, 0) << pr.err;
    auto paths = parse_records(pr.out, "PathRecord dump:");
    ASSERT_EQ(paths.size(), 1u) << pr.out;
    EXPECT_EQ(field_gid(paths[0], "sgid"), gid);
    EXPECT_EQ(field_gid(paths[0], "dgid"), gid);
    // The SA's NodeRecord for that LID: H2's description and port GUID.
    auto nr = f.run_on("H4", {"saquery", "NR", std::to_string(lid)});
    ASSERT_EQ(nr.exit_code, 0) << nr.err;
    auto nodes = parse_records(nr.out, "NodeRecord dump:");
    ASSERT_EQ(nodes.size(), 1u) << nr.out;
    EXPECT_EQ(nodes[0].at("nodedescription"), "H2");
    EXPECT_EQ(field_number(nodes[0], "port_guid"), f.port_guid("H2"));
    // Every node has its own identity.
    EXPECT_NE(f.port_gid("H3"), gid);
    EXPECT_NE(f.lid("H3"), lid);
}

TEST(Fabric, NonMemberHasNoJoinState) {
    Fabric f;
    Gid h2 = f.port_gid("H2");
    // Nothing under the simulator joins the broadcast group (no IPoIB), so it has no members.
    EXPECT_EQ(f.sa_join_state(kBroadcastMgid, h2), std::nullopt);
    const Gid absent = *parse_gid("ff12:1234::99");
    EXPECT_EQ(f.sa_join_state(absent, h2), std::nullopt);
    EXPECT_EQ(f.sa_group(absent), std::nullopt);
    EXPECT_TRUE(f.wait_sa_join_state(absent, h2, std::nullopt, 1s));
}

TEST(Fabric, BroadcastGroupRecord) {
    Fabric f;
    auto g = f.sa_group(kBroadcastMgid);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->mgid, kBroadcastMgid);
    EXPECT_EQ(g->mlid, kFirstMulticastLid);
    EXPECT_EQ(g->qkey, kIpoibQkey);
    EXPECT_EQ(g->pkey, kDefaultPkey);
    EXPECT_EQ(g->scope, mgid_scope(kBroadcastMgid));
    // The same group seen from another node.
    auto from_h1 = f.sa_group(kBroadcastMgid, "H1");
    ASSERT_TRUE(from_h1);
    EXPECT_EQ(from_h1->mlid, g->mlid);
}

TEST(Fabric, JoinStateAndGroupFollowRawSaJoinsAndLeaves) {
    Fabric f;
    const std::string mgid_text = "ff12:1234::1";
    const Gid mgid = *parse_gid(mgid_text);
    Gid h2 = f.port_gid("H2"), h3 = f.port_gid("H3");

    auto created = sim_join(f, "H2", {"join", mgid_text, "1", "qkey=0x1234", "sl=3",
                                      "flow_label=0x12345", "hop_limit=7", "tclass=0x20"});
    ASSERT_EQ(created.exit_code, 0) << created.err;
    EXPECT_EQ(f.sa_join_state(mgid, h2), 0x1);
    EXPECT_EQ(f.sa_join_state(mgid, h2, "H2"), 0x1); // from the member's own node too
    EXPECT_EQ(f.sa_join_state(mgid, h3), std::nullopt);

    // The group as saquery shows it equals the record the SA returned to the creator.
    auto g = f.sa_group(mgid);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->mlid, num(created, "mlid"));
    EXPECT_EQ(g->qkey, num(created, "qkey"));
    EXPECT_EQ(g->pkey, num(created, "pkey"));
    EXPECT_EQ(g->mtu, num(created, "mtu"));
    EXPECT_EQ(g->rate, num(created, "rate"));
    EXPECT_EQ(g->pkt_life, num(created, "pkt_life"));
    EXPECT_EQ(g->sl, num(created, "sl"));
    EXPECT_EQ(g->flow_label, num(created, "flow_label"));
    EXPECT_EQ(g->hop_limit, num(created, "hop_limit"));
    EXPECT_EQ(g->tclass, num(created, "tclass"));
    EXPECT_EQ(g->scope, num(created, "scope"));
    // ... and holds what was asked for.
    EXPECT_EQ(g->qkey, 0x1234u);
    EXPECT_EQ(g->sl, 3);
    EXPECT_EQ(g->flow_label, 0x12345u);
    EXPECT_EQ(g->hop_limit, 7);
    EXPECT_EQ(g->tclass, 0x20);

    // A second port joins as FullMember + NonMember: each port has its own JoinState.
    auto second = sim_join(f, "H3", {"join", mgid_text, "3", "qkey=0x1234", "sl=3",
                                     "flow_label=0x12345", "tclass=0x20"});
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(f.sa_join_state(mgid, h3), 0x3);
    EXPECT_EQ(f.sa_join_state(mgid, h2), 0x1);
    // Per port in one query: only that port's groups, each with that port's JoinState.
    EXPECT_EQ(f.sa_join_states_of(h3), (std::map<Gid, std::uint8_t>{{mgid, 0x3}}));
    EXPECT_EQ(f.sa_join_states_of(f.port_gid("H4")), (std::map<Gid, std::uint8_t>{}));
    // The bulk per-port Get says the same, and "none" for a group the port is not in.
    auto gets = f.run_on("H4", {MCASTD_SIM_JOIN, "get", mgid_text, format_gid(h2), mgid_text,
                                format_gid(h3), "ff12:1234::99", format_gid(h2)});
    ASSERT_EQ(gets.exit_code, 0) << gets.err;
    char mlid[8];
    std::snprintf(mlid, sizeof mlid, "0x%04x", static_cast<unsigned>(g->mlid));
    EXPECT_EQ(gets.out, mgid_text + " " + format_gid(h2) + " join_state=0x1 mlid=" + mlid + "\n" +
                            mgid_text + " " + format_gid(h3) + " join_state=0x3 mlid=" + mlid + "\n" +
                            "ff12:1234::99 " + format_gid(h2) + " none\n");

    auto left = sim_join(f, "H2", {"leave", mgid_text, "1"});
    ASSERT_EQ(left.exit_code, 0) << left.err;
    EXPECT_TRUE(f.wait_sa_join_state(mgid, h2, std::nullopt, 5s));
    EXPECT_EQ(f.sa_join_state(mgid, h3), 0x3);

    // H3 drops FullMember while nobody else is a full member: the SA removes the port and
    // deletes the group (doc/sa-multicast.md §11), NonMember bit and all.
    ASSERT_EQ(sim_join(f, "H3", {"leave", mgid_text, "1"}).exit_code, 0);
    EXPECT_TRUE(f.wait_sa_join_state(mgid, h3, std::nullopt, 5s));
    EXPECT_TRUE(eventually(5s, [&] { return !f.sa_group(mgid); }));
}

TEST(Fabric, TwoFabricsRunSideBySideIndependently) {
    Fabric a;
    Fabric b;
    EXPECT_NE(a.sockname(), b.sockname());
    EXPECT_NE(a.scratch(), b.scratch());
    const std::string mgid_text = "ff12:1234::2";
    const Gid mgid = *parse_gid(mgid_text);
    ASSERT_EQ(sim_join(a, "H2", {"join", mgid_text, "1", "qkey=0x42"}).exit_code, 0);
    EXPECT_EQ(a.sa_join_state(mgid, a.port_gid("H2")), 0x1);
    EXPECT_TRUE(a.sa_group(mgid));
    EXPECT_EQ(b.sa_group(mgid), std::nullopt);
    EXPECT_EQ(b.sa_join_state(mgid, b.port_gid("H2")), std::nullopt);

    a.console("Unlink \"H3\"");
    EXPECT_TRUE(eventually(10s, [&] { return portinfo(a, "H3").at("linkstate") == "Down"; }));
    EXPECT_EQ(portinfo(b, "H3").at("linkstate"), "Active");
    EXPECT_TRUE(b.sa_answers("H3"));
}

TEST(Fabric, ConsoleUnlinkAndRelink) {
    Fabric f;
    ASSERT_EQ(portinfo(f, "H3").at("linkstate"), "Active");
    f.console("Unlink \"H3\"");
    EXPECT_TRUE(eventually(10s, [&] { return portinfo(f, "H3").at("linkstate") == "Down"; }));
    // From a port that is down, SA MADs bounce: saquery fails (110).
    auto r = f.run_on("H3", {"saquery", "-s"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(f.sa_answers("H2")); // the rest of the fabric is fine

    f.console("ReLink \"H3\"");
    EXPECT_TRUE(eventually(10s, [&] { return portinfo(f, "H3").at("linkstate") == "Active"; }));
    EXPECT_TRUE(f.wait_sa("H3", 30s));
    // The console's replies land in ibsim's output.
    f.console("Attached");
    EXPECT_TRUE(eventually(5s, [&] {
        return f.ibsim_output().find("connected at \"H1\"") != std::string::npos;
    })) << f.ibsim_output();
    EXPECT_THROW(f.console("Unlink \"H3\"\nQuit"), std::invalid_argument);
}

TEST(Fabric, OpenSmRestartBringsTheSaBack) {
    Fabric f;
    const std::string mgid_text = "ff12:1234::3";
    const Gid mgid = *parse_gid(mgid_text);
    Gid h2 = f.port_gid("H2");
    ASSERT_EQ(sim_join(f, "H2", {"join", mgid_text, "1"}).exit_code, 0);
    ASSERT_EQ(f.sa_join_state(mgid, h2), 0x1);

    f.stop_opensm();
    // No SM attached: SA MADs bounce at once and saquery exits 110.
    EXPECT_EQ(f.run_on("H2", {"saquery", "-s"}).exit_code, 110);
    EXPECT_THROW(f.sa_group(kBroadcastMgid), std::runtime_error);

    f.start_opensm();
    EXPECT_TRUE(f.sa_answers("H2"));
    // A new OpenSM knows only its default broadcast group: the membership is gone.
    EXPECT_TRUE(f.sa_group(kBroadcastMgid));
    EXPECT_EQ(f.sa_join_state(mgid, h2), std::nullopt);
    EXPECT_EQ(f.sa_group(mgid), std::nullopt);
    EXPECT_TRUE(fs::exists(f.opensm_log_path()));
    EXPECT_THROW(f.start_opensm(), std::logic_error); // one OpenSM at a time
}

TEST(Fabric, OpenSmCanMoveToAnotherNode) {
    Fabric f;
    f.stop_opensm();
    f.start_opensm("H3");
    // Live PortInfo shows the new master SM's LID.
    std::uint16_t sm_lid = f.lid("H3");
    EXPECT_TRUE(eventually(10s, [&] {
        return field_number(portinfo(f, "H2"), "smlid") == sm_lid;
    }));
}

TEST(Fabric, SaDbDumpIsWritten) {
    Fabric f({.opensm_args = {"-s", "1"}, .sa_db_dump = true});
    ASSERT_EQ(sim_join(f, "H2", {"join", "ff12:1234::4", "1"}).exit_code, 0);
    std::string needle = "mgid=0xff12123400000000:0x0000000000000004";
    EXPECT_TRUE(eventually(10s, [&] {
        return read_text_file(f.sa_dump_path()).find(needle) != std::string::npos;
    }));
    // parse_sa_dump reads OpenSM's real format: the broadcast group and the joined member.
    std::map<Gid, SaDumpGroup> groups;
    for (auto &g : parse_sa_dump(read_text_file(f.sa_dump_path())))
        groups[g.mgid] = g;
    ASSERT_EQ(groups.size(), 2u) << read_text_file(f.sa_dump_path());
    const SaDumpGroup &bcast = groups[kBroadcastMgid], &joined = groups[*parse_gid("ff12:1234::4")];
    EXPECT_TRUE(bcast.well_known);
    EXPECT_EQ(bcast.mlid, kFirstMulticastLid);
    EXPECT_FALSE(joined.well_known);
    EXPECT_EQ(joined.members, (std::map<Gid, std::uint8_t>{{f.port_gid("H2"), 0x1}}));
}

TEST(Fabric, RunOnReportsExitCodesAndKillsOnTimeout) {
    Fabric f;
    EXPECT_EQ(f.run_on("H2", {"sh", "-c", "exit 7"}).exit_code, 7);
    auto start = std::chrono::steady_clock::now();
    auto r = f.run_on("H2", {"sleep", "30"}, 300ms);
    EXPECT_EQ(r.exit_code, -1);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(Fabric, SpawnOnAttachesAClientThatTheFabricStops) {
    pid_t pid = 0;
    {
        Fabric f;
        auto &echo = f.spawn_on("H2", {"sh", "-c", "echo \"$SIM_HOST $IBSIM_SOCKNAME\"; pwd"},
                                {{"MCASTD_EXTRA", "1"}});
        EXPECT_EQ(echo.read_line(5s), "H2 " + f.sockname());
        EXPECT_EQ(echo.read_line(5s), (f.scratch() / "cli-H2").string());
        EXPECT_EQ(echo.wait(5s), 0);

        auto &cat = f.spawn_on("H3", {"cat"}, {}, true);
        ASSERT_TRUE(cat.write_stdin("ping\n"));
        EXPECT_EQ(cat.read_line(5s), "ping");

        auto &sleeper = f.spawn_on("H4", {"sleep", "30"});
        pid = sleeper.pid();
        EXPECT_TRUE(sleeper.running());
    }
    // The Fabric stopped and reaped it before OpenSM and ibsim.
    EXPECT_EQ(::kill(pid, 0), -1);
    EXPECT_EQ(errno, ESRCH);
}

TEST(Fabric, ScratchIsRemovedUnlessKept) {
    fs::path removed, kept;
    {
        Fabric f({.hcas = 2});
        removed = f.scratch();
    }
    EXPECT_FALSE(fs::exists(removed));
    ::setenv("MCASTD_KEEP_SCRATCH", "1", 1);
    {
        Fabric f({.hcas = 2});
        kept = f.scratch();
    }
    ::unsetenv("MCASTD_KEEP_SCRATCH");
    EXPECT_TRUE(fs::exists(kept / "ibsim.out"));
    fs::remove_all(kept);
}

TEST(Fabric, StartupFailureCarriesTheOutput) {
    try {
        Fabric f({.opensm_args = {"--no-such-opensm-option"}, .sa_ready_timeout = 10s});
        FAIL() << "expected a throw";
    } catch (const std::runtime_error &e) {
        std::string what = e.what();
        EXPECT_NE(what.find("OpenSM on H1 exited"), std::string::npos) << what;
        EXPECT_NE(what.find("Network simulator ready."), std::string::npos) << what; // ibsim's
        EXPECT_NE(what.find("no-such-opensm-option"), std::string::npos) << what;   // OpenSM's
    }
    EXPECT_THROW(Fabric({.hcas = 0}), std::invalid_argument);
    EXPECT_THROW(Fabric({.sm_node = "H9"}), std::invalid_argument);
}

TEST(Fabric, SingleHcaFabric) {
    Fabric f({.hcas = 1});
    EXPECT_EQ(f.default_via(), "H1");
    EXPECT_TRUE(f.sa_group(kBroadcastMgid));
}

} // namespace
} // namespace mcastd::sim
