// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastd end to end: the real daemon on a simulated node, its clients on its Unix socket
// (rdma-mcastctl, raw protocol clients), and the SA's own view (saquery) as the judge.
#include <gtest/gtest.h>

#include <fstream>

#include <csignal>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>

#include "sim/daemon_harness.hpp"

namespace mcastd::sim {
namespace {

using json = nlohmann::json;

Gid G(const std::string &s) { return *parse_gid(s); }

class DaemonSim : public ::testing::Test {
protected:
    Fabric fabric;
    Gid h2() { return fabric.port_gid("H2"); }

    // rdma-mcastctl, not attached to the fabric: it only talks to the daemon's socket.
    Process &ctl(Daemon &d, std::vector<std::string> args) {
        std::vector<std::string> argv{MCASTD_CTL, "--socket", d.socket().string()};
        argv.insert(argv.end(), args.begin(), args.end());
        procs_.push_back(std::make_unique<Process>(Process::Options{.argv = argv, .cwd = fabric.scratch()}));
        return *procs_.back();
    }
    json ctl_json(Daemon &d, std::vector<std::string> args) {
        args.insert(args.begin(), "--json");
        Process &p = ctl(d, args);
        auto rc = p.wait(20s);
        EXPECT_EQ(rc, 0) << p.stderr_text();
        return json::parse(p.read_all(1s));
    }
    // The daemon's groups on its one port once it lists none, or those still listed after
    // `timeout`. A leave is answered before its SA Delete, and until the SA answers that the
    // group stays listed, busy and with no member (PROTOCOL.md, `leave`).
    json groups_once_none(Daemon &d, std::chrono::milliseconds timeout = 5s) {
        json groups;
        poll_until(timeout, [&] {
            groups = ctl_json(d, {"list"})["ports"][0]["groups"];
            return groups.empty();
        });
        return groups;
    }
    static std::size_t members(const json &groups) {
        std::size_t n = 0;
        for (const auto &g : groups)
            n += g["members"].size();
        return n;
    }

