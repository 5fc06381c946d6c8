// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// StateKeeper over the daemon's front door (a Service on the fake SA, client sessions): what a
// crash would leave on disk at the moment the SA's answer to a Set is read.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "../roce/fake_store.hpp"
#include "../roce/fake_syscalls.hpp"
#include "frontend/front_door.hpp"
#include "restart/keeper.hpp"

namespace mcastd::test {
namespace {

namespace fs = std::filesystem;
using restart::StateFile;

class Keeper : public FrontDoor {
protected:
    Keeper() {
        char tmpl[] = "/tmp/mcastd-keeper-XXXXXX";
        if (!::mkdtemp(tmpl))
            throw std::system_error(errno, std::generic_category(), "mkdtemp");
        dir_ = tmpl;
        keeper_.emplace(loop, service, sessions, StateFile(dir_), "rdma-mcastd test");
        keeper_->watch(); // as the daemon does
    }
    ~Keeper() override {
        keeper_.reset();
        fs::remove_all(dir_);
    }

    // What the next instance would find.
    StateFile::Loaded on_disk() const { return StateFile(dir_).load(restart::current_boot_id()); }
    static std::optional<std::uint8_t> uncertain(const StateFile::Loaded &l, const char *mgid) {
        if (l.state)
            for (const auto &p : l.state->ports)
                for (const auto &g : p.groups)
                    if (g.mgid == *parse_gid(mgid))
                        return g.uncertain;
        return std::nullopt;
    }

    // Joins `mgid` (a new group: a Get, then the Set) and returns what was on disk when the
    // Set's answer came to be read. Both answers reach the loop as the receive thread hands
    // them over, through loop.post().
    StateFile::Loaded on_disk_at_the_sets_answer(int fd, const char *mgid) {
        send(fd, 2, join_of(mgid));
        serve(); // the probe Get is at the SA
        EXPECT_EQ(sa.pending(), 1u);
        std::optional<StateFile::Loaded> at_answer;
        loop.post([&] {
            sa.step(); // the Get's answer: no such group, so the engine sends the Set
            EXPECT_EQ(sa.pending(), 1u) << "the Set";
            loop.post([&] {
                at_answer = on_disk();
                sa.step();
            });
        });
        EXPECT_TRUE(ok(reply(fd, false)));
        return at_answer.value_or(StateFile::Loaded{});
    }

