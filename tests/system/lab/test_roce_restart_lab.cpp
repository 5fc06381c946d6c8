// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A RoCE membership across `systemctl restart` under the lab's real systemd: the kernel's IGMP
// membership, held on the client's UDP socket (doc/roce-multicast.md §7-§9), rides systemd's
// fd store from one instance to the next, as tests/ethernet/test_roce_restart_bed.cpp shows
// under its fake service manager.
//
// The lab has a network namespace of its own (Lab::Options::private_network), with lo alone:
// the membership is on lo, and the host's tables never change. The daemon (the shipped units,
// the built binary) serves one RoCE port: a fake device under --sysfs-root whose RoCE v2 GID
// ::ffff:127.0.0.1 names lo, and no InfiniBand device. A client in the lab holds 239.1.2.3
// (`rdma-mcastctl join --ip --hold`). The lab's /proc/net/igmp is the judge: read from the
// host through its PID 1's /proc/PID/net, on a thread that counts its polls.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "ethernet/fake_rdma_device.hpp"
#include "ethernet/kernel_tables.hpp"
#include "system/lab/daemon_unit.hpp"
#include "system/lab/lab.hpp"

namespace mcastd::lab {
namespace {

using namespace std::chrono_literals;
using sim::poll_until;
using sim::Process;

const eth::IpGroup kGroup = eth::IpGroup::of("239.1.2.3");
constexpr const char *kDevice = "roce0";
// The fake sysfs, in the lab's /run (/sys is read-only there, and the kernel's).
constexpr const char *kSysfs = "/run/rdma-mcastd-lab/sys";
// Polls of the judge before the restart and after it: counted, not timed, so that a loaded
// machine watches as much as an idle one.
constexpr std::size_t kBaselinePolls = 200;

// The lab's IGMP users of kGroup on lo (0: not in its table).
int lo_users(const Lab &lab) {
    const auto tables =
        eth::parse_proc_igmp(sim::read_text_file("/proc/" + std::to_string(lab.pid1()) + "/net/igmp"));
    const auto lo = tables.find("lo");
    if (lo == tables.end())
        return 0;
    const auto g = lo->second.find(kGroup);
    return g == lo->second.end() ? 0 : g->second;
}

// Polls the lab's /proc/net/igmp back to back on a thread of its own and counts the polls that
// lacked the group.
class IgmpWatch {
public:
    explicit IgmpWatch(const Lab &lab) : lab_(lab) {
        thread_ = std::thread([this] {
            while (!stop_) {
                if (lo_users(lab_) < 1)
                    ++absent_;
                ++polls_;
            }
        });
    }
    ~IgmpWatch() { finish(); }

