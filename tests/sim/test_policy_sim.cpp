// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The access policy (issue 15) end to end: the daemon on a simulated node, its clients running
// as real unprivileged users the test creates (so the daemon's SO_PEERCRED, group and cgroup
// lookups are the real ones), and the SA's own view as the judge of what got through.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <csignal>
#include <deque>
#include <fstream>
#include <linux/magic.h>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <variant>

#include "sim/daemon_harness.hpp"
#include "sim/test_users.hpp"
#include "sim/tool_output.hpp"

namespace mcastd::sim {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

Gid G(const std::string &s) { return *parse_gid(s); }

// A child cgroup of a writable cgroup2 hierarchy, removed again by the destructor (which the
// fixture runs after every process the test started has been stopped).
class ChildCgroup {
public:
    // The writable cgroup2 mount, or why there is none.
    static std::variant<fs::path, std::string> hierarchy() {
        for (const char *c : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
            struct statfs s {};
            if (::statfs(c, &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC) {
                if (::access(c, W_OK) != 0)
                    return std::string(c) + " is cgroup2 but not writable";
                return fs::path(c);
            }
        }
        return std::string("neither /sys/fs/cgroup/unified nor /sys/fs/cgroup is a cgroup2 hierarchy");
    }
    explicit ChildCgroup(const fs::path &hierarchy)
        : dir_(hierarchy / ("mcastd-test-" + std::to_string(::getpid()))) {
        fs::create_directory(dir_);
    }
    ~ChildCgroup() {
        std::error_code ec;
        fs::remove(dir_, ec); // rmdir: fails while a process is still inside
        if (ec)
            ADD_FAILURE() << "cannot remove cgroup " << dir_ << ": " << ec.message();
    }
    const fs::path &dir() const { return dir_; }
    fs::path procs() const { return dir_ / "cgroup.procs"; }

private:
    fs::path dir_;
};

// The "0::" line of /proc/PID/cgroup: the path the daemon reads for its "cgroups" rules.
std::string cgroup_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("0::", 0) == 0)
            return line.substr(3);
    return {};
}

// One mcastd-raw-lines client (running as some user): requests in, replies and events out.
class LineClient {
public:
    explicit LineClient(Process &p) : p_(p) {}
    Process &process() { return p_; }
    // The first line: "connected" or "connect-failed ...".
    std::string start() { return p_.read_line(10s).value_or("(nothing: " + p_.stderr_text() + ")"); }
    // Sends `req` with the next id and returns the reply to it; events seen meanwhile are kept.
    json call(json req) {
        const long long id = next_id_++;
        req["id"] = id;
        p_.write_stdin(req.dump() + "\n");
        for (;;) {
            auto line = p_.read_line(20s);
            if (!line || *line == "eof")
                return json{{"no_reply", line.value_or("timeout")}, {"stderr", p_.stderr_text()}};
            json j = json::parse(*line);
            if (j.contains("event"))
                events_.push_back(j);
            else if (j.value("id", -1LL) == id)
                return j;
        }
    }
    bool hello() { return call({{"op", "hello"}, {"versions", {1}}}).value("ok", false); }
    json join(const std::string &mgid, const std::string &state = "full") {
        return call({{"op", "join"}, {"device", "ibsim0"}, {"port", 1}, {"mgid", mgid}, {"join_state", state}});
    }
    // The next event (kept from before or read now).
    std::optional<json> event(std::chrono::milliseconds timeout) {
        if (events_.empty()) {
            auto line = p_.read_line(timeout);
            if (!line || *line == "eof")
                return std::nullopt;
            events_.push_back(json::parse(*line));
        }
        json e = events_.front();
        events_.pop_front();
        return e;
    }

private:
    Process &p_;
    long long next_id_ = 1;
    std::deque<json> events_;
};

class PolicySim : public ::testing::Test {
protected:
    void SetUp() override {
        if (auto why = TestUsers::unavailable())
            GTEST_SKIP() << *why;
        users_ = std::make_unique<TestUsers>();
        group_ = users_->add_group("g");
    }
    // Everything that runs as a test user stops before the users go; then nothing may be left.
    void TearDown() override {
        procs_.clear();
        cgroup_.reset();
        if (!users_)
            return;
        const auto names = users_->user_names(), groups = users_->group_names();
        users_.reset();
        for (const auto &n : names)
            EXPECT_FALSE(in_passwd(n)) << n << " left in /etc/passwd";
        for (const auto &n : groups)
            EXPECT_FALSE(in_group_file(n)) << n << " left in /etc/group";
    }