    fs::path dir_;
    std::optional<restart::StateKeeper> keeper_;
};

// However the state file's writes are paced (here it cannot be written at all: a directory
// stands where its temporary goes), the Set's bits are on disk before its answer is read, so a
// crash after the reply never leaves bits at the SA that the next instance does not know.
TEST_F(Keeper, ASetsBitsAreOnDiskBeforeItsAnswerIsRead) {
    fs::create_directory(dir_ / "state.json.tmp");
    const int fd = greeted();
    const StateFile::Loaded l = on_disk_at_the_sets_answer(fd, "ff15::77");
    EXPECT_FALSE(fs::exists(dir_ / "state.json"));
    EXPECT_EQ(l.changes, 1u);
    EXPECT_EQ(uncertain(l, "ff15::77"), 0x1);
}

// Once answered, the group's line says the bit is held.
TEST_F(Keeper, TheSetsBitIsHeldOnDiskOnceAnswered) {
    const int fd = greeted();
    const StateFile::Loaded l = on_disk_at_the_sets_answer(fd, "ff15::78");
    EXPECT_EQ(uncertain(l, "ff15::78"), 0x1);
    ASSERT_TRUE(until([&] {
        const auto now = on_disk();
        return now.state && !now.state->ports.empty() && !now.state->ports[0].groups.empty() &&
               now.state->ports[0].groups[0].held == 0x1 && now.state->ports[0].groups[0].uncertain == 0;
    })) << "ff15::78 held";
}

// What the next instance would find (the file and its log replayed) is what the daemon holds,
// and after the first compaction a change is a line: the state file is not written again.
TEST_F(Keeper, WhatACrashFindsIsWhatTheDaemonHolds) {
    const int a = greeted(), b = greeted();
    std::vector<std::uint64_t> held;
    auto join = [&](int fd, const char *mgid) {
        static std::uint64_t id = 100;
        send(fd, ++id, join_of(mgid));
        const proto::Reply r = reply(fd);
        EXPECT_TRUE(ok(r)) << mgid;
        return std::get<mcastd::json_check::OwnedValue>(r.body).get().find("membership")->unsigned_integer();
    };
    auto same = [&] {
        const auto now = on_disk();
        return now.state && *now.state == keeper_->snapshot(false);
    };
    join(a, "ff15::81");
    const std::uint64_t leaving = join(a, "ff15::82");
    ASSERT_TRUE(until(same));
    EXPECT_EQ(keeper_->compactions(), 1u);
    struct stat file{};
    ASSERT_EQ(::stat((dir_ / "state.json").c_str(), &file), 0);
    const std::uint64_t log_before = keeper_->log_bytes();

    join(b, "ff15::81");
    join(b, "ff15::83");
    send(a, 1, proto::Leave{leaving, std::nullopt});
    EXPECT_TRUE(ok(reply(a)));
    ASSERT_TRUE(until(same)) << "joins and a leave";
    ::shutdown(b, SHUT_RDWR); // its client went: its session and memberships go
    ASSERT_TRUE(until([&] { return sessions.clients() == 1 && same(); })) << "a session gone";

    EXPECT_EQ(keeper_->compactions(), 1u);
    struct stat now{};
    ASSERT_EQ(::stat((dir_ / "state.json").c_str(), &now), 0);
    EXPECT_EQ(now.st_ino, file.st_ino) << "the state file was not written again";
    EXPECT_GT(keeper_->log_bytes(), log_before);
    EXPECT_EQ(keeper_->log_bytes(), fs::file_size(dir_ / "state.log"));
    const auto l = on_disk();
    EXPECT_GT(l.changes, 0u);
    ASSERT_EQ(l.state->sessions.size(), 1u);
    EXPECT_EQ(l.state->sessions[0].memberships.size(), 1u) << "ff15::81 of a";
}

// A change the keeper cannot name (changed()) makes the next write, within the coalescing
// delay, a compaction.
TEST_F(Keeper, AChangeItCannotNameIsACompaction) {
    const int fd = greeted();
    send(fd, 1, join_of("ff15::c1"));
    ASSERT_TRUE(ok(reply(fd)));
    ASSERT_TRUE(until([&] { return keeper_->compactions() == 1; }));
    keeper_->changed();
    ASSERT_TRUE(until([&] { return keeper_->compactions() == 2; }));
    EXPECT_EQ(*on_disk().state, keeper_->snapshot(false));
}

// A group the SA names in its answer (a create) is not in the state until it has its MGID: the
// Set going out is no change to write, and the note that it joined is a line, not a compaction.
TEST_F(Keeper, ACreateIsALineOnceTheSaNamesItsGroup) {
    const int fd = greeted();
    send(fd, 1, join_of("ff15::b1"));
    ASSERT_TRUE(ok(reply(fd)));
    ASSERT_TRUE(until([&] { return keeper_->compactions() == 1; }));
    const std::uint64_t log_before = keeper_->log_bytes();
    JoinRequest create = join_request("ff15::1");
    create.mgid = kZeroGid;
    send(fd, 2, proto::Join{create});
    ASSERT_TRUE(ok(reply(fd)));
    ASSERT_TRUE(until([&] {
        const auto l = on_disk();
        return l.state && *l.state == keeper_->snapshot(false);
    }));
    EXPECT_EQ(keeper_->compactions(), 1u);
    EXPECT_GT(keeper_->log_bytes(), log_before);
    const auto l = on_disk();
    ASSERT_EQ(l.state->sessions.size(), 1u);
    EXPECT_EQ(l.state->sessions[0].memberships.size(), 2u);
}

// Once the log outgrows the state file (and its minimum), the next write is a compaction:
// the bytes written per change stay bounded whatever the state holds.
TEST_F(Keeper, TheLogIsCompactedOnceItOutgrowsTheStateFile) {
    keeper_->set_compact_min_bytes(4096); // a few dozen changes, not thousands
    const int fd = greeted();
    send(fd, 1, join_of("ff15::91"));
    ASSERT_TRUE(ok(reply(fd)));
    ASSERT_TRUE(until([&] { return keeper_->compactions() == 1; }));
    // Each change waits for its line (a join and its leave within one delay cost no line).
    auto logged = [&] {
        const std::uint64_t before = keeper_->log_bytes();
        return until([&] { return keeper_->log_bytes() != before || keeper_->compactions() > 1; });
    };
    for (std::uint64_t id = 2; keeper_->compactions() < 2; id += 2) {
        ASSERT_LT(id, 20000u) << "no compaction after " << keeper_->log_bytes() << " bytes of log";
        send(fd, id, join_of("ff15::91"));
        const proto::Reply r = reply(fd);
        ASSERT_TRUE(ok(r));
        ASSERT_TRUE(logged());
        send(fd, id + 1, proto::Leave{std::get<mcastd::json_check::OwnedValue>(r.body).get().find("membership")->unsigned_integer(), {}});
        ASSERT_TRUE(ok(reply(fd)));
        ASSERT_TRUE(logged());
    }
    EXPECT_LT(keeper_->log_bytes(), 1024u) << "a new log: its header and what came after";
    EXPECT_LT(fs::file_size(dir_ / "state.log"), 1024u);
    ASSERT_TRUE(until([&] {
        const auto l = on_disk();
        return l.state && *l.state == keeper_->snapshot(false);
    }));
}

// A port that came (or whose GID changed) after the last compaction holds its groups under a
// key the disk does not have: the next write is a compaction, which lists it.
TEST_F(Keeper, APortTheLastCompactionDidNotSeeMakesTheNextWriteOne) {
    const int fd = greeted();
    send(fd, 1, join_of("ff15::a1"));
    ASSERT_TRUE(ok(reply(fd)));
    ASSERT_TRUE(until([&] { return keeper_->compactions() == 1; }));
    port::PortAttributes second = test_port();
    second.port_num = 2;
    second.port_guid = 0x100004;
    service.add_port(second, true);
    send(fd, 2, join_of("ff15::a1"));
    ASSERT_TRUE(ok(reply(fd)));
    ASSERT_TRUE(until([&] { return keeper_->compactions() == 2; }));
    const auto l = on_disk();
    ASSERT_TRUE(l.state);
    ASSERT_EQ(l.state->ports.size(), 2u);
    EXPECT_EQ(l.state->ports[1].port, 2);
    EXPECT_EQ(*l.state, keeper_->snapshot(false));
}

// Only a session that said hello is handed to the next instance: one that said nothing was never
// judged by the allow lists (doc/architecture.md §12).
TEST_F(Keeper, ASessionThatSaidNoHelloIsNotSaved) {
    const int silent = connect();
    (void)silent;
    const int fd = greeted();
    send(fd, 2, join_of("ff15::1"));
    ASSERT_TRUE(ok(reply(fd)));
    serve();
    ASSERT_EQ(sessions.clients(), 2u);
    const restart::SavedState st = keeper_->snapshot(false);
    ASSERT_EQ(st.sessions.size(), 1u);
    EXPECT_EQ(st.sessions[0].version, 1u);
    EXPECT_EQ(st.sessions[0].memberships.size(), 1u);
}

// A state file of an older daemon kept un-greeted socket sessions (version 0), and their
// connections in the fd store: neither is taken back, and the stored connection is closed.
TEST_F(Keeper, AnUngreetedSessionOfAnOlderDaemonIsNotTakenBackAndItsConnectionIsClosed) {
    restart::SavedState st;
    st.boot_id = restart::current_boot_id();
    st.daemon = "rdma-mcastd old";
    st.next_session = 10;
    for (std::uint64_t id : {3u, 4u}) {
        restart::SavedSession ss;
        ss.id = id;
        ss.token = std::string(32, 'a');
        ss.who = ClientInfo{::getpid(), 1001, 100, "old"};
        ss.version = id == 3 ? 0 : 2;
        st.sessions.push_back(ss);
    }
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
    struct stat sb {};
    ASSERT_EQ(::fstat(fds[0], &sb), 0);
    st.sessions[0].inode = sb.st_ino;
    const auto r = keeper_->restore(st, {server::StoredConnection{fds[0], 3}}, server);
    EXPECT_EQ(r.sessions, 1u) << "the greeted one";
    EXPECT_EQ(sessions.detached(), 1u);
    EXPECT_FALSE(sessions.take_detached(3));
    ASSERT_EQ(r.set_aside.size(), 2u);
    EXPECT_EQ(r.set_aside[0], "session 3 (pid " + std::to_string(::getpid()) +
                                  ", uid 1001) never said hello: it is not taken back");
    EXPECT_EQ(r.set_aside[1], "stored connection c-3 closed: no session 3 in the state");
    char c;
    EXPECT_EQ(::recv(fds[1], &c, 1, MSG_DONTWAIT), 0) << "its client sees the close";
    ::close(fds[1]);
}

// A membership the next instance cannot take back (its group holds none of its bits in the
// state, as a hand-edited or damaged state may say; or its port is not served now) is named in
// the log, and its client, which still counts it, is told: lost,
// cancelled, join again, on the connection the service manager kept.
TEST_F(Keeper, AMembershipNotTakenBackIsToldToItsClientWithWhy) {
    restart::SavedState st;
    st.boot_id = restart::current_boot_id();
    st.daemon = "rdma-mcastd old";
    st.next_session = 10;
    st.ports.push_back(restart::SavedPort{"mlx5_0", 1, test_port().port_gid(), {}}); // no group
    restart::SavedSession ss;
    ss.id = 3;
    ss.token = std::string(32, 'a');
    ss.who = ClientInfo{::getpid(), ::getuid(), ::getgid(), "app"};
    ss.version = 2;
    for (auto [id, device] : {std::pair<std::uint64_t, const char *>{7, "mlx5_0"}, {8, "mlx5_9"}}) {
        restart::SavedMembership m;
        m.id = id;
        m.device = device;
        m.port = 1;
        m.mgid = *parse_gid("ff15::7a");
        m.join_state = 1;
        ss.memberships.push_back(m);
    }
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
    struct stat sb {};
    ASSERT_EQ(::fstat(fds[0], &sb), 0);
    ss.inode = sb.st_ino;
    st.sessions.push_back(ss);

    const auto r = keeper_->restore(st, {server::StoredConnection{fds[0], 3}}, server);
    EXPECT_EQ(r.sessions, 1u);
    EXPECT_EQ(r.memberships, 0u);
    EXPECT_EQ(r.connections, 1u);
    const std::string who = "of session 3 (pid " + std::to_string(::getpid()) + ") in group ff15::7a on ";
    ASSERT_EQ(r.set_aside.size(), 2u);
    EXPECT_EQ(r.set_aside[0], "membership 7 " + who +
                                  "mlx5_0/1 is not taken back: its group held no such bits when the state was written");
    EXPECT_EQ(r.set_aside[1], "membership 8 " + who + "mlx5_9/1 is not taken back: its port mlx5_9/1 is not served now");
    for (const char *expected : {"\"membership\":7", "\"membership\":8"}) {
        const std::string event = next(fds[1], false).value_or("");
        EXPECT_NE(event.find("\"event\":\"lost\""), std::string::npos) << event;
        EXPECT_NE(event.find(expected), std::string::npos) << event;
        EXPECT_NE(event.find("\"code\":\"cancelled\""), std::string::npos) << event;
        EXPECT_NE(event.find("could not take this membership back"), std::string::npos) << event;
        EXPECT_NE(event.find("; join again"), std::string::npos) << event;
    }
    ::close(fds[1]);
}

// The RoCE part of the state goes to the RoCE backend, with the stored membership sockets and
// the memberships taken back: here none (membership 9's session is not in the state), so the
// stored socket's membership is dropped and named, and the socket closed. Without a backend
// the stored sockets are closed too.
TEST_F(Keeper, TheRoceKernelMembershipsGoToTheBackendForTheMembershipsTakenBack) {
    struct NoPorts final : roce::RocePorts {
        std::optional<roce::RocePort> port(PortIndex) const override { return std::nullopt; }
        std::optional<unsigned> netdev_mtu(const std::string &) const override { return std::nullopt; }
    } ports;
    FakeSyscalls sys;
    sys.netdev(4096, "veth1", 7);
    roce::RoceBackend roce(ports, sys);
    restart::SavedState st;
    st.boot_id = restart::current_boot_id();
    st.daemon = "rdma-mcastd old";
    st.roce.sockets.push_back(
        roce::KeptSocket{3, 4096, false, {roce::KeptMembership{*parse_ip("239.1.2.3"), 7, "veth1", {9}}}});

    keeper_->set_roce(&roce);
    const auto r = keeper_->restore(st, {}, server, {{3, sys.socket(4096)}});
    keeper_->set_roce(nullptr);
    EXPECT_EQ(r.kernel_adopted, 0u);
    ASSERT_EQ(r.set_aside.size(), 1u);
    EXPECT_EQ(r.set_aside[0],
              "RoCE kernel membership: 239.1.2.3 on veth1 (stored socket 3) dropped: nobody holds it now");
    EXPECT_EQ(sys.open_fds(), 0u) << "the socket is closed";

    const int orphan = sys.socket(4096);
    keeper_->restore(st, {}, server, {{3, orphan}});
    EXPECT_EQ(sys.open_fds(), 0u) << "no backend: closed";
}

// A kernel membership the RoCE backend adds on a socket the fd store keeps already is written
// to the change log at once, before the kernel is asked: a crash before the next write would
// otherwise leave it on that socket with nothing naming it (KernelRestart tests the adoption).
TEST_F(Keeper, AKernelMembershipAddedOnAStoredSocketIsLoggedBeforeTheKernelIsAsked) {
    struct Veth1 final : roce::RocePorts {
        std::optional<roce::RocePort> port(PortIndex) const override {
            return roce::RocePort{"rxe0/1", {{1, *parse_gid("::ffff:10.77.0.1"), GidType::roce_v2, "veth1"}}, std::nullopt};
        }
        std::optional<unsigned> netdev_mtu(const std::string &) const override { return 1500; }
    } ports;
    FakeSyscalls sys;
    sys.netdev(4096, "veth1", 7);
    FakeStore store(sys);
    roce::RoceBackend roce(ports, sys);
    roce.set_store(&store);
    keeper_->set_roce(&roce);
    const auto log = [&] {
        std::ifstream in(StateFile(dir_).log_path());
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    };
    MembershipId next_id = 1;
    const auto join = [&](const char *group) {
        FabricJoin j;
        j.port = 0;
        j.roce = std::make_shared<const RoceJoin>(*parse_ip(group), std::nullopt, sys.socket(4096));
        JoinRequest req;
        req.roce = j.roce;
        j.mgid = std::get<Gid>(roce.group_of(0, req));
        roce.make(j, [](const FabricResult &r) { ASSERT_FALSE(r.error); });
        EXPECT_FALSE(roce.add_member(FabricMember{0, j.mgid, next_id++, join::full, j.roce, false}));
    };
    join("239.1.2.3"); // on the client's socket, kept and stored: a new socket the state will name
    EXPECT_EQ(log().find("roce_adding"), std::string::npos) << "a new socket needs no line: " << log();
    sys.on_add = [&](const IpAddress &group) {
        EXPECT_NE(log().find(R"({"roce_adding":{"socket":1,"group":")" + format_ip(group) + R"(","ifindex":7}})"),
                  std::string::npos)
            << "the line is in the log before the kernel is asked: " << log();
    };
    join("239.1.2.4"); // on the stored socket
    sys.on_add = nullptr;
    EXPECT_NE(log().find(R"("group":"239.1.2.4")"), std::string::npos) << log();
    roce.hand_over();
    keeper_->set_roce(nullptr);
}

// A D-Bus session is kept with the caller's unique name, its identity as attested (a cgroup
// that was not attested stays so), and the bus's id; the next instance's session has them back.
TEST_F(Keeper, ADbusSessionKeepsItsBusNameAndTheBusId) {
    struct Outlet final : frontend::SessionOutlet {
        void membership_event(MembershipId, const MembershipEvent &) override {}
        void disconnect(const std::string &) override {}
    } outlet;
    frontend::Credentials who{ClientInfo{::getpid(), 1001, kUnknownGid, "app"}, {100, 3000}};
    who.cgroup_unattested = "its bus connection is older than this daemon; reconnect to the bus";
    auto opened = sessions.open(frontend::Door::dbus, who, outlet);
    ASSERT_TRUE(std::holds_alternative<std::unique_ptr<frontend::ClientSession>>(opened));
    auto &s = std::get<std::unique_ptr<frontend::ClientSession>>(opened);
    s->set_bus_name(":1.42");
    ASSERT_FALSE(join_now(*s, join_request("ff15::79")).failure);
    keeper_->set_bus_id("0123456789abcdef0123456789abcdef");
    ASSERT_TRUE(keeper_->write(true));

    const auto l = on_disk();
    ASSERT_TRUE(l.state);
    EXPECT_EQ(l.state->bus_id, "0123456789abcdef0123456789abcdef");
    ASSERT_EQ(l.state->sessions.size(), 1u);
    const restart::SavedSession &saved = l.state->sessions[0];
    EXPECT_EQ(saved.door, restart::SavedDoor::dbus);
    EXPECT_EQ(saved.bus_name, ":1.42");
    EXPECT_EQ(saved.who.unix_gid, kUnknownGid);
    EXPECT_EQ(saved.groups, (std::vector<gid_t>{100, 3000}));
    EXPECT_EQ(saved.cgroup_unattested, who.cgroup_unattested);
    ASSERT_EQ(saved.memberships.size(), 1u);

    // The next instance (here, the same front door after the session is gone).
    const restart::SavedState state = *l.state;
    keeper_->seal(false);
    s.reset();
    restart::StateKeeper next(loop, service, sessions, StateFile(dir_), "rdma-mcastd next");
    const auto r = next.restore(state, {}, server);
    EXPECT_EQ(r.sessions, 1u);
    EXPECT_EQ(r.memberships, 1u);
    const auto ids = sessions.detached_of(frontend::Door::dbus);
    ASSERT_EQ(ids.size(), 1u);
    auto back = sessions.take_detached(ids[0]);
    EXPECT_EQ(back->bus_name(), ":1.42");
    EXPECT_EQ(back->who().cgroup_unattested, who.cgroup_unattested);
    EXPECT_EQ(back->who().who.uid, 1001u);
    EXPECT_EQ(back->held(), 1u);
}

} // namespace
} // namespace mcastd::test
