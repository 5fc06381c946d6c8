// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The D-Bus transport end to end: a private dbus-daemon that includes the shipped policy
// (systemd/org.rdmamcast1.conf), the real daemon on a simulated node connected to it, busctl
// and mcastd-dbus-client as callers, and the SA as the judge of what the daemon holds.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "ethernet/fake_rdma_device.hpp"
#include "sim/daemon_harness.hpp"
#include "sim/test_users.hpp"

namespace mcastd::sim {
namespace {

Gid G(const std::string &s) { return *parse_gid(s); }

// The org.rdmamcast1.* interfaces of an introspection document, comments and the whitespace
// between tags dropped, so the served XML and proto/'s hand-written one compare as text.
std::string rdmamcast_interfaces(const std::string &xml) {
    std::string s = std::regex_replace(xml, std::regex("<!--[\\s\\S]*?-->"), "");
    s = std::regex_replace(s, std::regex(">\\s+<"), "><");
    std::string out;
    const std::regex iface("<interface name=\"org\\.rdmamcast1\\.[^\"]*\">[\\s\\S]*?</interface>");
    for (std::sregex_iterator it(s.begin(), s.end(), iface), end; it != end; ++it)
        out += it->str() + "\n";
    return out;
}

class DbusSystem : public ::testing::Test {
protected:
    DbusSystem() = default;
    explicit DbusSystem(Fabric::Options fabric_options) : fabric(std::move(fabric_options)) {}

    void SetUp() override { start_bus(); }
    // A private system bus with the shipped policy, and `extra_policy` (more <policy> elements)
    // in a file of its own beside it.
    void start_bus(const std::string &extra_policy = {}) {
        // The bus socket must be reachable by the unprivileged caller, or a denial would test
        // "cannot connect" instead of the policy.
        ::chmod(fabric.scratch().c_str(), 0755);
        const auto dir = fabric.scratch() / "bus";
        std::filesystem::create_directories(dir / "system.d");
        ::chmod(dir.c_str(), 0755);
        std::filesystem::copy_file(MCASTD_DBUS_POLICY, dir / "system.d" / "org.rdmamcast1.conf");
        if (!extra_policy.empty())
            std::ofstream(dir / "system.d" / "test-callers.conf")
                << "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
                   " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n<busconfig>\n"
                << extra_policy << "</busconfig>\n";
        socket_ = dir / "bus.sock";
        std::ofstream(dir / "bus.conf") << R"(<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=)" << socket_.string() << R"(</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <includedir>)" << (dir / "system.d").string() << R"(</includedir>
</busconfig>
)";
        bus_ = std::make_unique<Process>(Process::Options{
            .argv = {"dbus-daemon", "--config-file=" + (dir / "bus.conf").string(), "--print-address=1", "--nofork"},
            .cwd = dir});
        // The address is printed once the bus listens: that is its readiness.
        auto addr = bus_->read_line(10s);
        ASSERT_TRUE(addr) << "dbus-daemon did not start: " << bus_->stderr_text();
        address_ = *addr;
        // The daemon harness passes the test's environment on (sd_bus_open_system reads it).
        ::setenv("DBUS_SYSTEM_BUS_ADDRESS", address_.c_str(), 1);
    }
    void TearDown() override { ::unsetenv("DBUS_SYSTEM_BUS_ADDRESS"); }

    Gid h2() { return fabric.port_gid("H2"); }

    RunResult run(std::vector<std::string> argv) {
        Process p(Process::Options{.argv = std::move(argv), .cwd = fabric.scratch()});
        RunResult r;
        r.exit_code = p.wait(20s).value_or(-1);
        r.out = p.read_all(1s);
        r.err = p.stderr_text();
        return r;
    }
    RunResult busctl(std::vector<std::string> args, bool as_nobody = false) {
        std::vector<std::string> argv;
        if (as_nobody)
            argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
        argv.insert(argv.end(), {"busctl", "--address=" + address_});
        argv.insert(argv.end(), args.begin(), args.end());
        return run(argv);
    }
    std::string property(const std::string &path, const std::string &iface, const std::string &name) {
        auto r = busctl({"get-property", "org.rdmamcast1", path, iface, name});
        EXPECT_EQ(r.exit_code, 0) << r.err;
        while (!r.out.empty() && r.out.back() == '\n')
            r.out.pop_back();
        return r.out;
    }

    // A long-lived D-Bus caller (mcastd-dbus-client, or `argv` that runs it, e.g. through
    // setpriv as another user) and its answers.
    Process &client(std::vector<std::string> argv = {MCASTD_DBUS_CLIENT}) {
        clients_.push_back(std::make_unique<Process>(
            Process::Options{.argv = std::move(argv), .cwd = fabric.scratch(), .stdin_pipe = true}));
        auto ready = clients_.back()->read_line(10s);
        EXPECT_EQ(ready.value_or(""), "ready") << clients_.back()->stderr_text();
        return *clients_.back();
    }
    std::string ask(Process &c, const std::string &command) {
        c.write_stdin(command + "\n");
        return c.read_line(20s).value_or("(no answer: " + c.stderr_text() + ")");
    }
    // "ok PATH MLID" -> PATH
    static std::string path_of(const std::string &answer) {
        std::istringstream in(answer);
        std::string ok, path;
        in >> ok >> path;
        return ok == "ok" ? path : std::string();
    }