    Gid h2() { return fabric.port_gid("H2"); }

    // The daemon on H2, its socket root:<the test's group> 0660 and the way to it open.
    std::unique_ptr<Daemon> daemon(json config) {
        config["socket_group"] = group_.name;
        auto d = std::make_unique<Daemon>(fabric, "H2", config.dump());
        make_reachable(d->socket(), fabric.scratch());
        return d;
    }

    Process &spawn(std::vector<std::string> argv, bool stdin_pipe = true) {
        procs_.push_back(std::make_unique<Process>(
            Process::Options{.argv = std::move(argv), .cwd = "/", .stdin_pipe = stdin_pipe}));
        return *procs_.back();
    }
    Process &as(const TestUser &u, std::vector<std::string> argv, bool stdin_pipe = true) {
        return spawn(TestUsers::as_user(u, std::move(argv)), stdin_pipe);
    }
    // A connected raw client of `d` running as `u`.
    LineClient raw_as(const TestUser &u, Daemon &d) {
        LineClient c(as(u, {MCASTD_RAW_LINES, d.socket().string()}));
        const std::string first = c.start();
        EXPECT_EQ(first, "connected") << c.process().stderr_text();
        EXPECT_TRUE(c.hello());
        return c;
    }
    // rdma-mcastctl as `u`, run to completion: exit code and stderr.
    std::pair<int, std::string> ctl_as(const TestUser &u, Daemon &d, std::vector<std::string> args) {
        std::vector<std::string> argv{MCASTD_CTL, "--socket", d.socket().string()};
        argv.insert(argv.end(), args.begin(), args.end());
        Process &p = as(u, argv, false);
        const int rc = p.wait(20s).value_or(-1);
        return {rc, p.stderr_text()};
    }

    // mcastd-create-flood as `u`: its report, printed for the record (without the MGIDs).
    json flood(const TestUser &u, Daemon &d, int n, Process **proc = nullptr) {
        Process &p = as(u, {MCASTD_FLOOD, d.socket().string(), "ibsim0", "1", std::to_string(n)});
        if (proc)
            *proc = &p;
        auto line = p.wait_for_line("\"ok\":", 90s);
        if (!line) {
            ADD_FAILURE() << "mcastd-create-flood printed no report: " << p.stderr_text();
            return json::object();
        }
        json r = json::parse(*line);
        json shown = r;
        shown.erase("mgids");
        std::cout << "mcastd-create-flood (uid " << u.uid << ", " << n << " creates): " << shown.dump() << std::endl;
        return r;
    }

    // The MGIDs of every group the SA dump lists with H2 as a member, once it shows `expected`.
    std::set<std::string> dump_groups_of_h2(const std::set<std::string> &expected) {
        std::set<Gid> want;
        for (const auto &m : expected)
            want.insert(G(m));
        std::set<std::string> got;
        for (const Gid &g : fabric.sa_dump_groups_of(h2(), want, 15s))
            got.insert(format_gid(g));
        return got;
    }

    // The SA's exact per-port answer for each MGID (trusted Gets, mcastd-sim-join get, from H3):
    // MGID -> "join_state=0x1 ..." or "none".
    std::map<std::string, std::string> sa_gets(const std::vector<std::string> &mgids, const Gid &port) {
        std::vector<std::string> argv{MCASTD_SIM_JOIN, "get"};
        for (const auto &m : mgids)
            argv.insert(argv.end(), {m, format_gid(port)});
        const RunResult r = fabric.run_on("H3", argv);
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
        std::map<std::string, std::string> out;
        std::istringstream in(r.out);
        for (std::string mgid, gid, rest; in >> mgid >> gid && std::getline(in, rest);)
            out[format_gid(G(mgid))] = rest.empty() ? rest : rest.substr(1);
        return out;
    }

    // Declared first, destroyed last: after every process that ran as its users.
    std::unique_ptr<TestUsers> users_;
    TestGroup group_;
    // OpenSM sweeps every second and dumps its SA: the complete picture of every group, which
    // saquery's GetTable answers (cut to one MAD, doc/testbed.md quirk 16) cannot give.
    Fabric fabric{{.opensm_args = {"-s", "1"}, .sa_db_dump = true}};
    std::optional<ChildCgroup> cgroup_;
    std::vector<std::unique_ptr<Process>> procs_;
};

