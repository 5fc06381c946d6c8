// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The host's kernel memberships of a RoCE port's members over a model of the kernel: one per
// (network namespace, netdev, group) however many members share it, one in each namespace,
// groups packed onto as few sockets as the per-socket limit allows, and every refusal named.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "fake_syscalls.hpp"
#include "roce/kernel_memberships.hpp"

namespace mcastd::test {
namespace {

using roce::KernelMemberships;
using roce::MembershipKey;

constexpr std::uint64_t kHostNs = 4096, kContainerNs = 8192;

IpAddress v4(std::uint8_t c, std::uint8_t d) { return IpAddress::v4({239, 1, c, d}); }
IpAddress v6(const char *text) { return *parse_ip(text); }

class Kernel : public ::testing::Test {
protected:
    Kernel() {
        sys.netdev(kHostNs, "veth1", 7);
        sys.netdev(kContainerNs, "veth1", 3); // the same name, another index, in the container
    }

    // A client in `netns` hands over a socket for one join, and closes its copy afterwards as
    // the RoceJoin does: the key, or the error.
    std::variant<MembershipKey, Error> join(std::uint64_t netns, const IpAddress &group, int family = AF_INET,
                                            const std::string &netdev = "veth1") {
        const int fd = sys.socket(netns, family);
        auto out = kernel.acquire(fd, netdev, group);
        sys.client_close(fd);
        return out;
    }
    MembershipKey joined(std::uint64_t netns, const IpAddress &group, int family = AF_INET) {
        auto out = join(netns, group, family);
        if (const Error *e = std::get_if<Error>(&out))
            ADD_FAILURE() << e->message;
        return std::get<MembershipKey>(out);
    }
    static std::string refusal(const std::variant<MembershipKey, Error> &out) {
        const Error *e = std::get_if<Error>(&out);
        return e ? e->message : "(held)";
    }

    FakeSyscalls sys;
    KernelMemberships kernel{sys};
};

TEST_F(Kernel, ManyMembersInOneNamespaceCostOneMembership) {
    const MembershipKey a = joined(kHostNs, v4(2, 3));
    const MembershipKey b = joined(kHostNs, v4(2, 3));
    const MembershipKey c = joined(kHostNs, v4(2, 3));
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, c);
    EXPECT_EQ(a.netns, kHostNs);
    EXPECT_EQ(a.ifindex, 7) << "the netdev's index in the client's namespace";
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 1u) << "Users 1 in /proc/net/igmp";
    EXPECT_EQ(sys.adds, 1u) << "one IP_ADD_MEMBERSHIP";
    EXPECT_EQ(kernel.holders(a), 3u);
    EXPECT_EQ(kernel.sockets(), 1u) << "one socket kept; the other two were closed by their clients";
    EXPECT_EQ(sys.open_fds(), 1u);

    EXPECT_FALSE(kernel.release(a));
    EXPECT_FALSE(kernel.release(a));
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 1u);
    EXPECT_EQ(sys.drops, 0u);
    EXPECT_FALSE(kernel.release(a)); // the last one
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 0u) << "dropped: the kernel sends the leave";
    EXPECT_EQ(sys.drops, 1u);
    EXPECT_EQ(kernel.memberships(), 0u);
    EXPECT_EQ(kernel.sockets(), 0u) << "a socket that holds nothing is closed";
    EXPECT_EQ(sys.open_fds(), 0u);
}

TEST_F(Kernel, EachNamespaceHasItsOwn) {
    const MembershipKey host = joined(kHostNs, v4(2, 3));
    const MembershipKey container = joined(kContainerNs, v4(2, 3));
    joined(kContainerNs, v4(2, 3));
    EXPECT_NE(host, container);
    EXPECT_EQ(container.ifindex, 3) << "looked up on the container's socket";
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 1u);
    EXPECT_EQ(sys.users(kContainerNs, 3, v4(2, 3)), 1u);
    EXPECT_EQ(kernel.memberships(), 2u);
    EXPECT_EQ(kernel.sockets(), 2u) << "a socket joins in the namespace it was made in";
    kernel.release(host);
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 0u);
    EXPECT_EQ(sys.users(kContainerNs, 3, v4(2, 3)), 1u) << "the container's stays";
    kernel.release(container);
    EXPECT_EQ(sys.users(kContainerNs, 3, v4(2, 3)), 1u) << "it has another holder";
    kernel.release(container);
    EXPECT_EQ(sys.memberships(), 0u);
    EXPECT_EQ(sys.open_fds(), 0u);
}

