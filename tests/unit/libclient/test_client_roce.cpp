// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// librdmamcast on RoCE ports, against the fake daemon: joins by IP group and GID type, the
// RoCE record in the C and C++ APIs, the netdev of a membership, the link layer of a `list`
// port, and the UDP socket a full or non-member join hands the daemon (PROTOCOL.md, "RoCE
// ports"): on the join's own message, of the group's family, never for send-only joins nor on
// a port that answered as InfiniBand, and never left open in the client.
#include <sys/resource.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include <rdmamcast/client.hpp>

#include "client_testing.hpp"
#include "sanitized.hpp"

namespace {

using namespace fake;
namespace proto = mcastd::proto;

// A daemon whose joins succeed with sample_roce_record() (an Ethernet port), except on the
// ports listed in `infiniband`, which answer with sample_record(); membership ids count up
// from 10.
FakeDaemon::Handler roce_joins(std::vector<std::uint8_t> infiniband = {}) {
    return [infiniband, next = std::uint64_t{10}](Session &s, const proto::RequestEnvelope &env) mutable {
        const auto *j = std::get_if<proto::Join>(&env.request);
        if (!j)
            return false;
        const bool ib = std::find(infiniband.begin(), infiniband.end(), j->request.port) != infiniband.end();
        mcastd::McRecord r = ib ? sample_record() : sample_roce_record();
        r.join_state = j->request.join_state;
        s.reply(env.id, proto::JoinResult{next++, r});
        return true;
    };
}

rdmamcast_join_params ip_params(const char *ip, std::uint8_t port = 1) {
    rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
    p.device = "rxe0";
    p.port = port;
    p.flags = RDMAMCAST_JOIN_IP;
    p.ip = ip;
    return p;
}

rdmamcast_join_params mgid_params(const char *mgid, std::uint8_t port = 1) {
    rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
    p.device = "rxe0";
    p.port = port;
    std::memcpy(p.mgid, gid(mgid).data(), 16);
    return p;
}

int join(const ClientPtr &c, rdmamcast_join_params p, rdmamcast_record *rec = nullptr, std::uint64_t *m = nullptr) {
    const int rc = rdmamcast_join(c.get(), &p, rec, m);
    EXPECT_EQ(rc, 0) << rdmamcast_last_error(c.get())->message;
    return rc;
}

// The descriptors each join request came with, in order.
std::vector<std::vector<PassedFd>> fds_of_joins(FakeDaemon &d) {
    std::vector<std::vector<PassedFd>> out;
    for (const auto &r : d.requests())
        if (std::holds_alternative<proto::Join>(r.envelope.request))
            out.push_back(r.fds);
    return out;
}

// Exactly one UDP socket of `family`.
::testing::AssertionResult one_udp_socket(const std::vector<PassedFd> &fds, int family) {
    if (fds.size() != 1)
        return ::testing::AssertionFailure() << fds.size() << " descriptors";
    if (fds[0].domain != family || fds[0].type != SOCK_DGRAM || fds[0].protocol != IPPROTO_UDP)
        return ::testing::AssertionFailure() << "domain " << fds[0].domain << " type " << fds[0].type
                                             << " protocol " << fds[0].protocol << ", not a UDP socket of family "
                                             << family;
    return ::testing::AssertionSuccess();
}

std::size_t open_fds() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto &e : std::filesystem::directory_iterator("/proc/self/fd"))
        ++n;
    return n;
}

// ---- the request and the record ----

