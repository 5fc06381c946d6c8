// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Issue 28: rdma-mcastd-metrics.service and .timer as shipped, under the lab's systemd, beside
// the daemon on the simulated fabric. Without node_exporter's textfile directory the service
// is skipped, at no cost and with no failure; with it (owned by another user, as Debian's
// prometheus-node-exporter makes it) the hardened service writes the metrics there, whole and
// readable by all; the timer fires it again within its 30 s; a daemon that is gone leaves
// rdma_mcastd_up 0 and no failed unit.
//
// The lab's root is an overlay (it makes the directory); the units are the shipped ones,
// configured from their templates for the built daemon and rdma-mcastctl, with the lab's
// drop-ins: the fabric stands in for an RDMA device, and the build tree is bound in (under
// PrivateTmp= a checkout in /tmp would be hidden).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>

#include "sanitized.hpp"
#include "system/lab/daemon_unit.hpp"
#include "system/lab/lab.hpp"

namespace mcastd::lab {
namespace {

using namespace std::chrono_literals;
using sim::Fabric;
using sim::Process;
using sim::read_text_file;

constexpr const char *kMetrics = "rdma-mcastd-metrics.service";
constexpr const char *kTimer = "rdma-mcastd-metrics.timer";
constexpr const char *kPin = "metrics-lab-pin.service";
constexpr const char *kDir = "/var/lib/prometheus/node-exporter";
constexpr const char *kFile = "/var/lib/prometheus/node-exporter/rdma-mcastd.prom";

// A sanitized rdma-mcastctl under the unit's SystemCallFilter= (tests/sanitized.hpp).
const std::string kSanitizerEnvironment =
    testing_build::kSanitized
        ? "Environment=ASAN_OPTIONS=" + std::string(testing_build::kAsanOptionsUnderSyscallFilter) + "\n"
        : "";

class MetricsLab : public ::testing::Test {
protected:
    void SetUp() override {
        if (auto why = Lab::unavailable(Lab::Root::overlay))
            GTEST_SKIP() << *why;
        fabric = std::make_unique<Fabric>();
        lab = std::make_unique<Lab>(Lab::Options{.unit_dir = MCASTD_LAB_UNITS, .root = Lab::Root::overlay});
        install_daemon_unit(*lab, *fabric,
                            {.node = "H2", .daemon = MCASTD_DAEMON, .config_json = R"({"dbus":{"enabled":false}})"});
        lab->write_unit("rdma-mcastd-metrics.service.d/lab.conf",
                        "# The simulated fabric is the lab's RDMA device (tests/system/lab/test_metrics_lab.cpp).\n"
                        // An empty assignment resets every condition: the directory's comes back.
                        "[Unit]\nConditionDirectoryNotEmpty=\nConditionPathIsDirectory=" + std::string(kDir) +
                            "\n[Service]\nBindReadOnlyPaths=" +
                            std::string(MCASTD_BUILD_DIR) + "\n" + kSanitizerEnvironment);
        // systemd unloads an inactive unit nothing refers to, and with it the ConditionResult
        // and ExecMainStatus of its last run, which the test reads: a unit that stays active
        // and orders itself after the service (After= is a reference) keeps it loaded.
        lab->write_unit(kPin, "[Unit]\nAfter=" + std::string(kMetrics) +
                                  "\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n");
        lab->daemon_reload();
        ASSERT_EQ(lab->systemctl({"start", kPin}).exit_code, 0) << lab->diagnostics();
        // The socket's group, as the package's sysusers snippet makes it (the overlay keeps it
        // from the host).
        if (lab->run({"getent", "group", "rdma-mcast"}).exit_code != 0) {
            const RunResult g = lab->run({"groupadd", "--system", "rdma-mcast"});
            ASSERT_EQ(g.exit_code, 0) << g.out << g.err;
        }
        ASSERT_EQ(lab->systemctl({"start", kSocketUnit}).exit_code, 0) << lab->diagnostics();
    }
    void TearDown() override {
        holder.reset();
        if (lab) {
            EXPECT_EQ(lab->teardown(), ""); // checks (and removes) the canary in the host's /tmp
        }
        lab.reset();
        fabric.reset();
    }

