// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A RoCE port at the front door: a join hands over the socket its client made (SCM_RIGHTS),
// which the socket transport gives the join and the engine its port's membership backend; a
// request carrying more than one descriptor is refused, and every descriptor a request does not
// use is closed. An IP group has its MGID before the access policy judges the join.
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <dirent.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>

#include <chrono>
#include <cstring>
#include <set>

#include "fakes/fake_ethernet_backend.hpp"
#include "front_door.hpp"
#include "scm_rights.hpp"

namespace mcastd::test {
namespace {

class Outlet final : public frontend::SessionOutlet {
public:
    void membership_event(MembershipId, const MembershipEvent &) override {}
    void disconnect(const std::string &) override {}
};

policy::Policy joiners_only() {
    policy::Rule r;
    r.name = "joiners"; // everyone, any MGID, no creates
    policy::Policy p;
    p.rules.push_back(r);
    return p;
}

class RoceDoor : public EthernetBackendFirst, public FrontDoor {
protected:
    explicit RoceDoor(policy::Policy policy = joiners_only()) : FrontDoor({}, std::move(policy)) {
        service.set_membership_backend(LinkLayer::ethernet, eth);
        port::PortAttributes rxe = test_port();
        rxe.device = "rxe0";
        rxe.link_layer = "Ethernet";
        service.add_port(rxe, true);
    }

    static proto::Join roce_join(const char *mgid) {
        proto::Join j = join_of(mgid);
        j.request.device = "rxe0";
        return j;
    }

    // Sends a request with `fds` beside it (SCM_RIGHTS).
    static void send_with(int fd, std::uint64_t id, const proto::Request &r, const std::vector<int> &fds) {
        const std::string msg = proto::encode_request(id, r);
        ScmRightsMessage<8> m(msg);
        m.put(fds);
        ASSERT_EQ(::sendmsg(fd, &m.msg, MSG_NOSIGNAL), static_cast<ssize_t>(msg.size()));
    }