TEST(ClientRoce, AnIpJoinSendsTheGroupAndGidTypeAndNoMgid) {
    FakeDaemon d(roce_joins());
    auto c = connect_to(d);
    auto p = ip_params("239.1.2.3");
    p.flags |= RDMAMCAST_JOIN_GID_TYPE | RDMAMCAST_JOIN_QKEY;
    p.gid_type = RDMAMCAST_GID_TYPE_ROCE_V1;
    p.qkey = 0x01234567;
    ASSERT_EQ(join(c, p), 0);
    const auto j = d.requests_of<proto::Join>().at(0);
    ASSERT_TRUE(j.ip);
    EXPECT_EQ(mcastd::format_ip(*j.ip), "239.1.2.3");
    EXPECT_EQ(j.gid_type, mcastd::GidType::roce_v1);
    EXPECT_TRUE(mcastd::is_zero(j.request.mgid));
    EXPECT_TRUE(j.request.name.empty());
    EXPECT_EQ(j.request.params.qkey, 0x01234567u);

    // Without the flags, neither: an InfiniBand join as before.
    ASSERT_EQ(join(c, mgid_params("ff15::1:2")), 0);
    const auto plain = d.requests_of<proto::Join>().at(1);
    EXPECT_FALSE(plain.ip);
    EXPECT_FALSE(plain.gid_type);
    // A GID type goes with an MGID join too.
    auto by_mgid = mgid_params("::ffff:239.1.2.3");
    by_mgid.flags = RDMAMCAST_JOIN_GID_TYPE;
    by_mgid.gid_type = RDMAMCAST_GID_TYPE_ROCE_V2;
    ASSERT_EQ(join(c, by_mgid), 0);
    EXPECT_EQ(d.requests_of<proto::Join>().at(2).gid_type, mcastd::GidType::roce_v2);
    EXPECT_EQ(d.requests_of<proto::Join>().at(2).request.mgid, gid("::ffff:239.1.2.3"));
    EXPECT_TRUE(d.requests_of<proto::Join>().at(2).ifname.empty());
    // The interface of the caller's namespace, when named.
    auto on_eth0 = ip_params("239.1.2.3");
    on_eth0.ifname = "eth0";
    ASSERT_EQ(join(c, on_eth0), 0);
    EXPECT_EQ(d.requests_of<proto::Join>().at(3).ifname, "eth0");
    // A program built against the previous layout has no ifname field: whatever lies there is
    // not read (here a valid pointer, which a V3 program would never have set).
    on_eth0.size = offsetof(rdmamcast_join_params, ifname);
    ASSERT_EQ(join(c, on_eth0), 0);
    EXPECT_TRUE(d.requests_of<proto::Join>().at(4).ifname.empty());
}

TEST(ClientRoce, TheRecordCarriesTheLinkLayerGidTypeSourceIndexMacAndGroup) {
    FakeDaemon d(roce_joins({2}));
    auto c = connect_to(d);
    rdmamcast_record rec;
    std::memset(&rec, 0xaa, sizeof rec);
    std::uint64_t m = 0;
    ASSERT_EQ(join(c, ip_params("239.1.2.3"), &rec, &m), 0);
    EXPECT_EQ(m, 10u);
    EXPECT_EQ(rec.link_layer, RDMAMCAST_LINK_LAYER_ETHERNET);
    EXPECT_EQ(rec.gid_type, RDMAMCAST_GID_TYPE_ROCE_V2);
    EXPECT_EQ(rec.sgid_index, 3);
    EXPECT_EQ(rec.reserved1, 0);
    const std::uint8_t mac[6] = {0x01, 0x00, 0x5e, 0x01, 0x02, 0x03};
    EXPECT_EQ(0, std::memcmp(rec.dmac, mac, 6));
    EXPECT_EQ(0, std::memcmp(rec.ip, gid("::ffff:239.1.2.3").data(), 16));
    EXPECT_EQ(0, std::memcmp(rec.mgid, gid("::ffff:239.1.2.3").data(), 16));
    EXPECT_EQ(rec.mlid, 0);
    EXPECT_EQ(rec.pkey, 0xffff);
    EXPECT_EQ(rec.qkey, 0x01234567u);
    EXPECT_EQ(rec.hop_limit, 64);
    EXPECT_EQ(rec.reserved[0], 0u);
    EXPECT_EQ(rdmamcast::ip_to_string(rec.ip), "239.1.2.3");
    EXPECT_EQ(rdmamcast::mac_to_string(rec.dmac), "01:00:5e:01:02:03");
    EXPECT_TRUE(rdmamcast::is_roce(rec));

    // An InfiniBand port's record: zero from the link layer on, whatever the caller had there.
    std::memset(&rec, 0xaa, sizeof rec);
    ASSERT_EQ(join(c, mgid_params("ff15::1:2", 2), &rec), 0);
    EXPECT_EQ(rec.link_layer, RDMAMCAST_LINK_LAYER_INFINIBAND);
    EXPECT_EQ(rec.gid_type, RDMAMCAST_GID_TYPE_IB);
    const auto *tail = reinterpret_cast<const unsigned char *>(&rec) + offsetof(rdmamcast_record, link_layer);
    for (std::size_t i = 0; i < sizeof rec - offsetof(rdmamcast_record, link_layer); ++i)
        EXPECT_EQ(tail[i], 0) << "byte " << i + offsetof(rdmamcast_record, link_layer);
    EXPECT_FALSE(rdmamcast::is_roce(rec));
}

