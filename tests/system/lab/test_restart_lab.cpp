// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastd restarted by a real systemd while clients hold memberships through it.
//
// The daemon runs under the shipped units (rdma-mcastd.socket + a service configured from
// rdma-mcastd.service.in) in the lab, attached to node H2 of a simulated fabric whose ibsim
// and OpenSM run on the host. Holders are `rdma-mcastctl join --hold` processes on the host,
// connected to the lab's socket through Lab::host_path(). The SA is the judge: while the
// daemon restarts, a poller asks it, with per-port Gets from H4 back to back, whether H2
// still holds every group, and OpenSM's debug log (-D 0x08 logs every MCMemberRecord Set and
// Delete with its MGID and PortGID) says whether the daemon sent any for them.
//
// What the daemon is to do (the units' lines are in the lab's drop-in below):
//  - `systemctl restart`: RestartKillSignal=SIGUSR2. The daemon sends no SA Delete, writes its
//    state to $RUNTIME_DIRECTORY (RuntimeDirectoryPreserve=yes keeps it), leaves its client
//    connections in the fd store (FileDescriptorStoreMax=) and exits; the next instance
//    takes them back and keeps serving them, sending no SA Set for what the SA still holds.
//  - kill -9 of MainPID: Restart=on-failure starts the next instance, which
//    adopts the state and the connections the same way.
//  - `systemctl stop` (SIGTERM): every group is left (SA Delete), the clients disconnected,
//    and the next `systemctl start` begins empty although the state directory is kept.
//  - A D-Bus caller (mcastd-dbus-client in the lab, on the lab's system bus with the shipped
//    bus policy) keeps its membership across `systemctl restart`: its unique name outlives the
//    daemon's bus connection, and the next instance tracks it again (DbusRestartLab).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <thread>

#include "scm_rights.hpp"
#include "sim/daemon_harness.hpp"
#include "sim/opensm_log.hpp"
#include "system/lab/daemon_unit.hpp"
#include "system/lab/lab.hpp"

