// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The Daemon's lifecycle on its own: every part started over a fake port backend (the fake SA,
// one port), a client on the real socket path, then SIGHUP's reload and SIGTERM's graceful stop
// as the signals would call them. The SA's view is the judge.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "app/daemon.hpp"
#include "logging/log_recorder.hpp"
#include "logging/message_ids.hpp"
#include "fakes/fake_port.hpp"
#include "fakes/fake_sa.hpp"
#include "json_dom_nlohmann.hpp"
#include "proto/protocol.hpp"

namespace mcastd::test {
namespace {

// The daemon's ports and SA in a test: one port over the fake SA, which answers when the test
// lets it.
// With `roce`, also an Ethernet port rxe1/1 whose GID table has an IPv6 RoCE v2 GID on lo (the
// daemon's real RoCE backend reads lo's MTU).
class FakeBackend final : public PortBackend {
public:
    explicit FakeBackend(FakeSa &sa, bool roce = false) : sa_(sa), roce_(roce) {}
    SaService &sa() override { return sa_; }
    void open(Service &service) override {
        sa_.port_gids[service.add_port(test_port(), true)] = test_port().port_gid();
        if (!roce_)
            return;
        port::PortAttributes a;
        a.device = "rxe1";
        a.port_num = 1;
        a.link_layer = "Ethernet";
        a.state = static_cast<std::uint8_t>(port::PortState::active);
        a.gids = {{0, *parse_gid("fd00::1"), GidType::roce_v2, "lo"}};
        service.add_port(a, true);
    }
    void quiesce() override {}

private:
    FakeSa &sa_;
    bool roce_;
};

config::DaemonConfig parse(const std::string &text) {
    auto r = config::parse_config(text, "test.json");
    if (auto *e = std::get_if<Error>(&r))
        throw std::runtime_error(e->message);
    return std::get<config::DaemonConfig>(std::move(r));
}

class DaemonLifecycle : public ::testing::Test {
protected:
    DaemonLifecycle() {
        char tmpl[] = "/tmp/mcastd-daemon-test-XXXXXX";
        dir_ = ::mkdtemp(tmpl);
        socket_ = dir_ / "mcastd.sock";
    }
    ~DaemonLifecycle() override {
        if (client_ >= 0)
            ::close(client_);
        daemon_.reset();
        std::filesystem::remove_all(dir_);
    }

    // `extra`: more top-level keys of the config file, each followed by a comma.
    std::string config(const std::string &extra = "") const {
        return "{" + extra + R"("socket": ")" + socket_.string() + R"(", "dbus": {"enabled": false}})";
    }
    void start(const std::string &extra, bool roce = false) {
        daemon_ = std::make_unique<Daemon>(loop_, parse(config(extra)), std::make_unique<FakeBackend>(sa_, roce),
                                           "rdma-mcastd test");
    }

    // Runs the loop and the SA until `done()` holds, or the loop ended; false after 10 s.
    template <class F> bool until(F done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!done()) {
            if (std::chrono::steady_clock::now() >= deadline || !running_)
                return done();
            running_ = loop_.run_once(std::chrono::milliseconds(10));
            sa_.run();
        }
        return true;
    }

    void connect(unsigned version = 1) {
        client_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, socket_.c_str(), sizeof a.sun_path - 1);
        ASSERT_EQ(::connect(client_, reinterpret_cast<sockaddr *>(&a), sizeof a), 0) << std::strerror(errno);
        ASSERT_TRUE(ok(ask(proto::Hello{{version}, "test"})));
    }
    // Sends a request and waits for its reply.
    proto::Reply ask(const proto::Request &r) {
        const std::string msg = proto::encode_request(++id_, r);
        EXPECT_EQ(::send(client_, msg.data(), msg.size(), MSG_NOSIGNAL), static_cast<ssize_t>(msg.size()));
        std::optional<proto::Reply> reply;
        until([&] {
            pollfd p{client_, POLLIN, 0};
            if (::poll(&p, 1, 0) <= 0)
                return false;
            char buf[65536];
            const ssize_t n = ::recv(client_, buf, sizeof buf, 0);
            if (n <= 0)
                return true;
            auto in = proto::decode_incoming(std::string_view(buf, static_cast<std::size_t>(n)));
            if (auto *inc = std::get_if<proto::Incoming>(&in))
                if (auto *rep = std::get_if<proto::Reply>(inc); rep && rep->id == id_)
                    reply = *rep;
            return reply.has_value();
        });
        EXPECT_TRUE(reply) << "no reply";
        return reply.value_or(proto::Reply{});
    }
    static proto::Join join(const char *mgid) { return proto::Join{join_request(mgid)}; }
    static bool ok(const proto::Reply &r) { return std::holds_alternative<mcastd::json_check::OwnedValue>(r.body); }
    static Errc code(const proto::Reply &r) {
        auto *f = std::get_if<proto::Failure>(&r.body);
        return f ? f->error.code : Errc::internal;
    }
    std::optional<std::uint8_t> sa_bits(const char *mgid) const {
        return sa_.state.join_state(*parse_gid(mgid), test_port().port_gid());
    }

