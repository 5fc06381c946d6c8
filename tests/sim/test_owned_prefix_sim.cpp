// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Owned MGID prefixes (config groups.owned_prefixes; the named groups' prefix is owned by default)
// against a real OpenSM: a new named group costs one Set at the SA, and a join is refused when
// another agent on the port (a raw umad Set from the test, as the kernel's would be) holds bits
// there, the daemon deleting only the bit its own Set added. Judges: OpenSM's own log of the
// MCMemberRecord requests it handled (what reached the SA, whoever counted), and the SA's view
// of each port's membership (doc/architecture.md §5, "Owned prefixes").
#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "sim/daemon_harness.hpp"
#include "sim/opensm_log.hpp"

namespace mcastd::sim {
namespace {

using json = nlohmann::json;
using Methods = std::vector<std::string>;

// PROTOCOL.md's test vector: the name "job-42" under the default prefix ff15:6e61:6d65::/64.
constexpr const char *kJob42 = "ff15:6e61:6d65:0:6636:89a9:7bcf:99db";
// No audit Gets beside the joins' own MADs.
constexpr const char *kConfig = R"({"monitor": {"audit_per_second": 0}})";

class OwnedPrefixSim : public ::testing::Test {
protected:
    OwnedPrefixSim()
        : fabric(Fabric::Options{.opensm_args = {"-D", "0x0b"}, .opensm_conf = {"force_log_flush TRUE"}}) {}

    Process &ctl(Daemon &d, std::vector<std::string> args) {
        std::vector<std::string> argv{MCASTD_CTL, "--socket", d.socket().string()};
        argv.insert(argv.end(), args.begin(), args.end());
        procs_.push_back(std::make_unique<Process>(Process::Options{.argv = argv, .cwd = fabric.scratch()}));
        return *procs_.back();
    }
    std::size_t log_size() const { return read_text_file(fabric.opensm_log_path()).size(); }
    // The MCMemberRecord requests OpenSM handled for `mgid` since its log was `from` bytes long.
    Methods sa_methods(const Gid &mgid, std::size_t from) const {
        const std::string log = read_text_file(fabric.opensm_log_path());
        Methods out;
        for (const SaRequest &r : sa_requests(log.substr(std::min(from, log.size()))))
            if (r.mgid == mgid)
                out.push_back(r.method);
        return out;
    }
    void raw_join(const std::string &node, const char *mgid, const char *bits) {
        // The create values of groups.create's defaults, as every daemon of the fabric would create it.
        const RunResult r = fabric.run_on(node, {MCASTD_SIM_JOIN, "join", mgid, bits, "qkey=0x01234567"});
        ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }

    Fabric fabric;
    std::vector<std::unique_ptr<Process>> procs_;
};

// A join by name of a group nobody has created: one Set reaches the SA, no Get, and the SA holds
// the port's FullMember. An explicit MGID outside the prefix still costs the probe Get first.
TEST_F(OwnedPrefixSim, ANewNamedGroupIsOneSetAtTheSa) {
    Daemon d(fabric, "H2", kConfig);
    const Gid m = *parse_gid(kJob42), h2 = fabric.port_gid("H2");
    std::size_t from = log_size();
    Process &a = ctl(d, {"--json", "join", "--device", "ibsim0", "--port", "1", "--name", "job-42", "--hold"});
    const auto line = a.read_line(20s);
    ASSERT_TRUE(line) << a.stderr_text();
    EXPECT_EQ(json::parse(*line)["mgid"], kJob42);
    // OpenSM logs a request before it answers. Read first: the judge's own Get is logged too.
    EXPECT_EQ(sa_methods(m, from), Methods{"Set"});
    EXPECT_EQ(fabric.sa_join_state(m, h2), 0x1);

    const Gid outside = *parse_gid("ff15:77::1");
    from = log_size();
    Process &b = ctl(d, {"--json", "join", "--device", "ibsim0", "--port", "1", "--mgid", "ff15:77::1", "--hold"});
    ASSERT_TRUE(b.read_line(20s)) << b.stderr_text();
    EXPECT_EQ(sa_methods(outside, from), (Methods{"Get", "Set"}));
    EXPECT_EQ(fabric.sa_join_state(outside, h2), 0x1);

    a.signal(SIGTERM);
    b.signal(SIGTERM);
    EXPECT_TRUE(fabric.wait_sa_join_state(m, h2, std::nullopt, 5s));
    EXPECT_TRUE(fabric.wait_sa_join_state(outside, h2, std::nullopt, 5s));
}

// The promise broken: H3 created the name's group and a raw umad program on H2 holds NonMember
// in it. The daemon's Set answers with 0x3 where it asked 0x1: the join is refused naming the
// MGID and the other agent's bits, the daemon deletes its 0x1 again, and the SA still holds the
// other agent's 0x2 and H3's 0x1.
TEST_F(OwnedPrefixSim, AnotherAgentsBitsRefuseTheJoinAndOnlyTheDaemonsBitIsDeleted) {
    Daemon d(fabric, "H2", kConfig);
    const Gid m = *parse_gid(kJob42), h2 = fabric.port_gid("H2"), h3 = fabric.port_gid("H3");
    raw_join("H3", kJob42, "1");
    raw_join("H2", kJob42, "2");
    ASSERT_EQ(fabric.sa_join_state(m, h2), 0x2);
    const std::size_t from = log_size();
    Process &c = ctl(d, {"join", "--device", "ibsim0", "--port", "1", "--name", "job-42"});
    EXPECT_NE(c.wait(20s), 0);
    const std::string err = c.stderr_text();
    EXPECT_NE(err.find("conflict"), std::string::npos) << err;
    EXPECT_NE(err.find(kJob42), std::string::npos) << err;
    EXPECT_NE(err.find("another agent on this port holds nonmember"), std::string::npos) << err;
    EXPECT_TRUE(poll_until(5s, [&] { return sa_methods(m, from).size() >= 2; }));
    EXPECT_EQ(sa_methods(m, from), (Methods{"Set", "Delete"}));
    EXPECT_EQ(fabric.sa_join_state(m, h2), 0x2) << "the other agent's NonMember stays";
    EXPECT_EQ(fabric.sa_join_state(m, h3), 0x1);
}

} // namespace
} // namespace mcastd::sim