TEST(ClientRoce, TheNetdevOfAMembership) {
    FakeDaemon d(roce_joins({2}));
    auto c = connect_to(d);
    std::uint64_t roce = 0, ib = 0;
    ASSERT_EQ(join(c, ip_params("239.1.2.3"), nullptr, &roce), 0);
    ASSERT_EQ(join(c, mgid_params("ff15::1:2", 2), nullptr, &ib), 0);
    char buf[16];
    EXPECT_EQ(rdmamcast_membership_netdev(c.get(), roce, buf, sizeof buf), 4);
    EXPECT_STREQ(buf, "eth7");
    EXPECT_EQ(rdmamcast_membership_netdev(c.get(), roce, buf, 4), -ERANGE) << "no room for the NUL";
    EXPECT_EQ(rdmamcast_membership_netdev(c.get(), roce, nullptr, 0), -ERANGE);
    EXPECT_EQ(rdmamcast_membership_netdev(c.get(), ib, buf, sizeof buf), -ENODATA);
    EXPECT_NE(std::strstr(rdmamcast_last_error(c.get())->message, "InfiniBand"), nullptr);
    EXPECT_EQ(rdmamcast_membership_netdev(c.get(), 999, buf, sizeof buf), -ENOENT);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_NOT_FOUND);
    EXPECT_EQ(rdmamcast_membership_netdev(nullptr, roce, buf, sizeof buf), -EINVAL);

    // A restored event that moved the address to another netdev (and GID index).
    proto::RestoredEvent moved{roce, sample_roce_record(), mcastd::field::netdev | mcastd::field::sgid_index};
    moved.record.netdev = "eth7.100";
    moved.record.sgid_index = 9;
    d.broadcast(moved);
    ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 5000));
    rdmamcast_event ev;
    ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
    ASSERT_EQ(ev.type, RDMAMCAST_EVENT_RESTORED);
    EXPECT_EQ(ev.restored.changed, unsigned{RDMAMCAST_FIELD_NETDEV | RDMAMCAST_FIELD_SGID_INDEX});
    EXPECT_EQ(ev.restored.record.sgid_index, 9);
    EXPECT_EQ(rdmamcast_membership_netdev(c.get(), roce, buf, sizeof buf), 8);
    EXPECT_STREQ(buf, "eth7.100");

    ASSERT_EQ(rdmamcast_leave(c.get(), roce), 0);
    EXPECT_EQ(rdmamcast_membership_netdev(c.get(), roce, buf, sizeof buf), -ENOENT);
}

struct BadRoceParams {
    const char *name;
    void (*mutate)(rdmamcast_join_params &);
    int err;
    rdmamcast_errc code;
    const char *field;
};
void PrintTo(const BadRoceParams &c, std::ostream *os) { *os << c.name; }

class ClientRoceParams : public ::testing::TestWithParam<BadRoceParams> {};