    Fabric fabric;
    std::filesystem::path socket_;
    std::string address_;
    std::unique_ptr<Process> bus_;
    std::vector<std::unique_ptr<Process>> clients_;
};

TEST_F(DbusSystem, OwnerJoinsAndLeavesAndTheSaFollows) {
    Daemon d(fabric, "H2");
    const Gid m = G("ff15:db::1");
    Process &c = client();
    const std::string path = path_of(ask(c, "join ibsim0 1 ff15:db::1 full"));
    ASSERT_FALSE(path.empty());
    EXPECT_EQ(fabric.sa_join_state(m, h2()), 0x1);
    EXPECT_EQ(property(path, "org.rdmamcast1.Membership", "State"), "s \"active\"");
    EXPECT_EQ(property(path, "org.rdmamcast1.Membership", "MGID"), "s \"ff15:db::1\"");

    EXPECT_EQ(ask(c, "leave " + path), "ok");
    EXPECT_TRUE(fabric.wait_sa_join_state(m, h2(), std::nullopt, 5s)) << "left at the SA";
    EXPECT_NE(busctl({"introspect", "org.rdmamcast1", path}).exit_code, 0) << "the object is gone";
}

// A RoCE port over D-Bus, as on the socket: Join takes the IP group and the caller's own UDP
// socket (a Unix fd), the kernel membership is held on the GID's netdev (here lo, so the
// daemon's network namespace is the caller's), the Membership has RoCE's properties, and the
// membership ends with the caller's Leave.
TEST_F(DbusSystem, ARoceJoinTakesTheIpGroupAndTheCallersSocket) {
    const eth::FakeRdmaDevice rxe = eth::roce_device("rxe1", "lo", {0x02, 0x00, 0x4d, 0x00, 0x00, 0x01}, {10, 77, 0, 1});
    rxe.write(fabric.scratch() / "sys");
    Daemon d(fabric, "H2", "{}", {"--sysfs-root", (fabric.scratch() / "sys" / "class" / "infiniband").string()});
    auto held = [] {
        std::ifstream igmp("/proc/net/igmp");
        std::string text((std::istreambuf_iterator<char>(igmp)), {});
        return text.find("0D4DFFEF") != std::string::npos; // 239.255.77.13 as /proc/net/igmp writes it
    };
    ASSERT_FALSE(held()) << "239.255.77.13 is held on this host already";
    Process &c = client();
    const std::string line = ask(c, "join-ip rxe1 1 239.255.77.13 full");
    const std::string path = path_of(line);
    ASSERT_FALSE(path.empty()) << line;
    EXPECT_TRUE(held()) << "the kernel membership, made on the caller's socket";
    const auto prop = [&](const char *name) { return property(path, "org.rdmamcast1.Membership", name); };
    EXPECT_EQ(prop("MGID"), "s \"::ffff:239.255.77.13\"");
    EXPECT_EQ(prop("LinkLayer"), "s \"Ethernet\"");
    EXPECT_EQ(prop("GidType"), "s \"roce_v2\"");
    EXPECT_EQ(prop("Netdev"), "s \"lo\"");
    EXPECT_EQ(prop("IP"), "s \"239.255.77.13\"");
    EXPECT_EQ(prop("DMAC"), "s \"01:00:5e:7f:4d:0d\"");
    EXPECT_EQ(ask(c, "leave " + path), "ok");
    EXPECT_FALSE(held()) << "the last leave drops it";
}

// A process names itself (its executable's file name, prctl), and a name that is not UTF-8
// would make sd-bus refuse the whole ListGroups reply: one such member broke it for everyone.
TEST_F(DbusSystem, AMemberWhoseNameIsNotUtf8DoesNotBreakListGroups) {
    Daemon d(fabric, "H2");
    const auto odd = fabric.scratch() / "\xff\xfe"; // comm is the name exec'd, a symlink's own
    std::filesystem::create_symlink(MCASTD_CTL, odd);
    clients_.push_back(std::make_unique<Process>(Process::Options{
        .argv = {odd.string(), "--socket", d.socket().string(), "join", "--device", "ibsim0", "--port", "1", "--mgid",
                 "ff15:db::30", "--hold"},
        .cwd = fabric.scratch()}));
    ASSERT_TRUE(clients_.back()->read_line(20s)) << clients_.back()->stderr_text();
    // And a D-Bus caller of such a name (the bus's credentials give it escaped already).
    const auto odd_bus = fabric.scratch() / "\xfe\xff";
    std::filesystem::create_symlink(MCASTD_DBUS_CLIENT, odd_bus);
    Process &c = client({odd_bus.string()});
    ASSERT_FALSE(path_of(ask(c, "join ibsim0 1 ff15:db::31 full")).empty());

    auto r = busctl({"call", "--json=short", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager",
                     "ListGroups"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("ff15:db::30"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ff15:db::31"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"\xEF\xBF\xBD\xEF\xBF\xBD\""), std::string::npos) << "the socket member's comm: " << r.out;
}

TEST_F(DbusSystem, OnlyTheOwnerMayLeave) {
    Daemon d(fabric, "H2");
    Process &owner = client();
    Process &other = client();
    const std::string path = path_of(ask(owner, "join ibsim0 1 ff15:db::2 full"));
    ASSERT_FALSE(path.empty());
    const std::string refused = ask(other, "leave " + path);
    EXPECT_EQ(refused.rfind("error org.rdmamcast1.Error.Denied only its owner", 0), 0u) << refused;
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::2"), h2()), 0x1) << "still held";
}

TEST_F(DbusSystem, ErrorsCarryTheProtocolCodeAndSentence) {
    Daemon d(fabric, "H2");
    Process &c = client();
    EXPECT_EQ(ask(c, "join nosuch0 1 ff15:db::3 full").rfind("error org.rdmamcast1.Error.NoSuchDevice ", 0), 0u);
    EXPECT_EQ(ask(c, "join ibsim0 1 ff15:db::3 bogus"),
              "error org.rdmamcast1.Error.InvalidArgument /join_state: \"bogus\" is not a join state (full, "
              "nonmember, sendonly-nonmember or sendonly-full)");
    auto r = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Join", "sqssa{sv}",
                     "ibsim0", "1", "", "full", "1", "qkey", "t", "4294967296"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("/qkey: 4294967296 out of range [0, 4294967295]"), std::string::npos) << r.err;
    // A refusal of the session's (not the argument decoder's) names its argument too: the
    // socket's `field` has no place in a D-Bus error but the message.
    auto typed = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Join", "sqssa{sv}",
                         "ibsim0", "1", "ff15:db::3", "full", "1", "gid_type", "s", "roce_v2"});
    EXPECT_NE(typed.exit_code, 0);
    EXPECT_NE(typed.err.find("/gid_type: ibsim0/1 is an InfiniBand port: a GID type names a RoCE source GID"),
              std::string::npos)
        << typed.err;
}

// A call carries no more than a socket request may (config limits.max_message_bytes). A Join of
// one option key of 17 MiB of '/' was answered quoting it escaped ('/' -> '~1'), 34 MiB: past the
// bus's 32 MiB limit on a message, so the bus dropped the daemon's connection, and every D-Bus
// caller's memberships went with it.
TEST_F(DbusSystem, ACallLargerThanASocketRequestIsTooLargeAndNobodyElseNotices) {
    Daemon d(fabric, "H2");
    Process &holder = client();
    const std::string path = path_of(ask(holder, "join ibsim0 1 ff15:db::40 full"));
    ASSERT_FALSE(path.empty());
    const std::string too_large = "org.rdmamcast1.Error.TooLarge the call carries more than the 65536 bytes of "
                                  "arguments this daemon accepts (config limits.max_message_bytes: 65536;";
    Process &big = client();
    const std::string refused = ask(big, "join-key ibsim0 1 ff15:db::41 full " + std::to_string(17u << 20));
    EXPECT_EQ(refused.rfind("error " + too_large, 0), 0u) << refused;
    // Evict's options too (busctl passes up to 128 KiB in one argument).
    auto evict = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Evict", "a{sv}",
                         "1", std::string(100000, '/'), "u", "0"});
    EXPECT_NE(evict.exit_code, 0);
    EXPECT_NE(evict.err.find("the call carries more than the 65536 bytes"), std::string::npos) << evict.err.substr(0, 300);

    // The daemon is still on the bus, and the holder's membership with it.
    EXPECT_EQ(property(path, "org.rdmamcast1.Membership", "State"), "s \"active\"");
    EXPECT_EQ(ask(holder, "ping"), "pong");
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::40"), h2()), 0x1);
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::41"), h2()), std::nullopt);
}