namespace mcastd::lab {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using sim::Fabric;
using sim::Process;
using sim::SaRequest;
using sim::sa_requests;
using test::ScmRightsMessage;

constexpr const char *kNode = "H2"; // the daemon's node; OpenSM runs on H1
constexpr const char *kVia = "H4";  // where the SA is asked from
const std::vector<std::string> kGroups{"ff15:1ab::1", "ff15:1ab::2", "ff15:1ab::3", "ff15:1ab::4"};
constexpr const char *kRawGroup = "ff15:1ab::5"; // the raw client's own group

long long ms(Clock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

Gid G(const std::string &s) { return *parse_gid(s); }

std::string read_text(const std::filesystem::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// ---- The SA's view, polled on a thread of its own ----

// Asks the SA, back to back, for H2's membership of every group (one `mcastd-sim-join get`
// with all pairs in flight at once), and remembers every poll at which one was missing.
class SaWatch {
public:
    SaWatch(Fabric &fabric, const Gid &port, const std::vector<std::string> &groups) {
        argv_ = {MCASTD_SIM_JOIN, "get"};
        for (const auto &g : groups)
            argv_.insert(argv_.end(), {format_gid(G(g)), format_gid(port)});
        expected_ = groups.size();
        thread_ = std::thread([this, &fabric] { loop(fabric); });
    }
    ~SaWatch() { stop(); }

    struct Report {
        int polls = 0;        // answered for every pair
        int inconclusive = 0; // some pair unanswered (SA busy, a bounce)
        long long max_gap_ms = 0; // longest time between the starts of two answered polls
        std::vector<std::string> missing; // "+T ms: MGID none"
    };

    // The gaps include the watch's two ends: from its start to the first answered poll, and
    // from the last one to the stop, so that a bound on max_gap_ms covers the whole window.
    Report stop() {
        if (thread_.joinable()) {
            stop_ = true;
            thread_.join();
            std::lock_guard lock(mu_);
            report_.max_gap_ms = std::max(report_.max_gap_ms, ms(Clock::now() - last_.value_or(start_)));
        }
        std::lock_guard lock(mu_);
        return report_;
    }

private:
    void loop(Fabric &fabric) {
        while (!stop_) {
            const auto at = Clock::now();
            const sim::RunResult r = fabric.run_on(kVia, argv_, 5s);
            std::istringstream out(r.out);
            std::size_t answered = 0;
            std::vector<std::string> none;
            for (std::string line; std::getline(out, line);) {
                if (line.find(" join_state=") != std::string::npos)
                    ++answered;
                else if (line.ends_with(" none")) {
                    ++answered;
                    none.push_back("+" + std::to_string(ms(at - start_)) + " ms: " + line);
                }
            }
            std::lock_guard lock(mu_);
            if (answered != expected_) {
                ++report_.inconclusive;
                continue;
            }
            ++report_.polls;
            report_.max_gap_ms = std::max(report_.max_gap_ms, ms(at - last_.value_or(start_)));
            last_ = at;
            report_.missing.insert(report_.missing.end(), none.begin(), none.end());
        }
    }

    std::vector<std::string> argv_;
    std::size_t expected_ = 0;
    const Clock::time_point start_ = Clock::now();
    std::optional<Clock::time_point> last_; // the start of the last answered poll (under mu_)
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    Report report_;
    std::thread thread_;
};

// ---- The test bed ----

class RestartLab : public ::testing::Test {
protected:
    struct Holder {
        std::string mgid;
        std::unique_ptr<Process> proc;
    };

    void SetUp() override {
        if (auto why = Lab::unavailable(root))
            GTEST_SKIP() << *why;

        // force_log_flush: the SA requests are in OpenSM's log as soon as it handles them.
        fabric = std::make_unique<Fabric>(Fabric::Options{
            .hcas = 4, .opensm_args = {"-D", "0x0b"}, .opensm_conf = {"force_log_flush TRUE"}});
        port = fabric->port_gid(kNode);
        lab = std::make_unique<Lab>(Lab::Options{.unit_dir = MCASTD_LAB_UNITS, .root = root});
        install_units();
        before_start();
        const RunResult start = lab->systemctl({"start", kSocketUnit, kService});
        ASSERT_EQ(start.exit_code, 0) << start.err << "\n" << lab->journal(kService) << lab->diagnostics();
        ASSERT_EQ(lab->show(kService, "ActiveState"), "active") << lab->journal(kService);

        for (const auto &g : kGroups)
            start_holder(g);
        start_holder(kGroups[0]); // two clients share a membership
        for (auto &h : holders)
            ASSERT_TRUE(h.proc->read_line(20s)) << "holder of " << h.mgid << ": " << h.proc->stderr_text() << "\n"
                                                << lab->journal(kService);
        raw = std::make_unique<sim::RawClient>(lab->host_path(kSocket));
        raw->hello();
        const std::string joined = raw->call(R"({"id":1,"op":"join","device":"ibsim0","port":1,"mgid":")" +
                                                 std::string(kRawGroup) + R"(","join_state":"full"})",
                                             1);
        ASSERT_NE(joined.find("\"ok\":true"), std::string::npos) << joined;
        for (const auto &g : all_groups())
            ASSERT_TRUE(fabric->wait_sa_join_state(G(g), port, 0x1, 10s)) << g << " never reached the SA";

        // The positive control for the log check below: the joins themselves are in the log.
        const auto before = requests_since(0);
        for (const auto &g : all_groups())
            ASSERT_TRUE(std::any_of(before.begin(), before.end(),
                                    [&](const SaRequest &r) { return r.method == "Set" && r.mgid == G(g); }))
                << "OpenSM's log shows no Set for " << g << ": the log check would prove nothing\n"
                << read_text(fabric->opensm_log_path()).substr(0, 2000);
    }

    void TearDown() override {
        raw.reset();
        holders.clear(); // SIGTERM: they leave, while the daemon still runs
        if (lab) {
            EXPECT_EQ(lab->teardown(), "");
        }
        lab.reset();
        fabric.reset();
    }