TEST_F(Kernel, GroupsArePackedTwentyToASocket) {
    std::vector<MembershipKey> keys;
    for (std::uint8_t i = 0; i < 45; ++i)
        keys.push_back(joined(kHostNs, v4(0, i)));
    EXPECT_EQ(sys.memberships(), 45u);
    EXPECT_EQ(kernel.sockets(), 3u) << "45 groups on ceil(45 / 20) sockets";
    EXPECT_EQ(sys.open_fds(), 3u) << "every other handed socket closed at once";
    EXPECT_EQ(sys.keeps, 3u);

    // A socket that lost one gets the next group: no new socket while one has room.
    kernel.release(keys[5]);
    joined(kHostNs, v4(1, 0));
    EXPECT_EQ(kernel.sockets(), 3u);
    EXPECT_EQ(sys.memberships(), 45u);

    for (std::size_t i = 0; i < keys.size(); ++i)
        if (i != 5)
            kernel.release(keys[i]);
    EXPECT_EQ(kernel.sockets(), 1u) << "the emptied sockets closed; the one holding 239.1.1.0 stays";
    kernel.release(MembershipKey{kHostNs, 7, v4(1, 0)});
    EXPECT_EQ(sys.open_fds(), 0u);
    EXPECT_EQ(sys.memberships(), 0u);
}

TEST_F(Kernel, ThePoolsAreOnePerNamespaceAndFamily) {
    for (std::uint8_t i = 0; i < 3; ++i) {
        joined(kHostNs, v4(0, i));
        joined(kContainerNs, v4(0, i));
    }
    joined(kHostNs, v6("ff0e::1:2"), AF_INET6);
    EXPECT_EQ(kernel.sockets(), 3u) << "host IPv4, container IPv4, host IPv6";
    // IPv6 has no per-socket count: the option memory runs out (ENOMEM) instead.
    sys.max_v6 = 2;
    joined(kHostNs, v6("ff0e::1:3"), AF_INET6);
    joined(kHostNs, v6("ff0e::1:4"), AF_INET6);
    EXPECT_EQ(kernel.sockets(), 4u);
    EXPECT_EQ(sys.users(kHostNs, 7, v6("ff0e::1:4")), 1u);
}

TEST_F(Kernel, ASocketOfTheWrongKindIsRefused) {
    EXPECT_EQ(refusal(join(kHostNs, v4(2, 3), AF_INET6)),
              "the socket handed with the join must be a UDP socket of the group's family (AF_INET) made in the "
              "client's network namespace");
    const int tcp = sys.socket(kHostNs, AF_INET, SOCK_STREAM);
    auto out = kernel.acquire(tcp, "veth1", v4(2, 3));
    ASSERT_TRUE(std::holds_alternative<Error>(out));
    EXPECT_EQ(std::get<Error>(out).code, Errc::invalid_argument);
    sys.client_close(tcp);
    auto closed = kernel.acquire(12345, "veth1", v4(2, 3));
    EXPECT_EQ(refusal(closed), "the socket handed with the join: EBADF (Bad file descriptor)");
    EXPECT_EQ(sys.adds, 0u);
    EXPECT_EQ(sys.open_fds(), 0u);
}

TEST_F(Kernel, EveryRefusalNamesTheCallAndTheErrno) {
    sys.cookie_errno = ENOPROTOOPT;
    auto cookie = join(kHostNs, v4(2, 3));
    EXPECT_EQ(refusal(cookie), "SO_NETNS_COOKIE: ENOPROTOOPT (Protocol not available)");
    EXPECT_EQ(std::get<Error>(cookie).code, Errc::internal);
    sys.cookie_errno.reset();

    auto no_dev = join(kHostNs, v4(2, 3), AF_INET, "eth9");
    EXPECT_EQ(refusal(no_dev), "SIOCGIFINDEX eth9 in the client's network namespace: ENODEV (No such device)");
    EXPECT_EQ(std::get<Error>(no_dev).code, Errc::invalid_argument);
    // The caller's hint goes with a missing interface only.
    const int fd = sys.socket(kHostNs);
    EXPECT_EQ(refusal(kernel.acquire(fd, "eth9", v4(2, 3), "; name it")),
              "SIOCGIFINDEX eth9 in the client's network namespace: ENODEV (No such device); name it");
    sys.cookie_errno = ENOPROTOOPT;
    EXPECT_EQ(refusal(kernel.acquire(fd, "eth9", v4(2, 3), "; name it")),
              "SO_NETNS_COOKIE: ENOPROTOOPT (Protocol not available)");
    sys.cookie_errno.reset();
    sys.client_close(fd);

    sys.add_errno = EADDRNOTAVAIL;
    auto add = join(kHostNs, v4(2, 3));
    EXPECT_EQ(refusal(add), "IP_ADD_MEMBERSHIP 239.1.2.3 on veth1: EADDRNOTAVAIL (Cannot assign requested address)");
    sys.max_v4 = 0;
    auto full = join(kHostNs, v4(2, 3));
    EXPECT_EQ(refusal(full), "IP_ADD_MEMBERSHIP 239.1.2.3 on veth1: ENOBUFS (No buffer space available) on a "
                             "socket holding nothing (net.ipv4.igmp_max_memberships)");
    EXPECT_EQ(std::get<Error>(full).code, Errc::limit);
    EXPECT_EQ(kernel.memberships(), 0u);
    EXPECT_EQ(kernel.sockets(), 0u) << "a copy kept for a refused membership is closed";
    EXPECT_EQ(sys.open_fds(), 0u);
}

