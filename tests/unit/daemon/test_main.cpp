// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastd run as a process, stopped before it opens anything: a state directory it cannot
// trust is a configuration error (exit 78), said in one sentence on stderr; a --sysfs-root that
// is no directory is a usage error (exit 2). And once started on a --sysfs-root tree (the
// Ethernet bed's fake RDMA device, no InfiniBand): `status` shows its RoCE port with its link
// layer, and a join there reaches the RoCE backend (which refuses an IPv6 group on RoCE v2).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ethernet/fake_rdma_device.hpp"
#include "sim/daemon_harness.hpp"
#include "sim/fabric.hpp"

namespace {

namespace fs = std::filesystem;

struct Outcome {
    int exit_code = -1;
    std::string output;
};

// Runs the daemon with `args` (shell words, already quoted) and `env` before it.
Outcome daemon(const std::string &env, const std::string &args) {
    const std::string cmd = env + " " MCASTD_DAEMON " " + args + " 2>&1";
    Outcome r;
    if (FILE *p = ::popen(cmd.c_str(), "r")) {
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;)
            r.output.append(buf, n);
        const int status = ::pclose(p);
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    return r;
}

class StateDirAtStart : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/mcastd-main-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        std::FILE *f = std::fopen((dir_ / "config.json").c_str(), "w");
        ASSERT_TRUE(f);
        std::fputs("{\"dbus\": {\"enabled\": false}}\n", f);
        std::fclose(f);
        config_ = "--config " + (dir_ / "config.json").string() + " --socket " + (dir_ / "s.sock").string();
        fs::create_directory(dir_ / "state");
    }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path dir_;
    std::string config_; // a valid config file, so that only the state directory is wrong
};

TEST_F(StateDirAtStart, AGroupWritableStateDirIsAConfigurationError) {
    const fs::path state = dir_ / "state";
    ASSERT_EQ(::chmod(state.c_str(), 0775), 0);
    const Outcome bad = daemon("", config_ + " --state-dir " + state.string());
    EXPECT_EQ(bad.exit_code, 78) << bad.output;
    EXPECT_NE(bad.output.find("rdma-mcastd: --state-dir: state directory " + state.string() + " (owner uid " +
                              std::to_string(::geteuid()) + ", mode 0775) is writable by its group"),
              std::string::npos)
        << bad.output;
}

TEST_F(StateDirAtStart, AMissingStateDirIsAConfigurationError) {
    const Outcome bad = daemon("", config_ + " --state-dir " + (dir_ / "no-such-dir").string());
    EXPECT_EQ(bad.exit_code, 78) << bad.output;
    EXPECT_NE(bad.output.find("rdma-mcastd: --state-dir: state directory " + (dir_ / "no-such-dir").string() +
                              " does not exist"),
              std::string::npos)
        << bad.output;
}

TEST_F(StateDirAtStart, ASymlinkAsRuntimeDirectoryIsAConfigurationError) {
    const fs::path link = dir_ / "link";
    fs::create_directory_symlink(dir_ / "state", link);
    const Outcome bad = daemon("RUNTIME_DIRECTORY=" + link.string(), config_);
    EXPECT_EQ(bad.exit_code, 78) << bad.output;
    EXPECT_NE(bad.output.find("rdma-mcastd: $RUNTIME_DIRECTORY: state directory " + link.string()), std::string::npos)
        << bad.output;
    EXPECT_NE(bad.output.find("is a symbolic link to " + (dir_ / "state").string()), std::string::npos) << bad.output;
}

class SysfsRootAtStart : public StateDirAtStart {};

TEST_F(SysfsRootAtStart, TheOptionIsInTheHelp) {
    const Outcome help = daemon("", "--help");
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.output.find("--sysfs-root DIR"), std::string::npos) << help.output;
}