    runtime::EventLoop loop_;
    FakeSa sa_;
    std::unique_ptr<Daemon> daemon_;
    std::filesystem::path dir_, socket_;
    int client_ = -1;
    std::uint64_t id_ = 0;
    bool running_ = true;
};

constexpr const char *kStatic = R"("static_groups": [{"device": "mlx5_0", "port": 1, "mgid": "ff15::a"}], )";

// The config's groups.names reaches the sessions: a named static group and a client's join by
// the same name meet in the group the configured prefix maps it to, and list shows the name.
TEST_F(DaemonLifecycle, NamedGroupsMapByTheConfiguredPrefix) {
    start(R"("groups": {"names": {"prefix": "ff15:6e61::/32"}},
             "static_groups": [{"device": "mlx5_0", "port": 1, "name": "job-42"}], )");
    ASSERT_TRUE(until([&] { return daemon_->static_groups_held() == 1; }));
    const char *kMgid = "ff15:6e61:6636:89a9:7bcf:99db:18c2:2b3d"; // PROTOCOL.md's vector
    EXPECT_EQ(sa_bits(kMgid), join::full);
    connect();
    JoinRequest r = join_request("::");
    r.mgid = kZeroGid;
    r.name = "job-42";
    const proto::Reply joined = ask(proto::Join{r});
    ASSERT_TRUE(ok(joined));
    const auto res = std::get<proto::JoinResult>(proto::decode_join_result(std::get<mcastd::json_check::OwnedValue>(joined.body).get()));
    EXPECT_EQ(format_gid(res.record.mgid), kMgid);
    const proto::Reply listed = ask(proto::List{});
    const auto l = std::get<proto::ListResult>(proto::decode_list_result(std::get<mcastd::json_check::OwnedValue>(listed.body).get()));
    ASSERT_EQ(l.ports.at(0).groups.size(), 1u);
    ASSERT_EQ(l.ports.at(0).groups[0].members.size(), 2u);
    for (const auto &m : l.ports.at(0).groups[0].members)
        EXPECT_EQ(m.name, "job-42") << m.rule;
}

// groups.roce_ipv6 reaches the RoCE backend: off, an IPv6 group on RoCE v2 is refused naming
// the key; on, it is served (send-only: no kernel membership, so no socket is needed).
TEST_F(DaemonLifecycle, RoceIpv6DecidesWhetherAnIpv6GroupOnRoceV2IsServed) {
    auto ipv6_join = [] {
        proto::Join j{join_request("::")};
        j.request.mgid = kZeroGid;
        j.request.device = "rxe1";
        j.request.join_state = join::send_only_full;
        j.ip = parse_ip("ff0e::1:2");
        j.gid_type = GidType::roce_v2;
        return j;
    };
    start("", true);
    connect(2);
    const proto::Reply refused = ask(ipv6_join());
    ASSERT_EQ(code(refused), Errc::invalid_argument);
    EXPECT_NE(std::get<proto::Failure>(refused.body).error.message.find("groups.roce_ipv6 is true"), std::string::npos)
        << std::get<proto::Failure>(refused.body).error.message;
    ::close(std::exchange(client_, -1));
    daemon_.reset();

    start(R"("groups": {"roce_ipv6": true}, )", true);
    connect(2);
    const proto::Reply served = ask(ipv6_join());
    ASSERT_TRUE(ok(served)) << std::get<proto::Failure>(served.body).error.message;
    const auto res = std::get<proto::JoinResult>(proto::decode_join_result(std::get<mcastd::json_check::OwnedValue>(served.body).get()));
    EXPECT_EQ(format_gid(res.record.mgid), "ff0e::1:2");
    EXPECT_EQ(res.record.gid_type, GidType::roce_v2) << mcastd::testing_json::to_nlohmann(std::get<mcastd::json_check::OwnedValue>(served.body).get()).dump();
}