// ---- the issue's attack ----

TEST_F(PolicySim, ACreateFloodStopsAtTheUidsQuotaAndAnotherUserStillCreates) {
    const TestUser a = users_->add_user("a", group_), b = users_->add_user("b", group_);
    auto d = daemon({{"access", {{"quotas", {{"creates_per_uid", 50}}}}}});

    Process *held = nullptr;
    const json r = flood(a, *d, 1100, &held);
    EXPECT_EQ(r.value("ok", -1), 50);
    EXPECT_EQ(r.value("limit", -1), 1050);
    EXPECT_EQ(r.value("denied", -1), 0);
    EXPECT_EQ(r.value("other", -1), 0) << r.dump();
    EXPECT_EQ(r.value("first_refusal", ""),
              "uid " + std::to_string(a.uid) +
                  " created 50 groups it still holds, its quota (config access.quotas.creates_per_uid or the "
                  "admitting rule's: 50)");
    EXPECT_EQ(r["refused_by"], (json{{"rule", ""}, {"quota", "creates_per_uid"}, {"limit", 50}})) << r.dump();

    // The SA: exactly the 50 groups A was told it created have H2 as a member, and no other.
    std::set<std::string> created;
    for (const auto &m : r.value("mgids", json::array()))
        created.insert(format_gid(G(m.get<std::string>())));
    ASSERT_EQ(created.size(), 50u);
    EXPECT_EQ(dump_groups_of_h2(created), created);
    const auto gets = sa_gets({created.begin(), created.end()}, h2());
    for (const auto &m : created)
        EXPECT_EQ(gets.count(m) ? gets.at(m).substr(0, 14) : "(no answer)", "join_state=0x1") << m;

    // B's create: A's flood took only A's share.
    LineClient bc = raw_as(b, *d);
    const json made = bc.call({{"op", "join"}, {"device", "ibsim0"}, {"port", 1}, {"create", true}});
    ASSERT_TRUE(made.value("ok", false)) << made.dump();
    const std::string mgid = made["result"]["record"]["mgid"];
    EXPECT_EQ(fabric.sa_join_state(G(mgid), h2()), 0x1) << "B's group at the SA";
    created.insert(format_gid(G(mgid)));
    EXPECT_EQ(dump_groups_of_h2(created), created);
    held->close_stdin();
}

TEST_F(PolicySim, WithTheDefaultQuotasAFloodStopsAt64) {
    const TestUser a = users_->add_user("a", group_);
    auto d = daemon(json::object());
    const json r = flood(a, *d, 1100);
    EXPECT_EQ(r.value("ok", -1), 64);
    EXPECT_EQ(r.value("limit", -1), 1036);
    EXPECT_EQ(r.value("other", -1) + r.value("denied", -1), 0) << r.dump();
    EXPECT_NE(r.value("first_refusal", "").find("access.quotas.creates_per_uid"), std::string::npos) << r.dump();
    std::set<std::string> created;
    for (const auto &m : r.value("mgids", json::array()))
        created.insert(format_gid(G(m.get<std::string>())));
    ASSERT_EQ(created.size(), 64u);
    EXPECT_EQ(dump_groups_of_h2(created), created);

    const TestUser b = users_->add_user("b", group_);
    LineClient bc = raw_as(b, *d);
    const json made = bc.call({{"op", "join"}, {"device", "ibsim0"}, {"port", 1}, {"create", true}});
    ASSERT_TRUE(made.value("ok", false)) << made.dump();
    EXPECT_EQ(fabric.sa_join_state(G(made["result"]["record"]["mgid"]), h2()), 0x1) << "B's group at the SA";
}

// ---- rules ----

