// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The membership engine against a real OpenSM on ibsim, through the real SA client and
// libibumad transport (mcastd-engine-driver on a simulated node). Every assertion about
// membership is checked in the SA's own view (saquery), not in what the engine reports.
#include <gtest/gtest.h>

#include <array>

#include <nlohmann/json.hpp>

#include "sim/fabric.hpp"

namespace mcastd::sim {
namespace {

using json = nlohmann::json;

// One engine driver attached to a node, spoken to in its line protocol.
class Driver {
public:
    Driver(Fabric &f, const std::string &node, std::vector<std::string> args = {}) {
        std::vector<std::string> argv{MCASTD_ENGINE_DRIVER};
        argv.insert(argv.end(), args.begin(), args.end());
        proc_ = &f.spawn_on(node, argv, {}, /*stdin_pipe=*/true);
        auto line = proc_->read_line(30s);
        if (!line)
            throw std::runtime_error("driver on " + node + " did not start: " + proc_->stderr_text());
        ready = json::parse(*line);
    }

    // Sends "<cmd> <tag> <args>" and returns the answer carrying that tag.
    json call(const std::string &cmd, const std::string &args = {}, std::chrono::milliseconds timeout = 30s) {
        const std::string tag = "t" + std::to_string(++n_);
        proc_->write_stdin(cmd + " " + tag + " " + args + "\n");
        const auto end = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < end) {
            auto line = proc_->read_line(std::chrono::duration_cast<std::chrono::milliseconds>(
                end - std::chrono::steady_clock::now()));
            if (!line)
                break;
            json j = json::parse(*line);
            if (j.value("tag", "") == tag)
                return j;
        }
        throw std::runtime_error("no answer to '" + cmd + " " + args + "': " + proc_->stderr_text());
    }