TEST_F(SysfsRootAtStart, ARootThatIsNoDirectoryIsAUsageError) {
    const Outcome missing = daemon("", config_ + " --sysfs-root " + (dir_ / "none").string());
    EXPECT_EQ(missing.exit_code, 2) << missing.output;
    EXPECT_NE(missing.output.find("rdma-mcastd: --sysfs-root: " + (dir_ / "none").string() +
                                  ": No such file or directory"),
              std::string::npos)
        << missing.output;
    const Outcome file = daemon("", config_ + " --sysfs-root " + (dir_ / "config.json").string());
    EXPECT_EQ(file.exit_code, 2) << file.output;
    EXPECT_NE(file.output.find((dir_ / "config.json").string() + " is not a directory"), std::string::npos)
        << file.output;
    const Outcome no_value = daemon("", config_ + " --sysfs-root");
    EXPECT_EQ(no_value.exit_code, 2) << no_value.output;
}

// The daemon serving the fake device of the Ethernet bed's host 1 (doc/ethernet-bed.md §5). The
// config names the port, so that an InfiniBand device libibumad may find on this machine is left
// alone.
TEST_F(SysfsRootAtStart, TheDaemonServesTheTreesRoCEPortShowsItsLinkLayerAndJoinsThroughTheRoceBackend) {
    using namespace std::chrono_literals;
    using json = nlohmann::json;
    const mcastd::eth::FakeRdmaDevice dev =
        mcastd::eth::roce_device("rxe1", "veth1", {0x02, 0x00, 0x4d, 0x00, 0x00, 0x01}, {10, 77, 0, 1});
    dev.write(dir_ / "sys");
    std::FILE *f = std::fopen((dir_ / "config.json").c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs(R"({"dbus": {"enabled": false}, "ports": ["rxe1/1"]})", f);
    std::fclose(f);
    mcastd::sim::NotifySocket notify(dir_ / "notify.sock");
    mcastd::sim::Process proc({.argv = {MCASTD_DAEMON, "--config", (dir_ / "config.json").string(), "--socket",
                                        (dir_ / "s.sock").string(), "--log-target", "console", "--sysfs-root",
                                        (dir_ / "sys" / "class" / "infiniband").string()},
                               .env = {{"NOTIFY_SOCKET", notify.path().string()}}});
    ASSERT_TRUE(notify.wait_for("READY=1", 20s)) << proc.stderr_text();
    // veth1 exists only on the Ethernet bed: here it is not in the daemon's network namespace.
    EXPECT_TRUE(proc.wait_for_stderr("rxe1/1: ACTIVE Ethernet (RoCE), GID table: 0 fe80::4dff:fe00:1 roce_v1 "
                                     "veth1 (not in the daemon's network namespace), 1 ::ffff:10.77.0.1 roce_v2 "
                                     "veth1 (not in the daemon's network namespace)",
                                     10s))
        << proc.stderr_text();

    mcastd::sim::RawClient client(dir_ / "s.sock");
    client.hello();
    const json status = json::parse(client.call(R"({"id":1,"op":"status"})", 1));
    const json &ports = status.at("result").at("ports");
    ASSERT_EQ(ports.size(), 1u) << status.dump();
    EXPECT_EQ(ports[0].at("device"), "rxe1");
    EXPECT_EQ(ports[0].at("port"), 1);
    EXPECT_EQ(ports[0].at("link_layer"), "Ethernet");
    EXPECT_EQ(ports[0].at("state"), "ACTIVE");
    EXPECT_EQ(ports[0].at("port_gid"), "fe80::4dff:fe00:1");
    EXPECT_EQ(ports[0].at("rate_gbps"), 25);

    const json join = json::parse(
        client.call(R"({"id":2,"op":"join","device":"rxe1","port":1,"mgid":"ff12::1","join_state":"full"})", 2));
    // The join reaches the RoCE backend (no SA): an IPv6 group on the default source GID type,
    // RoCE v2, is refused there as rdma_cm refuses it (an IPv4 group would need the client's
    // socket and the tree's netdev, which exists only on the Ethernet bed).
    EXPECT_EQ(join.at("ok"), false) << join.dump();
    EXPECT_EQ(join.at("error").at("code"), "invalid-argument") << join.dump();
    EXPECT_EQ(join.at("error").at("message"),
              "the IPv6 group ff12::1 on a RoCE v2 GID would need an MLD membership, which rdma_cm refuses to "
              "make; so does this daemon unless groups.roce_ipv6 is true (or join it on roce_v1, or an IPv4 group)");

    proc.signal(SIGTERM);
    EXPECT_EQ(proc.wait(20s), 0) << proc.stderr_text();
}

} // namespace