    // A UDP socket, as a client makes one in its namespace; the test keeps it and its inode.
    int udp() {
        const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        EXPECT_GE(fd, 0);
        sockets_.push_back(fd);
        return fd;
    }
    static ino_t inode(int fd) {
        struct stat st {};
        return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
    }
    // How many descriptors of this process refer to the socket `fd` refers to (the test's own
    // included).
    static int copies(int fd) {
        const ino_t want = inode(fd);
        int n = 0;
        DIR *d = ::opendir("/proc/self/fd");
        const int dir_fd = ::dirfd(d);
        while (const dirent *e = ::readdir(d)) {
            const int other = std::atoi(e->d_name);
            if (e->d_name[0] == '.' || other == dir_fd)
                continue;
            n += inode(other) == want;
        }
        ::closedir(d);
        return n;
    }
    ~RoceDoor() override {
        for (int fd : sockets_)
            ::close(fd);
    }

private:
    std::vector<int> sockets_;
};

TEST_F(RoceDoor, AJoinTakesTheSocketItCarriesAndTheDaemonKeepsNoCopy) {
    const int c = greeted();
    const int s = udp();
    send_with(c, 2, roce_join("ff0e::ffff:ef01:203"), {s});
    const proto::Reply r = reply(c);
    ASSERT_TRUE(ok(r)) << failure(r).error.message;
    ASSERT_EQ(eth.added.size(), 1u);
    ASSERT_TRUE(eth.added[0].roce);
    EXPECT_EQ(inode(eth.added[0].roce->fd), inode(s)) << "the client's socket reached the backend";
    EXPECT_NE(eth.added[0].roce->fd, s) << "a descriptor of the daemon's own";
    EXPECT_EQ(copies(s), 2) << "the test's, and the RoceJoin's the fake backend's records share";
    eth.made.clear(); // the fake lets go of it, as the real backend does once it has added the member
    eth.added.clear();
    eth.members.clear();
    EXPECT_EQ(copies(s), 1) << "neither the transport, the session nor the engine kept it";
}

TEST_F(RoceDoor, AnIpGroupAndAGidTypeOverTheSocketReachTheBackendWithTheSocket) {
    const int c = greeted();
    const int s = udp();
    proto::Join j = roce_join("::");
    j.request.mgid = kZeroGid;
    j.ip = parse_ip("239.1.2.3");
    j.gid_type = GidType::roce_v1;
    send_with(c, 2, j, {s});
    const proto::Reply r = reply(c);
    ASSERT_TRUE(ok(r)) << failure(r).error.message;
    ASSERT_EQ(eth.added.size(), 1u);
    ASSERT_TRUE(eth.added[0].roce);
    EXPECT_EQ(eth.added[0].roce->group, parse_ip("239.1.2.3")) << "the decoder's `ip`";
    EXPECT_EQ(eth.added[0].roce->gid_type, GidType::roce_v1) << "the decoder's `gid_type`";
    EXPECT_EQ(inode(eth.added[0].roce->fd), inode(s));
    EXPECT_TRUE(sa.log.empty()) << "nothing reached the SA";
}

TEST_F(RoceDoor, MoreThanOneDescriptorIsRefusedAndEveryOneClosed) {
    const int c = greeted();
    const int a = udp(), b = udp();
    send_with(c, 2, roce_join("ff0e::ffff:ef01:203"), {a, b});
    const proto::Reply r = reply(c);
    EXPECT_EQ(r.id, 2u);
    EXPECT_EQ(failure(r).error.code, Errc::invalid_argument);
    EXPECT_EQ(failure(r).field, "/mgid") << "the group the socket was for";
    EXPECT_EQ(failure(r).error.message,
              "a request carries at most one descriptor (the socket of a join on a RoCE port); this one carried 2");
    EXPECT_TRUE(eth.made.empty()) << "the join never reached the engine";
    EXPECT_EQ(copies(a), 1);
    EXPECT_EQ(copies(b), 1);

    std::vector<int> many;
    for (int i = 0; i < 6; ++i)
        many.push_back(udp());
    send_with(c, 3, roce_join("ff0e::ffff:ef01:203"), many);
    const proto::Reply r2 = reply(c);
    EXPECT_EQ(failure(r2).error.message, "a request carries at most one descriptor (the socket of a join on a RoCE "
                                         "port); this one carried 6");
    for (int fd : many)
        EXPECT_EQ(copies(fd), 1) << "every one taken in and closed by the daemon, none left to the kernel";
    send(c, 4, roce_join("ff0e::ffff:ef01:203"));
    EXPECT_TRUE(ok(reply(c))) << "the connection goes on";
}

TEST_F(RoceDoor, ADescriptorARequestDoesNotUseIsClosedAndTheRequestServed) {
    const int c = greeted();
    const int s = udp();
    send_with(c, 2, proto::Status{}, {s});
    EXPECT_TRUE(ok(reply(c)));
    EXPECT_EQ(copies(s), 1);
    send_with(c, 3, join_of("ff15::1"), {s}); // a join on an InfiniBand port has no use for one
    EXPECT_TRUE(ok(reply(c)));
    EXPECT_EQ(copies(s), 1) << "closed once its join was answered";
    // Before hello: refused, and closed as well.
    const int fresh = connect();
    send_with(fresh, 1, roce_join("ff0e::ffff:ef01:203"), {s});
    EXPECT_FALSE(ok(reply(fresh)));
    EXPECT_EQ(copies(s), 1);
}

// A TCP socket whose close waits out its linger time (SO_LINGER, `seconds`) for data its peer
// never reads: the peer is a listener that never accepts, with a small window, and the send
// buffer is full. Any client can pass one.
struct LingeringTcp {
    int listener = -1, fd = -1;
    explicit LingeringTcp(int seconds) {
        listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const int small = 1024;
        EXPECT_EQ(::setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
        sockaddr_in at{};
        at.sin_family = AF_INET;
        at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof at;
        EXPECT_EQ(::bind(listener, reinterpret_cast<sockaddr *>(&at), sizeof at), 0);
        EXPECT_EQ(::listen(listener, 1), 0);
        EXPECT_EQ(::getsockname(listener, reinterpret_cast<sockaddr *>(&at), &len), 0);
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        EXPECT_EQ(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
        EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&at), sizeof at), 0) << std::strerror(errno);
        const std::string chunk(4096, 'x');
        while (::send(fd, chunk.data(), chunk.size(), MSG_DONTWAIT | MSG_NOSIGNAL) > 0) {
        }
        const linger wait{1, seconds};
        EXPECT_EQ(::setsockopt(fd, SOL_SOCKET, SO_LINGER, &wait, sizeof wait), 0);
        int unsent = 0;
        EXPECT_EQ(::ioctl(fd, SIOCOUTQ, &unsent), 0);
        EXPECT_GT(unsent, 0) << "nothing for the close to wait on";
    }
    ~LingeringTcp() {
        if (fd >= 0) {
            const linger off{1, 0}; // the test's own copy closes at once
            ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof off);
            ::close(fd);
        }
        ::close(listener);
    }
    // Passes the descriptor on: the receiver's copy is then the last.
    int give() { return std::exchange(fd, -1); }
};

