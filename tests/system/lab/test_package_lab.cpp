// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Issue 17: the Debian packages (scripts/package), installed and used under a real systemd.
//
// The lab boots on an overlay root (Lab::Root::overlay), so dpkg writes only the lab's tmpfs
// layer. The one thing the lab adds to what the package installs is the fabric: a drop-in
// that attaches the packaged daemon to a node of the simulated fabric through umad2sim
// (daemon_unit.hpp), and a watchdog of seconds instead of the shipped 30 s so the frozen
// daemon is killed within the test's time. The user who joins is made in the lab (its /etc is
// the overlay's), in the group the package's sysusers snippet creates. The SA is the judge of
// every membership.
//
// The .debs come from MCASTD_DEB_DIR (scripts/test builds them with scripts/package and sets
// it); without it the test skips, saying so. The upgrade installs the same packages repacked
// with a higher version (dpkg-deb -R/-b on the host, in the test's scratch directory): the
// maintainer scripts run exactly as for a new build.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "system/lab/daemon_unit.hpp"
#include "system/lab/lab.hpp"

namespace mcastd::lab {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using sim::Fabric;
using sim::Process;

constexpr const char *kNode = "H2";
constexpr const char *kUser = "mcastuser";
constexpr const char *kMgidA = "ff15::7a:1"; // the user's, held from activation to upgrade
constexpr const char *kMgidB = "ff15::7a:2"; // joined after the bad reload and the watchdog
constexpr const char *kMgidC = "ff15::7a:3"; // held across the upgrade, left by the removal
constexpr const char *kMetricsTimer = "rdma-mcastd-metrics.timer";

long long ms(Clock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

std::string said(const RunResult &r) { return "exit " + std::to_string(r.exit_code) + ": " + r.out + r.err; }

std::string slurp(const fs::path &p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::optional<fs::path> find_deb(const fs::path &dir, const std::string &package) {
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.starts_with(package + "_") && name.ends_with(".deb"))
            return e.path();
    }
    return std::nullopt;
}

// The same package with a higher version ("+labupgrade1" appended), built into `out`.
fs::path repack_newer(const fs::path &deb, const fs::path &out) {
    const fs::path tree = out / (deb.stem().string() + ".tree");
    RunResult r = host_run({"dpkg-deb", "-R", deb.string(), tree.string()});
    if (r.exit_code != 0)
        throw std::runtime_error("dpkg-deb -R " + deb.string() + ": " + said(r));
    const fs::path control = tree / "DEBIAN" / "control";
    std::string text = slurp(control);
    // The version, and the exact versions the packages require of each other.
    const std::regex version(R"(^Version: (\S+)$)", std::regex::multiline);
    std::smatch m;
    if (!std::regex_search(text, m, version))
        throw std::runtime_error(control.string() + " has no Version");
    const std::string old_version = m[1], new_version = old_version + "+labupgrade1";
    text = std::regex_replace(text, std::regex("\\b" + std::regex_replace(old_version, std::regex(R"([.+])"), R"(\$&)") + "\\b"),
                              new_version);
    std::ofstream(control) << text;
    const fs::path newer = out / (deb.stem().string() + "+labupgrade1.deb");
    r = host_run({"dpkg-deb", "--root-owner-group", "-b", tree.string(), newer.string()});
    if (r.exit_code != 0)
        throw std::runtime_error("dpkg-deb -b " + tree.string() + ": " + said(r));
    return newer;
}

class PackageLab : public ::testing::Test {
protected:
    void SetUp() override {
        if (auto why = Lab::unavailable(Lab::Root::overlay))
            GTEST_SKIP() << *why;
        const char *dir = std::getenv("MCASTD_DEB_DIR");
        if (!dir || !*dir)
            GTEST_SKIP() << "MCASTD_DEB_DIR is not set: build the packages with scripts/package "
                            "and point it at them (scripts/test does both)";
        for (const char *p : {"rdma-mcastd", "librdmamcast1"}) {
            auto deb = find_deb(dir, p);
            ASSERT_TRUE(deb) << "no " << p << "_*.deb in MCASTD_DEB_DIR=" << dir;
            debs.push_back(*deb);
        }
        scratch = fs::path(::testing::TempDir()) / ("mcastd-package-lab." + std::to_string(::getpid()));
        fs::remove_all(scratch);
        fs::create_directories(scratch);
        fabric = std::make_unique<Fabric>();
        port = fabric->port_gid(kNode);
        lab = std::make_unique<Lab>(Lab::Options{.root = Lab::Root::overlay});
    }