TEST_P(ClientRoceParams, AreRejectedBeforeAnythingIsSent) {
    FakeDaemon d(roce_joins());
    auto c = connect_to(d);
    auto p = ip_params("239.1.2.3");
    GetParam().mutate(p);
    EXPECT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), GetParam().err);
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, GetParam().code);
    EXPECT_STREQ(e->field, GetParam().field);
    EXPECT_NE(e->message[0], '\0');
    EXPECT_TRUE(d.requests_of<proto::Join>().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Invalid, ClientRoceParams,
    ::testing::Values(
        BadRoceParams{"ip_without_flag", [](rdmamcast_join_params &p) { p.flags = 0; }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, "/ip"},
        BadRoceParams{"flag_without_ip", [](rdmamcast_join_params &p) { p.ip = nullptr; }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, "/ip"},
        BadRoceParams{"ip_and_mgid", [](rdmamcast_join_params &p) { p.mgid[0] = 0xff; }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, "/ip"},
        BadRoceParams{"ip_and_name", [](rdmamcast_join_params &p) { p.name = "job-42"; }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, "/ip"},
        BadRoceParams{"ip_and_create", [](rdmamcast_join_params &p) { p.flags |= RDMAMCAST_JOIN_CREATE; }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, "/ip"},
        BadRoceParams{"ip_not_an_address", [](rdmamcast_join_params &p) { p.ip = "239.1.2"; }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, "/ip"},
        BadRoceParams{"ip_unicast", [](rdmamcast_join_params &p) { p.ip = "192.168.1.1"; }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, "/ip"},
        BadRoceParams{"ip_unicast_v6", [](rdmamcast_join_params &p) { p.ip = "fe80::1"; }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, "/ip"},
        BadRoceParams{"gid_type_ib",
                      [](rdmamcast_join_params &p) {
                          p.flags |= RDMAMCAST_JOIN_GID_TYPE;
                          p.gid_type = RDMAMCAST_GID_TYPE_IB;
                      },
                      -EINVAL, RDMAMCAST_E_INVALID_ARGUMENT, "/gid_type"},
        BadRoceParams{"gid_type_3",
                      [](rdmamcast_join_params &p) {
                          p.flags |= RDMAMCAST_JOIN_GID_TYPE;
                          p.gid_type = static_cast<rdmamcast_gid_type>(3); // in the enum's range, but no type
                      },
                      -EINVAL, RDMAMCAST_E_INVALID_ARGUMENT, "/gid_type"},
        // A program built against the 1.5 headers has no ip field, whatever its flags say.
        BadRoceParams{"ip_flag_in_the_second_layout",
                      [](rdmamcast_join_params &p) { p.size = offsetof(rdmamcast_join_params, ip); }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, ""},
        BadRoceParams{"reserved1_set", [](rdmamcast_join_params &p) { p.reserved1 = 1; }, -E2BIG, RDMAMCAST_E_ABI,
                      ""},
        BadRoceParams{"ifname_empty", [](rdmamcast_join_params &p) { p.ifname = ""; }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, "/ifname"},
        BadRoceParams{"ifname_too_long", [](rdmamcast_join_params &p) { p.ifname = "abcdefghijklmnop"; }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, "/ifname"},
        BadRoceParams{"ifname_alias", [](rdmamcast_join_params &p) { p.ifname = "eth0:1"; }, -EINVAL,
                      RDMAMCAST_E_INVALID_ARGUMENT, "/ifname"}),
    [](const auto &p) { return std::string(p.param.name); });

// ---- the socket for the host's IP membership ----

TEST(ClientRoceSocket, AFullJoinCarriesOneUdpSocketOfTheGroupsFamily) {
    FakeDaemon d(roce_joins());
    auto c = connect_to(d);
    struct Case {
        rdmamcast_join_params p;
        int family;
    };
    auto nonmember = ip_params("239.1.2.3");
    nonmember.join_state = RDMAMCAST_JOIN_STATE_NONMEMBER;
    auto named = mgid_params("::");
    named.name = "job-42";
    const Case cases[] = {
        {ip_params("239.1.2.3"), AF_INET},
        {ip_params("ff0e::1:2"), AF_INET6},
        {ip_params("::ffff:224.0.0.251"), AF_INET},
        {mgid_params("::ffff:239.1.2.3"), AF_INET},     // RoCE v2's MGID of an IPv4 group
        {mgid_params("ff0e::ffff:239.1.2.3"), AF_INET}, // RoCE v1's
        {mgid_params("ff0e::ffff:10.1.2.3"), AF_INET6}, // not an IPv4 group: an IPv6 one
        {mgid_params("ff15::1:2"), AF_INET6},
        {nonmember, AF_INET},
        {named, AF_INET6},
    };
    for (const auto &k : cases)
        ASSERT_EQ(join(c, k.p), 0);
    const auto fds = fds_of_joins(d);
    ASSERT_EQ(fds.size(), std::size(cases));
    for (std::size_t i = 0; i < fds.size(); ++i)
        EXPECT_TRUE(one_udp_socket(fds[i], cases[i].family)) << "join " << i;
}