    // Runs the metrics service once, as the timer does; the service's Result.
    std::string run_metrics() {
        const RunResult r = lab->systemctl({"start", kMetrics});
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err << lab->journal(kMetrics);
        return lab->show(kMetrics, "Result");
    }

    std::unique_ptr<Fabric> fabric;
    std::unique_ptr<Lab> lab;
    std::unique_ptr<Process> holder;
};

TEST_F(MetricsLab, SkippedWithoutNodeExportersDirectoryWrittenWithItByTheTimerToo) {
    // No textfile directory: the condition skips the run.
    EXPECT_EQ(run_metrics(), "success");
    EXPECT_EQ(lab->show(kMetrics, "ConditionResult"), "no");
    EXPECT_EQ(lab->show(kMetrics, "ExecMainPID"), "0") << "rdma-mcastctl ran";

    // node_exporter's directory, its user's (the service needs CAP_DAC_OVERRIDE to write there).
    for (const std::vector<std::string> &argv :
         {std::vector<std::string>{"mkdir", "-p", kDir}, {"chown", "nobody:nogroup", kDir}, {"chmod", "0755", kDir}}) {
        const RunResult r = lab->run(argv);
        ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }
    // A membership, whose first connection starts the daemon through its socket.
    holder = std::make_unique<Process>(
        lab->spawn({MCASTD_CTL, "join", "--device", "ibsim0", "--port", "1", "--mgid", "ff15::28:1", "--hold"}));
    ASSERT_TRUE(holder->read_line(30s)) << holder->stderr_text() << lab->journal(kService);

    EXPECT_EQ(run_metrics(), "success") << lab->journal(kMetrics);
    EXPECT_EQ(lab->show(kMetrics, "ConditionResult"), "yes");
    const auto file = lab->host_path(kFile);
    const std::string text = read_text_file(file);
    EXPECT_NE(text.find("\nrdma_mcastd_up 1\n"), std::string::npos) << text << lab->journal(kMetrics);
    EXPECT_NE(text.find("\nrdma_mcastd_port_memberships{device=\"ibsim0\",port=\"1\",join_state=\"full\"} 1\n"),
              std::string::npos)
        << text;
    struct stat st{};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0644u);
    std::vector<std::string> entries;
    for (const auto &e : std::filesystem::directory_iterator(lab->host_path(kDir)))
        entries.push_back(e.path().filename());
    EXPECT_EQ(entries, std::vector<std::string>{"rdma-mcastd.prom"});
    if (const auto promtool = sim::find_tool("promtool")) {
        const RunResult checked = host_run({"sh", "-c", promtool->string() + " check metrics < " + file.string()});
        EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
    }

    // The timer runs it again within its 30 s: the file is replaced (another inode).
    ASSERT_EQ(lab->systemctl({"start", kTimer}).exit_code, 0) << lab->journal(kTimer);
    EXPECT_EQ(lab->show(kTimer, "ActiveState"), "active");
    const auto first = st.st_ino;
    EXPECT_TRUE(sim::poll_until(40s, [&] { return ::stat(file.c_str(), &st) == 0 && st.st_ino != first; }))
        << "the timer did not run the service in 40 s\n" << lab->journal(kMetrics);
    ASSERT_EQ(lab->systemctl({"stop", kTimer}).exit_code, 0);
    // The file is renamed into place before rdma-mcastctl exits, so the timer's run may still
    // be active here; a start joins a run in progress, so this one waits for it, and the start
    // below (the daemon gone) makes a run of its own.
    EXPECT_EQ(run_metrics(), "success") << lab->journal(kMetrics);

    // The daemon is gone: the file says so, and the unit did not fail.
    ASSERT_EQ(lab->systemctl({"stop", kSocketUnit, kService}).exit_code, 0);
    EXPECT_EQ(run_metrics(), "success") << lab->journal(kMetrics);
    EXPECT_EQ(lab->show(kMetrics, "ExecMainStatus"), "3");
    EXPECT_EQ(read_text_file(file), "# HELP rdma_mcastd_up 1 when rdma-mcastctl could read the daemon's status, 0 when it "
                               "could not.\n# TYPE rdma_mcastd_up gauge\nrdma_mcastd_up 0\n");
    for (const std::string &unit : lab->failed_units())
        ADD_FAILURE() << unit << " failed:\n" << lab->journal(unit);
}

} // namespace
} // namespace mcastd::lab
