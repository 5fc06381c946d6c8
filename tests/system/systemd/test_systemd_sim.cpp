// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastd as systemd runs it, without PID 1: socket activation through
// systemd-socket-activate, and the Type=notify protocol (READY, STATUS, RELOADING, STOPPING,
// WATCHDOG) on a NOTIFY_SOCKET the test owns. The daemon runs attached to a simulated node, and
// the SA's own view (saquery) judges the joins.
#include <gtest/gtest.h>

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <regex>
#include <thread>

#include "sim/daemon_harness.hpp"

namespace mcastd::sim {
namespace {

Gid G(const std::string &s) { return *parse_gid(s); }

bool has_line(const std::string &datagram, const std::string &line) {
    return ("\n" + datagram + "\n").find("\n" + line + "\n") != std::string::npos;
}

std::string join_request(long long id, const std::string &mgid) {
    return R"({"id":)" + std::to_string(id) + R"(,"op":"join","device":"ibsim0","port":1,"mgid":")" + mgid +
           R"(","join_state":"full"})";
}

// The reply to hello from a client running as `uid`, in group root (which may pass through the
// scratch directories) and in the socket's group (which may open it). The socket's group is
// root's unless the host has group rdma-mcast (the default socket_group), as it does while a
// lab test that makes it runs beside this one.
// The child uses only async-signal-safe calls: the test process has threads.
std::string hello_as(uid_t uid, const std::filesystem::path &sock) {
    // The scratch directories are 0700; the group may pass through them for this.
    for (auto p = sock.parent_path(); p.string().size() > 5; p = p.parent_path())
        std::filesystem::permissions(p, std::filesystem::perms::group_exec, std::filesystem::perm_options::add);
    struct stat st {};
    if (::stat(sock.c_str(), &st) < 0)
        return "stat " + sock.string() + ": " + std::strerror(errno);
    const gid_t groups[] = {st.st_gid};
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, sock.c_str(), sizeof a.sun_path - 1);
    static const char hello[] = R"({"id":0,"op":"hello","versions":[1]})";
    int out[2];
    if (::pipe(out) < 0)
        return "pipe failed";
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(out[0]);
        char buf[4096];
        const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
        if (::setgroups(1, groups) < 0 || ::setresuid(uid, uid, uid) < 0 || ::connect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) < 0 ||
            ::send(fd, hello, sizeof hello - 1, 0) < 0)
            ::_exit(2);
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0 && ::write(out[1], buf, static_cast<std::size_t>(n)) < 0)
            ::_exit(3);
        ::_exit(0);
    }
    ::close(out[1]);
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;)
        reply.append(buf, static_cast<std::size_t>(n));
    ::close(out[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return reply.empty() ? "client exited with " + std::to_string(WEXITSTATUS(status)) : reply;
}

// ---- socket activation ----

class SocketActivation : public ::testing::Test {
protected:
    Fabric fabric;
    std::filesystem::path dir = fabric.scratch() / "activation";
    std::filesystem::path sock = dir / "mcastd.sock";
    std::unique_ptr<NotifySocket> notify;
    std::unique_ptr<Process> activator; // declared after fabric: stopped before it

    // systemd-socket-activate binds `sock`, and exec()s the daemon, attached to H2, on the
    // first connection. It passes only the variables named with -E.
    void start(const std::vector<std::string> &socket_args) {
        std::filesystem::create_directories(dir);
        notify = std::make_unique<NotifySocket>(dir / "notify.sock");
        std::ofstream(dir / "rdma-mcastd.json") << "{}";
        auto env = fabric.node_env("H2");
        env["NOTIFY_SOCKET"] = notify->path().string();
        std::vector<std::string> argv{"systemd-socket-activate", "-l", sock.string(), "--seqpacket"};
        argv.insert(argv.end(), socket_args.begin(), socket_args.end());
        for (const auto &[name, value] : env)
            argv.insert(argv.end(), {"-E", name});
        argv.insert(argv.end(), {MCASTD_DAEMON, "--config", (dir / "rdma-mcastd.json").string()});
        const auto cwd = fabric.scratch() / "cli-H2";
        std::filesystem::create_directories(cwd);
        activator = std::make_unique<Process>(
            Process::Options{.argv = argv, .env = env, .cwd = cwd, .merge_stderr = true});
        ASSERT_TRUE(activator->wait_for_line("Listening on", 10s)) << activator->read_all(1s);
    }
};

TEST_F(SocketActivation, FirstClientsJoinReachesTheSaAndTheSocketOutlivesTheDaemon) {
    start({"--fdname=client"});
    // Connecting is what starts the daemon: the connection waits in the listen backlog.
    RawClient client(sock);
    ASSERT_TRUE(notify->wait_for("READY=1", 30s)) << activator->read_all(1s);
    client.hello();
    const std::string r = client.call(join_request(1, "ff15:5a::1"), 1);
    EXPECT_NE(r.find("\"ok\":true"), std::string::npos) << r;
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:5a::1"), fabric.port_gid("H2"), 0x1, 5s));
    EXPECT_TRUE(activator->wait_for_line("(socket activation)", 5s));

    activator->signal(SIGTERM);
    EXPECT_TRUE(notify->wait_for("STOPPING=1", 10s));
    EXPECT_EQ(activator->wait(20s), 0);
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:5a::1"), fabric.port_gid("H2"), std::nullopt, 5s));
    // The service manager made the socket; the daemon must not remove it.
    struct stat st {};
    ASSERT_EQ(::lstat(sock.c_str(), &st), 0) << "the daemon removed a socket it did not create";
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
}

TEST_F(SocketActivation, AnUnnamedLoneSocketIsTaken) {
    start({}); // no --fdname: the fd's name is "unknown"
    RawClient client(sock);
    ASSERT_TRUE(notify->wait_for("READY=1", 30s)) << activator->read_all(1s);
    client.hello();
}

TEST_F(SocketActivation, ASocketWithAnotherNameIsRefusedByName) {
    start({"--fdname=metrics"});
    RawClient client(sock);
    EXPECT_EQ(activator->wait(30s), 1);
    const std::string out = activator->read_all(1s);
    EXPECT_NE(out.find("none named 'client'"), std::string::npos) << out;
    EXPECT_NE(out.find("FileDescriptorName="), std::string::npos) << out;
}

// ---- Type=notify ----

class Notify : public ::testing::Test {
protected:
    Fabric fabric;

    void write_config(Daemon &d, const std::string &json) { std::ofstream(d.config(), std::ios::trunc) << json; }

    // SIGHUP, then RELOADING=1 (with MONOTONIC_USEC) and READY=1 again.
    void reload(Daemon &d) {
        d.process().signal(SIGHUP);
        auto reloading = d.notify().wait_for("RELOADING=1", 10s);
        ASSERT_TRUE(reloading);
        EXPECT_TRUE(std::regex_search(*reloading, std::regex("(^|\n)MONOTONIC_USEC=[0-9]+(\n|$)"))) << *reloading;
        ASSERT_TRUE(d.notify().wait_for("READY=1", 10s));
    }
};

TEST_F(Notify, ReadyStatusWatchdogAndStopping) {
    Daemon d(fabric, "H2", "{}", {}, {{"WATCHDOG_USEC", "400000"}});
    EXPECT_TRUE(std::regex_search(d.ready_message(),
                                  std::regex("(^|\n)STATUS=[01]/1 ports active, 0 groups, 0 clients"
                                             "(, SA window [0-9.]+)?(\n|$)")))
        << d.ready_message();

    // sd-event pings well inside the 400 ms period.
    int pings = 0;
    for (auto end = std::chrono::steady_clock::now() + 1500ms; std::chrono::steady_clock::now() < end;)
        if (auto m = d.notify().next(100ms); m && has_line(*m, "WATCHDOG=1"))
            ++pings;
    EXPECT_GE(pings, 3);

    // STATUS= follows clients and groups.
    RawClient client(d.socket());
    client.hello();
    ASSERT_NE(client.call(join_request(1, "ff15:5b::1"), 1).find("\"ok\":true"), std::string::npos);
    // ... and shows the SA window the port learned (sa.congestion_control): it grew past 1
    // with the answers to the join's Get and Set.
    const std::regex joined("(^|\n)STATUS=1/1 ports active, 1 group, 1 client, SA window ([0-9.]+)(\n|$)");
    std::smatch m;
    std::string seen, status; // `m` points into `status`, which outlives the loop
    for (auto end = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < end;) {
        status = d.notify().next(100ms).value_or("");
        if (std::regex_search(status, m, joined))
            break;
        seen += status;
    }
    ASSERT_FALSE(m.empty()) << "no STATUS= with the group, the client and the SA window:\n" << seen;
    EXPECT_GT(std::stod(m[2].str()), 1.0) << m[0];

    d.process().signal(SIGTERM);
    EXPECT_TRUE(d.notify().wait_for("STOPPING=1", 10s));
    EXPECT_EQ(d.stop(), 0);
}

TEST_F(Notify, ReloadAppliesWhatIsSafeAndNamesWhatNeedsARestart) {
    Daemon d(fabric, "H2");
    const Gid h2 = fabric.port_gid("H2");

    // Static groups and log_level apply live; sa waits for a restart and is named.
    write_config(d, R"({"log_level":"debug","sa":{"window":8},
        "static_groups":[{"device":"ibsim0","port":1,"mgid":"ff15:5c::1","join_state":"full"}]})");
    reload(d);
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:5c::1"), h2, 0x1, 5s));
    EXPECT_TRUE(d.process().wait_for_stderr("applied: log_level, static_groups", 5s));
    EXPECT_TRUE(d.process().wait_for_stderr("keep their running value until a restart: sa", 5s));

    // Access applies to the next hello (root is always allowed, so ask as uid 4243).
    const std::string before = hello_as(4243, d.socket());
    EXPECT_NE(before.find("\"ok\":true"), std::string::npos) << before;
    write_config(d, R"({"access":{"allow_uids":[4242]}})");
    reload(d);
    EXPECT_TRUE(fabric.wait_sa_join_state(G("ff15:5c::1"), h2, std::nullopt, 5s)) << "static group dropped";
    const std::string other = hello_as(4243, d.socket()), allowed = hello_as(4242, d.socket());
    EXPECT_NE(other.find("config access.allow_uids"), std::string::npos) << other;
    EXPECT_NE(allowed.find("\"ok\":true"), std::string::npos) << allowed;

    // Limits apply to the next connection.
    RawClient first(d.socket());
    first.hello();
    write_config(d, R"({"limits":{"max_clients":1}})");
    reload(d);
    RawClient second(d.socket());
    auto refused = second.receive(5s);
    ASSERT_TRUE(refused);
    EXPECT_NE(refused->find("limits.max_clients"), std::string::npos) << *refused;
}

TEST_F(Notify, ABadConfigIsRefusedByKeyAndTheOldOneKeepsServing) {
    Daemon d(fabric, "H2", R"({"limits":{"max_clients":2}})");
    RawClient holder(d.socket());
    holder.hello();
    ASSERT_NE(holder.call(join_request(1, "ff15:5d::1"), 1).find("\"ok\":true"), std::string::npos);

    write_config(d, R"({"limits":{"max_clients":0}})");
    reload(d);
    EXPECT_TRUE(d.process().wait_for_stderr("reload refused, the running configuration stays", 5s));
    EXPECT_TRUE(d.process().wait_for_stderr("/limits/max_clients: 0 out of range", 5s)) << d.process().stderr_text();

    // Still the old limit (2): one more client is served, the third is turned away.
    EXPECT_EQ(fabric.sa_join_state(G("ff15:5d::1"), fabric.port_gid("H2")), 0x1);
    RawClient second(d.socket());
    second.hello();
    RawClient third(d.socket());
    auto refused = third.receive(5s);
    ASSERT_TRUE(refused);
    EXPECT_NE(refused->find("limits.max_clients"), std::string::npos) << *refused;
}

} // namespace
} // namespace mcastd::sim