TEST_F(PolicySim, RulesNameWhyTheyRefuseAndOnlyTheGroupThatMayCreatesCreates) {
    const TestGroup hpc = users_->add_group("hpc");
    const TestUser out = users_->add_user("out", group_);
    const TestUser in = users_->add_user("in", group_, {hpc}); // hpc only as a supplementary group
    auto d = daemon({{"access",
                      {{"rules", json::array({{{"name", "hpc"},
                                               {"groups", {hpc.name}},
                                               {"mgids", {"ff15:a:1::/48"}},
                                               {"create", true}},
                                              {{"name", "members"},
                                               {"mgids", {"ff15:a:1::/48"}},
                                               {"join_states", {"full", "sendonly-full"}},
                                               {"pkeys", {"0xffff"}}}})}}}});
    // rdma-mcastctl as the outsider: exit 4 (refused by the daemon) and the daemon's sentence.
    auto refused = [&](std::vector<std::string> args) {
        std::vector<std::string> argv{"join", "--device", "ibsim0", "--port", "1"};
        argv.insert(argv.end(), args.begin(), args.end());
        auto [rc, err] = ctl_as(out, *d, argv);
        EXPECT_EQ(rc, 4) << err;
        return err;
    };
    const std::string denied = "rdma-mcastctl: join: denied: rule \"members\" (config access.rules) ";
    EXPECT_EQ(refused({"--mgid", "ff15:b::1"}),
              denied + "allows MGIDs in ff15:a:1::/48 only, and ff15:b::1 is not in them (field /mgid)\n");
    EXPECT_EQ(refused({"--mgid", "ff15:a:1::5", "--join-state", "nonmember"}),
              denied + "allows join states full, sendonly-full only, not nonmember (field /join_state)\n");
    EXPECT_EQ(refused({"--mgid", "ff15:a:1::5", "--pkey", "0x8001"}),
              denied + "allows P_Keys 0xffff only, not 0x8001 (field /pkey)\n");
    EXPECT_EQ(refused({"--mgid", "ff15:a:1::9"}),
              denied + "does not allow creating groups, and ff15:a:1::9 does not exist (field /mgid)\n");
    for (const char *m : {"ff15:b::1", "ff15:a:1::5", "ff15:a:1::9"})
        EXPECT_EQ(fabric.sa_group(G(m)), std::nullopt) << m << " must not exist at the SA";

    // The member of hpc (a supplementary group) creates it; then the outsider may join it.
    auto hold = [&](const TestUser &u, const std::string &mgid) -> Process & {
        return as(u, {MCASTD_CTL, "--socket", d->socket().string(), "--json", "join", "--device", "ibsim0", "--port",
                      "1", "--mgid", mgid, "--hold"},
                  false);
    };
    Process &creator = hold(in, "ff15:a:1::9");
    auto made = creator.read_line(20s);
    ASSERT_TRUE(made) << creator.stderr_text();
    EXPECT_EQ(json::parse(*made).value("mgid", ""), "ff15:a:1::9") << *made;
    const auto group = fabric.sa_group(G("ff15:a:1::9"));
    ASSERT_TRUE(group) << "created at the SA";
    EXPECT_EQ(group->pkey, 0xffff);
    EXPECT_EQ(fabric.sa_join_state(G("ff15:a:1::9"), h2()), 0x1);

    Process &joiner = hold(out, "ff15:a:1::9");
    auto joined = joiner.read_line(20s);
    ASSERT_TRUE(joined) << joiner.stderr_text();

    // Both are members, each under its own rule.
    RawClient root(d->socket());
    root.hello();
    const json l = json::parse(root.call(R"({"id":1,"op":"list"})", 1));
    std::map<uid_t, json> members;
    for (const auto &g : l["result"]["ports"][0]["groups"])
        if (g["mgid"] == "ff15:a:1::9")
            for (const auto &m : g["members"])
                members[m["uid"].get<uid_t>()] = m;
    ASSERT_EQ(members.size(), 2u) << l.dump();
    ASSERT_TRUE(members.count(in.uid) && members.count(out.uid)) << l.dump();
    EXPECT_EQ(members[in.uid].value("rule", ""), "hpc") << "list names the rule that admitted each";
    EXPECT_EQ(members[in.uid].value("created", false), true);
    EXPECT_EQ(members[out.uid].value("rule", ""), "members");
    EXPECT_EQ(members[out.uid].value("created", true), false);

    // The creator leaves: the outsider's own membership keeps H2 in the group at the SA.
    creator.signal(SIGTERM);
    EXPECT_EQ(creator.wait(10s), 0) << creator.stderr_text();
    EXPECT_EQ(fabric.sa_join_state(G("ff15:a:1::9"), h2()), 0x1) << "the outsider still holds it";
    joiner.signal(SIGTERM);
    EXPECT_EQ(joiner.wait(10s), 0) << joiner.stderr_text();
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:a:1::9"), h2(), std::nullopt, 5s)) << "left by the last holder";
}