    std::vector<std::unique_ptr<Process>> procs_;
};

TEST_F(DaemonSim, TwoHoldersShareOneMembershipUntilBothAreKilled) {
    Daemon d(fabric, "H2");
    const Gid m = G("ff15:3::1");
    Process &a = ctl(d, {"--json", "join", "--device", "ibsim0", "--port", "1", "--mgid", "ff15:3::1", "--hold"});
    Process &b = ctl(d, {"--json", "join", "--device", "ibsim0", "--port", "1", "--mgid", "ff15:3::1", "--hold"});
    auto ra = a.read_line(20s), rb = b.read_line(20s);
    ASSERT_TRUE(ra && rb) << a.stderr_text() << b.stderr_text();
    EXPECT_EQ(json::parse(*ra)["mlid"], json::parse(*rb)["mlid"]);
    EXPECT_EQ(fabric.sa_join_state(m, h2()), 0x1);

    a.signal(SIGKILL);
    a.wait(5s);
    // The daemon has seen the connection go once its listing shows one holder left.
    for (int i = 0; i < 200; ++i) {
        json l = ctl_json(d, {"list"});
        if (l["ports"][0]["groups"][0]["members"].size() == 1)
            break;
    }
    EXPECT_EQ(ctl_json(d, {"list"})["ports"][0]["groups"][0]["members"].size(), 1u);
    EXPECT_EQ(fabric.sa_join_state(m, h2()), 0x1) << "one holder is still there";

    b.signal(SIGKILL);
    b.wait(5s);
    EXPECT_TRUE(fabric.wait_sa_join_state(m, h2(), std::nullopt, 1s)) << "gone from the SA within 1 s";
}

// Bulk subscribe (issue 16): one rdma-mcastctl joins many groups at once, holds them all, and
// leaves them all; one bad MGID among them fails the whole command and leaves nothing behind.
TEST_F(DaemonSim, OneCtlJoinsManyGroupsPipelinedAndHoldsThemAll) {
    Daemon d(fabric, "H2");
    std::vector<std::string> mgids;
    {
        std::ofstream file(fabric.scratch() / "mgids");
        file << "# market data\n\n";
        for (int i = 1; i <= 40; ++i) {
            mgids.push_back("ff15:4::" + std::to_string(i));
            file << "  " << mgids.back() << "  # feed " << i << "\n";
        }
    }
    Process &h = ctl(d, {"--json", "join", "--device", "ibsim0", "--port", "1", "--mgid", "ff15:4::100", "--mgid-file",
                         (fabric.scratch() / "mgids").string(), "--hold"});
    mgids.insert(mgids.begin(), "ff15:4::100");
    for (const std::string &m : mgids) { // one record per group, in the order given
        auto line = h.read_line(20s);
        ASSERT_TRUE(line) << h.stderr_text();
        EXPECT_EQ(json::parse(*line)["mgid"], m);
    }
    for (const std::string &m : {mgids.front(), mgids[20], mgids.back()})
        EXPECT_EQ(fabric.sa_join_state(G(m), h2()), 0x1) << m;
    EXPECT_EQ(ctl_json(d, {"list"})["ports"][0]["groups"].size(), mgids.size());
    h.signal(SIGTERM);
    EXPECT_EQ(h.wait(20s), 0) << h.stderr_text();
    EXPECT_TRUE(fabric.wait_sa_join_state(G(mgids.back()), h2(), std::nullopt, 2s)) << "left when the hold ends";
    EXPECT_EQ(groups_once_none(d), json::array());

    // An IPoIB MGID among them is refused: the others are left again, and the status is 4.
    Process &bad = ctl(d, {"join", "--device", "ibsim0", "--port", "1", "--mgid", "ff15:4::1", "--mgid",
                           "ff12:401b::1", "--mgid", "ff15:4::2"});
    EXPECT_EQ(bad.wait(20s), 4);
    EXPECT_NE(bad.stderr_text().find("rdma-mcastctl: join: denied: ff12:401b::1: "), std::string::npos)
        << bad.stderr_text();
    // The command left what it had joined before it exited; the SA Deletes may still be on
    // their way.
    const json after = ctl_json(d, {"list"})["ports"][0]["groups"];
    EXPECT_EQ(members(after), 0u) << "nothing held after the failure: " << after.dump();
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:4::1"), h2(), std::nullopt, 2s));
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:4::2"), h2(), std::nullopt, 2s));
    EXPECT_EQ(groups_once_none(d), json::array());
}

// A fabric budget (config/README.md, `fabric`): 2 ports sharing 20 SA MAD/s pace each at 10/s.
// Five new groups by MGID cost a Get and a Set each: ten MADs, the last no sooner than 0.9 s
// after the first. Without the budget they take a few milliseconds on ibsim.
TEST_F(DaemonSim, AFabricBudgetPacesThePortAtItsShare) {
    Daemon d(fabric, "H2", R"({"fabric": {"hosts": 2, "sa_budget": 20}})");
    EXPECT_TRUE(d.process().wait_for_stderr(
        "fabric budget: 2 ports share 20 SA MAD/s: each paced at 10 MAD/s, a re-join's pause up to 500 ms", 5s))
        << d.process().stderr_text();
    const auto sent_before = ctl_json(d, {"status"})["counters"]["sa_mads_sent"].get<std::uint64_t>();
    const auto start = std::chrono::steady_clock::now();
    Process &h = ctl(d, {"--json", "join", "--device", "ibsim0", "--port", "1", "--mgid", "ff15:5::1", "--mgid",
                         "ff15:5::2", "--mgid", "ff15:5::3", "--mgid", "ff15:5::4", "--mgid", "ff15:5::5", "--hold"});
    for (int i = 0; i < 5; ++i)
        ASSERT_TRUE(h.read_line(20s)) << h.stderr_text();
    const auto took = std::chrono::steady_clock::now() - start;
    const auto sent = ctl_json(d, {"status"})["counters"]["sa_mads_sent"].get<std::uint64_t>() - sent_before;
    EXPECT_GE(sent, 10u) << "a Get and a Set per new group (and maybe a poll, which is not paced)";
    EXPECT_GE(took, 900ms) << "one MAD per 100 ms after the first";
    for (int i = 1; i <= 5; ++i)
        EXPECT_EQ(fabric.sa_join_state(G("ff15:5::" + std::to_string(i)), h2()), 0x1) << i;
    h.signal(SIGTERM);
    EXPECT_EQ(h.wait(20s), 0) << h.stderr_text();
}

// Named groups (issue 16): daemons on two hosts with the same config map one name to one MGID,
// so two processes, one per host, reach one group with nobody creating it first.
TEST_F(DaemonSim, TwoHostsJoinByTheSameNameAndReachOneGroup) {
    const std::string cfg = R"({"groups": {"names": {"prefix": "ff15:6e61:6d65::/64", "pkey": "0xffff"}}})";
    Daemon d2(fabric, "H2", cfg), d3(fabric, "H3", cfg);
    const Gid h3 = fabric.port_gid("H3");
    Process &a = ctl(d2, {"--json", "join", "--device", "ibsim0", "--port", "1", "--name", "job-42", "--hold"});
    Process &b = ctl(d3, {"--json", "join", "--device", "ibsim0", "--port", "1", "--name", "job-42", "--hold"});
    auto ra = a.read_line(20s), rb = b.read_line(20s);
    ASSERT_TRUE(ra && rb) << a.stderr_text() << b.stderr_text();
    const json ja = json::parse(*ra), jb = json::parse(*rb);
    // PROTOCOL.md's test vector for this prefix and name.
    EXPECT_EQ(ja["mgid"], "ff15:6e61:6d65:0:6636:89a9:7bcf:99db");
    EXPECT_EQ(jb["mgid"], ja["mgid"]);
    EXPECT_EQ(jb["mlid"], ja["mlid"]);
    const Gid m = G(ja["mgid"].get<std::string>());
    // The SA's own view: one group, both ports full members, the configured P_Key.
    EXPECT_EQ(fabric.sa_join_state(m, h2()), 0x1);
    EXPECT_EQ(fabric.sa_join_state(m, h3), 0x1);
    const auto g = fabric.sa_group(m);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->pkey & 0x7fff, 0x7fff);
    // Each daemon's list shows the name.
    const json l = ctl_json(d3, {"list"});
    ASSERT_EQ(l["ports"][0]["groups"].size(), 1u) << l.dump();
    EXPECT_EQ(l["ports"][0]["groups"][0]["mgid"], ja["mgid"]);
    EXPECT_EQ(l["ports"][0]["groups"][0]["members"][0]["name"], "job-42");