TEST(ClientRoceSocket, SendOnlyJoinsCarryNone) {
    FakeDaemon d(roce_joins());
    auto c = connect_to(d);
    for (std::uint8_t js : {RDMAMCAST_JOIN_STATE_SENDONLY_FULL, RDMAMCAST_JOIN_STATE_SENDONLY_NONMEMBER}) {
        auto p = ip_params("239.1.2.3");
        p.join_state = js;
        ASSERT_EQ(join(c, p), 0);
    }
    for (const auto &fds : fds_of_joins(d))
        EXPECT_TRUE(fds.empty());
}

// The first join on a port cannot know its link layer; once the port answered as InfiniBand,
// its joins go without (an InfiniBand port needs none), other ports' still with.
TEST(ClientRoceSocket, APortThatAnsweredAsInfinibandGetsNoneAfterwards) {
    FakeDaemon d(roce_joins({1}));
    auto c = connect_to(d);
    ASSERT_EQ(join(c, mgid_params("ff15::1:2", 1)), 0); // unknown yet: with
    ASSERT_EQ(join(c, mgid_params("ff15::1:3", 1)), 0); // InfiniBand: without
    ASSERT_EQ(join(c, mgid_params("ff15::1:4", 2)), 0); // another port, unknown: with
    ASSERT_EQ(join(c, ip_params("239.1.2.3", 2)), 0);   // Ethernet: with
    ASSERT_EQ(join(c, mgid_params("ff15::1:5", 1)), 0); // InfiniBand still: without
    const auto fds = fds_of_joins(d);
    ASSERT_EQ(fds.size(), 5u);
    EXPECT_TRUE(one_udp_socket(fds[0], AF_INET6));
    EXPECT_TRUE(fds[1].empty());
    EXPECT_TRUE(one_udp_socket(fds[2], AF_INET6));
    EXPECT_TRUE(one_udp_socket(fds[3], AF_INET));
    EXPECT_TRUE(fds[4].empty());
}

TEST(ClientRoceSocket, AsynchronousJoinsCarryOneEach) {
    FakeDaemon d(roce_joins());
    auto c = connect_to(d);
    const char *groups[] = {"239.1.2.3", "239.1.2.4", "ff0e::1:2", "239.1.2.5"};
    for (const char *g : groups) {
        auto p = ip_params(g);
        ASSERT_EQ(rdmamcast_join_start(c.get(), &p, nullptr, nullptr), 0);
    }
    for (std::size_t got = 0; got < std::size(groups);) {
        ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 5000));
        rdmamcast_event ev;
        while (rdmamcast_next_event(c.get(), &ev) == 0) {
            EXPECT_EQ(ev.type, RDMAMCAST_EVENT_JOINED);
            EXPECT_EQ(ev.joined.record.link_layer, RDMAMCAST_LINK_LAYER_ETHERNET);
            ++got;
        }
    }
    const auto fds = fds_of_joins(d);
    ASSERT_EQ(fds.size(), 4u);
    EXPECT_TRUE(one_udp_socket(fds[0], AF_INET));
    EXPECT_TRUE(one_udp_socket(fds[1], AF_INET));
    EXPECT_TRUE(one_udp_socket(fds[2], AF_INET6));
    EXPECT_TRUE(one_udp_socket(fds[3], AF_INET));
}

