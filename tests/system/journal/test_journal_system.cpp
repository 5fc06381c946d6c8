// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The journal tells the story of one group: the real daemon on a simulated node logs to a
// private journald (private_journal.hpp), rdma-mcastctl joins and leaves, and
// `journalctl -o json MCAST_MGID=...` must show each event with every field right, checked
// against the client's own pid/uid/comm and the SA's own MLID.
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "logging/message_ids.hpp"
#include "private_journal.hpp"

namespace mcastd::sim {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// The namespace is entered once per test process, before any thread exists.
std::optional<std::string> namespace_error;
class NamespaceEnvironment : public ::testing::Environment {
public:
    void SetUp() override { namespace_error = enter_private_journal_namespace(); }
};
[[maybe_unused]] auto *const kEnvironment = ::testing::AddGlobalTestEnvironment(new NamespaceEnvironment);

std::string hex4(std::uint16_t v) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%04x", v);
    return buf;
}

std::string field(const json &entry, const std::string &name) {
    auto it = entry.find(name);
    return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string("<absent>");
}

// The entries of one MESSAGE_ID, oldest first.
std::vector<json> with_id(const std::vector<json> &entries, const logging::MessageId &id) {
    std::vector<json> out;
    for (const json &e : entries)
        if (field(e, "MESSAGE_ID") == id.id)
            out.push_back(e);
    return out;
}

class JournalSystem : public ::testing::Test {
protected:
    void SetUp() override {
        if (namespace_error && ::geteuid() != 0)
            GTEST_SKIP() << "needs root for a private journald: " << *namespace_error;
        ASSERT_FALSE(namespace_error) << *namespace_error;
        fabric = std::make_unique<Fabric>();
        journal = std::make_unique<PrivateJournal>(fabric->scratch());
    }
    void TearDown() override {
        procs.clear();
        daemon.reset();
        journal.reset();
        fabric.reset();
    }

    void start_daemon(const std::string &config = "{}", std::vector<std::string> args = {"--log-target", "journal"}) {
        daemon = std::make_unique<Daemon>(*fabric, "H2", config, args);
    }
    Process &ctl(std::vector<std::string> args) {
        std::vector<std::string> argv{MCASTD_CTL, "--socket", daemon->socket().string(), "--json"};
        argv.insert(argv.end(), args.begin(), args.end());
        procs.push_back(std::make_unique<Process>(Process::Options{.argv = argv, .cwd = fabric->scratch()}));
        return *procs.back();
    }
    // rdma-mcastctl join --hold: returns once the join is answered.
    Process &hold(const std::string &mgid) {
        Process &p = ctl({"join", "--device", "ibsim0", "--port", "1", "--mgid", mgid, "--hold"});
        auto line = p.read_line(20s);
        EXPECT_TRUE(line) << p.stderr_text();
        return p;
    }

    // Every membership field of `e` against what the test knows independently.
    void expect_client(const json &e, const Process &client, const std::string &what) {
        EXPECT_EQ(field(e, "CLIENT_PID"), std::to_string(const_cast<Process &>(client).pid())) << what;
        EXPECT_EQ(field(e, "CLIENT_UID"), std::to_string(::getuid())) << what;
        EXPECT_EQ(field(e, "CLIENT_COMM"), "rdma-mcastctl") << what;
    }
    void expect_where(const json &e, const std::string &mgid, const std::string &what) {
        EXPECT_EQ(field(e, "RDMA_DEVICE"), "ibsim0") << what;
        EXPECT_EQ(field(e, "RDMA_PORT"), "1") << what;
        EXPECT_EQ(field(e, "MCAST_MGID"), mgid) << what;
        EXPECT_EQ(field(e, "SYSLOG_IDENTIFIER"), "rdma-mcastd") << what;
        EXPECT_EQ(field(e, "_PID"), std::to_string(daemon->process().pid())) << what << ": sent by the daemon";
    }

    std::unique_ptr<Fabric> fabric;
    std::unique_ptr<PrivateJournal> journal;
    std::unique_ptr<Daemon> daemon;
    std::vector<std::unique_ptr<Process>> procs;
};