    std::vector<std::string> all_groups() const {
        auto g = kGroups;
        g.push_back(kRawGroup);
        g.insert(g.end(), more_groups.begin(), more_groups.end());
        return g;
    }
    // What a derived fixture does once the units are installed, before they start.
    virtual void before_start() {}

    void install_units() {
        // What surviving a restart takes (RestartKillSignal=, FileDescriptorStoreMax=, FDSTORE=,
        // Restart=, RuntimeDirectory=) is the shipped unit's own: not in the lab's drop-in.
        install_daemon_unit(*lab, *fabric, {.node = kNode, .daemon = MCASTD_DAEMON, .config_json = daemon_config});
        // The host has no rdma-mcast group (rdma-mcastd.sysusers makes it at install time, and
        // systemd-sysusers is masked in the lab).
        lab->write_unit("rdma-mcastd.socket.d/lab.conf", "[Socket]\nSocketGroup=root\n");
        lab->daemon_reload();
    }

    void start_holder(const std::string &mgid) {
        holders.push_back({mgid, std::make_unique<Process>(Process::Options{
                                     .argv = {MCASTD_CTL, "join", "--device", "ibsim0", "--port", "1", "--mgid",
                                              mgid, "--hold"},
                                     .env = {{"RDMA_MCASTD_SOCKET", lab->host_path(kSocket).string()}},
                                     .cwd = fabric->scratch()})});
    }

    // OpenSM's Sets and Deletes for H2's port in our groups, in the log from byte `offset`.
    std::vector<SaRequest> requests_since(std::size_t offset) {
        const std::string log = read_text(fabric->opensm_log_path());
        std::vector<SaRequest> out;
        for (auto &r : sa_requests(offset < log.size() ? log.substr(offset) : ""))
            if (r.port_gid == port)
                out.push_back(r);
        return out;
    }
    std::size_t log_size() { return read_text(fabric->opensm_log_path()).size(); }

    // `rdma-mcastctl status --json` from the host.
    nlohmann::json status() {
        Process p(Process::Options{.argv = {MCASTD_CTL, "status", "--json"},
                                   .env = {{"RDMA_MCASTD_SOCKET", lab->host_path(kSocket).string()}},
                                   .cwd = fabric->scratch()});
        EXPECT_EQ(p.wait(20s), 0) << p.stderr_text();
        return nlohmann::json::parse(p.read_all(1s), nullptr, false);
    }

    // The status reply on a connection of its own that speaks protocol version 2, whose
    // counters include sa_sets and sa_deletes (proto/PROTOCOL.md): the result object.
    nlohmann::json raw_status() {
        try {
            sim::RawClient c(lab->host_path(kSocket));
            c.call(R"({"id":0,"op":"hello","versions":[1,2],"client":"test_restart_lab"})", 0);
            auto reply = nlohmann::json::parse(c.call(R"({"id":1,"op":"status"})", 1), nullptr, false);
            return reply.is_object() && reply.contains("result") ? reply["result"] : reply;
        } catch (const std::exception &e) {
            return nlohmann::json{{"error", e.what()}};
        }
    }

    // The daemon's own count of SA Sets or Deletes since it started: counters.<name> in
    // `rdma-mcastctl status --json`, or else in the protocol's status reply.
    std::optional<long long> counter(const std::string &name, std::string &seen) {
        for (const auto &st : {status(), raw_status()}) {
            seen += st.dump() + "\n";
            if (st.is_object() && st.contains("counters") && st["counters"].contains(name) &&
                st["counters"][name].is_number())
                return st["counters"][name].get<long long>();
        }
        return std::nullopt;
    }