TEST_F(DbusSystem, CallerOutsideTheGroupIsDeniedByTheBus) {
    Daemon d(fabric, "H2");
    auto r = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Join", "sqssa{sv}",
                     "ibsim0", "1", "ff15:db::4", "full", "0"},
                    /*as_nobody=*/true);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("Access denied"), std::string::npos) << r.err;
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::4"), h2()), std::nullopt);
}

TEST_F(DbusSystem, JoinByNameReachesTheMappedMgid) {
    Daemon d(fabric, "H2", R"({"groups": {"names": {"prefix": "ff15:6e61:6d65::/64", "pkey": "0xffff"}}})");
    // PROTOCOL.md's test vector: job-42 under ff15:6e61:6d65::/64.
    auto r = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Join", "sqssa{sv}",
                     "ibsim0", "1", "", "full", "1", "name", "s", "job-42"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\"ff15:6e61:6d65:0:6636:89a9:7bcf:99db\""), std::string::npos) << r.out;
    auto bad = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Join", "sqssa{sv}",
                       "ibsim0", "1", "ff15:db::20", "full", "1", "name", "s", "job-42"});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("/name: name and mgid exclude each other"), std::string::npos) << bad.err;
}

TEST_F(DbusSystem, CallerThatLeavesTheBusLosesItsMemberships) {
    Daemon d(fabric, "H2");
    // busctl joins and exits: its connection, and so the membership, ends with it.
    auto r = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Join", "sqssa{sv}",
                     "ibsim0", "1", "ff15:db::5", "full", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("/org/rdmamcast1/membership/"), std::string::npos) << r.out;
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:db::5"), h2(), std::nullopt, 5s));

    // A killed caller: both its memberships go.
    Process &c = client();
    ASSERT_FALSE(path_of(ask(c, "join ibsim0 1 ff15:db::6 full")).empty());
    const std::string second = ask(c, "join ibsim0 1 ff15:db::7 full");
    ASSERT_FALSE(path_of(second).empty()) << second;
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::6"), h2()), 0x1);
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::7"), h2()), 0x1);
    c.signal(SIGKILL);
    c.wait(5s);
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:db::6"), h2(), std::nullopt, 5s));
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:db::7"), h2(), std::nullopt, 5s));
}

// A bus that allows each connection few match rules (dbus-daemon's system bus: 512 by default)
// and more callers than that, each holding a membership. The daemon watched every caller with a
// match rule of its own (sd_bus_track); past the limit the bus refused the rule, and with
// libsystemd 252 the daemon lost its bus connection (the Join that needed the rule was answered
// NoReply, "recipient disconnected"), releasing every caller's memberships. Now the one
// NameOwnerChanged rule the daemon has from its start tells it who left.
class DbusFewMatchRules : public DbusSystem {
protected:
    // The daemon's own rule (NameOwnerChanged, its only one) fits; one more per caller would
    // not: with those the 8th caller's made the bus refuse one.
    static constexpr int kMatchRules = 8;
    static constexpr int kCallers = 12;
    void SetUp() override {
        start_bus("  <limit name=\"max_match_rules_per_connection\">" + std::to_string(kMatchRules) + "</limit>\n");
    }
};

TEST_F(DbusFewMatchRules, MoreCallersThanTheBusAllowsMatchRulesAllKeepTheirMemberships) {
    Daemon d(fabric, "H2");
    std::vector<Process *> callers;
    std::vector<std::string> paths, mgids;
    for (int i = 0; i < kCallers; ++i) {
        callers.push_back(&client());
        mgids.push_back("ff15:db:8::" + std::to_string(i + 1));
        const std::string answer = ask(*callers.back(), "join ibsim0 1 " + mgids.back() + " full");
        paths.push_back(path_of(answer));
        ASSERT_FALSE(paths.back().empty()) << "caller " << i << ": " << answer;
    }
    // The bus handed the daemon every refusal of a match rule before any of these calls.
    const RunResult tree = busctl({"--list", "tree", "org.rdmamcast1"});
    ASSERT_EQ(tree.exit_code, 0) << tree.err;
    auto list = busctl({"call", "--json=short", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager",
                        "ListGroups"});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    for (int i = 0; i < kCallers; ++i) {
        EXPECT_NE(tree.out.find(paths[i] + "\n"), std::string::npos) << paths[i] << " listed: " << tree.out;
        EXPECT_NE(list.out.find("\"" + mgids[i] + "\""), std::string::npos) << mgids[i] << " in ListGroups";
        EXPECT_EQ(property(paths[i], "org.rdmamcast1.Membership", "State"), "s \"active\"") << paths[i];
        EXPECT_EQ(fabric.sa_join_state(G(mgids[i]), h2()), 0x1) << mgids[i] << " at the SA";
    }
    // A caller that leaves the bus is still released, by the daemon's one rule.
    callers.front()->signal(SIGKILL);
    callers.front()->wait(5s);
    EXPECT_TRUE(fabric.wait_sa_join_state(G(mgids.front()), h2(), std::nullopt, 5s));
    EXPECT_EQ(fabric.sa_join_state(G(mgids.back()), h2()), 0x1) << "the others keep theirs";
}

TEST_F(DbusSystem, GracefulStopLeavesTheBusClientsGroups) {
    Daemon d(fabric, "H2");
    Process &c = client();
    ASSERT_FALSE(path_of(ask(c, "join ibsim0 1 ff15:db::a full")).empty());
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::a"), h2()), 0x1);
    EXPECT_EQ(d.stop(), 0);
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::a"), h2()), std::nullopt) << "left before exiting";
}

// A D-Bus caller is one client of the daemon like a socket connection, under the same limits
// and with the same sentences; nothing it already holds is touched when it reaches one.
TEST_F(DbusSystem, CallersLiveByTheSameLimitsAsSocketClients) {
    Daemon d(fabric, "H2",
             R"({"limits": {"max_requests_in_flight": 2, "max_memberships_per_client": 3, "max_clients": 3},
                 "sa": {"timeout_ms": 1000, "max_timeout_ms": 1000, "tries": 30}})");
    Process &c = client();
    for (const char *m : {"ff15:db::b", "ff15:db::c", "ff15:db::d"})
        ASSERT_FALSE(path_of(ask(c, std::string("join ibsim0 1 ") + m + " full")).empty()) << m;
    EXPECT_EQ(ask(c, "join ibsim0 1 ff15:db::e full"),
              "error org.rdmamcast1.Error.Limit this connection holds or waits for 3 memberships, its limit (config "
              "limits.max_memberships_per_client: 3)");
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::e"), h2()), std::nullopt);
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::b"), h2()), 0x1) << "what is held stays";

    // Clients of both transports count together: c, a socket connection and a second caller
    // (a caller is a client from its first Join) leave no room for a fourth.
    RawClient raw(d.socket());
    raw.hello();
    Process &second = client();
    ASSERT_FALSE(path_of(ask(second, "join ibsim0 1 ff15:db::f full")).empty());
    auto refused = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Join",
                           "sqssa{sv}", "ibsim0", "1", "ff15:db::13", "full", "0"});
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.err.find("the daemon serves 3 clients, its bound (config limits.max_clients: 3)"),
              std::string::npos)
        << refused.err;

    // Joins waiting for the SA: with OpenSM gone they wait, and a third is refused at once.
    fabric.stop_opensm();
    EXPECT_EQ(ask(second, "join-async ibsim0 1 ff15:db::10 full"), "sent");
    EXPECT_EQ(ask(second, "join-async ibsim0 1 ff15:db::11 full"), "sent");
    EXPECT_EQ(ask(second, "join ibsim0 1 ff15:db::12 full"),
              "error org.rdmamcast1.Error.Limit this connection has 2 joins waiting for the SA, its limit (config "
              "limits.max_requests_in_flight: 2)");
    // The two waiting joins were only waiting: with an SA again they complete. The new OpenSM
    // is an SM restart to the daemon, so the caller's held membership may be told "active"
    // again (a StateChanged signal) before, between or after the replies.
    fabric.start_opensm();
    for (int replies = 0; replies < 2;) {
        const auto done = second.read_line(30s);
        ASSERT_TRUE(done);
        if (done->rfind("signal ", 0) == 0)
            continue;
        EXPECT_EQ(done->rfind("reply ok /org/rdmamcast1/membership/", 0), 0u) << *done;
        ++replies;
    }
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:db::10"), h2(), 0x1, 5s));
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::12"), h2()), std::nullopt);
}