TEST_F(JournalSystem, JoinsAndLeavesOfOneGroupCarryEveryField) {
    start_daemon();
    const std::string mgid = "ff15:1a::1";
    const Gid m = *parse_gid(mgid);
    Process &a = hold(mgid);
    Process &b = hold(mgid);
    const auto group = fabric->sa_group(m);
    ASSERT_TRUE(group) << "the SA has the group";
    // a leaves (SIGTERM: rdma-mcastctl sends a leave); b is killed (its connection closes).
    a.signal(SIGTERM);
    ASSERT_EQ(a.wait(10s), 0) << a.stderr_text();
    b.signal(SIGKILL);
    b.wait(10s);
    ASSERT_TRUE(fabric->wait_sa_join_state(m, fabric->port_gid("H2"), std::nullopt, 10s));

    // joined a, joined b, left a, left b, deleted.
    const auto story = journal->wait_entries({"MCAST_MGID=" + mgid}, 5);
    ASSERT_EQ(story.size(), 5u) << json(story).dump(1);
    const auto joined = with_id(story, logging::kJoined), left = with_id(story, logging::kLeft),
               deleted = with_id(story, logging::kDeleted);
    ASSERT_EQ(joined.size(), 2u);
    ASSERT_EQ(left.size(), 2u);
    ASSERT_EQ(deleted.size(), 1u);
    for (const json &e : joined) {
        expect_where(e, mgid, "joined");
        EXPECT_EQ(field(e, "MCAST_MLID"), hex4(group->mlid)) << "the MLID the SA reports";
        EXPECT_EQ(field(e, "MCAST_JOIN_STATE"), "0x1");
        EXPECT_EQ(field(e, "PRIORITY"), "6");
        EXPECT_EQ(field(e, "SA_STATUS"), "<absent>");
    }
    expect_client(joined[0], a, "joined a");
    expect_client(joined[1], b, "joined b");
    for (const json &e : left) {
        expect_where(e, mgid, "left");
        EXPECT_EQ(field(e, "MCAST_MLID"), hex4(group->mlid));
        EXPECT_EQ(field(e, "MCAST_JOIN_STATE"), "0x1");
    }
    expect_client(left[0], a, "left by a leave");
    expect_client(left[1], b, "left by a killed client");
    expect_where(deleted[0], mgid, "deleted");
    EXPECT_EQ(field(deleted[0], "MCAST_JOIN_STATE"), "0x1") << "the bits deleted at the SA";
    expect_client(deleted[0], b, "the Delete follows b's exit, the last leaver's: its doing");
    // In the order it happened.
    EXPECT_EQ(field(story.back(), "MESSAGE_ID"), logging::kDeleted.id);
    EXPECT_EQ(field(story[0], "MESSAGE_ID"), logging::kJoined.id);
}

TEST_F(JournalSystem, AJoinTheSaRefusesCarriesItsStatus) {
    start_daemon(R"({"groups": {"allow_ipoib_mgids": true}})");
    // An IPoIB-signature group must carry the broadcast group's Q_Key: ERR_REQ_INVALID.
    const std::string mgid = "ff12:601b:ffff::5:1";
    Process &c = ctl({"join", "--device", "ibsim0", "--port", "1", "--mgid", mgid, "--qkey", "0x1234"});
    const auto rc = c.wait(20s);
    ASSERT_TRUE(rc && *rc != 0) << "the join must fail";

    const auto story = journal->wait_entries({"MCAST_MGID=" + mgid}, 1);
    ASSERT_EQ(story.size(), 1u) << json(story).dump(1);
    const json &e = story[0];
    EXPECT_EQ(field(e, "MESSAGE_ID"), logging::kJoinFailed.id);
    expect_where(e, mgid, "join failed");
    expect_client(e, c, "join failed");
    EXPECT_EQ(field(e, "SA_STATUS"), "0x0200");
    EXPECT_EQ(field(e, "MCAST_JOIN_STATE"), "0x1");
    EXPECT_EQ(field(e, "MCAST_MLID"), "<absent>") << "the SA gave no MLID";
    EXPECT_NE(field(e, "MESSAGE").find("ERR_REQ_INVALID"), std::string::npos) << field(e, "MESSAGE");
}

TEST_F(JournalSystem, OutsideSystemdTheConsoleGetsPlainLinesAndTheJournalNothing) {
    start_daemon("{}", {}); // auto, and stderr is a pipe, not a journal stream
    const std::string mgid = "ff15:1c::1";
    Process &a = hold(mgid);
    a.signal(SIGTERM);
    ASSERT_EQ(a.wait(10s), 0) << a.stderr_text();
    ASSERT_TRUE(fabric->wait_sa_join_state(*parse_gid(mgid), fabric->port_gid("H2"), std::nullopt, 10s));
    ASSERT_EQ(daemon->stop(), 0);
    const std::string err = daemon->process().stderr_text();
    EXPECT_NE(err.find("info: ibsim0/1: joined group " + mgid + " on ibsim0/1 as full"), std::string::npos) << err;
    EXPECT_NE(err.find("info: ibsim0/1: left group " + mgid), std::string::npos) << err;
    EXPECT_TRUE(journal->entries({"_PID=" + std::to_string(daemon->process().pid())}).empty());
}

} // namespace
} // namespace mcastd::sim
