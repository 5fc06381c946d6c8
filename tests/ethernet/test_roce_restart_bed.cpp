// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A RoCE port's kernel membership across the daemon's restarts, on the Ethernet bed
// (doc/ethernet-bed.md, doc/architecture.md §9): a client on host 1 holds 239.1.2.3 through
// rdma-mcastd (`rdma-mcastctl join --ip --hold`), and the daemon is killed (kill -9) or
// restarted (SIGUSR2, a planned restart) and started again while the host's /proc/net/igmp and
// the bridge's mdb are polled every few milliseconds. Under the fd store (the bed daemon's
// ServiceManager, as systemd keeps one) the membership is never absent from either; without one
// the next instance makes it again from the state file, and how long it was absent is measured
// and printed. Either way the client's end drops it afterwards: the adopted or re-made
// membership is an ordinary one.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "ethernet/bed_daemon.hpp"
#include "ethernet/group_watch.hpp"

namespace mcastd::eth {
namespace {

using Clock = std::chrono::steady_clock;
using sim::poll_until;

const IpGroup kGroup = IpGroup::of("239.1.2.3");
// A daemon starts in well under a second; the margin is for two busy cores.
constexpr auto kStartTimeout = 20s;
// The mdb learns a group within about a second of the report (doc/ethernet-bed.md §6).
constexpr auto kMdbTimeout = 20s;
// Polls of each judge before a restart and after the membership is back: counted, not timed, so
// that a loaded machine watches as much as an idle one.
constexpr std::size_t kBaselinePolls = 20;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string read_file(const std::filesystem::path &p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The restart state as the next instance reads it: the state file, then its change log.
std::string saved_state(BedDaemon &daemon) {
    return read_file(daemon.state_dir() / "state.json") + read_file(daemon.state_dir() / "state.log");
}

// The state names a kernel membership's member (a line of either file).
bool names_a_member(BedDaemon &daemon) { return saved_state(daemon).find("\"members\":[") != std::string::npos; }

enum class How { kill9, sigusr2 };

class RoceRestartBed : public ::testing::Test {
protected:
    void SetUp() override {
        if (auto why = EthernetBed::unavailable())
            GTEST_SKIP() << *why;
        bed = std::make_unique<EthernetBed>(EthernetBed::Options{.hosts = 1});
    }

    // Host 1's users of the group (0: not in its table).
    int users() {
        const GroupUsers u = bed->igmp(1);
        auto it = u.find(kGroup);
        return it == u.end() ? 0 : it->second;
    }

    // A daemon (with or without the store), a client holding the group, the state written;
    // then the restart `how` under the watch. Returns what the watch saw.
    GroupWatch::Seen restart(bool store, How how, std::string &log) {
        BedDaemon daemon(*bed, 1,
                         {.config_json = R"({"dbus": {"enabled": false}, "ports": ["rxe1/1"]})",
                          .fd_store = store,
                          .ready_timeout = kStartTimeout});
        ServiceManager &manager = daemon.manager();
        Process &client =
            bed->spawn_on(1, daemon.ctl_argv(nullptr, "join", daemon.on_port({"--ip", kGroup.text(), "--hold"})));
        EXPECT_TRUE(poll_until(kStartTimeout, [&] { return users() == 1; }))
            << client.stderr_text() << daemon.process().stderr_text();
        EXPECT_TRUE(poll_until(kMdbTimeout, [&] { return bed->mdb_hosts(kGroup) == std::set<int>{1}; }));
        // The state names the socket and its member before the daemon dies (written 2 ms after
        // the join).
        EXPECT_TRUE(poll_until(kStartTimeout, [&] { return names_a_member(daemon); })) << saved_state(daemon);
        if (store) {
            const auto names = manager.stored_names();
            EXPECT_NE(std::find(names.begin(), names.end(), "roce-membership-1"), names.end())
                << "the membership's socket is in the store";
        }

        GroupWatch watch(*bed, 1, kGroup);
        EXPECT_TRUE(watch.wait_polls(kBaselinePolls)) << "a baseline of polls before";
        if (how == How::kill9)
            daemon.kill9();
        else
            EXPECT_EQ(daemon.hand_over(), 0) << daemon.process().stderr_text();
        log = daemon.process().stderr_text();
        const std::size_t at_exit = watch.igmp_polls();
        daemon.start(kStartTimeout);
        in_gap = watch.igmp_polls() - at_exit;
        // The membership is back (or was never gone) and the client resumed or kept its session.
        EXPECT_TRUE(poll_until(kStartTimeout, [&] { return users() == 1; })) << daemon.process().stderr_text();
        EXPECT_TRUE(poll_until(kMdbTimeout, [&] { return bed->mdb_hosts(kGroup) == std::set<int>{1}; }));
        EXPECT_TRUE(watch.wait_polls(kBaselinePolls)) << "and stays";
        const GroupWatch::Seen seen = watch.finish();
        log += daemon.process().stderr_text();

        // A member joining after the restart gets the group's record as the first one did: where
        // it is sent from came back with the state.
        const RunResult late = daemon.ctl(1, nullptr, "join", daemon.on_port({"--ip", kGroup.text()}));
        EXPECT_EQ(late.exit_code, 0) << late.err;
        const auto record = nlohmann::json::parse(late.out.substr(0, late.out.find('\n')), nullptr, false);
        EXPECT_EQ(record.value("link_layer", ""), "Ethernet") << late.out;
        EXPECT_EQ(record.value("sgid_index", -1), 1) << late.out;
        EXPECT_EQ(record.value("netdev", ""), "veth1") << late.out;
        EXPECT_EQ(record.value("port_gid", ""), "::ffff:10.77.0.1") << "the source GID, not the port's: " << late.out;

        // The client's end drops it: the taken-back membership is held like any other.
        const auto killed = Clock::now();
        client.signal(SIGKILL);
        const auto gone = bed->time_until_gone(1, kGroup, killed, kStartTimeout);
        EXPECT_TRUE(gone) << daemon.process().stderr_text();
        if (gone)
            std::printf("[ figure ] client kill -9 -> IGMP membership gone: %.1f ms\n", ms(*gone));
        if (store) {
            EXPECT_TRUE(poll_until(kStartTimeout, [&] {
                for (const std::string &n : manager.stored_names())
                    if (n.rfind("roce-membership-", 0) == 0)
                        return false;
                return true;
            })) << "the socket left the store before it was closed";
        }
        EXPECT_EQ(daemon.stop(), 0);
        return seen;
    }

    static void print(const char *what, const GroupWatch::Seen &s) {
        std::printf("[ figure ] %s: /proc/net/igmp absent in %zu of %zu polls, at most %.1f ms; mdb absent in %zu of "
                    "%zu polls, at most %.1f ms\n",
                    what, s.igmp.absent, s.igmp.polls, ms(s.igmp.longest), s.mdb.absent, s.mdb.polls,
                    ms(s.mdb.longest));
    }

    // Under the store the next instance adopts the stored socket: never absent from either judge.
    void expect_never_absent(How how, const char *what) {
        std::string log;
        const GroupWatch::Seen s = restart(true, how, log);
        print(what, s);
        std::printf("[ figure ] %s: %zu IGMP polls between the old instance's end and the new one's READY=1\n",
                    what, in_gap);
        EXPECT_GE(in_gap, 1u) << "polled while no instance ran";
        EXPECT_EQ(s.igmp.absent, 0u) << log;
        EXPECT_EQ(s.mdb.absent, 0u) << log;
        EXPECT_NE(log.find("1 RoCE kernel membership(s) kept and 0 made again"), std::string::npos) << log;
    }

    std::unique_ptr<EthernetBed> bed;
    std::size_t in_gap = 0; // IGMP polls while no instance was ready, in the last restart()
};

TEST_F(RoceRestartBed, UnderTheFdStoreAKill9NeverDropsTheMembership) {
    expect_never_absent(How::kill9, "kill -9 under the fd store");
}

TEST_F(RoceRestartBed, UnderTheFdStoreAPlannedRestartNeverDropsTheMembership) {
    expect_never_absent(How::sigusr2, "SIGUSR2 restart under the fd store");
}

TEST_F(RoceRestartBed, WithoutAStoreAKill9IsMadeAgainFromTheStateFile) {
    std::string log;
    const GroupWatch::Seen s = restart(false, How::kill9, log);
    print("kill -9 without a store", s);
    EXPECT_GE(in_gap, 1u) << "polled while no instance ran";
    EXPECT_NE(log.find("0 RoCE kernel membership(s) kept and 1 made again"), std::string::npos) << log;
    // Not a pass/fail figure: the gap is the next instance's start (the test starts it at once,
    // a service manager after RestartSec=). Bounded only to catch a membership left to the grace.
    EXPECT_LT(s.igmp.longest, 10s) << "absent far longer than a daemon's start";
}

// A client in a container (bed host 2, its veth named as host 1's) holds the group through host
// 1's daemon, which has no fd store. After a kill -9 the next instance cannot make a membership
// in the container's namespace (it has no socket of it), so it releases that membership, and
// the client learns as it resumes that it lost it: `join --hold` joins again, handing over a
// socket of its namespace, and the container's table holds the group again. Before, the
// client resumed "kept" while no kernel held the group.
TEST_F(RoceRestartBed, WithoutAStoreAContainersMembershipIsReleasedAndJoinedAgain) {
    bed.reset();
    bed = std::make_unique<EthernetBed>(EthernetBed::Options{.hosts = 2, .ifnames = {{2, "veth1"}}});
    auto users_in_container = [&] {
        const GroupUsers u = bed->igmp(2);
        const auto it = u.find(kGroup);
        return it == u.end() ? 0 : it->second;
    };
    BedDaemon daemon(*bed, 1,
                     {.config_json = R"({"dbus": {"enabled": false}, "ports": ["rxe1/1"]})",
                      .fd_store = false,
                      .ready_timeout = kStartTimeout});
    Process &client = daemon.hold(2, nullptr, daemon.on_port({"--ip", kGroup.text()}));
    ASSERT_EQ(users_in_container(), 1) << "held in the container's namespace";
    ASSERT_TRUE(poll_until(kStartTimeout, [&] { return names_a_member(daemon); })) << saved_state(daemon);

    daemon.kill9();
    std::string log = daemon.process().stderr_text();
    EXPECT_TRUE(poll_until(kStartTimeout, [&] { return users_in_container() == 0; }))
        << "its socket ended with the daemon";
    daemon.start(kStartTimeout);
    EXPECT_TRUE(poll_until(kStartTimeout, [&] {
        return client.stderr_text().find("joining membership 1 again") != std::string::npos;
    })) << client.stderr_text();
    EXPECT_NE(client.stderr_text().find("lost: 1"), std::string::npos) << client.stderr_text();
    EXPECT_TRUE(poll_until(kStartTimeout, [&] { return users_in_container() == 1; }))
        << daemon.process().stderr_text();
    log += daemon.process().stderr_text();
    EXPECT_NE(log.find("0 RoCE kernel membership(s) kept and 0 made again (1 RoCE membership(s) released"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("is not made again: its socket was not kept (no fd store)"), std::string::npos) << log;

    client.signal(SIGKILL);
    EXPECT_TRUE(poll_until(kStartTimeout, [&] { return users_in_container() == 0; }))
        << "the new membership is an ordinary one";
    EXPECT_EQ(daemon.stop(), 0);
}

} // namespace
} // namespace mcastd::eth