TEST(ClientRoceSocket, NoDescriptorIsLeftOpenInTheClient) {
    FakeDaemon d(roce_joins({2}));
    auto c = connect_to(d);
    const std::size_t before = open_fds();
    for (int i = 0; i < 20; ++i) {
        ASSERT_EQ(join(c, ip_params(i % 2 ? "239.1.2.3" : "ff0e::1:2")), 0);
        ASSERT_EQ(join(c, mgid_params("ff15::1:2", 2)), 0);
        auto p = ip_params("239.1.2.9");
        ASSERT_EQ(rdmamcast_join_start(c.get(), &p, nullptr, nullptr), 0);
    }
    for (std::size_t got = 0; got < 20;) {
        ASSERT_TRUE(readable(rdmamcast_event_fd(c.get()), 5000));
        rdmamcast_event ev;
        while (rdmamcast_next_event(c.get(), &ev) == 0)
            ++got;
    }
    // The fake daemon closed what it received before it answered, so every socket is gone.
    EXPECT_EQ(open_fds(), before);
    std::size_t sockets = 0;
    for (const auto &fds : fds_of_joins(d))
        sockets += fds.size();
    EXPECT_EQ(sockets, 41u) << "40 on the Ethernet port, and the first on the InfiniBand one";
}

// A socket the client cannot make: on a port known to be Ethernet the join fails with the
// cause, and nothing is sent; on a port not known yet it goes without.
TEST(ClientRoceSocket, NoSocketFailsTheJoinOnlyWhereThePortNeedsOne) {
    if (mcastd::testing_build::kSanitized)
        GTEST_SKIP() << mcastd::testing_build::kNoDescriptorForUbsan;
    FakeDaemon d(roce_joins());
    auto c = connect_to(d);
    ASSERT_EQ(join(c, ip_params("239.1.2.3", 1)), 0); // port 1 is Ethernet now

    // Every descriptor number taken up to a soft limit just above them.
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
    int highest = 0;
    for (const auto &e : std::filesystem::directory_iterator("/proc/self/fd"))
        highest = std::max(highest, std::stoi(e.path().filename().string()));
    rlimit tight = saved;
    tight.rlim_cur = static_cast<rlim_t>(highest + 1);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
    std::vector<int> filler;
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;)
        filler.push_back(fd);

    auto p = ip_params("239.1.2.4", 1);
    const int known = rdmamcast_join(c.get(), &p, nullptr, nullptr);
    const rdmamcast_error known_error = *rdmamcast_last_error(c.get());
    const std::string message = known_error.message;
    p.port = 7;
    const int unknown = rdmamcast_join(c.get(), &p, nullptr, nullptr);

    for (int fd : filler)
        ::close(fd);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);

    EXPECT_EQ(known, -EMFILE);
    EXPECT_EQ(known_error.code, RDMAMCAST_E_SYSTEM);
    EXPECT_NE(message.find("rxe0/1"), std::string::npos) << message;
    EXPECT_NE(message.find(std::strerror(EMFILE)), std::string::npos) << message;
    EXPECT_EQ(unknown, 0) << rdmamcast_last_error(c.get())->message;
    const auto fds = fds_of_joins(d);
    ASSERT_EQ(fds.size(), 2u) << "the failed join was never sent";
    EXPECT_TRUE(one_udp_socket(fds[0], AF_INET));
    EXPECT_TRUE(fds[1].empty());
}

// ---- list ----

TEST(ClientRoce, ListSaysEachPortsLinkLayer) {
    proto::ListResult l;
    l.ports.push_back(proto::PortGroups{"mlx5_0", 1, gid("fe80::1"), {}});
    l.ports.push_back(proto::PortGroups{"rxe0", 1, gid("::ffff:192.168.7.1"), {}, mcastd::LinkLayer::ethernet});
    FakeDaemon d([l](Session &s, const proto::RequestEnvelope &env) {
        if (!std::holds_alternative<proto::List>(env.request))
            return false;
        s.reply(env.id, l);
        return true;
    });
    auto c = connect_to(d);
    rdmamcast_group_list *list = nullptr;
    ASSERT_EQ(rdmamcast_list(c.get(), &list), 0);
    ASSERT_EQ(list->num_ports, 2u);
    EXPECT_STREQ(list->ports[0]->link_layer, "InfiniBand");
    EXPECT_STREQ(list->ports[1]->link_layer, "Ethernet");
    rdmamcast_list_free(list);

    rdmamcast::Client cpp(d.path());
    const auto ports = cpp.list();
    ASSERT_EQ(ports.size(), 2u);
    EXPECT_EQ(ports[0].link_layer, "InfiniBand");
    EXPECT_EQ(ports[1].link_layer, "Ethernet");
}