TEST_F(DbusSystem, ServedIntrospectionEqualsProtoXml) {
    Daemon d(fabric, "H2");
    Process &c = client();
    const std::string path = path_of(ask(c, "join ibsim0 1 ff15:db::8 full"));
    ASSERT_FALSE(path.empty());
    auto manager = busctl({"introspect", "--xml-interface", "org.rdmamcast1", "/org/rdmamcast1"});
    auto member = busctl({"introspect", "--xml-interface", "org.rdmamcast1", path});
    ASSERT_EQ(manager.exit_code, 0) << manager.err;
    ASSERT_EQ(member.exit_code, 0) << member.err;
    const std::string served = rdmamcast_interfaces(manager.out) + rdmamcast_interfaces(member.out);
    EXPECT_NE(served.find("<interface name=\"org.rdmamcast1.Manager\">"), std::string::npos) << manager.out;
    EXPECT_NE(served.find("<interface name=\"org.rdmamcast1.Membership\">"), std::string::npos) << member.out;
    EXPECT_EQ(served, rdmamcast_interfaces(read_text_file(MCASTD_DBUS_XML)));
}

TEST_F(DbusSystem, StateChangedReachesOnlyTheOwner) {
    Daemon d(fabric, "H2", R"({"monitor": {"portinfo_interval_ms": 100}})");
    Process &owner = client();
    Process &bystander = client();
    const std::string path = path_of(ask(owner, "join ibsim0 1 ff15:db::9 full"));
    ASSERT_FALSE(path.empty());

    fabric.console("Unlink \"H2\"");
    auto lost = owner.read_line(20s);
    ASSERT_TRUE(lost);
    EXPECT_EQ(lost->rfind("signal " + path + " lost ", 0), 0u) << *lost;
    fabric.console("ReLink \"H2\"");
    auto back = owner.read_line(30s);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->rfind("signal " + path + " active ", 0), 0u) << *back;
    EXPECT_EQ(property(path, "org.rdmamcast1.Membership", "State"), "s \"active\"");

    // Had the daemon broadcast, the bus would have delivered the signals to the bystander
    // before the daemon's answer to its ping.
    EXPECT_EQ(ask(bystander, "ping"), "pong");
}

TEST_F(DbusSystem, LogControlSetsTheLevelAndTarget) {
    Daemon d(fabric, "H2");
    const std::string path = "/org/freedesktop/LogControl1", iface = "org.freedesktop.LogControl1";
    EXPECT_EQ(property(path, iface, "LogLevel"), "s \"info\"");
    EXPECT_EQ(busctl({"set-property", "org.rdmamcast1", path, iface, "LogLevel", "s", "debug"}).exit_code, 0);
    EXPECT_EQ(property(path, iface, "LogLevel"), "s \"debug\"");
    auto bad = busctl({"set-property", "org.rdmamcast1", path, iface, "LogLevel", "s", "loud"});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("unknown log level 'loud'"), std::string::npos) << bad.err;
    EXPECT_EQ(property(path, iface, "LogTarget"), "s \"auto\"");
    EXPECT_EQ(busctl({"set-property", "org.rdmamcast1", path, iface, "LogTarget", "s", "console"}).exit_code, 0);
    EXPECT_EQ(property(path, iface, "LogTarget"), "s \"console\"");
    auto bad_target = busctl({"set-property", "org.rdmamcast1", path, iface, "LogTarget", "s", "kmsg"});
    EXPECT_NE(bad_target.err.find("unknown log target 'kmsg'"), std::string::npos) << bad_target.err;
    EXPECT_EQ(property(path, iface, "SyslogIdentifier"), "s \"rdma-mcastd\"");
    EXPECT_NE(busctl({"set-property", "org.rdmamcast1", path, iface, "LogLevel", "s", "err"}, true).exit_code, 0)
        << "only root sets properties";
}

TEST_F(DbusSystem, WithoutABusTheSocketStillServes) {
    ::setenv("DBUS_SYSTEM_BUS_ADDRESS", ("unix:path=" + (fabric.scratch() / "no-bus.sock").string()).c_str(), 1);
    Daemon d(fabric, "H2"); // READY=1 all the same
    EXPECT_TRUE(d.process().wait_for_stderr("D-Bus disabled: cannot connect to the system bus", 5s))
        << d.process().stderr_text();
    RawClient raw(d.socket());
    raw.hello();
}

TEST_F(DbusSystem, DisabledInConfigStaysOffTheBus) {
    Daemon d(fabric, "H2", R"({"dbus": {"enabled": false}})");
    auto r = busctl({"status", "org.rdmamcast1"});
    EXPECT_NE(r.exit_code, 0) << r.out;
}

