// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastctl metrics against the real daemon on the simulated fabric: the exposition passes
// the real `promtool check metrics` (Debian's prometheus package; skipped without it), and its
// figures agree with the SA's own view and with what the test did (memberships by join state,
// groups, joins, the SA Sets, a refusal); --output replaces the file atomically while a reader
// reads it; a daemon that is gone is rdma_mcastd_up 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "sim/daemon_harness.hpp"

namespace mcastd::sim {
namespace {

Gid G(const std::string &s) { return *parse_gid(s); }

// The value of one series ("name{labels}" exactly as written), nullopt when it is not there.
std::optional<double> sample(const std::string &text, const std::string &series) {
    const std::string at = "\n" + series + " ";
    const auto p = text.find(at);
    if (p == std::string::npos)
        return std::nullopt;
    return std::stod(text.substr(p + at.size(), text.find('\n', p + 1) - p - at.size()));
}

std::string port(const std::string &rest = {}) {
    return "{device=\"ibsim0\",port=\"1\"" + (rest.empty() ? "" : "," + rest) + "}";
}

class MetricsSim : public ::testing::Test {
protected:
    Fabric fabric;

    // rdma-mcastctl on the daemon's socket (not attached to the fabric).
    Process &ctl(Daemon &d, std::vector<std::string> args) {
        std::vector<std::string> argv{MCASTD_CTL, "--socket", d.socket().string()};
        argv.insert(argv.end(), args.begin(), args.end());
        procs_.push_back(std::make_unique<Process>(Process::Options{.argv = argv, .cwd = fabric.scratch()}));
        return *procs_.back();
    }
    // A membership held by its own rdma-mcastctl until the test ends; its record once joined.
    void hold(Daemon &d, const std::string &mgid, const std::string &join_state) {
        Process &p = ctl(d, {"--json", "join", "--device", "ibsim0", "--port", "1", "--mgid", mgid, "--join-state",
                             join_state, "--hold"});
        const auto record = p.read_line(20s);
        ASSERT_TRUE(record) << mgid << " " << join_state << ": " << p.stderr_text();
    }
    RunResult metrics(Daemon &d, std::vector<std::string> more = {}) {
        more.insert(more.begin(), "metrics");
        return finish(ctl(d, more), 20s);
    }
    // `promtool check metrics` on `text`: its exit status and what it said.
    static RunResult promtool(const std::filesystem::path &promtool, const std::filesystem::path &scratch,
                              const std::string &text) {
        const auto file = scratch / "check.prom";
        std::ofstream(file) << text;
        Process p(Process::Options{.argv = {promtool.string(), "check", "metrics"}, .stdin_path = file,
                                   .merge_stderr = true});
        return finish(p, 20s);
    }

