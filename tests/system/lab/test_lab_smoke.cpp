// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The lab on its own: systemd boots to lab.target, runs services, restarts them, reaches the
// host through host_path(), keeps its /tmp to itself, and goes away without a trace.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "system/lab/lab.hpp"

namespace mcastd::lab {
namespace {

using namespace std::chrono_literals;

std::string join(const std::vector<std::string> &v) {
    std::string s;
    for (const auto &x : v)
        s += (s.empty() ? "" : " ") + x;
    return s;
}

bool path_exists(const std::filesystem::path &p) {
    std::error_code ec;
    return std::filesystem::exists(p, ec);
}

std::string slurp(const std::filesystem::path &p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

class LabSmoke : public ::testing::Test {
protected:
    void SetUp() override {
        if (auto why = Lab::unavailable())
            GTEST_SKIP() << *why;
        lab = std::make_unique<Lab>();
    }
    void TearDown() override {
        if (lab) {
            EXPECT_EQ(lab->teardown(), "");
        }
    }
    std::unique_ptr<Lab> lab;
};

TEST_F(LabSmoke, BootsToRunningAndRunsOnlyWhatLabTargetNeeds) {
    EXPECT_EQ(lab->boot_state(), "running") << "failed units: " << join(lab->failed_units()) << "\n"
                                            << lab->diagnostics();
    EXPECT_TRUE(lab->canary_intact());
    EXPECT_EQ(lab->run({"systemd-detect-virt", "--container"}).out, "container-other\n");

    // The units that would empty the host's /tmp or load modules into its kernel.
    for (const char *u : {"systemd-tmpfiles-setup.service", "systemd-sysctl.service", "modprobe@loop.service",
                          "systemd-udevd.service"})
        EXPECT_EQ(lab->show(u, "LoadState"), "masked") << u;

    // Whatever boot started had to be reviewed for what it does to the host (boot.sh masks the
    // rest). A unit new here is not necessarily harmful: look at it, then allow or mask it.
    const std::set<std::string> allowed{
        "lab.target",          "sysinit.target",
        "dbus.socket",         "dbus.service",
        "systemd-journald.socket", "systemd-journald-dev-log.socket",
        "systemd-journald-audit.socket", "systemd-journald.service",
        "-.slice",             "system.slice",
        "init.scope"};
    const auto started = lab->started_units();
    for (const auto &u : started)
        EXPECT_TRUE(allowed.count(u) || u.ends_with(".mount")) << "boot started " << u;
    std::printf("[ lab ] READY=1 after %lld ms; started: %s\n", static_cast<long long>(lab->boot_time().count()),
                join(started).c_str());
}

TEST_F(LabSmoke, RunsAServiceAndRestartsItAfterKillMinus9) {
    lab->write_unit("lab-hello.service", "[Service]\nType=oneshot\nExecStart=/bin/echo hello from the lab\n");
    lab->write_unit("lab-sleeper.service",
                    "[Service]\nExecStart=/bin/sleep infinity\nRestart=on-failure\nRestartSec=0\n");
    lab->daemon_reload();

    const RunResult hello = lab->systemctl({"start", "lab-hello.service"});
    ASSERT_EQ(hello.exit_code, 0) << hello.err;
    EXPECT_EQ(lab->show("lab-hello.service", "Result"), "success");
    EXPECT_NE(lab->journal("lab-hello.service").find("hello from the lab"), std::string::npos);

    ASSERT_EQ(lab->systemctl({"start", "lab-sleeper.service"}).exit_code, 0);
    const auto pid = lab->main_pid("lab-sleeper.service");
    ASSERT_TRUE(pid);
    const auto host = lab->host_pid(*pid);
    ASSERT_TRUE(host) << "lab pid " << *pid;
    EXPECT_NE(slurp("/proc/" + std::to_string(*host) + "/cmdline").find("infinity"), std::string::npos);

    // Killed from the host, as a crash would: Restart=on-failure starts it again.
    ASSERT_EQ(::kill(*host, SIGKILL), 0);
    const RunResult waited = lab->run(
        {"sh", "-c", "for i in $(seq 100); do [ \"$(systemctl show -p NRestarts --value lab-sleeper.service)\" = 1 ] "
                     "&& systemctl is-active -q lab-sleeper.service && exit 0; sleep 0.1; done; exit 1"});
    EXPECT_EQ(waited.exit_code, 0) << lab->journal("lab-sleeper.service");
    EXPECT_EQ(lab->show("lab-sleeper.service", "NRestarts"), "1");
    EXPECT_NE(lab->main_pid("lab-sleeper.service"), pid);
    EXPECT_TRUE(lab->canary_intact());
}

// systemd tells its own service manager (here the harness, through NOTIFY_SOCKET) how a job
// that runs for more than a couple of seconds is getting on, several times a second. A lab
// that stopped reading those would have its systemd blocked for good once the socket's queue
// is full: every later systemctl call would time out.
TEST_F(LabSmoke, AJobOfSeveralSecondsLeavesTheLabsSystemdAnswering) {
    lab->write_unit("lab-slow.service", "[Service]\nType=oneshot\nExecStart=/bin/sleep 8\n");
    lab->daemon_reload();
    const RunResult slow = lab->systemctl({"start", "lab-slow.service"}, 40s);
    EXPECT_EQ(slow.exit_code, 0) << slow.err;
    EXPECT_EQ(lab->show("lab-slow.service", "Result"), "success");
}

TEST_F(LabSmoke, TheLabsTmpAndRunAreNotTheHosts) {
    const std::string name = "mcastd-lab-probe." + std::to_string(::getpid());
    ASSERT_EQ(lab->run({"sh", "-c", "echo inside > /tmp/" + name + " && echo inside > /run/" + name}).exit_code, 0);
    EXPECT_FALSE(path_exists("/tmp/" + name)) << "the lab wrote to the host's /tmp";
    EXPECT_FALSE(path_exists("/run/" + name)) << "the lab wrote to the host's /run";
    EXPECT_EQ(slurp(lab->host_path("/tmp/" + name)), "inside\n");

    // And the other way: a file written through host_path() is the lab's.
    lab->write_file("/run/" + name + ".2", "outside\n");
    EXPECT_EQ(lab->run({"cat", "/run/" + name + ".2"}).out, "outside\n");
    EXPECT_FALSE(path_exists("/run/" + name + ".2"));

    // The root is read-only: nothing the lab does lands on the host's disk.
    const RunResult w = lab->run({"touch", "/var/lib/mcastd-lab-probe"});
    EXPECT_NE(w.exit_code, 0);
    EXPECT_NE(w.err.find("Read-only file system"), std::string::npos) << w.err;
    EXPECT_TRUE(lab->canary_intact());
}

TEST_F(LabSmoke, AServiceWithItsOwnMountNamespaceSeesTheLabNotTheHost) {
    // systemd builds such a service's mounts from the lab's "/" (PrivateMounts=, PrivateTmp=,
    // ProtectSystem= and the like): it must find the lab's /run and a read-only root there.
    const std::string name = "mcastd-lab-ns-probe." + std::to_string(::getpid());
    lab->write_file("/run/" + name + ".sh", "#!/bin/sh\necho ns > /run/" + name + "\ntouch /etc/" + name + "\n");
    lab->write_unit("lab-ns-probe.service", "[Service]\nType=oneshot\nPrivateMounts=yes\nPrivateTmp=yes\n"
                                            "ExecStart=/bin/sh /run/" + name + ".sh\n");
    lab->daemon_reload();
    const RunResult r = lab->systemctl({"start", "lab-ns-probe.service"});
    EXPECT_NE(r.exit_code, 0) << "the write to /etc succeeded";
    const std::string journal = lab->journal("lab-ns-probe.service");
    EXPECT_NE(journal.find("Read-only file system"), std::string::npos) << journal;
    EXPECT_EQ(slurp(lab->host_path("/run/" + name)), "ns\n") << journal;
    EXPECT_FALSE(path_exists("/run/" + name)) << "a namespaced service wrote to the host's /run";
    EXPECT_FALSE(path_exists("/etc/" + name)) << "a namespaced service wrote to the host's /etc";
}

TEST_F(LabSmoke, AHostProcessConnectsToASocketInTheLabsRun) {
    // A socket-activated echo service (Accept=yes: one cat per connection).
    lab->write_unit("lab-echo.socket", "[Socket]\nListenStream=/run/lab-echo.sock\nAccept=yes\n");
    lab->write_unit("lab-echo@.service", "[Service]\nExecStart=/bin/cat\nStandardInput=socket\n");
    lab->daemon_reload();
    ASSERT_EQ(lab->systemctl({"start", "lab-echo.socket"}).exit_code, 0);

    const std::string path = lab->host_path("/run/lab-echo.sock").string();
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    ASSERT_LT(path.size(), sizeof a.sun_path);
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a), 0) << std::strerror(errno);
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ASSERT_EQ(::send(fd, "ping\n", 5, MSG_NOSIGNAL), 5);
    char buf[16] = {};
    EXPECT_EQ(::recv(fd, buf, sizeof buf, 0), 5);
    EXPECT_STREQ(buf, "ping\n");
    ::close(fd);
}

TEST(LabTeardown, KillsPid1RemovesItsCgroupAndKeepsTheCanary) {
    if (auto why = Lab::unavailable())
        GTEST_SKIP() << *why;
    std::filesystem::path canary;
    pid_t pid1 = -1;
    std::string pid_ns;
    {
        Lab lab;
        pid1 = lab.pid1();
        canary = lab.canary();
        pid_ns = std::filesystem::read_symlink("/proc/" + std::to_string(pid1) + "/ns/pid").string();
        ASSERT_TRUE(path_exists(canary));
        ASSERT_EQ(lab.systemctl({"start", "dbus.service"}).exit_code, 0);
        EXPECT_EQ(lab.teardown(), "");
        EXPECT_EQ(lab.teardown(), "") << "a second teardown is a no-op";
    }
    EXPECT_FALSE(path_exists(canary)) << "teardown removes its canary";
    // PID 1 is gone and nothing is left in its namespace.
    std::error_code ec;
    const auto now = std::filesystem::read_symlink("/proc/" + std::to_string(pid1) + "/ns/pid", ec);
    EXPECT_TRUE(ec || now.string() != pid_ns) << "pid " << pid1 << " still runs in the lab's namespace";
    for (const auto &e : std::filesystem::directory_iterator("/proc", ec)) {
        std::error_code ec2;
        const auto ns = std::filesystem::read_symlink(e.path() / "ns" / "pid", ec2);
        EXPECT_FALSE(!ec2 && ns.string() == pid_ns) << e.path() << " is still in the lab's PID namespace";
    }
}

// The overlay root (Lab::Root::overlay): writable in the lab, as dpkg needs, and every write
// stays in the lab's tmpfs layer while the host's files show through unchanged.
TEST(LabOverlay, WritesToTheRootStayInTheLab) {
    if (auto why = Lab::unavailable(Lab::Root::overlay))
        GTEST_SKIP() << *why;
    const std::string probe = "/etc/mcastd-lab-overlay-probe." + std::to_string(::getpid());
    ASSERT_FALSE(path_exists(probe));
    Lab lab(Lab::Options{.root = Lab::Root::overlay});
    EXPECT_EQ(lab.boot_state(), "running") << lab.diagnostics();
    // The host's /etc shows through; a write to it, and a change to a host file, do not leave.
    EXPECT_EQ(lab.run({"cat", "/etc/debian_version"}).out, slurp("/etc/debian_version"));
    const auto wrote = lab.run({"sh", "-c", "echo lab > " + probe + " && echo '# lab' >> /etc/hostname"});
    ASSERT_EQ(wrote.exit_code, 0) << wrote.out << wrote.err;
    EXPECT_EQ(slurp(lab.host_path(probe)), "lab\n");
    EXPECT_FALSE(path_exists(probe)) << "the lab wrote " << probe << " on the host";
    EXPECT_EQ(slurp("/etc/hostname").find("# lab"), std::string::npos) << "the lab changed the host's /etc/hostname";
    EXPECT_EQ(lab.teardown(), "");
    EXPECT_FALSE(path_exists(probe));
}

} // namespace
} // namespace mcastd::lab