// Root evicts over D-Bus as over the socket (issue 28): by membership or by uid, each holder
// told; anyone else is refused.
TEST_F(DbusSystem, RootEvictsOverTheBusAndTheHolderIsTold) {
    Daemon d(fabric, "H2");
    Process &holder = client();
    const std::string path = path_of(ask(holder, "join ibsim0 1 ff15:db::61 full"));
    ASSERT_FALSE(path.empty());
    RawClient raw(d.socket());
    raw.hello();
    ASSERT_NE(raw.call(R"({"id":2,"op":"join","device":"ibsim0","port":1,"mgid":"ff15:db::62"})", 2).find(
                  "\"ok\":true"),
              std::string::npos);
    const std::string id = path.substr(path.rfind('/') + 1);

    auto refused = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Evict", "a{sv}",
                           "1", "membership", "t", id},
                          /*as_nobody=*/true);
    EXPECT_NE(refused.exit_code, 0) << "the bus policy keeps nobody out";
    auto bad = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Evict", "a{sv}", "2",
                       "membership", "t", id, "disconnect", "b", "true"});
    EXPECT_NE(bad.err.find("/disconnect: goes with uid"), std::string::npos) << bad.err;

    auto one = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Evict", "a{sv}", "1",
                       "membership", "t", id});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_EQ(one.out, "tt 1 0\n");
    const auto told = holder.read_line(10s);
    ASSERT_TRUE(told);
    // The signal's record and the object still name the group: the eviction's event has no
    // record, and the last known one stays (it read "::" and a zero record).
    EXPECT_EQ(told->rfind("signal " + path + " lost ff15:db::61 - evicted by an administrator (busctl, pid ", 0), 0u)
        << *told;
    EXPECT_EQ(property(path, "org.rdmamcast1.Membership", "MGID"), "s \"ff15:db::61\"");
    EXPECT_EQ(property(path, "org.rdmamcast1.Membership", "State"), "s \"lost\"");
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:db::61"), h2(), std::nullopt, 5s));
    EXPECT_EQ(ask(holder, "leave " + path), "ok") << "a later leave of it succeeds";

    // By uid, with disconnect: root's socket client's membership too, and its connection (the
    // evicting caller itself is spared).
    auto all = busctl({"call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager", "Evict", "a{sv}", "2",
                       "uid", "u", "0", "disconnect", "b", "true"});
    ASSERT_EQ(all.exit_code, 0) << all.err;
    EXPECT_EQ(all.out, "tt 1 1\n");
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:db::62"), h2(), std::nullopt, 5s));
    const auto lost = raw.receive(5s); // then its connection closes
    ASSERT_TRUE(lost);
    EXPECT_NE(lost->find("evicted by an administrator"), std::string::npos) << *lost;
}

// ---- restarts of the daemon (issue 28): a caller's unique name outlives the daemon's connection ----

class DbusRestart : public DbusSystem {
protected:
    DbusRestart() { std::filesystem::create_directories(state_dir()); }
    std::filesystem::path state_dir() { return fabric.scratch() / "state"; }
    std::unique_ptr<Daemon> start() {
        return std::make_unique<Daemon>(fabric, "H2",
                                        R"({"restart": {"grace_ms": 3000}, "monitor": {"portinfo_interval_ms": 100}})",
                                        std::vector<std::string>{"--state-dir", state_dir().string()});
    }
    nlohmann::json counters(Daemon &d) {
        RawClient c(d.socket());
        c.call(R"({"id":0,"op":"hello","versions":[2],"client":"test"})", 0);
        return nlohmann::json::parse(c.call(R"({"id":1,"op":"status"})", 1))["result"]["counters"];
    }
    // The caller `c` still holds `path` after the restart: the object is there, its signals
    // reach it, and its Leave reaches the SA through the new instance.
    void expect_kept(Process &c, const std::string &path, const char *mgid) {
        EXPECT_EQ(property(path, "org.rdmamcast1.Membership", "State"), "s \"active\"");
        EXPECT_EQ(property(path, "org.rdmamcast1.Membership", "MGID"), std::string("s \"") + mgid + "\"");
        EXPECT_EQ(property(path, "org.rdmamcast1.Membership", "Owner").find("s \":"), 0u);
        fabric.console("Unlink \"H2\"");
        const auto lost = c.read_line(20s);
        ASSERT_TRUE(lost);
        EXPECT_EQ(lost->rfind("signal " + path + " lost ", 0), 0u) << *lost;
        fabric.console("ReLink \"H2\"");
        const auto back = c.read_line(30s);
        ASSERT_TRUE(back);
        EXPECT_EQ(back->rfind("signal " + path + " active ", 0), 0u) << *back;
        EXPECT_EQ(ask(c, "leave " + path), "ok");
        EXPECT_TRUE(fabric.wait_sa_join_state(G(mgid), h2(), std::nullopt, 5s)) << "left through the new instance";
    }
};

TEST_F(DbusRestart, APlannedRestartKeepsTheCallersOnTheBusAndReleasesTheOthers) {
    auto d = start();
    Process &stays = client();
    Process &goes = client();
    const std::string kept = path_of(ask(stays, "join ibsim0 1 ff15:db::70 full"));
    ASSERT_FALSE(kept.empty());
    ASSERT_FALSE(path_of(ask(goes, "join ibsim0 1 ff15:db::71 full")).empty());
    d->process().signal(SIGUSR2); // what systemctl restart sends
    ASSERT_EQ(d->process().wait(20s), std::optional<int>(0));
    d.reset();
    goes.signal(SIGKILL); // leaves the bus while no daemon runs
    goes.wait(5s);
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::71"), h2()), 0x1) << "the old instance deleted nothing";

    d = start();
    EXPECT_TRUE(d->process().wait_for_stderr("D-Bus client(s) still on the bus keep their sessions", 5s))
        << d->process().stderr_text();
    // Released at once, not at the end of the grace: its name is gone.
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:db::71"), h2(), std::nullopt, 2s));
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::70"), h2()), 0x1);
    EXPECT_EQ(counters(*d)["sa_sets"], 0) << "the membership kept cost the SA nothing";
    expect_kept(stays, kept, "ff15:db::70");
}

TEST_F(DbusRestart, ACrashKeepsTheCallersOnTheBus) {
    auto d = start();
    Process &c = client();
    const std::string path = path_of(ask(c, "join ibsim0 1 ff15:db::72 full"));
    ASSERT_FALSE(path.empty());
    ASSERT_TRUE(wait_saved_memberships(state_dir(), 1, 5s));
    d->process().signal(SIGKILL);
    d->process().wait(10s);
    d.reset();
    d = start();
    EXPECT_EQ(counters(*d)["sa_sets"], 0);
    EXPECT_EQ(counters(*d)["sa_deletes"], 0);
    expect_kept(c, path, "ff15:db::72");
}