    // Every holder still runs and never reported a disconnect; the raw client is still
    // served on its old connection; the new instance holds every group; and it serves the
    // holders it took over: when one leaves, its group goes at the SA.
    void expect_clients_kept(const std::string &when) {
        for (auto &h : holders) {
            EXPECT_TRUE(h.proc->running()) << when << ": the holder of " << h.mgid << " exited: "
                                           << h.proc->stderr_text();
            const std::string err = h.proc->stderr_text();
            EXPECT_EQ(err.find("closed"), std::string::npos) << when << ": " << err;
            EXPECT_EQ(err.find("disconnect"), std::string::npos) << when << ": " << err;
        }
        try {
            const std::string list = raw->call(R"({"id":2,"op":"list"})", 2);
            EXPECT_NE(list.find("\"ok\":true"), std::string::npos) << when << ": " << list;
            EXPECT_NE(list.find(kRawGroup), std::string::npos) << when << ": the raw client's group is gone: " << list;
        } catch (const std::exception &e) {
            ADD_FAILURE() << when << ": the raw client's connection: " << e.what();
        }
        const auto st = status();
        const bool has_groups = st.is_object() && st.contains("ports") && st["ports"].size() == 1 &&
                                st["ports"][0].contains("groups");
        EXPECT_TRUE(has_groups && st["ports"][0]["groups"] == all_groups().size())
            << when << ": the new instance does not hold every group: " << st.dump();

        // kGroups[1] has one holder: its leave must reach the SA through the new instance.
        Holder &h = holders[1];
        ASSERT_EQ(h.mgid, kGroups[1]);
        h.proc->signal(SIGTERM);
        EXPECT_EQ(h.proc->wait(10s), 0) << when << ": " << h.proc->stderr_text();
        EXPECT_TRUE(fabric->wait_sa_join_state(G(h.mgid), port, std::nullopt, 10s))
            << when << ": the holder of " << h.mgid << " left, but the SA still has H2 in it";
    }

    // The restart left the SA alone: H2 was in every group at every poll, OpenSM logged no
    // Set or Delete of H2 for them, and the new instance counts none of its own.
    void expect_sa_untouched(const SaWatch::Report &w, std::size_t log_offset, const std::string &when) {
        std::printf("[ figures ] %s: %d SA polls, %d inconclusive, longest gap %lld ms\n", when.c_str(), w.polls,
                    w.inconclusive, w.max_gap_ms);
        EXPECT_TRUE(w.missing.empty()) << when << ": H2 left groups at the SA:\n"
                                       << [&] {
                                              std::string s;
                                              for (const auto &m : w.missing)
                                                  s += "  " + m + "\n";
                                              return s;
                                          }();
        // The poller asks again as soon as it has an answer: every 5-60 ms on a quiet machine,
        // 560 ms with three sim tests and a busy loop on two cores (load 14), when 9 polls
        // fitted the window. A short absence would take a Delete and a Set, which OpenSM's log
        // (below) shows at any cadence; the bounds only make sure the poller watched the whole
        // window (the gaps include its two ends), so they are generous: 2 s, at least 2 polls.
        EXPECT_GE(w.polls, 2) << when << ": too few SA polls to judge";
        EXPECT_LE(w.max_gap_ms, 2000) << when << ": the SA went unwatched for too long";
        // Sets and Deletes: the Gets are this test's own watcher's (and the daemon's audits).
        for (const auto &r : requests_since(log_offset))
            for (const auto &g : all_groups())
                EXPECT_FALSE(r.method != "Get" && r.mgid == G(g))
                    << when << ": OpenSM logged an SA " << r.method << " of " << g;
        std::string seen;
        const auto sets = counter("sa_sets", seen);
        const auto deletes = counter("sa_deletes", seen);
        EXPECT_TRUE(sets && deletes) << "no counters.sa_sets/sa_deletes in the daemon's status:\n" << seen;
        if (sets) {
            EXPECT_EQ(*sets, 0) << when << ": " << seen;
        }
        if (deletes) {
            EXPECT_EQ(*deletes, 0) << when << ": " << seen;
        }
    }

    long long fd_store() {
        const std::string v = lab->show(kService, "NFileDescriptorStore");
        return v.empty() ? -1 : std::stoll(v);
    }