    void TearDown() override {
        holders.clear(); // nsenter on the host; the clients go down with the lab
        if (lab) {
            EXPECT_EQ(lab->teardown(), ""); // checks (and removes) the canary in the host's /tmp
        }
        lab.reset();
        fabric.reset();
        std::error_code ec;
        fs::remove_all(scratch, ec);
    }

    // Copies the .debs into the lab's /tmp and installs them with dpkg -i.
    RunResult install(const std::vector<fs::path> &packages) {
        std::vector<std::string> argv{"dpkg", "-i"};
        for (const auto &deb : packages) {
            const std::string in_lab = "/tmp/" + deb.filename().string();
            fs::copy_file(deb, lab->host_path(in_lab), fs::copy_options::overwrite_existing);
            argv.push_back(in_lab);
        }
        return lab->run(argv, 120s);
    }

    std::vector<std::string> as_user(std::vector<std::string> argv) const {
        std::vector<std::string> full{"env", "-u", "RDMA_MCASTD_SOCKET", "setpriv", "--reuid=" + std::string(kUser),
                                      "--regid=" + std::string(kUser), "--init-groups", "--"};
        full.insert(full.end(), argv.begin(), argv.end());
        return full;
    }

    static std::vector<std::string> join(const char *mgid, bool hold) {
        std::vector<std::string> a{"rdma-mcastctl", "join", "--device", "ibsim0", "--port", "1", "--mgid", mgid};
        if (hold)
            a.push_back("--hold");
        return a;
    }

    // A held join as kUser: the record it printed.
    std::string hold(const char *mgid) {
        holders.push_back(std::make_unique<Process>(lab->spawn(as_user(join(mgid, true)))));
        const auto record = holders.back()->read_line(30s);
        if (!record)
            ADD_FAILURE() << "the held join of " << mgid << " printed nothing: " << holders.back()->stderr_text()
                          << "\n" << lab->journal(kService);
        return record.value_or("");
    }

    bool at_sa(const char *mgid, std::optional<std::uint8_t> bits) {
        return fabric->wait_sa_join_state(*parse_gid(mgid), port, bits, 15s);
    }

    std::string main_pid() { return lab->show(kService, "MainPID"); }

    // Polls `ok` (a readiness check on the lab's state) for up to `timeout`.
    template <class F> bool until(F ok, std::chrono::milliseconds timeout) {
        const auto deadline = Clock::now() + timeout;
        while (!ok()) {
            if (Clock::now() > deadline)
                return false;
            std::this_thread::sleep_for(100ms);
        }
        return true;
    }