// A membership the restart cannot take back (its port is not served now: the state file is
// edited to say it was on port 2, which this node has not) is told to its D-Bus caller, as a
// socket client's resume shows it: the object stays, "lost" with the reason, the signal reaches
// the caller, and its Leave succeeds. The caller's other membership is kept.
TEST_F(DbusRestart, AMembershipTheRestartCannotTakeBackIsToldLostAndMayBeLeft) {
    auto d = start();
    Process &c = client();
    const std::string kept = path_of(ask(c, "join ibsim0 1 ff15:db::74 full"));
    const std::string gone = path_of(ask(c, "join ibsim0 1 ff15:db::75 full"));
    ASSERT_FALSE(kept.empty() || gone.empty());
    d->process().signal(SIGUSR2);
    ASSERT_EQ(d->process().wait(20s), std::optional<int>(0));
    d.reset();

    const std::filesystem::path file = state_dir() / "state.json";
    nlohmann::json st = nlohmann::json::parse(read_text_file(file));
    const std::string log = read_text_file(state_dir() / "state.log");
    ASSERT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << "a planned restart leaves every change in state.json, "
                                                               "the log only its header: "
                                                            << log;
    const MembershipId gone_id = std::stoull(gone.substr(gone.rfind('/') + 1));
    bool edited = false;
    for (auto &session : st["sessions"])
        for (auto &m : session["memberships"])
            if (m["membership"] == gone_id) {
                m["port"] = 2;
                edited = true;
            }
    ASSERT_TRUE(edited) << st.dump();
    std::ofstream(file) << st.dump();

    d = start();
    const auto told = c.read_line(20s);
    ASSERT_TRUE(told) << d->process().stderr_text();
    EXPECT_EQ(told->rfind("signal " + gone + " lost ff15:db::75 ", 0), 0u) << *told;
    EXPECT_NE(told->find("the daemon restarted and could not take this membership back: its port ibsim0/2 is not "
                         "served now; join again"),
              std::string::npos)
        << *told;
    EXPECT_EQ(property(gone, "org.rdmamcast1.Membership", "State"), "s \"lost\"");
    EXPECT_EQ(property(gone, "org.rdmamcast1.Membership", "MGID"), "s \"ff15:db::75\"");
    EXPECT_EQ(ask(c, "leave " + gone), "ok");
    expect_kept(c, kept, "ff15:db::74");
}

// A Join that arrives while a restart drains is answered Cancelled at once, "call again": it
// cannot keep the drain from ending, and it does not wait at the hand-over for the bus to
// answer it NoReply. The drain is made long by a join whose SA is gone (OpenSM stopped; three
// tries of a second each).
TEST_F(DbusRestart, AJoinDuringTheRestartsDrainIsToldToCallAgain) {
    auto d = std::make_unique<Daemon>(fabric, "H2", R"({"sa": {"timeout_ms": 1000, "max_timeout_ms": 1000, "tries": 3}})",
                                      std::vector<std::string>{"--state-dir", state_dir().string()});
    Process &waiting = client();
    Process &late = client();
    fabric.stop_opensm();
    const auto sent = [&] { return counters(*d)["sa_mads_sent"].get<long>(); };
    const long before = sent();
    waiting.write_stdin("join ibsim0 1 ff15:db::77 full\n"); // nobody answers its SA MADs
    ASSERT_TRUE(poll_until(10s, [&] { return sent() > before; })) << "its MAD is out";
    d->process().signal(SIGUSR2);
    ASSERT_TRUE(d->process().wait_for_stderr("restarting; every membership and connection stays", 5s));
    const std::string answer = ask(late, "join ibsim0 1 ff15:db::78 full");
    EXPECT_EQ(answer.rfind("error org.rdmamcast1.Error.Cancelled rdma-mcastd is restarting: call Join again", 0), 0u)
        << answer;
    EXPECT_EQ(d->process().wait(20s), std::optional<int>(0)) << "the drain ended with the waiting join's SA work";
}

// ---- the access policy's quotas on the bus (issue 15), callers as real users ----

class DbusPolicy : public DbusSystem {
protected:
    // OpenSM sweeps every second and dumps its SA: the complete list of each port's groups.
    DbusPolicy() : DbusSystem({.opensm_args = {"-s", "1"}, .sa_db_dump = true}) {}