TEST_F(Kernel, AnErrorOnAKeptSocketThatIsNotFullFailsTheJoin) {
    joined(kHostNs, v4(2, 3));
    sys.add_errno = ENOMEM;
    EXPECT_EQ(refusal(join(kHostNs, v4(2, 4))),
              "IP_ADD_MEMBERSHIP 239.1.2.4 on veth1: ENOMEM (Cannot allocate memory)");
    EXPECT_EQ(kernel.sockets(), 1u) << "not taken for full, and the handed socket not kept";
    joined(kHostNs, v4(2, 4));
    EXPECT_EQ(kernel.sockets(), 1u);
}

TEST_F(Kernel, AReassertChangesNothingWhileTheKernelHoldsIt) {
    const MembershipKey k = joined(kHostNs, v4(2, 3));
    joined(kHostNs, v4(2, 3));
    auto again = kernel.reassert(k, "veth1");
    ASSERT_TRUE(std::holds_alternative<MembershipKey>(again)) << refusal(again);
    EXPECT_EQ(std::get<MembershipKey>(again), k);
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 1u) << "EADDRINUSE: still held";
    EXPECT_EQ(kernel.holders(k), 2u);
}

TEST_F(Kernel, AReassertFollowsANetdevThatCameBackUnderAnotherIndex) {
    const MembershipKey k = joined(kHostNs, v4(2, 3));
    joined(kHostNs, v4(2, 3));
    sys.netdev(kHostNs, "veth1", 9); // deleted and made again: the kernel's memberships on 7 are gone
    auto first = kernel.reassert(k, "veth1");
    ASSERT_TRUE(std::holds_alternative<MembershipKey>(first)) << refusal(first);
    const MembershipKey moved = std::get<MembershipKey>(first);
    EXPECT_EQ(moved.ifindex, 9);
    EXPECT_EQ(sys.users(kHostNs, 9, v4(2, 3)), 1u);
    EXPECT_EQ(kernel.holders(k), 1u) << "one holder moved";
    EXPECT_EQ(std::get<MembershipKey>(kernel.reassert(k, "veth1")), moved);
    EXPECT_EQ(kernel.holders(moved), 2u);
    EXPECT_EQ(kernel.holders(k), 0u);
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 0u) << "the old index's dropped";
    EXPECT_EQ(kernel.sockets(), 1u);

    sys.remove_netdev(kHostNs, "veth1");
    EXPECT_EQ(refusal(kernel.reassert(moved, "veth1")),
              "SIOCGIFINDEX veth1 in the client's network namespace: ENODEV (No such device)");
}

// A source GID gone: each holder sets its membership aside; the kernel drops it with the last
// one, and the socket stays to make it again when the source is back.
TEST_F(Kernel, SuspendedHoldersDropTheMembershipOnceAndAReassertMakesItAgain) {
    const MembershipKey k = joined(kHostNs, v4(2, 3));
    joined(kHostNs, v4(2, 3));
    kernel.suspend(k);
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 1u) << "one holder still active";
    EXPECT_EQ(kernel.active(k), 1u);
    kernel.suspend(k);
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 0u) << "the leave goes out";
    EXPECT_EQ(kernel.holders(k), 2u);
    EXPECT_EQ(kernel.sockets(), 1u) << "kept for making it again";
    kernel.suspend(k); // one too many: nothing
    EXPECT_EQ(kernel.active(k), 0u);

    ASSERT_EQ(std::get<MembershipKey>(kernel.reassert(k, "veth1", true)), k);
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 1u) << "reported again";
    EXPECT_EQ(kernel.active(k), 1u);
    // The other holder leaves while set aside: no drop, the membership is the first one's.
    const unsigned drops = sys.drops;
    EXPECT_FALSE(kernel.release(k, true));
    EXPECT_EQ(sys.drops, drops);
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 1u);
    EXPECT_FALSE(kernel.release(k));
    EXPECT_EQ(sys.memberships(), 0u);
    EXPECT_EQ(kernel.sockets(), 0u);
}

TEST_F(Kernel, AJoinOfAMembershipEveryHolderSetAsideMakesItAgain) {
    const MembershipKey k = joined(kHostNs, v4(2, 3));
    kernel.suspend(k);
    ASSERT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 0u);
    EXPECT_EQ(joined(kHostNs, v4(2, 3)), k);
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 1u) << "another group of the same IP group, its source still there";
    // The set-aside holder leaves: the new one keeps it.
    EXPECT_FALSE(kernel.release(k, true));
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 3)), 1u);
    EXPECT_FALSE(kernel.release(k));
    EXPECT_EQ(sys.memberships(), 0u);
}

TEST_F(Kernel, TheLastSocketsCloseWithTheDaemon) {
    {
        KernelMemberships own(sys);
        for (std::uint8_t i = 0; i < 25; ++i) {
            const int fd = sys.socket(kHostNs);
            ASSERT_TRUE(std::holds_alternative<MembershipKey>(own.acquire(fd, "veth1", v4(0, i))));
            sys.client_close(fd);
        }
        EXPECT_EQ(sys.open_fds(), 2u);
    }
    EXPECT_EQ(sys.open_fds(), 0u);
    EXPECT_EQ(sys.memberships(), 0u);
}

} // namespace
} // namespace mcastd::test