    std::size_t polls() const { return polls_; }
    // Waits until the judge polled `n` more times.
    bool wait_polls(std::size_t n) {
        const std::size_t goal = polls_ + n;
        return poll_until(60s, [&] { return polls_ >= goal; });
    }
    // Stops; the number of polls that found the group absent.
    std::size_t finish() {
        stop_ = true;
        if (thread_.joinable())
            thread_.join();
        return absent_;
    }

private:
    const Lab &lab_;
    std::atomic<bool> stop_{false};
    std::atomic<std::size_t> polls_{0}, absent_{0};
    std::thread thread_;
};

// A client holds kGroup through the shipped unit (with `store` its fd store, else
// FileDescriptorStoreMax=0), then `systemctl restart` under a watch of the lab's igmp table;
// returns the polls that found the group absent. The client's kill -9 ends it.
std::size_t restart_under_a_client(bool store) {
    Lab lab(Lab::Options{.unit_dir = MCASTD_LAB_UNITS, .private_network = true});

    eth::roce_device(kDevice, "lo", Mac{}, {127, 0, 0, 1}).write(lab.host_path(kSysfs));
    install_daemon_unit(lab, {.daemon = MCASTD_DAEMON,
                              .config_json = R"({"dbus":{"enabled":false},"ports":["roce0/1"]})",
                              .daemon_args = "--sysfs-root " + std::string(kSysfs) + "/class/infiniband",
                              .extra_service = store ? "" : "FileDescriptorStoreMax=0\n"});
    // The host has no rdma-mcast group (systemd-sysusers is masked in the lab).
    lab.write_unit("rdma-mcastd.socket.d/lab.conf", "[Socket]\nSocketGroup=root\n");
    lab.daemon_reload();
    const RunResult start = lab.systemctl({"start", kSocketUnit, kService});
    EXPECT_EQ(start.exit_code, 0) << start.err << "\n" << lab.journal(kService) << lab.diagnostics();
    EXPECT_EQ(lo_users(lab), 0) << "the lab's lo holds the group before any client";
    const std::string stored_before = lab.show(kService, "NFileDescriptorStore");

    Process client = lab.spawn({MCASTD_CTL, "join", "--device", kDevice, "--port", "1", "--ip", kGroup.text(),
                                "--hold"});
    EXPECT_TRUE(client.read_line(20s)) << client.stderr_text() << "\n" << lab.journal(kService);
    EXPECT_TRUE(poll_until(20s, [&] { return lo_users(lab) == 1; })) << lab.journal(kService);
    // The client's connection and the membership's socket (FDNAME=roce-membership-N).
    long long stored = 0;
    if (store) {
        EXPECT_TRUE(poll_until(20s, [&] {
            stored = std::stoll("0" + lab.show(kService, "NFileDescriptorStore"));
            return stored >= std::stoll("0" + stored_before) + 2;
        })) << "NFileDescriptorStore " << stored_before << " before the join, " << stored << " after";
    }
    std::printf("[ figures ] NFileDescriptorStore: %s before the join, %lld after\n", stored_before.c_str(), stored);

    const auto old_pid = lab.main_pid(kService);
    IgmpWatch watch(lab);
    EXPECT_TRUE(watch.wait_polls(kBaselinePolls)) << "a baseline of polls before";
    const std::size_t before = watch.polls();
    const RunResult r = lab.systemctl({"restart", kService});
    const std::size_t during = watch.polls() - before;
    EXPECT_EQ(r.exit_code, 0) << r.err << "\n" << lab.journal(kService);
    // Back (or never gone) before the baseline after is counted.
    EXPECT_TRUE(poll_until(20s, [&] { return lo_users(lab) == 1; })) << lab.journal(kService);
    EXPECT_TRUE(watch.wait_polls(kBaselinePolls)) << "a baseline of polls after";
    const std::size_t polls = watch.polls();
    const std::size_t absent = watch.finish();
    std::printf("[ figures ] %s: igmp polls: %zu in all, %zu during systemctl restart, %zu absent\n",
                store ? "fd store" : "no fd store", polls, during, absent);

    EXPECT_NE(lab.main_pid(kService), old_pid) << "the service was not restarted";
    EXPECT_EQ(lo_users(lab), 1);
    EXPECT_TRUE(client.running()) << client.stderr_text();

    // The client's end drops the taken-back membership like any other: kill -9 of the client
    // itself, nsenter's only child (chroot exec()s it), since a signal to the Process (nsenter)
    // would not reach it.
    const std::string child = sim::read_text_file("/proc/" + std::to_string(client.pid()) + "/task/" +
                                                  std::to_string(client.pid()) + "/children");
    EXPECT_EQ(::kill(static_cast<pid_t>(std::stol("0" + child)), SIGKILL), 0) << "nsenter's child '" << child << "'";
    EXPECT_TRUE(poll_until(20s, [&] { return lo_users(lab) == 0; }))
        << "the client is gone, the membership is not\n" << lab.journal(kService);
    if (::testing::Test::HasFailure())
        std::printf("%s\n", lab.journal(kService).c_str());
    return absent;
}

TEST(RoceRestartLab, SystemctlRestartKeepsTheKernelMembershipInTheFdStore) {
    if (auto why = Lab::unavailable())
        GTEST_SKIP() << *why;
    EXPECT_EQ(restart_under_a_client(true), 0u) << "the lab's lo lost 239.1.2.3 during the restart";
}

// Without a store the kernel drops the membership with the old instance's socket, and the new
// instance makes it again from its state file, on a socket of its own (AF_INET, which the unit
// must allow). How long it was absent is a figure, not a bound.
TEST(RoceRestartLab, WithoutAStoreTheNextInstanceMakesTheMembershipAgain) {
    if (auto why = Lab::unavailable())
        GTEST_SKIP() << *why;
    restart_under_a_client(false);
}

} // namespace
} // namespace mcastd::lab