    void SetUp() override {
        if (auto why = TestUsers::unavailable())
            GTEST_SKIP() << *why;
        users_ = std::make_unique<TestUsers>();
        group_ = users_->add_group("g");
        // The shipped policy lets root and rdma-mcast call; this test's group may call as
        // rdma-mcast may.
        std::string allow;
        for (const char *iface : {"org.rdmamcast1.Manager", "org.rdmamcast1.Membership", "org.freedesktop.DBus.Peer"})
            allow += std::string("    <allow send_destination=\"org.rdmamcast1\" send_interface=\"") + iface + "\"/>\n";
        for (const char *member : {"Get", "GetAll"})
            allow += std::string("    <allow send_destination=\"org.rdmamcast1\" "
                                 "send_interface=\"org.freedesktop.DBus.Properties\" send_member=\"") +
                     member + "\"/>\n";
        start_bus("  <policy group=\"" + group_.name + "\">\n" + allow + "  </policy>\n");
    }
    // Every process of the test's users stops before the users go; then none may be left.
    void TearDown() override {
        clients_.clear();
        procs_.clear();
        // The children of handed-over connections exit on their stdin's EOF, by themselves.
        for (pid_t pid : handed_over_pids_)
            if (const long fd = ::syscall(SYS_pidfd_open, pid, 0); fd >= 0) {
                pollfd p{static_cast<int>(fd), POLLIN, 0};
                EXPECT_EQ(::poll(&p, 1, 10'000), 1) << "the child of a handed-over connection, pid " << pid;
                ::close(static_cast<int>(fd));
            }
        if (users_) {
            const auto names = users_->user_names();
            users_.reset();
            for (const auto &n : names)
                EXPECT_FALSE(in_passwd(n)) << n << " left in /etc/passwd";
        }
        DbusSystem::TearDown();
    }

    Process &client_as(const TestUser &u) { return client(TestUsers::as_user(u, {MCASTD_DBUS_CLIENT})); }
    // A caller as `u` whose connection was made by a process that exited before the connection
    // said Hello (mcastd-dbus-client --connect-fork-exit): the pid the bus recorded is no
    // process's.
    Process &handed_over_client_as(const TestUser &u) {
        Process &c = client(TestUsers::as_user(u, {MCASTD_DBUS_CLIENT, "--connect-fork-exit"}));
        const std::string me = ask(c, "whoami"); // "pid N"
        EXPECT_EQ(me.rfind("pid ", 0), 0u) << me;
        if (me.rfind("pid ", 0) == 0)
            handed_over_pids_.push_back(std::stoi(me.substr(4)));
        return c;
    }
    // The test process's cgroup (cgroup v2), which its clients share: what a rule on cgroups
    // names to admit them.
    static std::string own_cgroup() {
        std::ifstream in("/proc/self/cgroup");
        for (std::string line; std::getline(in, line);)
            if (line.rfind("0::", 0) == 0)
                return line.substr(3);
        return {};
    }
    // Rewrites the daemon's config and reloads it (SIGHUP), until it says READY=1 again.
    void reload(Daemon &d, const std::string &config_json) {
        std::ofstream(d.config(), std::ios::trunc) << config_json;
        d.process().signal(SIGHUP);
        ASSERT_TRUE(d.notify().wait_for("RELOADING=1", 10s));
        ASSERT_TRUE(d.notify().wait_for("READY=1", 10s));
    }
    Gid mgid_of(const std::string &path) {
        const std::string p = property(path, "org.rdmamcast1.Membership", "MGID"); // s "ff15:..."
        return p.size() > 4 ? G(p.substr(3, p.size() - 4)) : Gid{};
    }
    // `tries` creates over D-Bus (MGID "": the SA assigns one): the first `succeed` make their
    // group, whose MGIDs are returned; the others are answered `refusal`.
    std::set<Gid> creates(Process &c, int tries, int succeed, const std::string &refusal) {
        std::set<Gid> made;
        for (int i = 1; i <= tries; ++i) {
            const std::string r = ask(c, "join ibsim0 1 - full");
            if (i > succeed) {
                EXPECT_EQ(r, refusal) << "create " << i;
            } else if (const std::string path = path_of(r); !path.empty()) {
                made.insert(mgid_of(path));
            } else {
                ADD_FAILURE() << "create " << i << ": " << r;
            }
        }
        return made;
    }
    static std::string over_quota(const TestUser &u, int n) {
        return "error org.rdmamcast1.Error.Limit uid " + std::to_string(u.uid) + " created " + std::to_string(n) +
               " groups it still holds, its quota (config access.quotas.creates_per_uid or the admitting rule's: 20)";
    }

    std::unique_ptr<TestUsers> users_;
    TestGroup group_;
    std::vector<std::unique_ptr<Process>> procs_;
    std::vector<pid_t> handed_over_pids_;
};

TEST_F(DbusPolicy, TheCreateQuotaHoldsOnTheBusAndOneUidSharesItWithTheSocket) {
    const TestUser a = users_->add_user("a", group_), b = users_->add_user("b", group_);
    Daemon d(fabric, "H2",
             R"({"socket_group": ")" + group_.name + R"(", "access": {"quotas": {"creates_per_uid": 20}}})");
    make_reachable(d.socket(), fabric.scratch());

    // A asks for 25 groups over D-Bus: 20 are made.
    std::set<Gid> made = creates(client_as(a), 25, 20, over_quota(a, 20));
    ASSERT_EQ(made.size(), 20u);
    EXPECT_EQ(fabric.sa_dump_groups_of(h2(), made, 15s), made) << "exactly A's 20 groups have H2 at the SA";

    // B creates 10 through the socket, then D-Bus gives B only the 10 left of the same quota.
    procs_.push_back(std::make_unique<Process>(Process::Options{
        .argv = TestUsers::as_user(b, {MCASTD_FLOOD, d.socket().string(), "ibsim0", "1", "10"}), .stdin_pipe = true}));
    auto line = procs_.back()->wait_for_line("\"ok\":", 30s);
    ASSERT_TRUE(line) << procs_.back()->stderr_text();
    const auto flood = nlohmann::json::parse(*line);
    ASSERT_EQ(flood.value("ok", -1), 10) << *line;
    for (const auto &m : flood["mgids"])
        made.insert(G(m.get<std::string>()));
    for (const Gid &m : creates(client_as(b), 12, 10, over_quota(b, 20)))
        made.insert(m);
    ASSERT_EQ(made.size(), 40u);
    EXPECT_EQ(fabric.sa_dump_groups_of(h2(), made, 15s), made) << "20 of A's and 20 of B's at the SA";
}

// ---- who the caller is, as the bus attests it (issue 26) ----

// The pid the bus recorded for a connection belongs to no process by the first Join (the
// process that connected forked, and exited before its child said Hello): the caller's uid and
// groups stand, its cgroup is never read from whatever has that pid, and a join that a rule on
// cgroups decides is refused. An ordinary caller of the same user is judged by its cgroup.
TEST_F(DbusPolicy, ACallerWhoseConnectingProcessIsGoneIsNotJudgedByACgroup) {
    const TestUser a = users_->add_user("a", group_);
    const std::string cg = own_cgroup();
    ASSERT_FALSE(cg.empty()) << "no cgroup v2 path in /proc/self/cgroup";
    const nlohmann::json config = {
        {"access", {{"rules", nlohmann::json::array({{{"name", "here"}, {"cgroups", {cg}}, {"create", true}}})}}}};
    Daemon d(fabric, "H2", config.dump());

    Process &ordinary = client_as(a);
    ASSERT_FALSE(path_of(ask(ordinary, "join ibsim0 1 ff15:db::30 full")).empty()) << "the cgroup rule admits";

    Process &handed = handed_over_client_as(a);
    const std::string refused = ask(handed, "join ibsim0 1 ff15:db::31 full");
    const std::string head = "error org.rdmamcast1.Error.Denied cannot attest the caller's cgroup, which rule \"here\" "
                             "(config access.rules) matches on: bus connection :";
    EXPECT_EQ(refused.rfind(head, 0), 0u) << refused;
    const std::string tail = ": process " + std::to_string(handed.pid()) + " has exited";
    EXPECT_TRUE(refused.ends_with(tail)) << refused;
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::31"), h2()), std::nullopt) << "nothing reached the SA";
    // Nothing else depends on the cgroup: the caller may still list (the allow lists are empty).
    EXPECT_EQ(ask(handed, "list"), "ok 1");
}

// A connection the daemon did not see appear (made before it started) has no attested cgroup:
// a join decided by a rule on cgroups is refused, telling the caller to reconnect; a join that
// a rule on groups decides first goes on.
TEST_F(DbusPolicy, AConnectionOlderThanTheDaemonIsRefusedOnlyWhatItsCgroupWouldDecide) {
    const TestGroup ops = users_->add_group("ops");
    const TestUser a = users_->add_user("a", group_), b = users_->add_user("b", group_, {ops});
    Process &old_a = client_as(a);
    Process &old_b = client_as(b);
    const nlohmann::json config = {
        {"access",
         {{"rules", nlohmann::json::array({{{"name", "ops"}, {"groups", {ops.name}}, {"create", true}},
                                           {{"name", "here"}, {"cgroups", {own_cgroup()}}, {"create", true}}})}}}};
    Daemon d(fabric, "H2", config.dump());

    EXPECT_FALSE(path_of(ask(old_b, "join ibsim0 1 ff15:db::32 full")).empty()) << "rule ops decides, by group";
    EXPECT_EQ(ask(old_a, "join ibsim0 1 ff15:db::33 full"),
              "error org.rdmamcast1.Error.Denied cannot attest the caller's cgroup, which rule \"here\" (config "
              "access.rules) matches on: its bus connection is older than this daemon; reconnect to the bus");
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::33"), h2()), std::nullopt);
    Process &new_a = client_as(a);
    EXPECT_FALSE(path_of(ask(new_a, "join ibsim0 1 ff15:db::33 full")).empty()) << "reconnected, it is judged";
}

// ListGroups and Ports obey the allow lists as Join does, with the same identity: on
// dbus-daemon the bus's UnixGroupIDs carry the primary gid too, so allow_gids admits a member by
// its primary group or a supplementary one. An owner a reload no longer admits may only Leave.
TEST_F(DbusPolicy, ListGroupsAndPortsObeyTheAllowListsAndAnOwnerTheyDropMayOnlyLeave) {
    const TestGroup in = users_->add_group("in"), out = users_->add_group("out");
    const TestUser a = users_->add_user("a", group_, {in}), p = users_->add_user("p", in, {group_}),
                   c = users_->add_user("c", group_);
    Daemon d(fabric, "H2", nlohmann::json({{"access", {{"allow_gids", {in.name}}}}}).dump());

    Process &member = client_as(a);
    Process &primary = client_as(p);
    Process &stranger = client_as(c);
    EXPECT_EQ(ask(member, "list"), "ok 0");
    EXPECT_EQ(ask(member, "ports"), "ok 1");
    EXPECT_EQ(ask(primary, "ports"), "ok 1") << "admitted by its primary group";
    const std::string no = "error org.rdmamcast1.Error.Denied uid " + std::to_string(c.uid) +
                           " is not allowed to use rdma-mcastd (config access.allow_uids, access.allow_gids)";
    EXPECT_EQ(ask(stranger, "list"), no);
    EXPECT_EQ(ask(stranger, "ports"), no);
    EXPECT_EQ(ask(stranger, "join ibsim0 1 ff15:db::34 full"), no);

    const std::string path = path_of(ask(member, "join ibsim0 1 ff15:db::35 full"));
    ASSERT_FALSE(path.empty());
    // A membership's properties too (and GetAll's, each one).
    const std::vector<std::string> bus{"busctl", "--address=" + address_};
    for (auto args : {std::vector<std::string>{"get-property", "org.rdmamcast1", path, "org.rdmamcast1.Membership",
                                               "State"},
                      std::vector<std::string>{"call", "org.rdmamcast1", path, "org.freedesktop.DBus.Properties",
                                               "GetAll", "s", "org.rdmamcast1.Membership"}}) {
        args.insert(args.begin(), bus.begin(), bus.end());
        const RunResult r = run(TestUsers::as_user(c, args));
        EXPECT_NE(r.exit_code, 0) << args[2];
        EXPECT_NE(r.err.find(" is not allowed to use rdma-mcastd"), std::string::npos) << args[2] << ": " << r.err;
    }
    reload(d, nlohmann::json({{"access", {{"allow_gids", {out.name}}}}}).dump());
    const std::string only_leave = "error org.rdmamcast1.Error.Denied uid " + std::to_string(a.uid) +
                                   " is not allowed to use rdma-mcastd (config access.allow_uids, "
                                   "access.allow_gids); it may leave the memberships it holds, and nothing else";
    EXPECT_EQ(ask(member, "list"), only_leave);
    EXPECT_EQ(ask(member, "ports"), only_leave);
    EXPECT_EQ(ask(member, "join ibsim0 1 ff15:db::36 full"), only_leave);
    EXPECT_EQ(fabric.sa_join_state(G("ff15:db::35"), h2()), 0x1) << "what it holds is kept";
    EXPECT_EQ(ask(member, "leave " + path), "ok");
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:db::35"), h2(), std::nullopt, 5s));
}

// refusal() keeps its verdict for one call (a GetAll asks for each property), keyed by the
// sender and the call's cookie, which the sender chooses: a call that reuses a cookie after a
// reload got the verdict of the policy before it.
TEST_F(DbusPolicy, AReloadLeavesNoOldVerdictForACallThatReusesItsCookie) {
    const TestGroup in = users_->add_group("in"), out = users_->add_group("out");
    const TestUser a = users_->add_user("a", group_, {in});
    const std::string admit_in = nlohmann::json({{"access", {{"allow_gids", {in.name}}}}}).dump();
    Daemon d(fabric, "H2", admit_in);
    Process &c = client_as(a);
    EXPECT_EQ(ask(c, "list-cookie 1000"), "ok 0");
    reload(d, nlohmann::json({{"access", {{"allow_gids", {out.name}}}}}).dump());
    EXPECT_EQ(ask(c, "list-cookie 1000"),
              "error org.rdmamcast1.Error.Denied uid " + std::to_string(a.uid) +
                  " is not allowed to use rdma-mcastd (config access.allow_uids, access.allow_gids)")
        << "the reload took the admission away";
    reload(d, admit_in);
    EXPECT_EQ(ask(c, "list-cookie 1000"), "ok 0") << "and gave it back";
}

// ListGroups2 carries what the socket's list carries (issue 28): the admitting rule, whether the
// join created the group, the named group's name, and, after a reload, why it is flagged.
TEST_F(DbusPolicy, ListGroups2CarriesTheRuleCreatedNameAndFlag) {
    const TestUser a = users_->add_user("a", group_);
    nlohmann::json config = {{"groups", {{"names", {{"prefix", "ff15:6e61:6d65::/64"}, {"pkey", "0xffff"}}}}},
                             {"access", {{"rules", nlohmann::json::array({{{"name", "mine"}, {"create", true}}})}}}};
    Daemon d(fabric, "H2", config.dump());
    Process &c = client_as(a);
    ASSERT_FALSE(path_of(ask(c, "join-name ibsim0 1 job-42 full")).empty());
    auto list2 = [&] {
        auto r = busctl({"--json=short", "call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager",
                         "ListGroups2"});
        EXPECT_EQ(r.exit_code, 0) << r.err;
        const auto reply = nlohmann::json::parse(r.out, nullptr, false);
        EXPECT_EQ(reply.value("type", ""), "aa{sv}") << r.out;
        EXPECT_EQ(reply["data"][0].size(), 1u) << r.out;
        return reply["data"][0][0];
    };
    const auto g = list2();
    EXPECT_EQ(g["device"]["data"], "ibsim0");
    EXPECT_EQ(g["mgid"]["data"], "ff15:6e61:6d65:0:6636:89a9:7bcf:99db");
    EXPECT_EQ(g["held"]["data"], nlohmann::json::array({"full"}));
    EXPECT_EQ(g["counts"]["data"]["full"], 1);
    const auto &m = g["members"]["data"][0];
    EXPECT_EQ(m["uid"]["data"], a.uid);
    EXPECT_EQ(m["rule"]["data"], "mine");
    EXPECT_EQ(m["created"]["data"], true);
    EXPECT_EQ(m["name"]["data"], "job-42");
    EXPECT_EQ(m["comm"]["data"], "mcastd-dbus-cli") << "the process name, as /proc gives it (15 bytes)";
    EXPECT_FALSE(m.contains("flagged"));

    // Evict is root's: the same refusal as on the socket.
    const RunResult not_root = run(TestUsers::as_user(
        a, {"busctl", "--address=" + address_, "call", "org.rdmamcast1", "/org/rdmamcast1", "org.rdmamcast1.Manager",
            "Evict", "a{sv}", "1", "uid", "u", std::to_string(a.uid)}));
    EXPECT_NE(not_root.exit_code, 0);
    EXPECT_NE(not_root.err.find("evict is for root; uid " + std::to_string(a.uid) +
                                " may only leave its own memberships"),
              std::string::npos)
        << not_root.err;

    config["access"]["rules"][0]["mgids"] = {"ff15:db::/64"};
    reload(d, config.dump());
    EXPECT_EQ(list2()["members"]["data"][0]["flagged"]["data"],
              "rule \"mine\" (config access.rules) allows MGIDs in ff15:db::/64 only, and "
              "ff15:6e61:6d65:0:6636:89a9:7bcf:99db is not in them");
}

} // namespace
} // namespace mcastd::sim