// ---- C++ ----

TEST(ClientRoceCpp, JoinParamsIpAndGidType) {
    FakeDaemon d(roce_joins());
    rdmamcast::Client client(d.path());
    auto m = client.join(
        rdmamcast::JoinParams("rxe0", 1).ip("239.1.2.3").gid_type(rdmamcast::GidType::roce_v2).qkey(0x01234567));
    const auto j = d.requests_of<proto::Join>().at(0);
    EXPECT_EQ(mcastd::format_ip(*j.ip), "239.1.2.3");
    EXPECT_EQ(j.gid_type, mcastd::GidType::roce_v2);
    EXPECT_TRUE(j.ifname.empty());
    EXPECT_TRUE(one_udp_socket(fds_of_joins(d).at(0), AF_INET));
    EXPECT_EQ(rdmamcast::link_layer(m.record()), rdmamcast::LinkLayer::ethernet);
    EXPECT_EQ(static_cast<rdmamcast::GidType>(m.record().gid_type), rdmamcast::GidType::roce_v2);
    EXPECT_EQ(rdmamcast::ip_to_string(m.record().ip), "239.1.2.3");
    EXPECT_EQ(m.netdev(), "eth7");

    // The last of mgid(), name(), create() and ip() wins.
    client.join(rdmamcast::JoinParams("rxe0", 1).ip("239.1.2.3").mgid("ff0e::1:2")).release();
    const auto by_mgid = d.requests_of<proto::Join>().at(1);
    EXPECT_FALSE(by_mgid.ip);
    EXPECT_EQ(by_mgid.request.mgid, gid("ff0e::1:2"));
    client.join(rdmamcast::JoinParams("rxe0", 1).name("job").ip("ff0e::9")).release();
    const auto by_ip = d.requests_of<proto::Join>().at(2);
    EXPECT_EQ(mcastd::format_ip(*by_ip.ip), "ff0e::9");
    EXPECT_TRUE(by_ip.request.name.empty());
    // The interface of this process's namespace, when named.
    client.join(rdmamcast::JoinParams("rxe0", 1).ip("239.1.2.4").ifname("eth0")).release();
    EXPECT_EQ(d.requests_of<proto::Join>().at(3).ifname, "eth0");

    try {
        client.join(rdmamcast::JoinParams("rxe0", 1).ip("10.0.0.1"));
        FAIL() << "a unicast address was joined";
    } catch (const rdmamcast::Error &e) {
        EXPECT_EQ(e.field(), "/ip");
    }
    EXPECT_EQ(rdmamcast::gid_type_name(rdmamcast::GidType::roce_v1), "roce_v1");
    EXPECT_EQ(rdmamcast::roce_gid_type_from_string("roce_v2"), rdmamcast::GidType::roce_v2);
    EXPECT_FALSE(rdmamcast::roce_gid_type_from_string("ib"));
    EXPECT_EQ(rdmamcast::link_layer_name(rdmamcast::LinkLayer::ethernet), "Ethernet");
    EXPECT_EQ(rdmamcast::ip_to_string(gid("ff0e::1:2").data()), "ff0e::1:2");
}

TEST(ClientRoceCpp, RestoredEventsNameTheRoceFields) {
    rdmamcast::RestoredEvent ev{1, {}, RDMAMCAST_FIELD_SGID_INDEX | RDMAMCAST_FIELD_NETDEV | RDMAMCAST_FIELD_MLID};
    const auto names = ev.changed_names();
    EXPECT_EQ(names, (std::vector<std::string_view>{"mlid", "sgid_index", "netdev"}));
}

} // namespace
