// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A D-Bus caller's identity from what the bus attests (caller_identity.hpp, name_watch.hpp):
// a field the bus does not give refuses the call, naming it; unknown ids never read as root;
// the process with the bus's pid is read only when the connection's appearance is known, and
// what cannot be attested leaves the cgroup unattested with the reason, never another
// process's cgroup.
#include <gtest/gtest.h>

#include <unistd.h>

#include "dbus/caller_identity.hpp"
#include "dbus/name_watch.hpp"

namespace mcastd::dbus {
namespace {

using namespace std::chrono_literals;

BusCredentials full() { return BusCredentials{1001, std::vector<gid_t>{100, 3000}, 4242}; }

// A process reader that records what it was asked and answers `answer`.
struct FakeReader {
    std::variant<frontend::ProcessIdentity, std::string> answer;
    int calls = 0;
    pid_t pid = 0;
    frontend::Expected asked{};
    ProcessReader reader() {
        return [this](pid_t p, const frontend::Expected &e) {
            ++calls;
            pid = p;
            asked = e;
            return answer;
        };
    }
};

std::string denial(const std::variant<frontend::Credentials, Error> &r) {
    const Error *e = std::get_if<Error>(&r);
    EXPECT_TRUE(e) << "not refused";
    if (!e)
        return {};
    EXPECT_EQ(e->code, Errc::denied);
    return e->message;
}

TEST(CallerIdentity, AFieldTheBusDoesNotGiveRefusesTheCallNamingIt) {
    FakeReader process{frontend::ProcessIdentity{}};
    BusCredentials no_uid = full(), no_groups = full(), no_pid = full();
    no_uid.uid.reset();
    no_groups.gids.reset();
    no_pid.pid.reset();
    EXPECT_EQ(denial(attest_caller(":1.42", no_uid, 5s, process.reader())),
              "cannot identify the caller: the bus gives no uid for :1.42 "
              "(org.freedesktop.DBus.GetConnectionCredentials has no UnixUserID)");
    EXPECT_EQ(denial(attest_caller(":1.42", no_groups, 5s, process.reader())),
              "cannot identify the caller: the bus gives no supplementary groups for :1.42 "
              "(org.freedesktop.DBus.GetConnectionCredentials has no UnixGroupIDs)");
    EXPECT_EQ(denial(attest_caller(":1.42", no_pid, 5s, process.reader())),
              "cannot identify the caller: the bus gives no pid for :1.42 "
              "(org.freedesktop.DBus.GetConnectionCredentials has no ProcessID)");
    EXPECT_EQ(process.calls, 0) << "no process is read for a caller that is refused";
}

TEST(CallerIdentity, AnAttestedProcessGivesItsCgroupNameAndStartTime) {
    FakeReader process{frontend::ProcessIdentity{4242, 777, 1001, "/machine.slice/a.scope", "app"}};
    const auto r = attest_caller(":1.42", full(), 5s, process.reader());
    ASSERT_TRUE(std::holds_alternative<frontend::Credentials>(r)) << std::get<Error>(r).message;
    const auto &c = std::get<frontend::Credentials>(r);
    EXPECT_EQ(c.who.uid, 1001u);
    EXPECT_EQ(c.who.pid, 4242);
    EXPECT_EQ(c.who.unix_gid, kUnknownGid) << "the bus does not say which group is the primary one";
    EXPECT_EQ(c.supplementary_groups, (std::vector<gid_t>{100, 3000}));
    EXPECT_EQ(c.cgroup, "/machine.slice/a.scope");
    EXPECT_EQ(c.cgroup_unattested, "");
    EXPECT_EQ(c.who.comm, "app");
    EXPECT_EQ(c.start_time, 777u);
    // The process must run as the bus's uid and have started by the connection's appearance.
    EXPECT_EQ(process.pid, 4242);
    EXPECT_EQ(process.asked.uid, 1001u);
    EXPECT_EQ(process.asked.started_by, std::optional<std::chrono::nanoseconds>(5s));
}

TEST(CallerIdentity, AConnectionOlderThanTheWatchHasNoAttestedCgroup) {
    FakeReader process{frontend::ProcessIdentity{4242, 777, 1001, "/machine.slice/a.scope", "app"}};
    const auto r = attest_caller(":1.42", full(), std::nullopt, process.reader());
    ASSERT_TRUE(std::holds_alternative<frontend::Credentials>(r));
    const auto &c = std::get<frontend::Credentials>(r);
    EXPECT_EQ(process.calls, 0) << "a pid that cannot be checked against the connection is not read";
    EXPECT_EQ(c.who.uid, 1001u) << "the bus's uid and groups stand";
    EXPECT_EQ(c.supplementary_groups.size(), 2u);
    EXPECT_EQ(c.cgroup, "");
    EXPECT_EQ(c.cgroup_unattested, kConnectionTooOld);
    EXPECT_EQ(c.who.comm, "?");
    EXPECT_EQ(c.start_time, 0u);
}

TEST(CallerIdentity, AProcessThatCannotBeAttestedLeavesTheCgroupUnattestedWithTheReason) {
    FakeReader process{std::string("process 4242 started after the connection appeared, so it is not the process "
                                   "that made it (its pid was reused)")};
    const auto r = attest_caller(":1.42", full(), 5s, process.reader());
    ASSERT_TRUE(std::holds_alternative<frontend::Credentials>(r));
    const auto &c = std::get<frontend::Credentials>(r);
    EXPECT_EQ(c.cgroup, "");
    EXPECT_EQ(c.cgroup_unattested, "bus connection :1.42: process 4242 started after the connection appeared, so it "
                                   "is not the process that made it (its pid was reused)");
    EXPECT_EQ(c.who.comm, "?");
    EXPECT_EQ(c.start_time, 0u);
}

TEST(CallerIdentity, UnknownIdsAreNeverRoot) {
    EXPECT_NE(ClientInfo{}.uid, 0u);
    EXPECT_NE(ClientInfo{}.unix_gid, 0u);
    EXPECT_EQ(ClientInfo{}.uid, kUnknownUid);
    EXPECT_NE(frontend::Credentials{}.caller().uid, 0u);
    EXPECT_NE(policy::Caller{}.gid, 0u);
    // Root's exemptions are for uid 0 only: an unknown uid is judged as anyone.
    policy::Policy p;
    p.allow_uids = {1001};
    EXPECT_FALSE(p.admits(frontend::Credentials{}.caller()));
}

TEST(NameWatch, RecordsWhenUniqueNamesAppearAndForgetsThemWhenTheyGo) {
    NameWatch w;
    w.owner_changed(":1.7", "", ":1.7", 10s);
    w.owner_changed("org.example.Name", "", ":1.7", 11s); // a well-known name: not a connection
    EXPECT_EQ(w.appeared(":1.7"), std::optional<std::chrono::nanoseconds>(10s));
    EXPECT_EQ(w.appeared("org.example.Name"), std::nullopt);
    EXPECT_EQ(w.appeared(":1.8"), std::nullopt) << "appeared before the watch: unknown";
    w.owner_changed(":1.7", ":1.7", ":1.7", 12s);
    EXPECT_EQ(w.appeared(":1.7"), std::optional<std::chrono::nanoseconds>(10s)) << "the first appearance counts";
    EXPECT_EQ(w.size(), 1u);
    w.owner_changed(":1.7", ":1.7", "", 13s);
    EXPECT_EQ(w.appeared(":1.7"), std::nullopt);
    EXPECT_EQ(w.size(), 0u);
}

} // namespace
} // namespace mcastd::dbus