    // Waits (in the lab, without a round trip per poll) until the service has been restarted
    // `n` times and is active again.
    bool wait_restarted(int n, std::chrono::seconds timeout) {
        const std::string script = "for i in $(seq " + std::to_string(timeout.count() * 20) +
                                   "); do [ \"$(systemctl show -p NRestarts --value " + kService + ")\" = " +
                                   std::to_string(n) + " ] && systemctl is-active -q " + kService +
                                   " && exit 0; sleep 0.05; done; exit 1";
        return lab->run({"sh", "-c", script}, timeout + 10s).exit_code == 0;
    }

    // What a derived fixture changes: the lab's root, the daemon's config, and the groups it
    // joined itself (after SetUp()).
    Lab::Root root = Lab::Root::read_only;
    std::string daemon_config = R"({"dbus":{"enabled":false}})";
    std::vector<std::string> more_groups;

    std::unique_ptr<Fabric> fabric; // declared first: destroyed last, after the daemon is gone
    Gid port{};
    std::unique_ptr<Lab> lab;
    std::vector<Holder> holders;
    std::unique_ptr<sim::RawClient> raw;
};

TEST_F(RestartLab, SystemctlRestartKeepsEveryMembershipAndEveryClient) {
    const auto old_pid = lab->main_pid(kService);
    const long long stored = fd_store();
    std::printf("[ figures ] NFileDescriptorStore before the restart: %lld\n", stored);
    EXPECT_GT(stored, 0) << "no client connection is in the fd store";

    // A descriptor a client passes that no request uses is closed in a child process of the
    // daemon's (runtime/fd_closer.hpp): the unit's sandbox (SystemCallFilter=, RestrictNamespaces=)
    // lets it start one. The pipe's read end sees EOF once the daemon's copy is closed.
    {
        int pipe_fds[2];
        ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
        const std::string req = R"({"id":6,"op":"status"})";
        ScmRightsMessage<1> m(req);
        m.put(std::span<const int>(&pipe_fds[1], 1));
        ASSERT_EQ(::sendmsg(raw->fd(), &m.msg, MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
        ::close(pipe_fds[1]);
        const auto answer = raw->receive(10s);
        ASSERT_TRUE(answer && answer->find("\"id\":6,\"ok\":true") != std::string::npos) << answer.value_or("");
        pollfd p{pipe_fds[0], POLLIN, 0};
        EXPECT_EQ(::poll(&p, 1, 10'000), 1) << "the daemon never closed the descriptor";
        char byte;
        EXPECT_EQ(::read(pipe_fds[0], &byte, 1), 0);
        ::close(pipe_fds[0]);
        EXPECT_EQ(lab->journal(kService).find("cannot start a process"), std::string::npos)
            << lab->journal(kService);
    }

    const std::size_t offset = log_size();
    SaWatch watch(*fabric, port, all_groups());
    // A request sent while the old instance reads nothing (stopped; the restart's SIGUSR2
    // comes with a SIGCONT) is answered all the same, by one instance or the other.
    const auto old_host = lab->host_pid(*old_pid);
    ASSERT_TRUE(old_host);
    ASSERT_EQ(::kill(*old_host, SIGSTOP), 0);
    raw->send(R"({"id":7,"op":"status"})");
    const auto t0 = Clock::now();
    const RunResult r = lab->systemctl({"restart", kService});
    const auto took = Clock::now() - t0;
    ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << lab->journal(kService);
    const auto answer = raw->receive(10s);
    ASSERT_TRUE(answer) << "the request sent during the restart got no answer";
    EXPECT_NE(answer->find("\"id\":7,\"ok\":true"), std::string::npos) << *answer;
    // The new instance's first seconds: an audit or a re-join would show here.
    std::this_thread::sleep_for(3s);
    const SaWatch::Report w = watch.stop();
    std::printf("[ figures ] systemctl restart took %lld ms\n", ms(took));

    EXPECT_NE(lab->main_pid(kService), old_pid);
    EXPECT_EQ(lab->show(kService, "NRestarts"), "0") << "a planned restart is not an automatic one";
    expect_sa_untouched(w, offset, "after systemctl restart");
    expect_clients_kept("after systemctl restart");
    EXPECT_GT(fd_store(), 0) << "the new instance's clients are not in the fd store";
    // The unit's SystemCallFilter= lets the umad receive thread take SCHED_BATCH
    // (doc/architecture.md §4).
    const auto new_host = lab->host_pid(lab->main_pid(kService).value_or(0));
    ASSERT_TRUE(new_host);
    std::vector<int> policies;
    for (pid_t tid : sim::threads_named(*new_host, "umad-recv"))
        policies.push_back(::sched_getscheduler(tid));
    EXPECT_EQ(policies, std::vector<int>{SCHED_BATCH});
    EXPECT_EQ(lab->journal(kService).find("cannot set SCHED_BATCH"), std::string::npos);
    if (HasFailure())
        std::printf("%s\n", lab->journal(kService).c_str());
}

TEST_F(RestartLab, KillMinus9AndRestartOnFailureKeepEveryMembershipAndEveryClient) {
    const auto old_pid = lab->main_pid(kService);
    ASSERT_TRUE(old_pid);
    const auto host = lab->host_pid(*old_pid);
    ASSERT_TRUE(host);
    EXPECT_GT(fd_store(), 0) << "no client connection is in the fd store: a crash would drop them";

    const std::size_t offset = log_size();
    SaWatch watch(*fabric, port, all_groups());
    const auto t0 = Clock::now();
    ASSERT_EQ(::kill(*host, SIGKILL), 0);
    ASSERT_TRUE(wait_restarted(1, 30s)) << lab->journal(kService);
    const auto took = Clock::now() - t0;
    std::this_thread::sleep_for(3s);
    const SaWatch::Report w = watch.stop();
    std::printf("[ figures ] kill -9 to active again: %lld ms\n", ms(took));

    EXPECT_NE(lab->main_pid(kService), old_pid);
    EXPECT_EQ(lab->show(kService, "NRestarts"), "1");
    expect_sa_untouched(w, offset, "after kill -9");
    expect_clients_kept("after kill -9");
    EXPECT_GT(fd_store(), 0);
    if (HasFailure())
        std::printf("%s\n", lab->journal(kService).c_str());
}

TEST_F(RestartLab, SystemctlStopLeavesEveryGroupAndTheNextStartBeginsEmpty) {
    const std::size_t offset = log_size();
    const RunResult r = lab->systemctl({"stop", kService});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto &g : all_groups())
        EXPECT_TRUE(fabric->wait_sa_join_state(G(g), port, std::nullopt, 10s)) << g << " is still held at the SA";
    const auto deletes = requests_since(offset);
    for (const auto &g : all_groups())
        EXPECT_TRUE(std::any_of(deletes.begin(), deletes.end(),
                                [&](const SaRequest &q) { return q.method == "Delete" && q.mgid == G(g); }))
            << "OpenSM logged no Delete of " << g;
    for (auto &h : holders)
        EXPECT_TRUE(h.proc->wait(10s)) << "the holder of " << h.mgid << " is still running";
    EXPECT_EQ(fd_store(), 0) << "a stopped service's fd store is released";

    // RuntimeDirectoryPreserve=yes keeps the state directory after a stop: the next start
    // must not take back what the stopped instance left.
    ASSERT_EQ(lab->systemctl({"start", kService}).exit_code, 0) << lab->journal(kService);
    std::this_thread::sleep_for(2s);
    const auto st = status();
    EXPECT_TRUE(st.is_object() && st.contains("ports") && st["ports"].size() == 1 && st["ports"][0]["groups"] == 0)
        << "a start after a stop holds groups: " << st.dump();
    for (const auto &g : all_groups())
        EXPECT_FALSE(fabric->sa_join_state(G(g), port)) << g << " is back at the SA after a stop and a start";
    if (HasFailure())
        std::printf("%s\n", lab->journal(kService).c_str());
}

// ---- a D-Bus caller across a restart (issue 28) ----

constexpr const char *kDbusGroup = "ff15:1ab::6";

class DbusRestartLab : public RestartLab {
protected:
    DbusRestartLab() {
        root = Lab::Root::overlay; // the bus policy goes where the lab's dbus-daemon reads it
        daemon_config = "{}";      // D-Bus on
    }

    void before_start() override {
        lab->write_file("/usr/share/dbus-1/system.d/org.rdmamcast1.conf", read_text(MCASTD_DBUS_POLICY));
        // Starts the lab's bus if nothing has yet; a running one reads its policy again.
        const RunResult r = lab->run({"busctl", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                      "org.freedesktop.DBus", "ReloadConfig"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }

    void SetUp() override {
        RestartLab::SetUp();
        if (IsSkipped() || HasFatalFailure())
            return;
        caller = std::make_unique<Process>(lab->spawn({MCASTD_DBUS_CLIENT}, /*stdin_pipe=*/true));
        ASSERT_EQ(caller->read_line(20s).value_or(caller->stderr_text()), "ready");
        const std::string joined = ask("join ibsim0 1 " + std::string(kDbusGroup) + " full"); // "ok PATH MLID"
        ASSERT_EQ(joined.rfind("ok /org/rdmamcast1/membership/", 0), 0u) << joined << "\n" << lab->journal(kService);
        path = joined.substr(3, joined.find(' ', 3) - 3);
        ASSERT_TRUE(fabric->wait_sa_join_state(G(kDbusGroup), port, 0x1, 10s));
        more_groups = {kDbusGroup}; // watched and checked with the others from here on
    }
    void TearDown() override {
        caller.reset(); // its stdin closes: it leaves the bus
        RestartLab::TearDown();
    }

    std::string ask(const std::string &command) {
        caller->write_stdin(command + "\n");
        return caller->read_line(20s).value_or("(no answer: " + caller->stderr_text() + ")");
    }
    // busctl in the lab: a property of the D-Bus caller's membership object.
    std::string property(const std::string &name) {
        RunResult r = lab->run({"busctl", "get-property", "org.rdmamcast1", path, "org.rdmamcast1.Membership", name});
        return r.exit_code == 0 ? r.out : "(failed: " + r.err + ")";
    }

    std::unique_ptr<Process> caller;
    std::string path;
};

TEST_F(DbusRestartLab, SystemctlRestartKeepsTheDbusCallersMembership) {
    const std::string owner = property("Owner");
    ASSERT_EQ(owner.rfind("s \":", 0), 0u) << owner;
    const std::size_t offset = log_size();
    SaWatch watch(*fabric, port, all_groups());
    const RunResult r = lab->systemctl({"restart", kService});
    ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << lab->journal(kService);
    // The new instance's first seconds: an audit, a re-join or a release would show here.
    std::this_thread::sleep_for(3s);
    const SaWatch::Report w = watch.stop();
    expect_sa_untouched(w, offset, "after systemctl restart");

    // The object is still there, the same caller's, and its Leave works through the new instance.
    EXPECT_EQ(property("Owner"), owner);
    EXPECT_EQ(property("State"), "s \"active\"\n");
    EXPECT_EQ(property("MGID"), "s \"" + std::string(kDbusGroup) + "\"\n");
    EXPECT_EQ(ask("leave " + path), "ok");
    EXPECT_TRUE(fabric->wait_sa_join_state(G(kDbusGroup), port, std::nullopt, 10s))
        << "the caller left, but the SA still has H2 in " << kDbusGroup;
    const auto deletes = requests_since(offset);
    EXPECT_TRUE(std::any_of(deletes.begin(), deletes.end(), [](const SaRequest &q) {
        return q.method == "Delete" && q.mgid == G(kDbusGroup);
    })) << "OpenSM logged no Delete of " << kDbusGroup << " after the leave";
    if (HasFailure())
        std::printf("%s\n", lab->journal(kService).c_str());
}

} // namespace
} // namespace mcastd::lab