// ---- cgroups ----

TEST_F(PolicySim, ACgroupRuleAdmitsOnlyTheProcessInsideTheCgroup) {
    const auto hierarchy = ChildCgroup::hierarchy();
    if (const auto *why = std::get_if<std::string>(&hierarchy))
        GTEST_SKIP() << "no writable cgroup2 hierarchy: " << *why;
    cgroup_.emplace(std::get<fs::path>(hierarchy));
    // Each process moves itself in before it execs anything else: it is inside from the start.
    const std::string enter = "echo $$ > '" + cgroup_->procs().string() + "' && exec \"$@\"";
    // The path as the daemon will read it (/proc/PID/cgroup, relative to the cgroup namespace).
    Process &probe = spawn({"sh", "-c", enter, "sh", "cat", "/proc/self/cgroup"}, false);
    std::string path;
    std::istringstream lines(probe.read_all(10s));
    for (std::string line; std::getline(lines, line);)
        if (line.rfind("0::", 0) == 0)
            path = line.substr(3);
    ASSERT_EQ(probe.wait(10s), 0) << probe.stderr_text();
    ASSERT_FALSE(path.empty());
    ASSERT_EQ(path.substr(path.rfind('/')), "/" + cgroup_->dir().filename().string()) << path;

    const TestUser a = users_->add_user("a", group_);
    auto d = daemon({{"access",
                      {{"rules", json::array({{{"name", "inside"},
                                               {"cgroups", {path}},
                                               {"mgids", {"ff15:c::/32"}},
                                               {"create", true}}})}}}});

    std::vector<std::string> inside_argv{"sh", "-c", enter, "sh"};
    for (auto &arg : TestUsers::as_user(a, {MCASTD_RAW_LINES, d->socket().string()}))
        inside_argv.push_back(arg);
    LineClient inside(spawn(inside_argv));
    ASSERT_EQ(inside.start(), "connected") << inside.process().stderr_text();
    ASSERT_TRUE(inside.hello());
    LineClient outside = raw_as(a, *d);
    EXPECT_EQ(cgroup_of(inside.process().pid()), path);
    EXPECT_NE(cgroup_of(outside.process().pid()), path);

    const json made = inside.join("ff15:c::1");
    ASSERT_TRUE(made.value("ok", false)) << made.dump();
    EXPECT_EQ(fabric.sa_join_state(G("ff15:c::1"), h2()), 0x1);

    const std::string nobody = "no rule of the access policy (config access.rules) matches uid " +
                               std::to_string(a.uid) + ", so it may join nothing";
    for (const char *m : {"ff15:c::2", "ff15:c::1"}) {
        const json r = outside.join(m);
        EXPECT_EQ(r["error"]["code"], "denied") << m << ": " << r.dump();
        EXPECT_EQ(r["error"]["message"], nobody) << m;
        EXPECT_EQ(r["error"].value("rule", ""), "default-deny") << m;
    }
    EXPECT_EQ(fabric.sa_group(G("ff15:c::2")), std::nullopt);

    RawClient root(d->socket());
    root.hello();
    const json l = json::parse(root.call(R"({"id":1,"op":"list"})", 1));
    EXPECT_EQ(l["result"]["ports"][0]["groups"].size(), 1u) << l.dump();
    EXPECT_EQ(l["result"]["ports"][0]["groups"][0]["members"].size(), 1u) << "only the one inside: " << l.dump();
}

// ---- reload and evict ----