TEST_F(DaemonLifecycle, StartsEveryPartAndAGracefulStopLeavesEverything) {
    start(kStatic);
    ASSERT_TRUE(until([&] { return daemon_->static_groups_held() == 1; }));
    EXPECT_EQ(sa_bits("ff15::a"), join::full);
    connect();
    ASSERT_TRUE(ok(ask(join("ff15::1"))));
    EXPECT_EQ(sa_bits("ff15::1"), join::full);
    EXPECT_EQ(daemon_->sessions().clients(), 1u);

    daemon_->stop("test");
    EXPECT_TRUE(daemon_->stopping());
    EXPECT_TRUE(until([&] { return !running_; })) << "the loop ends once every Delete is answered";
    EXPECT_FALSE(sa_bits("ff15::1"));
    EXPECT_FALSE(sa_bits("ff15::a"));
    char c;
    EXPECT_EQ(::recv(client_, &c, 1, 0), 0) << "the client was disconnected";
    daemon_->stop("again"); // once
    EXPECT_FALSE(daemon_->reload(parse(config()))) << "a stopping daemon applies nothing";
}

TEST_F(DaemonLifecycle, AReloadAppliesLimitsAndStaticGroupsAndNamesTheRest) {
    start(kStatic);
    ASSERT_TRUE(until([&] { return daemon_->static_groups_held() == 1; }));
    connect();
    ASSERT_TRUE(ok(ask(join("ff15::1"))));

    const std::string next = config(R"("limits": {"max_memberships_per_client": 1, "log_routine_burst": 7},
        "sa": {"window": 4},
        "static_groups": [{"device": "mlx5_0", "port": 1, "mgid": "ff15::b"}], )");
    ASSERT_TRUE(daemon_->reload(parse(next)));
    EXPECT_EQ(daemon_->sessions().limits().max_memberships_per_client, 1u);
    EXPECT_EQ(daemon_->routine_limiter().limits(), (logging::RoutineLimits{7, 120})) << "the journal's too";
    EXPECT_EQ(code(ask(join("ff15::2"))), Errc::limit) << "the new limit holds for the next request";
    ASSERT_TRUE(until([&] { return daemon_->static_groups_held() == 1 && daemon_->service().idle(); }));
    EXPECT_FALSE(sa_bits("ff15::a")) << "the old static group was left";
    EXPECT_EQ(sa_bits("ff15::b"), join::full) << "the new one joined";
    EXPECT_EQ(daemon_->config().host.sa.window, 16u) << "the SA window waits for a restart";

    // A config that does not parse keeps the running one.
    EXPECT_FALSE(daemon_->reload(config::parse_config("{\"limits\": {\"max_clients\": 0}}", "bad.json")));
    EXPECT_EQ(daemon_->sessions().limits().max_memberships_per_client, 1u);
    EXPECT_EQ(sa_bits("ff15::1"), join::full) << "nothing held was touched";
}

// config() reports what is in force: a key that waits for a restart keeps its running value there
// (names, socket_group and the fabric budget with the pacing it gives included), so every later
// reload of the same file names it again.
TEST_F(DaemonLifecycle, AReloadKeepsTheRunningValueOfWhatWaitsForARestart) {
    start("");
    const config::DaemonConfig running = daemon_->config();
    const std::string next = config(R"("log_level": "debug", "socket_group": 0,
        "groups": {"names": {"prefix": "ff15:1::/32"}}, "fabric": {"hosts": 10, "sa_budget": 2000}, )");
    const auto level = spdlog::get_level();
    ASSERT_TRUE(daemon_->reload(parse(next)));
    EXPECT_EQ(spdlog::get_level(), spdlog::level::debug);
    EXPECT_EQ(daemon_->config().log_level, "debug");
    EXPECT_EQ(daemon_->config().socket_group, running.socket_group);
    EXPECT_EQ(daemon_->config().names, running.names);
    EXPECT_EQ(daemon_->config().fabric, running.fabric);
    EXPECT_EQ(daemon_->config().host.sa.pacing_rate, running.host.sa.pacing_rate);
    EXPECT_EQ(plan_reload(daemon_->config(), parse(next)).restart,
              (std::vector<std::string>{"socket_group", "groups", "fabric"}));
    ASSERT_TRUE(daemon_->reload(parse(next)));
    EXPECT_EQ(daemon_->config().names, running.names);
    spdlog::set_level(level);
}