    // Another name is another group.
    const json other = ctl_json(d2, {"join", "--device", "ibsim0", "--port", "1", "--name", "job-43"});
    EXPECT_NE(other["mgid"], ja["mgid"]);

    a.signal(SIGTERM);
    b.signal(SIGTERM);
    EXPECT_TRUE(fabric.wait_sa_join_state(m, h2(), std::nullopt, 5s));
    EXPECT_TRUE(fabric.wait_sa_join_state(m, h3, std::nullopt, 5s));
}

TEST_F(DaemonSim, MonitorNamesTheClientOfALeftEvenWhenItWasKilled) {
    Daemon d(fabric, "H2");
    RawClient mon(d.socket());
    mon.hello();
    ASSERT_NE(mon.call(R"({"id":1,"op":"monitor","enable":true})", 1).find("\"ok\":true"), std::string::npos);
    Process &a = ctl(d, {"--json", "join", "--device", "ibsim0", "--port", "1", "--mgid", "ff15:3::9", "--hold"});
    ASSERT_TRUE(a.read_line(20s)) << a.stderr_text();
    a.signal(SIGKILL);
    a.wait(5s);
    std::map<std::string, json> seen; // kind -> its monitor event
    while (!seen.count("left"))
        if (auto m = mon.receive(10s)) {
            json j = json::parse(*m);
            seen[j.value("kind", "")] = j;
        } else {
            FAIL() << "no left event";
        }
    for (const char *kind : {"joined", "left"}) {
        EXPECT_EQ(seen[kind]["pid"], a.pid()) << kind << ": " << seen[kind].dump();
        EXPECT_EQ(seen[kind]["comm"], "rdma-mcastctl") << kind;
    }
}

TEST_F(DaemonSim, StormOf200ConnectionsLeavesTheSaEqualToWhatSurvivorsHold) {
    Daemon d(fabric, "H2");
    std::vector<std::string> mgids;
    for (int i = 1; i <= 10; ++i)
        mgids.push_back("ff15:57::" + std::to_string(i));
    // 10 processes x 20 connections, 150 operations each; three are killed midway.
    std::vector<std::unique_ptr<Process>> storm;
    for (int p = 0; p < 10; ++p) {
        std::vector<std::string> argv{MCASTD_STORM, d.socket().string(), "20", "150", std::to_string(p + 1),
                                      "ibsim0", "1"};
        argv.insert(argv.end(), mgids.begin(), mgids.end());
        storm.push_back(std::make_unique<Process>(Process::Options{.argv = argv, .cwd = fabric.scratch(), .stdin_pipe = true}));
    }
    for (auto &p : storm)
        ASSERT_TRUE(p->wait_for_line("started", 30s)) << p->stderr_text();
    for (int p : {2, 5, 7}) {
        storm[static_cast<std::size_t>(p)]->signal(SIGKILL);
    }

    std::map<std::string, unsigned> held;
    for (std::size_t p = 0; p < storm.size(); ++p) {
        if (p == 2 || p == 5 || p == 7)
            continue;
        auto line = storm[p]->wait_for_line("held", 120s);
        ASSERT_TRUE(line) << storm[p]->stderr_text();
        const json report = json::parse(*line); // not a temporary: items() refers into it
        for (auto &[mgid, bits] : report.at("held").items())
            held[mgid] |= bits.get<unsigned>();
    }
    // A port holds 0x1 when any survivor is a full member, else 0x8 when one is send-only.
    for (const std::string &m : mgids) {
        const unsigned b = held.count(m) ? held[m] : 0;
        const std::optional<std::uint8_t> want =
            (b & 1) ? std::optional<std::uint8_t>(1) : (b & 8) ? std::optional<std::uint8_t>(8) : std::nullopt;
        EXPECT_TRUE(fabric.wait_sa_join_state(G(m), h2(), want, 10s))
            << m << ": survivors hold " << b << ", the SA has " << int(fabric.sa_join_state(G(m), h2()).value_or(0));
    }
    // Every survivor goes: nothing may be left behind.
    for (auto &p : storm)
        p->close_stdin();
    for (auto &p : storm)
        p->wait(20s);
    for (const std::string &m : mgids)
        EXPECT_TRUE(fabric.wait_sa_join_state(G(m), h2(), std::nullopt, 10s)) << m << " leaked";
    EXPECT_EQ(groups_once_none(d), json::array());
}

TEST_F(DaemonSim, BadInputGetsItsNamedErrorWhileAnotherClientStaysJoined) {
    Daemon d(fabric, "H2");
    RawClient holder(d.socket());
    holder.hello();
    const std::string joined = holder.call(
        R"({"id":1,"op":"join","device":"ibsim0","port":1,"mgid":"ff15:4::1","join_state":"full"})", 1);
    ASSERT_NE(joined.find("\"ok\":true"), std::string::npos) << joined;

    RawClient bad(d.socket());
    auto expect = [&](const std::string &msg, const std::string &code, const std::string &field = {}) {
        bad.send(msg);
        auto r = bad.receive();
        ASSERT_TRUE(r) << "no answer to " << msg.substr(0, 80);
        json j = json::parse(*r);
        EXPECT_EQ(j["ok"], false) << *r;
        EXPECT_EQ(j["error"]["code"], code) << msg.substr(0, 80) << " -> " << *r;
        if (!field.empty()) {
            EXPECT_EQ(j["error"]["field"], field) << *r;
        }
        EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
    };
    expect(R"({"id":7,"op":"hello","versions":[3,4]})", "unsupported-version", "/versions");
    expect(R"({"id":8,"op":"join","device":"ibsim0","port":1,"mgid":"ff15::1"})", "invalid-argument", "/op");
    bad.hello();
    expect("this is not JSON", "invalid-argument");
    expect(R"([1,2,3])", "invalid-argument");
    expect(R"({"id":2,"op":"dance"})", "invalid-argument", "/op");
    expect(R"({"id":3,"op":"join","device":"ibsim0","port":"1","mgid":"ff15::1"})", "invalid-argument", "/port");
    expect(R"({"id":4,"op":"join","device":"ibsim0","port":1,"mgid":"ff15::1","colour":"red"})", "invalid-argument", "/colour");
    expect(R"({"id":5,"op":"join","device":"ibsim0","port":1,"mgid":"ff15::zz::1"})", "invalid-argument", "/mgid");
    expect(R"({"id":6,"op":"join","device":"ibsim0","port":1,"mgid":"ff15::1","sl":99})", "invalid-argument", "/sl");
    expect(R"({"id":9,"op":"join","device":"mlx9_9","port":1,"mgid":"ff15::1"})", "no-such-device");
    expect(R"({"id":10,"op":"join","device":"ibsim0","port":7,"mgid":"ff15::1"})", "no-such-port");
    expect(R"({"id":11,"op":"join","device":"ibsim0","port":1,"mgid":"ff12:401b:ffff::1"})", "denied");
    expect(R"({"id":12,"op":"leave","membership":424242})", "not-found");
    expect(std::string(R"({"id":13,"op":"join","device":")") + std::string(70000, 'x') + "\"}", "too-large");
    // Another Q_Key than the group's is refused locally, naming the group's value.
    bad.send(R"({"id":14,"op":"join","device":"ibsim0","port":1,"mgid":"ff15:4::1","qkey":1})");
    json c = json::parse(*bad.receive());
    EXPECT_EQ(c["error"]["code"], "conflict");
    EXPECT_NE(c["error"]["message"].get<std::string>().find("Q_Key 0x01234567"), std::string::npos) << c.dump();

    // The daemon still serves, and the other client's membership is intact.
    EXPECT_EQ(fabric.sa_join_state(G("ff15:4::1"), h2()), 0x1);
    const std::string l = holder.call(R"({"id":2,"op":"list"})", 2);
    EXPECT_NE(l.find("ff15:4::1"), std::string::npos) << l;
}

TEST_F(DaemonSim, PipelinedRequestsAreAllAnsweredInTurn) {
    // No audit: a join of a group whose audit Get is in flight waits for it, and 300 of them
    // would meet limits.max_requests_in_flight (a CI run once met it, the audit's random phase
    // falling in the burst).
    Daemon d(fabric, "H2", R"({"monitor": {"audit_per_second": 0}})");
    RawClient holder(d.socket());
    holder.hello();
    holder.call(R"({"id":1,"op":"join","device":"ibsim0","port":1,"mgid":"ff15:6::1"})", 1);
    // 300 joins in one burst, more than the daemon reads from one client per turn: every one
    // is answered (locally: the port holds the group), each with its own membership.
    RawClient burst(d.socket());
    burst.hello();
    for (int i = 1; i <= 300; ++i)
        burst.send(R"({"id":)" + std::to_string(i) +
                   R"(,"op":"join","device":"ibsim0","port":1,"mgid":"ff15:6::1"})");
    std::set<std::uint64_t> ids, memberships;
    for (int i = 0; i < 300; ++i) {
        auto m = burst.receive();
        ASSERT_TRUE(m) << "only " << i << " answers";
        json j = json::parse(*m);
        ASSERT_EQ(j["ok"], true) << *m;
        ids.insert(j["id"].get<std::uint64_t>());
        memberships.insert(j["result"]["membership"].get<std::uint64_t>());
    }
    EXPECT_EQ(ids.size(), 300u);
    EXPECT_EQ(memberships.size(), 300u);
}

// What a new group costs at the SA through the daemon, from its status counters (issue 16,
// item 4; doc/architecture.md §5): an explicit MGID is one probe Get and one Set, a group the
// SA assigns (create) the Set alone. 200 of each, pipelined over one connection.
TEST_F(DaemonSim, ANewGroupCostsAGetAndASetOrJustTheSetWhenTheSaAssignsIt) {
    // No audit: its Gets would be counted too.
    Daemon d(fabric, "H2", R"({"access": {"quotas": {"creates_per_uid": 0}}, "monitor": {"audit_per_second": 0}})");
    RawClient c(d.socket());
    c.hello();
    auto counters = [&c](long long id) {
        const json st = json::parse(c.call(R"({"id":)" + std::to_string(id) + R"(,"op":"status"})", id));
        return st["result"]["counters"];
    };
    // 50 in flight at a time: a connection may have 64 joins waiting for the SA.
    auto burst = [&c](long long first, const std::string &what) {
        for (long long w = first; w < first + 200; w += 50) {
            for (long long i = w; i < w + 50; ++i) {
                char m[32];
                std::snprintf(m, sizeof m, "ff15:16::%llx", i);
                c.send(R"({"id":)" + std::to_string(i) + R"(,"op":"join","device":"ibsim0","port":1,)" +
                       (what == "mgid" ? std::string(R"("mgid":")") + m + R"("})" : std::string(R"("create":true})")));
            }
            for (int i = 0; i < 50; ++i) {
                auto r = c.receive(20s);
                ASSERT_TRUE(r) << "only " << i << " answers";
                ASSERT_EQ(json::parse(*r)["ok"], true) << *r;
            }
        }
    };
    const json c0 = counters(1);
    burst(1000, "mgid");
    const json c1 = counters(2);
    burst(2000, "create");
    const json c2 = counters(3);
    auto per_join = [](const json &a, const json &b, const char *k) {
        return (b[k].get<double>() - a[k].get<double>()) / 200.0;
    };
    std::printf("[ figure ] daemon, new group by MGID: %.2f Gets + %.2f Sets per join; by create: %.2f Gets + "
                "%.2f Sets per join\n",
                per_join(c0, c1, "sa_gets"), per_join(c0, c1, "sa_sets"), per_join(c1, c2, "sa_gets"),
                per_join(c1, c2, "sa_sets"));
    EXPECT_EQ(per_join(c0, c1, "sa_gets"), 1.0);
    EXPECT_EQ(per_join(c0, c1, "sa_sets"), 1.0);
    EXPECT_EQ(per_join(c1, c2, "sa_gets"), 0.0);
    EXPECT_EQ(per_join(c1, c2, "sa_sets"), 1.0);
    EXPECT_EQ(c2["sa_deletes"], c0["sa_deletes"]);
    EXPECT_EQ(fabric.sa_join_state(G("ff15:16::3e8"), h2()), 0x1);
}

// sa.congestion_control is on by default: once the SA has answered, `rdma-mcastctl status` shows
// the port's learned window, round trip and try timeout, and the SA counters, in both forms.
TEST_F(DaemonSim, StatusShowsThePortsSaWindowAndTheSaCounters) {
    Daemon d(fabric, "H2");
    Process &h = ctl(d, {"--json", "join", "--device", "ibsim0", "--port", "1", "--mgid", "ff15:6::1", "--hold"});
    ASSERT_TRUE(h.read_line(20s)) << h.stderr_text();

    const json st = ctl_json(d, {"status"});
    const json &sa = st["ports"][0]["sa"];
    ASSERT_TRUE(sa.is_object()) << st.dump();
    EXPECT_GT(sa["window"].get<double>(), 0) << sa.dump();
    EXPECT_TRUE(sa["slow_start"].is_boolean()) << sa.dump();
    EXPECT_TRUE(sa["srtt_ms"].is_number()) << "the join's answers were timed: " << sa.dump();
    EXPECT_TRUE(sa["timeout_ms"].is_number()) << sa.dump();
    const json &n = st["counters"];
    EXPECT_GE(n["sa_responses"].get<std::uint64_t>(), 1u) << n.dump();
    EXPECT_GE(n["sa_amplification"].get<double>(), 1.0) << n.dump();

    Process &text = ctl(d, {"status"});
    ASSERT_EQ(text.wait(20s), 0) << text.stderr_text();
    const std::string out = text.read_all(1s);
    const std::regex row(R"(\nDEVICE +PORT +SA_WINDOW +SRTT +TRY_TIMEOUT\n)"
                         R"(ibsim0 +1 +[0-9.e+-]+( \(slow start\))? +[0-9.e+-]+ ms +[0-9.e+-]+ ms\n)");
    EXPECT_TRUE(std::regex_search(out, row)) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(\nSA answers +[1-9][0-9]*\n)"))) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(\nSA late answers +[0-9]+\n)"))) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(\nSA amplification +[0-9.]+\n)"))) << out;
}

TEST_F(DaemonSim, StaticGroupsAreHeldAndAGracefulStopLeavesEverything) {
    Daemon d(fabric, "H2", R"({"static_groups": [
        {"device": "ibsim0", "port": 1, "mgid": "ff15:5::1"},
        {"device": "ibsim0", "port": 1, "mgid": "ff15:5::2", "join_state": "sendonly-full"}]})");
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:5::1"), h2(), 0x1, 10s));
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:5::2"), h2(), 0x8, 10s));
    Process &c = ctl(d, {"--json", "join", "--device", "ibsim0", "--port", "1", "--mgid", "ff15:5::3", "--hold"});
    ASSERT_TRUE(c.read_line(20s)) << c.stderr_text();
    EXPECT_EQ(fabric.sa_join_state(G("ff15:5::3"), h2()), 0x1);

    EXPECT_EQ(d.stop(), 0) << d.process().stderr_text();
    EXPECT_TRUE(d.notify().wait_for("STOPPING=1", 1s));
    for (const char *m : {"ff15:5::1", "ff15:5::2", "ff15:5::3"})
        EXPECT_EQ(fabric.sa_join_state(G(m), h2()), std::nullopt) << m << " was left behind at stop";
}

} // namespace
} // namespace mcastd::sim