    json join(const std::string &args) { return call("join", args); }
    void idle() { ASSERT_TRUE(call("idle").value("ok", false)); }
    Process &process() { return *proc_; }
    json ready;

private:
    Process *proc_ = nullptr;
    int n_ = 0;
};

Gid G(const std::string &s) { return *parse_gid(s); }

class EngineSim : public ::testing::Test {
protected:
    Fabric fabric;
};

TEST_F(EngineSim, CreatesByExplicitMgidAndByMgid0AndASecondHostJoins) {
    Driver h2(fabric, "H2"), h3(fabric, "H3");
    const Gid m = G("ff15:1234::1");
    json a = h2.join("mgid=ff15:1234::1 state=full");
    ASSERT_TRUE(a["ok"]) << a.dump();
    EXPECT_EQ(fabric.sa_join_state(m, fabric.port_gid("H2")), 0x1);
    auto g = fabric.sa_group(m);
    ASSERT_TRUE(g);
    EXPECT_EQ(a["record"]["mlid"], g->mlid) << "the record the client got is the SA's";
    EXPECT_EQ(a["record"]["qkey"], g->qkey);
    EXPECT_EQ(a["record"]["mtu"], g->mtu & 0x3f);

    json b = h3.join("mgid=ff15:1234::1 state=full");
    ASSERT_TRUE(b["ok"]) << b.dump();
    EXPECT_EQ(b["record"]["mlid"], a["record"]["mlid"]);
    EXPECT_EQ(fabric.sa_join_state(m, fabric.port_gid("H3")), 0x1);
    EXPECT_EQ(fabric.sa_join_state(m, fabric.port_gid("H2")), 0x1);

    json z = h2.join("mgid=0 state=full");
    ASSERT_TRUE(z["ok"]) << z.dump();
    const Gid assigned = G(z["record"]["mgid"]);
    EXPECT_EQ(mgid_signature(assigned), 0xa01b) << "an SA-assigned MGID";
    EXPECT_EQ(mgid_scope(assigned), 0x5) << "site-local, so it can be re-created";
    EXPECT_EQ(fabric.sa_join_state(assigned, fabric.port_gid("H2")), 0x1);
    json z2 = h2.join("mgid=0 state=full client=2");
    ASSERT_TRUE(z2["ok"]);
    EXPECT_NE(z2["record"]["mgid"], z["record"]["mgid"]) << "every MGID-0 join creates a group";
}

TEST_F(EngineSim, DiscoversThePortWithItsLiveMtu) {
    Driver h2(fabric, "H2");
    json p = h2.call("ports")["ports"][0];
    EXPECT_EQ(p["device"], "ibsim0");
    EXPECT_EQ(p["port"], 1);
    EXPECT_EQ(p["lid"], fabric.lid("H2"));
    EXPECT_EQ(p["state"], 4) << "ACTIVE";
    EXPECT_EQ(p["port_gid"], format_gid(fabric.port_gid("H2")));
    // ibsim ports run at MTU 2048 (doc/sa-multicast.md §10), read here through the SMP.
    EXPECT_EQ(p["mtu"], 2048);
    EXPECT_EQ(p["sm_lid"], fabric.lid("H1")) << "OpenSM runs on H1";
}

TEST_F(EngineSim, TwoMembersOnOnePortShareOneSaMembership) {
    Driver h2(fabric, "H2");
    const Gid m = G("ff15:1234::2");
    const Gid port = fabric.port_gid("H2");
    json a = h2.join("mgid=ff15:1234::2 client=1");
    json b = h2.join("mgid=ff15:1234::2 client=2");
    ASSERT_TRUE(a["ok"] && b["ok"]);
    json st = h2.call("stats");
    EXPECT_EQ(st["engine"]["sa_sets"], 1) << st.dump();
    EXPECT_EQ(fabric.sa_join_state(m, port), 0x1);

    ASSERT_TRUE(h2.call("leave", "client=1 id=" + a["id"].dump())["ok"]);
    h2.idle();
    EXPECT_EQ(fabric.sa_join_state(m, port), 0x1) << "the first leave keeps the membership";
    ASSERT_TRUE(h2.call("leave", "client=2 id=" + b["id"].dump())["ok"]);
    h2.idle();
    EXPECT_EQ(fabric.sa_join_state(m, port), std::nullopt) << "the last leave removes it";
    EXPECT_FALSE(fabric.sa_group(m)) << "and with its only member gone, the group";
}

TEST_F(EngineSim, EachJoinStateLandsAtTheSaAsAsked) {
    Driver h2(fabric, "H2"), h3(fabric, "H3");
    const Gid port = fabric.port_gid("H2");
    // NonMember and SendOnlyNonMember cannot create a group: H3 is the full member.
    ASSERT_TRUE(h3.join("mgid=ff15:5::2")["ok"]);
    ASSERT_TRUE(h3.join("mgid=ff15:5::4")["ok"]);
    const std::pair<const char *, std::uint8_t> cases[] = {
        {"mgid=ff15:5::1 state=full", 0x1},
        {"mgid=ff15:5::2 state=nonmember", 0x2},
        {"mgid=ff15:5::4 state=sendonly-nonmember", 0x4},
        {"mgid=ff15:5::8 state=sendonly-full", 0x8},
    };
    for (const auto &[args, bits] : cases) {
        json r = h2.join(args);
        ASSERT_TRUE(r["ok"]) << args << ": " << r.dump();
        EXPECT_EQ(r["record"]["join_state"], bits);
        const std::string mgid = std::string(args).substr(5, std::string(args).find(' ') - 5);
        EXPECT_EQ(fabric.sa_join_state(G(mgid), port), bits) << args;
    }
}

TEST_F(EngineSim, SaErrorsSurfaceByNameAndConflictsAreRefusedLocally) {
    Driver h2(fabric, "H2", {"--allow-ipoib"});
    // An IPoIB-signature group must carry the broadcast group's Q_Key (0x0B1B).
    json bad = h2.join("mgid=ff12:601b:ffff::5:1 qkey=0x1234");
    EXPECT_FALSE(bad["ok"]);
    EXPECT_EQ(bad["error"], "sa-error") << bad.dump();
    EXPECT_EQ(bad["sa_status_name"], "ERR_REQ_INVALID") << bad.dump();
    EXPECT_EQ(fabric.sa_join_state(G("ff12:601b:ffff::5:1"), fabric.port_gid("H2")), std::nullopt);

    ASSERT_TRUE(h2.join("mgid=ff15:77::1 qkey=0x1234 client=1")["ok"]);
    const json before = h2.call("stats");
    json clash = h2.join("mgid=ff15:77::1 qkey=0x4321 client=2");
    EXPECT_EQ(clash["error"], "conflict") << clash.dump();
    EXPECT_NE(clash["message"].get<std::string>().find("0x00001234"), std::string::npos) << clash.dump();
    EXPECT_EQ(h2.call("stats")["sa"]["sent"], before["sa"]["sent"]) << "refused without a MAD";

    // Without the config switch, kernel signatures are refused before the SA is asked.
    Driver strict(fabric, "H3");
    json denied = strict.join("mgid=ff12:401b:ffff::1");
    EXPECT_EQ(denied["error"], "denied") << denied.dump();
}

TEST_F(EngineSim, JoinsCompleteWithHalfThePacketsLost) {
    // Responses to H2 are dropped half of the time; the SA client retries.
    Driver h2(fabric, "H2", {"--sa-timeout-ms", "20", "--sa-max-timeout-ms", "80", "--sa-tries", "40"});
    fabric.console("Error \"H2\"[1] 50");
    json r = h2.call("bulk", "count=30 prefix=ff15:50::", 120s);
    ASSERT_TRUE(r["ok"]) << r.dump();
    EXPECT_EQ(r["joined"], 30);
    json st = h2.call("stats");
    EXPECT_GT(st["sa"]["retransmits"].get<int>(), 10) << "loss was really injected: " << st.dump();
    fabric.console("Error \"H2\"[1] 0");
    for (int i : {1, 7, 30}) {
        char m[32];
        std::snprintf(m, sizeof m, "ff15:50::%x", i);
        EXPECT_EQ(fabric.sa_join_state(G(m), fabric.port_gid("H2")), 0x1) << m;
    }
    // Leaving under loss leaves nothing behind either.
    fabric.console("Error \"H2\"[1] 50");
    ASSERT_TRUE(h2.call("bulk-leave")["ok"]);
    h2.call("idle", "", 120s);
    fabric.console("Error \"H2\"[1] 0");
    for (int i : {1, 7, 30}) {
        char m[32];
        std::snprintf(m, sizeof m, "ff15:50::%x", i);
        EXPECT_EQ(fabric.sa_join_state(G(m), fabric.port_gid("H2")), std::nullopt) << m;
    }
}

TEST_F(EngineSim, WithOpenSmStoppedAJoinTimesOutWithinTheBound) {
    Driver h2(fabric, "H2", {"--sa-timeout-ms", "100", "--sa-tries", "4"});
    const auto bound = std::chrono::milliseconds(h2.ready["sa_timeout_bound_ms"].get<long>());
    EXPECT_EQ(bound, 1500ms) << "100 + 200 + 400 + 800";
    fabric.stop_opensm();
    const auto t0 = std::chrono::steady_clock::now();
    json r = h2.join("mgid=ff15:1234::9");
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(r["error"], "sa-timeout") << r.dump();
    EXPECT_NE(r["message"].get<std::string>().find("unreachable"), std::string::npos) << r.dump();
    EXPECT_GE(took, bound);
    EXPECT_LE(took, bound + 1s);
    std::printf("[ figure ] join with OpenSM stopped failed after %.3f s (bound %.3f s)\n",
                std::chrono::duration<double>(took).count(), std::chrono::duration<double>(bound).count());
    // Nothing hangs: the driver answers at once.
    const auto t1 = std::chrono::steady_clock::now();
    EXPECT_TRUE(h2.call("stats")["ok"]);
    EXPECT_LT(std::chrono::steady_clock::now() - t1, 1s);
}

// The SA requests the engine sent so far: {Gets, Sets, Deletes}.
std::array<double, 3> sa_requests(Driver &d) {
    const json e = d.call("stats")["engine"];
    return {e["sa_gets"].get<double>(), e["sa_sets"].get<double>(), e["sa_deletes"].get<double>()};
}

// The rule the probe Get is for, against OpenSM: another agent on H2's port (a raw umad
// program, as the kernel would be) holds FullMember in a group. The daemon's member is served by
// that bit (probed with Gets, no Set), and its leave deletes nothing.
TEST_F(EngineSim, AnotherAgentsBitOnThePortIsProbedAndNeverDeleted) {
    Driver h2(fabric, "H2");
    const Gid m = G("ff15:1234::77");
    const Gid port = fabric.port_gid("H2");
    const RunResult agent = fabric.run_on("H2", {MCASTD_SIM_JOIN, "join", "ff15:1234::77", "1"});
    ASSERT_EQ(agent.exit_code, 0) << agent.out << agent.err;
    ASSERT_EQ(fabric.sa_join_state(m, port), 0x1);
    const auto before = sa_requests(h2);
    json a = h2.join("mgid=ff15:1234::77 state=full");
    ASSERT_TRUE(a["ok"]) << a.dump();
    const auto joined = sa_requests(h2);
    EXPECT_EQ(joined[1] - before[1], 0) << "no Set: the other agent's FullMember serves the member";
    EXPECT_EQ(joined[0] - before[0], 3) << "Get(MGID), Get(MGID|PortGID), the exact Get of 0x1";
    ASSERT_TRUE(h2.call("leave", "id=" + std::to_string(a["id"].get<std::uint64_t>()))["ok"]);
    h2.idle();
    EXPECT_EQ(sa_requests(h2)[2] - before[2], 0) << "the leave deleted another agent's bit";
    EXPECT_EQ(fabric.sa_join_state(m, port), 0x1);
}

TEST_F(EngineSim, SaJoinsPerSecond) {
    Driver h2(fabric, "H2", {"--no-audit"}); // an audit's Get would be counted too
    // 1000 distinct new groups at once (the simulated MLID pool holds 1022).
    const auto before = sa_requests(h2);
    json r = h2.call("bulk", "count=1000 prefix=ff15:99::", 120s);
    ASSERT_TRUE(r["ok"]) << r.dump();
    const auto after = sa_requests(h2);
    const double rate = r["per_second"];
    std::printf("[ figure ] 1000 new-group joins (explicit MGID) in %.3f s: %.0f joins/s, %.2f Gets + %.2f Sets "
                "per join\n",
                r["seconds"].get<double>(), rate, (after[0] - before[0]) / 1000.0, (after[1] - before[1]) / 1000.0);
    RecordProperty("joins_per_second", static_cast<int>(rate));
    // An explicit MGID needs its probe Get (is the group there, and does another agent on this
    // port hold bits in it?) before the Set that creates it: doc/architecture.md §5.
    EXPECT_EQ(after[0] - before[0], 1000);
    EXPECT_EQ(after[1] - before[1], 1000);
    EXPECT_EQ(fabric.sa_join_state(G("ff15:99::3e8"), fabric.port_gid("H2")), 0x1);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(h2.call("bulk-leave")["ok"]);
    h2.idle();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ figure ] 1000 leaves in %.3f s: %.0f leaves/s\n", s, 1000 / s);
    EXPECT_EQ(fabric.sa_join_state(G("ff15:99::3e8"), fabric.port_gid("H2")), std::nullopt);

    // 1000 MGID-0 joins: the SA creates each group, so nobody can hold bits in it yet and the
    // Set goes out with no probe.
    const auto before0 = sa_requests(h2);
    json z = h2.call("bulk", "count=1000 prefix=0", 120s);
    ASSERT_TRUE(z["ok"]) << z.dump();
    const auto after0 = sa_requests(h2);
    std::printf("[ figure ] 1000 new-group joins (MGID 0) in %.3f s: %.0f joins/s, %.2f Gets + %.2f Sets per join\n",
                z["seconds"].get<double>(), z["per_second"].get<double>(), (after0[0] - before0[0]) / 1000.0,
                (after0[1] - before0[1]) / 1000.0);
    EXPECT_EQ(after0[0] - before0[0], 0);
    EXPECT_EQ(after0[1] - before0[1], 1000);
    ASSERT_TRUE(h2.call("bulk-leave")["ok"]);
    h2.idle();
}

} // namespace
} // namespace mcastd::sim