TEST_F(PolicySim, AReloadThatExcludesAHeldMembershipFlagsItAndRootEvictsIt) {
    const TestUser a = users_->add_user("a", group_);
    auto d = daemon(json::object()); // no rules: everything is allowed
    LineClient c = raw_as(a, *d);
    const json held = c.join("ff15:b::1");
    ASSERT_TRUE(held.value("ok", false)) << held.dump();
    const std::uint64_t id = held["result"]["membership"];
    EXPECT_EQ(fabric.sa_join_state(G("ff15:b::1"), h2()), 0x1);

    const json tight = {{"socket_group", group_.name},
                        {"access",
                         {{"rules", json::array({{{"name", "only-a1"},
                                                  {"mgids", {"ff15:a:1::/48"}},
                                                  {"create", true}}})}}}};
    std::ofstream(d->config(), std::ios::trunc) << tight.dump();
    d->process().signal(SIGHUP);
    ASSERT_TRUE(d->notify().wait_for("RELOADING=1", 10s));
    ASSERT_TRUE(d->notify().wait_for("READY=1", 10s));

    const json next = c.join("ff15:b::2");
    EXPECT_EQ(next["error"]["code"], "denied") << next.dump();
    EXPECT_EQ(next["error"].value("rule", ""), "only-a1") << next.dump();
    EXPECT_EQ(next["error"]["message"], "rule \"only-a1\" (config access.rules) allows MGIDs in ff15:a:1::/48 only, "
                                        "and ff15:b::2 is not in them");
    EXPECT_EQ(fabric.sa_group(G("ff15:b::2")), std::nullopt);
    EXPECT_EQ(fabric.sa_join_state(G("ff15:b::1"), h2()), 0x1) << "what is held is kept";

    // Flagged: in the log, and in list.
    const std::string why = "rule \"only-a1\" (config access.rules) allows MGIDs in ff15:a:1::/48 only, and "
                            "ff15:b::1 is not in them";
    EXPECT_TRUE(d->process().wait_for_stderr("membership " + std::to_string(id) + " of pid " +
                                                 std::to_string(c.process().pid()) + " uid " + std::to_string(a.uid) +
                                                 " (mcastd-raw-line) in group ff15:b::1 is kept, but the access "
                                                 "policy in force would refuse it: " + why,
                                             5s))
        << d->process().stderr_text();
    RawClient root(d->socket());
    root.hello();
    const json l = json::parse(root.call(R"({"id":1,"op":"list"})", 1));
    const json member = l["result"]["ports"][0]["groups"][0]["members"][0];
    EXPECT_EQ(member.value("membership", 0ull), id) << l.dump();
    EXPECT_EQ(member.value("flagged", ""), why) << l.dump();

    // root evicts the uid: its client is told, the SA lets the port go.
    const json ev = json::parse(root.call(R"({"id":2,"op":"evict","uid":)" + std::to_string(a.uid) + "}", 2));
    ASSERT_TRUE(ev.value("ok", false)) << ev.dump();
    EXPECT_EQ(ev["result"]["released"], 1);
    const auto lost = c.event(10s);
    ASSERT_TRUE(lost) << "no event for the owner";
    EXPECT_EQ((*lost)["event"], "lost") << lost->dump();
    EXPECT_EQ((*lost)["membership"], id);
    EXPECT_EQ((*lost)["error"]["code"], "denied") << lost->dump();
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:b::1"), h2(), std::nullopt, 5s)) << "released at the SA";
}

// ---- socket_group ----

TEST_F(PolicySim, SocketGroupMakesTheSocketRootGroup0660AndOnlyTheGroupConnects) {
    const TestGroup other = users_->add_group("o");
    const TestUser member = users_->add_user("in", group_), stranger = users_->add_user("out", other);
    auto d = daemon(json::object()); // "socket_group": the test's group, by name
    struct stat st {};
    ASSERT_EQ(::stat(d->socket().c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_gid, group_.gid);
    EXPECT_EQ(st.st_mode & 07777, 0660u);

    LineClient in(as(member, {MCASTD_RAW_LINES, d->socket().string()}));
    ASSERT_EQ(in.start(), "connected");
    EXPECT_TRUE(in.hello());

    // The stranger reaches the socket (it may stat it): only the socket's mode stops it.
    Process &look = as(stranger, {"stat", "-c", "%U:%G:%a", d->socket().string()}, false);
    EXPECT_EQ(look.read_line(10s).value_or(look.stderr_text()), "root:" + group_.name + ":660");
    LineClient out(as(stranger, {MCASTD_RAW_LINES, d->socket().string()}));
    EXPECT_EQ(out.start(), "connect-failed " + std::to_string(EACCES) + " EACCES Permission denied");

    // A gid works as well as a name.
    Daemon by_gid(fabric, "H3", json{{"socket_group", other.gid}}.dump());
    ASSERT_EQ(::stat(by_gid.socket().c_str(), &st), 0);
    EXPECT_EQ(st.st_gid, other.gid);
    EXPECT_EQ(st.st_mode & 07777, 0660u);
}

} // namespace
} // namespace mcastd::sim