TEST_F(DaemonLifecycle, AStaticGroupInBothFilesStaysJoinedWithoutADelete) {
    start(kStatic);
    ASSERT_TRUE(until([&] { return daemon_->static_groups_held() == 1 && daemon_->service().idle(); }));
    ASSERT_TRUE(daemon_->reload(parse(config(R"("static_groups": [
        {"device": "mlx5_0", "port": 1, "mgid": "ff15::a"}, {"device": "mlx5_0", "port": 1, "mgid": "ff15::c"}], )"))));
    ASSERT_TRUE(until([&] { return daemon_->static_groups_held() == 2 && daemon_->service().idle(); }));
    EXPECT_EQ(sa_.count(SaMethod::del), 0) << "the new holder joined ff15::a before the old one left it";
    EXPECT_EQ(sa_bits("ff15::a"), join::full);
    EXPECT_EQ(sa_bits("ff15::c"), join::full);
}

// The routine lines a client folded until the end are summed up when the daemon stops.
TEST_F(DaemonLifecycle, WhatWasFoldedIsSummedUpAtStop) {
    std::optional<logging::test::LogCapture> capture(std::in_place);
    start(R"("limits": {"log_routine_burst": 1}, )");
    connect();
    for (const char *mgid : {"ff15::1", "ff15::2", "ff15::3"})
        ASSERT_TRUE(ok(ask(join(mgid)))); // one line, two folded
    auto summaries = [&] {
        std::vector<std::string> out;
        for (const auto &e : capture->entries())
            if (logging::test::field(e, "MESSAGE_ID") == logging::kRoutineFolded.id)
                out.push_back(e.text);
        return out;
    };
    EXPECT_TRUE(summaries().empty());
    daemon_->stop("test");
    EXPECT_TRUE(until([&] { return !running_; }));
    daemon_.reset();
    const auto texts = summaries();
    capture.reset();
    ASSERT_EQ(texts.size(), 1u);
    // Joined 2 folded, then the stop's leaves and Deletes of the same uid, all within 10 s.
    EXPECT_NE(texts[0].find("(joined 2, left 3, deleted 3)"), std::string::npos) << texts[0];
}

// A planned restart names what each phase of its hand-over took, and a start what its own
// took: mcastd-bench-restart reads them (doc/architecture.md §9).
TEST_F(DaemonLifecycle, ARestartAndAStartLogWhatEachPhaseTook) {
    std::optional<logging::test::LogCapture> capture(std::in_place);
    const std::filesystem::path state = dir_ / "state";
    std::filesystem::create_directory(state);
    std::filesystem::permissions(state, std::filesystem::perms::owner_all);
    config::DaemonConfig cfg = parse(config());
    cfg.state_dir = state.string();
    daemon_ = std::make_unique<Daemon>(loop_, std::move(cfg), std::make_unique<FakeBackend>(sa_), "rdma-mcastd test");
    connect();
    ASSERT_TRUE(ok(ask(join("ff15::1"))));
    daemon_->restart("test");
    EXPECT_TRUE(until([&] { return !running_; }));
    EXPECT_EQ(sa_bits("ff15::1"), join::full) << "a restart leaves nothing";
    auto logged = [&](const std::string &what) {
        for (const auto &e : capture->entries())
            if (e.text.find(what) != std::string::npos)
                return e.text;
        return std::string();
    };
    const std::string started = logged(" serving 1 port(s) on ");
    EXPECT_NE(started.find("; started in "), std::string::npos) << started;
    EXPECT_NE(started.find(" ms (ports "), std::string::npos) << started;
    EXPECT_NE(started.find(" ms, restart state read in "), std::string::npos) << started;
    EXPECT_NE(started.find(" ms and taken back in "), std::string::npos) << started;
    const std::string restarted = logged("exiting for the next instance");
    EXPECT_NE(restarted.find("restart state written;"), std::string::npos) << restarted;
    EXPECT_NE(restarted.find("(drained in "), std::string::npos) << restarted;
    EXPECT_NE(restarted.find(" ms, state written in "), std::string::npos) << restarted;
    EXPECT_NE(restarted.find(" ms, handed over in "), std::string::npos) << restarted;
    daemon_.reset();
    capture.reset();
}

} // namespace
} // namespace mcastd::test