    std::vector<std::unique_ptr<Process>> procs_;
};

TEST_F(MetricsSim, PromtoolPassesTheExpositionOfRealMembershipsAndItsFiguresAgreeWithTheSa) {
    const auto promtool_path = find_tool("promtool");
    if (!promtool_path)
        GTEST_SKIP() << "promtool is not installed (Debian package prometheus; scripts/deps.sh installs it)";
    Daemon d(fabric, "H2", R"({"limits": {"hello_timeout_ms": 200}})");
    const Gid port_gid = fabric.port_gid("H2");
    // Two full members of A; a full and a send-only member of B (the port holds 0x1 there:
    // FullMember serves send-only-full members); a non-member of C beside its full member.
    hold(d, "ff15:7::a", "full");
    hold(d, "ff15:7::a", "full");
    hold(d, "ff15:7::b", "full");
    hold(d, "ff15:7::b", "sendonly-full");
    hold(d, "ff15:7::c", "full");
    hold(d, "ff15:7::c", "nonmember");
    // A connection that says no hello: the daemon closes it at the deadline, one refusal.
    {
        RawClient silent(d.socket());
        EXPECT_FALSE(silent.receive(5s)) << "closed without a word";
    }

    const RunResult r = metrics(d);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string &text = r.out;
    const RunResult checked = promtool(*promtool_path, fabric.scratch(), text);
    EXPECT_EQ(checked.exit_code, 0) << checked.out << "\n" << text;
    EXPECT_EQ(checked.out, "") << "promtool's lint has something to say";

    // The SA's view of the port: every group the daemon counts, with the bits it holds.
    const std::map<Gid, std::uint8_t> at_sa = fabric.sa_join_states_of(port_gid);
    EXPECT_EQ(sample(text, "rdma_mcastd_port_groups" + port()), static_cast<double>(at_sa.size())) << text;
    for (const char *m : {"ff15:7::a", "ff15:7::b"})
        EXPECT_EQ(at_sa.count(G(m)) ? at_sa.at(G(m)) : 0, 0x1) << m;
    EXPECT_EQ(at_sa.count(G("ff15:7::c")) ? at_sa.at(G("ff15:7::c")) : 0, 0x3) << "full and nonmember";
    // What the test holds, by join state.
    EXPECT_EQ(sample(text, "rdma_mcastd_port_memberships" + port("join_state=\"full\"")), 4);
    EXPECT_EQ(sample(text, "rdma_mcastd_port_memberships" + port("join_state=\"nonmember\"")), 1);
    EXPECT_EQ(sample(text, "rdma_mcastd_port_memberships" + port("join_state=\"sendonly-nonmember\"")), 0);
    EXPECT_EQ(sample(text, "rdma_mcastd_port_memberships" + port("join_state=\"sendonly-full\"")), 1);
    // The link layer as the port reports it (libibumad's word: "IB" on the simulator, where
    // hardware says "InfiniBand"), the same in status.
    const RunResult status = finish(ctl(d, {"--json", "status"}), 20s);
    ASSERT_EQ(status.exit_code, 0) << status.err;
    const std::string link_layer = nlohmann::json::parse(status.out)["ports"][0]["link_layer"];
    EXPECT_EQ(sample(text, "rdma_mcastd_port_info" + port("link_layer=\"" + link_layer + "\",state=\"ACTIVE\"")), 1)
        << text;
    EXPECT_EQ(sample(text, "rdma_mcastd_port_up" + port()), 1);
    EXPECT_EQ(sample(text, "rdma_mcastd_up"), 1);
    EXPECT_EQ(sample(text, "rdma_mcastd_joins_total"), 6);
    EXPECT_EQ(sample(text, "rdma_mcastd_joins_failed_total"), 0);
    // Three new groups by MGID: a Set each (and the probe before it); C's nonmember bit one more.
    EXPECT_EQ(sample(text, "rdma_mcastd_sa_transactions_total{kind=\"set\"}"), 4);
    EXPECT_EQ(sample(text, "rdma_mcastd_sa_transactions_total{kind=\"delete\"}"), 0);
    EXPECT_GE(sample(text, "rdma_mcastd_sa_mads_sent_total").value_or(0), 7);
    // Six holders and this command.
    EXPECT_EQ(sample(text, "rdma_mcastd_clients"), 7);
    EXPECT_EQ(sample(text, "rdma_mcastd_user_usage{uid=\"0\",user=\"root\",resource=\"memberships\"}"), 6);
    EXPECT_EQ(sample(text, "rdma_mcastd_refusals_total{reason=\"limits.hello_timeout_ms\"}"), 1);
    EXPECT_EQ(sample(text, "rdma_mcastd_refusals_total{reason=\"access.rules\"}"), 0);
    EXPECT_EQ(sample(text, "rdma_mcastd_port_rejoins_total" + port()), 0);
    EXPECT_EQ(sample(text, "rdma_mcastd_memberships_lost_total"), 0);
    // Labels of low cardinality only: no MGID, no pid.
    EXPECT_EQ(text.find("ff15:7"), std::string::npos);
    EXPECT_EQ(text.find("pid"), std::string::npos);
}

TEST_F(MetricsSim, OutputReplacesTheFileWholeWhileAReaderReadsItAndAGoneDaemonIsUpZero) {
    auto d = std::make_unique<Daemon>(fabric, "H2");
    hold(*d, "ff15:7::d", "full");
    const auto dir = fabric.scratch() / "node-exporter";
    std::filesystem::create_directory(dir);
    const auto file = dir / "rdma-mcastd.prom";
    ASSERT_EQ(metrics(*d, {"--output", file.string()}).exit_code, 0);
    // A whole file: as many lines as this one (the values change from one run to the next,
    // the series do not), the last one ended.
    const auto lines = [](const std::string &text) { return std::count(text.begin(), text.end(), '\n'); };
    const auto whole_lines = lines(read_text_file(file));
    ASSERT_GT(whole_lines, 100);

    std::atomic<bool> writing{true};
    std::atomic<int> reads{0}, partial{0};
    std::thread reader([&] {
        while (writing) {
            std::ifstream f(file);
            std::stringstream b;
            b << f.rdbuf();
            const std::string text = b.str();
            ++reads;
            if (lines(text) != whole_lines || text.back() != '\n')
                ++partial;
        }
    });
    for (int i = 0; i < 20; ++i) {
        const RunResult r = metrics(*d, {"--output", file.string()});
        EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    writing = false;
    reader.join();
    EXPECT_GT(reads.load(), 20);
    EXPECT_EQ(partial.load(), 0) << "of " << reads.load() << " reads";
    std::vector<std::string> entries;
    for (const auto &e : std::filesystem::directory_iterator(dir))
        entries.push_back(e.path().filename());
    EXPECT_EQ(entries, std::vector<std::string>{"rdma-mcastd.prom"}) << "no temporary file left";
    const std::string text = read_text_file(file);
    EXPECT_EQ(sample(text, "rdma_mcastd_port_memberships" + port("join_state=\"full\"")), 1) << text;
    EXPECT_EQ(std::filesystem::status(file).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                  std::filesystem::perms::group_read | std::filesystem::perms::others_read);

    // The daemon stops: the next run says so in the file, and exits 3.
    const std::filesystem::path socket = d->socket();
    ASSERT_EQ(d->stop(), 0);
    d.reset();
    Process gone(Process::Options{.argv = {MCASTD_CTL, "--socket", socket.string(), "metrics", "--output", file.string()}});
    const RunResult r = finish(gone, 20s);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_EQ(read_text_file(file), "# HELP rdma_mcastd_up 1 when rdma-mcastctl could read the daemon's status, 0 "
                                    "when it could not.\n# TYPE rdma_mcastd_up gauge\nrdma_mcastd_up 0\n");
}

} // namespace
} // namespace mcastd::sim