    std::vector<fs::path> debs;
    fs::path scratch;
    std::unique_ptr<Fabric> fabric;
    Gid port{};
    std::unique_ptr<Lab> lab;
    std::vector<std::unique_ptr<Process>> holders;
};

TEST_F(PackageLab, InstallUseReloadWatchdogUpgradeRemoveUnderSystemd) {
    const auto t0 = Clock::now();
    // The fabric first (a drop-in may name a unit that does not exist yet), then the packages.
    install_daemon_unit(*lab, *fabric,
                        {.node = kNode, .extra_service = "WatchdogSec=3s\nTimeoutAbortSec=2s\n"});
    lab->daemon_reload();
    // A container image's policy-rc.d (exit 101: start nothing) would keep the maintainer
    // scripts from starting the units; a Debian machine has none. The lab's copy goes.
    const RunResult policy = lab->run({"rm", "-f", "/usr/sbin/policy-rc.d"});
    ASSERT_EQ(policy.exit_code, 0) << said(policy);
    const RunResult installed = install(debs);
    ASSERT_EQ(installed.exit_code, 0) << said(installed) << lab->diagnostics();
    std::printf("[ figures ] dpkg -i: %lld ms\n", ms(Clock::now() - t0));

    // dpkg -i enabled and started the socket; the group exists; the catalog was updated.
    EXPECT_EQ(lab->systemctl({"is-enabled", kSocketUnit}).out, "enabled\n");
    EXPECT_EQ(lab->show(kSocketUnit, "ActiveState"), "active") << lab->diagnostics();
    const RunResult group = lab->run({"getent", "group", "rdma-mcast"});
    ASSERT_EQ(group.exit_code, 0) << "the package made no group rdma-mcast: " << said(group);
    const RunResult catalog = lab->run({"journalctl", "--list-catalog"});
    EXPECT_NE(catalog.out.find("rdma-mcastd"), std::string::npos) << "the catalog is not in the journal's database";
    // The metrics' timer too (its service then skips each run: the lab has no node_exporter).
    EXPECT_EQ(lab->systemctl({"is-enabled", kMetricsTimer}).out, "enabled\n");
    EXPECT_EQ(lab->show(kMetricsTimer, "ActiveState"), "active") << lab->journal(kMetricsTimer);

    // The service waits for its first client.
    if (lab->show(kService, "ActiveState") != "inactive") {
        ASSERT_EQ(lab->systemctl({"stop", kService}).exit_code, 0);
    }
    ASSERT_EQ(lab->show(kService, "ActiveState"), "inactive");

    // An ordinary user in rdma-mcast: its join starts the daemon (socket activation).
    const RunResult user = lab->run({"useradd", "--no-create-home", "--user-group", "--groups", "rdma-mcast",
                                     "--shell", "/usr/sbin/nologin", kUser});
    ASSERT_EQ(user.exit_code, 0) << said(user);
    const auto a0 = Clock::now();
    const std::string record_a = hold(kMgidA);
    ASSERT_FALSE(record_a.empty());
    std::printf("[ figures ] user's join, socket activation included: %lld ms: %s\n", ms(Clock::now() - a0),
                record_a.c_str());
    EXPECT_EQ(lab->show(kService, "ActiveState"), "active");
    EXPECT_TRUE(at_sa(kMgidA, 0x1)) << "the SA does not show " << kNode << " in " << kMgidA;

    // The journal, by the daemon's own field.
    EXPECT_TRUE(until(
        [&] {
            return lab->run({"journalctl", "-u", kService, std::string("MCAST_MGID=") + kMgidA, "-o", "cat"})
                       .out.find(kMgidA) != std::string::npos;
        },
        10s))
        << lab->journal(kService);

    // systemctl status shows the daemon's STATUS= line, brought up to date with the join.
    std::string status_line;
    EXPECT_TRUE(until(
        [&] {
            const RunResult st = lab->systemctl({"status", "--no-pager", kService});
            std::smatch m;
            if (std::regex_search(st.out, m, std::regex("Status: \"[^\n]*")))
                status_line = m.str();
            return status_line.find("1 group, 1 client") != std::string::npos;
        },
        10s))
        << "systemctl status shows: " << status_line;
    std::printf("[ figures ] systemctl status: %s\n", status_line.c_str());

    // A bad config is refused on reload; the running one keeps serving.
    const std::string pid_before_reload = main_pid();
    const fs::path config = lab->host_path("/etc/rdma-mcastd/rdma-mcastd.json");
    const std::string good = slurp(config);
    ASSERT_FALSE(good.empty()) << "the package installed no config";
    std::ofstream(config) << R"({"sa": {"timeout_ms": 0}})";
    const RunResult reload = lab->systemctl({"reload", kService});
    EXPECT_EQ(reload.exit_code, 0) << said(reload);
    EXPECT_TRUE(until([&] { return lab->journal(kService).find("/sa/timeout_ms") != std::string::npos; }, 10s))
        << "no refusal naming the key:\n" << lab->journal(kService);
    EXPECT_EQ(main_pid(), pid_before_reload);
    const RunResult b = lab->run(as_user(join(kMgidB, false)), 30s);
    EXPECT_EQ(b.exit_code, 0) << "a join after the refused reload: " << said(b);
    std::ofstream(config) << good;

    // Frozen: the watchdog kills it, Restart= brings it back, and it serves again.
    const auto frozen = lab->main_pid(kService);
    ASSERT_TRUE(frozen);
    const auto host = lab->host_pid(*frozen);
    ASSERT_TRUE(host);
    const auto w0 = Clock::now();
    ASSERT_EQ(::kill(*host, SIGSTOP), 0);
    EXPECT_TRUE(until(
        [&] {
            const auto now = lab->main_pid(kService);
            return lab->show(kService, "NRestarts") == "1" && now && *now != *frozen &&
                   lab->show(kService, "ActiveState") == "active";
        },
        30s))
        << lab->journal(kService);
    std::printf("[ figures ] SIGSTOP to restarted by the watchdog: %lld ms\n", ms(Clock::now() - w0));
    EXPECT_NE(lab->journal().find("Watchdog timeout"), std::string::npos) << lab->journal();
    const RunResult b2 = lab->run(as_user(join(kMgidB, false)), 30s);
    EXPECT_EQ(b2.exit_code, 0) << "a join after the watchdog's restart: " << said(b2);

    // Stopped for good (SIGTERM: it leaves every group), then started by D-Bus activation.
    holders.clear();
    ASSERT_EQ(lab->systemctl({"stop", kService}).exit_code, 0);
    EXPECT_TRUE(at_sa(kMgidA, std::nullopt)) << "a stopped daemon left " << kMgidA << " at the SA";
    const RunResult bus = lab->run({"busctl", "call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager",
                                    "ListGroups"},
                                   60s);
    EXPECT_EQ(bus.exit_code, 0) << said(bus) << lab->journal();
    EXPECT_EQ(lab->show(kService, "ActiveState"), "active") << "busctl did not start the daemon";

    // Hardened as shipped, seen at run time: no capabilities, no new privileges, a seccomp
    // filter, and a read-only view of the system outside its runtime directory.
    const auto daemon_pid = lab->main_pid(kService);
    ASSERT_TRUE(daemon_pid);
    const RunResult proc = lab->run({"cat", "/proc/" + std::to_string(*daemon_pid) + "/status"});
    for (const char *line : {"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000",
                             "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000",
                             "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"})
        EXPECT_NE(proc.out.find(line), std::string::npos) << line << " not in\n" << proc.out;
    const std::string in_its_mounts = "nsenter --target " + std::to_string(*daemon_pid) + " --mount -- ";
    for (const char *path : {"/etc/rdma-mcastd/x", "/usr/x", "/var/lib/x", "/root/x", "/x"}) {
        const RunResult w = lab->run({"sh", "-c", in_its_mounts + "touch " + path});
        EXPECT_NE(w.exit_code, 0) << "the daemon's mounts let it write " << path;
    }
    const RunResult rw = lab->run({"sh", "-c", in_its_mounts + "sh -c 'touch /run/rdma-mcastd/probe && rm /run/rdma-mcastd/probe'"});
    EXPECT_EQ(rw.exit_code, 0) << "its runtime directory is not writable: " << said(rw);

    // An upgrade restarts the daemon and keeps every membership.
    const std::string record_c = hold(kMgidC);
    ASSERT_FALSE(record_c.empty());
    ASSERT_TRUE(at_sa(kMgidC, 0x1));
    const std::string pid_before_upgrade = main_pid();
    std::vector<fs::path> newer;
    for (const auto &deb : debs)
        newer.push_back(repack_newer(deb, scratch));
    const auto u0 = Clock::now();
    const RunResult upgraded = install(newer);
    ASSERT_EQ(upgraded.exit_code, 0) << said(upgraded);
    std::printf("[ figures ] dpkg -i of the newer packages: %lld ms\n", ms(Clock::now() - u0));
    EXPECT_TRUE(until([&] { return lab->show(kService, "ActiveState") == "active"; }, 30s)) << said(upgraded)
                                                                                           << lab->journal();
    EXPECT_NE(main_pid(), pid_before_upgrade) << "the upgrade did not restart the daemon";
    const RunResult version = lab->run({"dpkg-query", "-W", "-f", "${Version}", "rdma-mcastd"});
    EXPECT_NE(version.out.find("+labupgrade1"), std::string::npos) << said(version);
    EXPECT_TRUE(holders.back()->running()) << "the holder ended: " << holders.back()->stderr_text();
    // Its connection went through systemd's fd store to the new instance: the client saw no
    // restart at all (a reconnect, a lost membership or a closed connection would be on its
    // stderr).
    EXPECT_EQ(holders.back()->stderr_text(), "");
    EXPECT_TRUE(fabric->sa_join_state(*parse_gid(kMgidC), port)) << kMgidC << " is gone at the SA after the upgrade";
    const RunResult listed = lab->run({"env", "-u", "RDMA_MCASTD_SOCKET", "rdma-mcastctl", "list"});
    EXPECT_NE(listed.out.find(kMgidC), std::string::npos) << "the new daemon does not hold " << kMgidC << ":\n"
                                                         << listed.out;
    EXPECT_EQ(lab->show(kMetricsTimer, "ActiveState"), "active") << lab->journal(kMetricsTimer);

    // apt-get remove stops it (SIGTERM): nothing is left at the SA.
    const RunResult removed = lab->run({"apt-get", "remove", "-y", "-q", "rdma-mcastd"}, 120s);
    ASSERT_EQ(removed.exit_code, 0) << said(removed);
    EXPECT_NE(lab->show(kService, "ActiveState"), "active");
    EXPECT_NE(lab->show(kMetricsTimer, "ActiveState"), "active");
    EXPECT_TRUE(at_sa(kMgidC, std::nullopt)) << "the removed daemon left " << kMgidC << " at the SA";
    EXPECT_FALSE(fabric->sa_join_state(*parse_gid(kMgidA), port));
    EXPECT_FALSE(fabric->sa_join_state(*parse_gid(kMgidB), port));

    EXPECT_TRUE(lab->canary_intact()) << lab->canary();
    std::printf("[ figures ] test body: %lld ms\n", ms(Clock::now() - t0));
}

// The lab's kernel has no RDMA device, as a host the package may be installed on: before the
// fabric's drop-in is added, nothing starts and nothing fails. Then, attached to the fabric and
// running, the daemon is stopped by the administrator: an upgrade leaves it stopped.
TEST_F(PackageLab, NoRdmaDeviceNothingStartsAndAnUpgradeLeavesAStoppedDaemonStopped) {
    const RunResult policy = lab->run({"rm", "-f", "/usr/sbin/policy-rc.d"});
    ASSERT_EQ(policy.exit_code, 0) << said(policy);
    const RunResult installed = install(debs);
    ASSERT_EQ(installed.exit_code, 0) << said(installed) << lab->diagnostics();
    EXPECT_EQ(lab->systemctl({"is-enabled", kSocketUnit}).out, "enabled\n");
    for (const char *unit : {kSocketUnit, kService}) {
        EXPECT_EQ(lab->show(unit, "ActiveState"), "inactive") << unit << "\n" << lab->diagnostics();
        EXPECT_EQ(lab->show(unit, "ConditionResult"), "no") << unit << ": its condition was not checked";
        EXPECT_EQ(lab->show(unit, "Result"), "success") << unit;
    }
    EXPECT_EQ(lab->show(kService, "NRestarts"), "0");
    EXPECT_EQ(lab->show(kService, "ExecMainPID"), "0") << "the daemon ran";
    // A client is told there is no daemon, at once.
    const RunResult status = lab->run({"env", "-u", "RDMA_MCASTD_SOCKET", "rdma-mcastctl", "status"}, 30s);
    EXPECT_NE(status.exit_code, 0) << said(status);
    EXPECT_NE((status.out + status.err).find(kSocket), std::string::npos) << said(status);

    // Attached to the fabric, started, then stopped by the administrator.
    install_daemon_unit(*lab, *fabric, {.node = kNode});
    lab->daemon_reload();
    ASSERT_EQ(lab->systemctl({"start", kSocketUnit, kService}).exit_code, 0) << lab->diagnostics();
    ASSERT_EQ(lab->show(kService, "ActiveState"), "active") << lab->journal(kService);
    ASSERT_EQ(lab->systemctl({"stop", kSocketUnit, kService}).exit_code, 0);
    ASSERT_EQ(lab->show(kService, "ActiveState"), "inactive");

    std::vector<fs::path> newer;
    for (const auto &deb : debs)
        newer.push_back(repack_newer(deb, scratch));
    const RunResult upgraded = install(newer);
    ASSERT_EQ(upgraded.exit_code, 0) << said(upgraded);
    const RunResult version = lab->run({"dpkg-query", "-W", "-f", "${Version}", "rdma-mcastd"});
    EXPECT_NE(version.out.find("+labupgrade1"), std::string::npos) << said(version);
    for (const char *unit : {kSocketUnit, kService})
        EXPECT_EQ(lab->show(unit, "ActiveState"), "inactive") << "the upgrade started " << unit << "\n"
                                                              << lab->journal(kService);

    // The administrator starts it again: the upgraded daemon serves.
    ASSERT_EQ(lab->systemctl({"start", kSocketUnit}).exit_code, 0);
    const RunResult joined = lab->run({"env", "-u", "RDMA_MCASTD_SOCKET", "rdma-mcastctl", "join", "--device",
                                       "ibsim0", "--port", "1", "--mgid", kMgidA},
                                      60s);
    EXPECT_EQ(joined.exit_code, 0) << said(joined) << lab->journal(kService);
    EXPECT_TRUE(lab->canary_intact()) << lab->canary();
}

} // namespace
} // namespace mcastd::lab