// A client must not stop the daemon with a descriptor whose close waits: the daemon turns a
// passed socket's linger off as it arrives, so closing it on the loop waits for nothing, whether
// the request had no use for it or a join carried it to an InfiniBand port.
TEST_F(RoceDoor, ASocketWhoseCloseWouldWaitIsClosedWithoutWaiting) {
    const int c = greeted();
    // Generous bound: the answers take milliseconds; a close that waited would take 30 s each.
    constexpr int kLinger = 30;
    const auto start = std::chrono::steady_clock::now();
    {
        LingeringTcp t(kLinger);
        const int fd = t.give();
        send_with(c, 2, proto::Status{}, {fd});
        ::close(fd);
        EXPECT_TRUE(ok(reply(c)));
    }
    {
        LingeringTcp t(kLinger);
        const int fd = t.give();
        send_with(c, 3, join_of("ff15::1"), {fd}); // an InfiniBand port: served as if it had none
        ::close(fd);
        EXPECT_TRUE(ok(reply(c)));
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(kLinger / 3))
        << "a close on the loop waited out the linger time";
}

// Anything but a socket (a pipe here; a FUSE or NFS file, whose close may wait on its server,
// in the wild) is closed on the closing thread, never on the loop; a join that carries one is
// refused, naming what it needed.
TEST_F(RoceDoor, ADescriptorThatIsNotASocketIsClosedOffTheLoop) {
    const int c = greeted();
    auto closed = [](int read_end) {
        pollfd p{read_end, POLLIN, 0};
        char byte;
        return ::poll(&p, 1, 10'000) == 1 && ::read(read_end, &byte, 1) == 0;
    };
    int status_pipe[2];
    ASSERT_EQ(::pipe2(status_pipe, O_CLOEXEC), 0);
    send_with(c, 2, proto::Status{}, {status_pipe[1]});
    ::close(status_pipe[1]);
    EXPECT_TRUE(ok(reply(c)));
    EXPECT_TRUE(closed(status_pipe[0])) << "the daemon's copy was never closed";
    ::close(status_pipe[0]);

    int join_pipe[2];
    ASSERT_EQ(::pipe2(join_pipe, O_CLOEXEC), 0);
    send_with(c, 3, roce_join("ff0e::ffff:ef01:203"), {join_pipe[1]});
    ::close(join_pipe[1]);
    const proto::Reply r = reply(c);
    EXPECT_EQ(failure(r).error.code, Errc::invalid_argument);
    EXPECT_EQ(failure(r).field, "/mgid");
    EXPECT_EQ(failure(r).error.message,
              "the descriptor a join carries is the UDP socket it holds its group on; this one is not a socket");
    EXPECT_TRUE(eth.made.empty()) << "the join never reached the engine";
    EXPECT_TRUE(closed(join_pipe[0]));
    ::close(join_pipe[0]);
}

TEST_F(RoceDoor, AnIpGroupHasItsMgidBeforeThePolicyJudgesIt) {
    Outlet outlet;
    auto opened = sessions.open(frontend::Door::dbus,
                                frontend::Credentials{ClientInfo{::getpid(), 1001, 1001, "app"}, {}, "/user.slice"},
                                outlet);
    auto &s = *std::get<std::unique_ptr<frontend::ClientSession>>(opened);
    JoinRequest req = roce_join("::").request;
    req.mgid = kZeroGid;
    req.roce = std::make_shared<const RoceJoin>(IpAddress::v4({239, 1, 2, 3}), std::nullopt, -1);
    const frontend::JoinAnswer a = join_now(s, req);
    ASSERT_FALSE(a.failure) << "not a create, which the rule does not allow: " << a.failure->error.message;
    EXPECT_EQ(format_gid(a.record.mgid), "::ffff:239.1.2.3");
    ASSERT_EQ(eth.made.size(), 1u);
    EXPECT_EQ(eth.made[0].mgid, a.record.mgid);

    req.device = test_port().device; // an InfiniBand port: an IP group names nothing there
    const frontend::JoinAnswer ib = join_now(s, req);
    ASSERT_TRUE(ib.failure);
    EXPECT_EQ(ib.failure->field, "/ip");
    EXPECT_EQ(ib.failure->error.message,
              test_port().device + "/1 is an InfiniBand port: an IP multicast group names a group on RoCE ports only");
    EXPECT_TRUE(sa.log.empty()) << "nothing reached the SA";
}

// An access rule naming IP prefixes judges a RoCE join by its IP group, whichever way the join
// named it; on the InfiniBand port it allows nothing.
policy::Policy ip_rule() {
    policy::Rule r;
    r.name = "video";
    r.ips = {std::get<policy::IpPrefix>(policy::parse_ip_prefix("239.1.0.0/16"))};
    policy::Policy p;
    p.rules.push_back(r);
    return p;
}

class RoceIpRule : public RoceDoor {
protected:
    RoceIpRule() : RoceDoor(ip_rule()) {
        auto opened = sessions.open(
            frontend::Door::dbus, frontend::Credentials{ClientInfo{::getpid(), 1001, 1001, "app"}, {}, "/user.slice"},
            outlet);
        session = std::move(std::get<std::unique_ptr<frontend::ClientSession>>(opened));
    }
    frontend::JoinAnswer join_ip(const char *group, std::optional<GidType> type = std::nullopt) {
        JoinRequest req = roce_join("::").request;
        req.mgid = kZeroGid;
        req.roce = std::make_shared<const RoceJoin>(parse_ip(group), type, -1);
        return join_now(*session, req);
    }

    Outlet outlet;
    std::unique_ptr<frontend::ClientSession> session;
};

TEST_F(RoceIpRule, AnIpRuleAdmitsItsGroupsByIpOrByMgid) {
    frontend::JoinAnswer a = join_ip("239.1.2.3");
    ASSERT_FALSE(a.failure) << a.failure->error.message;
    EXPECT_EQ(session->grants().at(a.membership).rule, "video");
    a = join_ip("239.1.2.4", GidType::roce_v1);
    ASSERT_FALSE(a.failure) << a.failure->error.message;
    a = join_now(*session, roce_join("::ffff:239.1.9.9").request);
    ASSERT_FALSE(a.failure) << "the MGID given directly is the same group: " << a.failure->error.message;

    const frontend::JoinAnswer no = join_ip("239.2.0.1");
    ASSERT_TRUE(no.failure);
    EXPECT_EQ(no.failure->error.code, Errc::denied);
    EXPECT_EQ(no.failure->field, "/ip");
    EXPECT_EQ(no.failure->error.message, "rule \"video\" (config access.rules) allows IP groups in 239.1.0.0/16 only, "
                                         "and 239.2.0.1 (MGID ::ffff:239.2.0.1) is not in them");
    const frontend::JoinAnswer by_mgid = join_now(*session, roce_join("::ffff:239.2.0.1").request);
    ASSERT_TRUE(by_mgid.failure);
    EXPECT_EQ(by_mgid.failure->field, "/mgid");

    JoinRequest ib = join_of("ff0e::ffff:ef01:203").request; // 239.1.2.3's RoCE v1 MGID, on InfiniBand
    const frontend::JoinAnswer on_ib = join_now(*session, ib);
    ASSERT_TRUE(on_ib.failure);
    EXPECT_EQ(on_ib.failure->error.code, Errc::denied) << "no MGID of an InfiniBand port is an IP group";
    EXPECT_TRUE(sa.log.empty()) << "nothing reached the SA";
}

// A reload reviews a RoCE membership by its IP group too.
TEST_F(RoceIpRule, AReloadReviewsARoceMembershipByItsIpGroup) {
    const frontend::JoinAnswer a = join_ip("239.1.2.3");
    ASSERT_FALSE(a.failure) << a.failure->error.message;
    sessions.set_policy(ip_rule());
    EXPECT_EQ(session->grants().at(a.membership).flagged, "") << "the same rules admit it still";
    policy::Policy narrower = ip_rule();
    narrower.rules[0].ips = {std::get<policy::IpPrefix>(policy::parse_ip_prefix("239.1.9.0/24"))};
    sessions.set_policy(narrower);
    EXPECT_EQ(session->grants().at(a.membership).flagged,
              "rule \"video\" (config access.rules) allows IP groups in 239.1.9.0/24 only, and 239.1.2.3 (MGID "
              "::ffff:239.1.2.3) is not in them");
}

} // namespace
} // namespace mcastd::test
