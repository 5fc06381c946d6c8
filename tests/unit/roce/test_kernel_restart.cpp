// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The kernel memberships across the daemon's restarts and crashes, over a model of the kernel
// and of the service manager's fd store (a copy of every stored descriptor): under a store
// they are never absent and the next instance adopts them as they are; a stored socket that
// is not the one the state names, a netdev that is another one now and a membership nobody
// holds any more are dropped; without a store those of the daemon's own namespace are made
// again, and another namespace's are named as lost.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fake_store.hpp"
#include "fake_syscalls.hpp"
#include "roce/kernel_memberships.hpp"

namespace mcastd::test {
namespace {

using roce::Adoption;
using roce::KeptSocket;
using roce::KernelMemberships;
using roce::MembershipKey;

constexpr std::uint64_t kHostNs = 4096, kContainerNs = 8192;

IpAddress v4(std::uint8_t c, std::uint8_t d) { return IpAddress::v4({239, 1, c, d}); }

class KernelRestart : public ::testing::Test {
protected:
    KernelRestart() {
        sys.own_netns = kHostNs;
        sys.netdev(kHostNs, "veth1", 7);
        sys.netdev(kContainerNs, "veth1", 3);
    }

    MembershipKey joined(KernelMemberships &k, std::uint64_t netns, const IpAddress &group) {
        const int fd = sys.socket(netns);
        auto out = k.acquire(fd, "veth1", group);
        sys.client_close(fd);
        if (const Error *e = std::get_if<Error>(&out))
            ADD_FAILURE() << e->message;
        return std::get<MembershipKey>(out);
    }
    // The restart state of `k`, each membership held by one member (its id from 1 up).
    static std::vector<KeptSocket> saved(const KernelMemberships &k) {
        std::vector<KeptSocket> out = k.kept();
        std::uint64_t id = 1;
        for (KeptSocket &s : out)
            for (auto &m : s.memberships)
                m.members = {id++};
        return out;
    }
    // A first instance (its sockets in `store`, if any) whose clients join `joins` (namespace,
    // group); its restart state is saved, then `after_save` runs (what the state misses), and it
    // ends as a restart or crash ends it. Returns the state.
    using Join = std::pair<std::uint64_t, IpAddress>;
    std::vector<KeptSocket> first_instance(FakeStore *store, const std::vector<Join> &joins,
                                           const std::function<void(KernelMemberships &,
                                                                    const std::vector<MembershipKey> &)> &after_save = {}) {
        KernelMemberships first(sys);
        if (store)
            first.set_store(store);
        std::vector<MembershipKey> keys;
        for (const auto &[netns, group] : joins)
            keys.push_back(joined(first, netns, group));
        std::vector<KeptSocket> state = saved(first);
        if (after_save)
            after_save(first, keys);
        first.hand_over();
        return state;
    }
    std::size_t total(const std::vector<KeptSocket> &s) {
        std::size_t n = 0;
        for (const auto &k : s)
            n += k.memberships.size();
        return n;
    }

    FakeSyscalls sys;
};

TEST_F(KernelRestart, UnderAStoreTheyAreNeverAbsentAndTheNextInstanceAdoptsThem) {
    FakeStore store(sys);
    std::vector<KeptSocket> state;
    {
        KernelMemberships first(sys);
        first.set_store(&store);
        for (std::uint8_t d = 0; d < 25; ++d) // two sockets: 20 and 5
            joined(first, kHostNs, v4(2, d));
        const MembershipKey c = joined(first, kContainerNs, v4(2, 0)); // a container's, on its socket
        ASSERT_EQ(first.sockets(), 3u);
        EXPECT_EQ(store.fds.size(), 3u) << "every kept socket is stored as it is kept";
        state = saved(first);
        ASSERT_EQ(state.size(), 3u);
        EXPECT_EQ(total(state), 26u);
        first.hand_over(); // SIGUSR2: the engine's teardown releases, the kernel must not hear of it
        EXPECT_FALSE(first.release(c));
    }
    EXPECT_EQ(sys.memberships(), 26u) << "the stored copies hold every membership: nothing was left";
    EXPECT_EQ(store.removed, 0u);
    const unsigned adds = sys.adds, drops = sys.drops;

    KernelMemberships next(sys);
    next.set_store(&store);
    const Adoption a = next.adopt(state, store.passed());
    EXPECT_EQ(a.adopted, 26u);
    EXPECT_EQ(a.remade, 0u);
    EXPECT_TRUE(a.dropped.empty()) << a.dropped.front();
    EXPECT_EQ(next.sockets(), 3u);
    EXPECT_EQ(next.memberships(), 26u);
    EXPECT_EQ(sys.adds - adds, 26u) << "each asked of the kernel again";
    EXPECT_EQ(sys.still_held, 26u) << "and each still held (EADDRINUSE): no new report";
    EXPECT_EQ(sys.drops, drops);
    EXPECT_EQ(store.fds.size(), 3u) << "adopted sockets are stored already, under the same ids";
    EXPECT_EQ(store.adoptions, 3u) << "and the store told so, so that they can be removed";
    EXPECT_EQ(sys.users(kContainerNs, 3, v4(2, 0)), 1u);
    EXPECT_EQ(next.holders(MembershipKey{kHostNs, 7, v4(2, 0)}), 1u);

    // New groups fill the adopted sockets' room first; a new socket's id follows the previous
    // instance's.
    for (std::uint8_t d = 0; d < 20; ++d)
        joined(next, kHostNs, v4(3, d));
    EXPECT_EQ(store.fds.size(), 4u);
    EXPECT_EQ(store.fds.rbegin()->first, 4u);

    // The members' leaves drop them as any leave does, and take the sockets out of the store.
    for (const KeptSocket &s : state)
        for (const auto &m : s.memberships)
            EXPECT_FALSE(next.release(MembershipKey{s.netns, m.ifindex, m.group}));
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 0)), 0u);
    EXPECT_EQ(sys.users(kContainerNs, 3, v4(2, 0)), 0u);
    std::vector<std::uint64_t> left;
    for (const auto &[id, fd] : store.fds)
        left.push_back(id);
    EXPECT_EQ(left, (std::vector<std::uint64_t>{2, 4})) << "the sockets of the new groups (15 went on socket 2)";
}

// A crash between a change and the state's next write: the stored socket no longer holds what
// the state says it holds. Adoption asks the kernel again, which makes it (and reports it).
TEST_F(KernelRestart, AMembershipTheStoredSocketLostAfterTheStateWasWrittenIsMadeAgain) {
    FakeStore store(sys);
    const std::vector<KeptSocket> state =
        first_instance(&store, {{kHostNs, v4(2, 1)}, {kHostNs, v4(2, 2)}},
                       [](KernelMemberships &first, const std::vector<MembershipKey> &keys) {
                           EXPECT_FALSE(first.release(keys[1])); // after the write: the state still names it
                       });
    ASSERT_EQ(sys.users(kHostNs, 7, v4(2, 2)), 0u);
    KernelMemberships next(sys);
    next.set_store(&store);
    const Adoption a = next.adopt(state, store.passed());
    EXPECT_EQ(a.adopted, 2u);
    EXPECT_TRUE(a.dropped.empty());
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 1)), 1u);
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 2)), 1u) << "held again, as the state says";
}

// A membership every holder had set aside (its group's source GID gone) is taken back set
// aside: the kernel is not asked to hold it (no report while nothing could be sent from the
// group's source), the socket keeps its slot, and making it again (reassert) holds it there.
// One that a holder still holds is asked again as any other; without a store a set-aside one
// cannot be made again later and is let go, its holder named.
TEST_F(KernelRestart, ASetAsideMembershipIsTakenBackSetAsideAndMadeAgainOnItsSocket) {
    FakeStore store(sys);
    const std::vector<KeptSocket> state =
        first_instance(&store, {{kHostNs, v4(2, 1)}, {kHostNs, v4(2, 2)}},
                       [](KernelMemberships &first, const std::vector<MembershipKey> &keys) {
                           first.suspend(keys[0]); // members 1: its source went, before the write
                       });
    ASSERT_EQ(sys.users(kHostNs, 7, v4(2, 1)), 0u);
    const unsigned adds = sys.adds;
    KernelMemberships next(sys);
    next.set_store(&store);
    const Adoption a = next.adopt(state, store.passed(), {1});
    EXPECT_EQ(a.adopted, 2u);
    EXPECT_TRUE(a.dropped.empty());
    EXPECT_EQ(sys.adds - adds, 1u) << "only the one still held is asked of the kernel";
    const MembershipKey aside{kHostNs, 7, v4(2, 1)};
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 1)), 0u) << "no report for a group with no source";
    EXPECT_EQ(next.holders(aside), 1u);
    EXPECT_EQ(next.active(aside), 0u);
    EXPECT_EQ(next.active(MembershipKey{kHostNs, 7, v4(2, 2)}), 1u);

    const auto back = next.reassert(aside, "veth1", true); // its source is back
    ASSERT_TRUE(std::holds_alternative<MembershipKey>(back));
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 1)), 1u) << "made again on the socket that kept its slot";
    EXPECT_EQ(next.active(aside), 1u);
    EXPECT_EQ(next.sockets(), 1u);

    // Without a store: the set-aside one has no socket to be made again on.
    KernelMemberships third(sys);
    const Adoption b = third.adopt(state, {}, {1});
    EXPECT_EQ(b.remade, 1u);
    ASSERT_EQ(b.lost.size(), 1u);
    EXPECT_NE(b.lost.at(1).find("set aside"), std::string::npos) << b.lost.at(1);
}

// A crash between a join and the state's next write: the new membership went onto a socket the
// store kept and the state names with its others. The kernel cannot list a socket's
// memberships, so without the line written before the kernel was asked (KeptAdding) it would
// stay there, unnamed, as long as the socket lives. With it the next instance drops it.
TEST_F(KernelRestart, AMembershipAddedAfterTheLastWriteIsDroppedByTheLineWrittenBeforeIt) {
    FakeStore store(sys);
    std::vector<roce::KeptAdding> adding;
    const std::vector<KeptSocket> state =
        first_instance(&store, {{kHostNs, v4(2, 1)}}, [&](KernelMemberships &first, const std::vector<MembershipKey> &) {
            first.set_before_add([&](const roce::KeptAdding &a) {
                EXPECT_EQ(sys.users(kHostNs, 7, a.group), 0u) << "written before the kernel is asked";
                adding.push_back(a);
            });
            joined(first, kHostNs, v4(2, 2)); // after the write: on the stored socket, unnamed
        });
    ASSERT_EQ(adding, (std::vector<roce::KeptAdding>{{1, v4(2, 2), 7}}));
    ASSERT_EQ(sys.users(kHostNs, 7, v4(2, 2)), 1u) << "the crash left it on the stored socket";

    KernelMemberships next(sys);
    next.set_store(&store);
    const Adoption a = next.adopt(state, store.passed(), {}, adding);
    EXPECT_EQ(a.adopted, 1u);
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 2)), 0u) << "dropped: the kernel sends the leave";
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 1)), 1u) << "the named one stays";
    ASSERT_EQ(a.dropped.size(), 1u);
    EXPECT_EQ(a.dropped[0],
              "239.1.2.2 on interface 7 (stored socket 1) dropped: it was added after the restart state was last written");
    EXPECT_TRUE(a.lost.empty()) << "nobody the state names held it";
}

TEST_F(KernelRestart, AStopTakesEverySocketOutOfTheStoreAndTheMembershipsEnd) {
    FakeStore store(sys);
    {
        KernelMemberships k(sys);
        k.set_store(&store);
        joined(k, kHostNs, v4(2, 3));
        joined(k, kContainerNs, v4(2, 3));
        EXPECT_EQ(store.fds.size(), 2u);
    }
    EXPECT_EQ(store.removed, 2u) << "out of the store before being closed";
    EXPECT_EQ(sys.memberships(), 0u) << "no stored copy keeps them";
}

TEST_F(KernelRestart, WhatIsNotAsTheStateSaysIsDroppedAndNamed) {
    FakeStore store(sys);
    std::vector<KeptSocket> state = first_instance(
        &store, {{kHostNs, v4(2, 1)}, {kHostNs, v4(2, 2)}, {kHostNs, v4(2, 3)}, {kContainerNs, v4(2, 1)}});
    ASSERT_EQ(state.size(), 2u);
    KeptSocket &host = state[0].netns == kHostNs ? state[0] : state[1];
    KeptSocket &container = state[0].netns == kHostNs ? state[1] : state[0];
    host.memberships[1].members.clear(); // its holder's session was not taken back
    container.netns = 1234;              // the state says another namespace than the socket's
    auto passed = store.passed();
    const int stray = sys.socket(kHostNs); // a stored socket the state does not name
    passed[99] = stray;
    store.fds[99] = sys.duplicate(stray);
    sys.netdev(kHostNs, "veth1", 17); // veth1 is another netdev now... for the groups checked after this
    sys.netdev(kHostNs, "veth-old", 7); // (the old index stays, under another name)

    KernelMemberships next(sys);
    next.set_store(&store);
    const Adoption a = next.adopt(state, passed);
    EXPECT_EQ(a.adopted, 0u);
    std::vector<std::string> want = {
        "239.1.2.1 on veth1 (stored socket 1) dropped: veth1 is another netdev now (index 17, not 7)",
        "239.1.2.2 on veth1 (stored socket 1) dropped: nobody holds it now",
        "239.1.2.3 on veth1 (stored socket 1) dropped: veth1 is another netdev now (index 17, not 7)",
        "stored socket 2 closed: it is not the socket the state names (another network namespace or family); its 1 "
        "membership(s) end",
        "stored socket 99 closed: the restart state does not say what it holds"};
    EXPECT_EQ(a.dropped, want);
    // Each holder of a membership let go is named with its sentence, for the engine to release.
    const std::map<std::uint64_t, std::string> lost = {{host.memberships[0].members.at(0), want[0]},
                                                       {host.memberships[2].members.at(0), want[2]},
                                                       {container.memberships[0].members.at(0), want[3]}};
    EXPECT_EQ(a.lost, lost);
    EXPECT_EQ(sys.memberships(), 0u) << "every one dropped: the kernel sends the leaves";
    EXPECT_EQ(next.sockets(), 0u);
    EXPECT_TRUE(store.fds.empty()) << "and nothing is left in the store";
    ::close(stray);
}

TEST_F(KernelRestart, WithoutAStoreTheOwnNamespacesAreMadeAgainAndTheOthersNamed) {
    std::vector<Join> joins;
    for (std::uint8_t d = 0; d < 22; ++d)
        joins.emplace_back(kHostNs, v4(2, d));
    joins.emplace_back(kContainerNs, v4(2, 0));
    const std::vector<KeptSocket> state = first_instance(nullptr, joins);
    EXPECT_EQ(sys.memberships(), 0u) << "a crash without a store: gone with the process";

    KernelMemberships next(sys);
    const Adoption a = next.adopt(state, {});
    EXPECT_EQ(a.adopted, 0u);
    EXPECT_EQ(a.remade, 22u);
    ASSERT_EQ(a.dropped.size(), 1u);
    EXPECT_EQ(a.dropped[0], "239.1.2.0 on veth1 in network namespace 8192 is not made again: its socket was not kept "
                            "(no fd store) and the daemon has none of that namespace");
    ASSERT_EQ(a.lost.size(), 1u) << "its holder";
    const auto container =
        std::find_if(state.begin(), state.end(), [](const KeptSocket &k) { return k.netns == kContainerNs; });
    ASSERT_NE(container, state.end());
    EXPECT_EQ(a.lost.begin()->first, container->memberships.at(0).members.at(0));
    EXPECT_EQ(a.lost.begin()->second, a.dropped[0]);
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 21)), 1u);
    EXPECT_EQ(sys.users(kContainerNs, 3, v4(2, 0)), 0u);
    EXPECT_EQ(next.sockets(), 2u) << "packed on the daemon's own sockets";
    EXPECT_EQ(next.holders(MembershipKey{kHostNs, 7, v4(2, 5)}), 1u);
    EXPECT_FALSE(next.release(MembershipKey{kHostNs, 7, v4(2, 5)}));
    EXPECT_EQ(sys.users(kHostNs, 7, v4(2, 5)), 0u);
}

TEST_F(KernelRestart, WithoutAStoreANetdevThatMovedIsNotMadeAgainOnTheNewOne) {
    const std::vector<KeptSocket> state = first_instance(nullptr, {{kHostNs, v4(2, 1)}});
    sys.netdev(kHostNs, "veth1", 9);
    KernelMemberships next(sys);
    const Adoption a = next.adopt(state, {});
    EXPECT_EQ(a.remade, 0u);
    ASSERT_EQ(a.dropped.size(), 1u);
    EXPECT_EQ(a.dropped[0], "239.1.2.1 on veth1 is not made again: veth1 is not the netdev it was (index 7)");
    EXPECT_EQ(a.lost, (std::map<std::uint64_t, std::string>{{1, a.dropped[0]}}));
    EXPECT_EQ(sys.memberships(), 0u);
    EXPECT_EQ(sys.open_fds(), 0u) << "the socket made for it is closed";
}

} // namespace
} // namespace mcastd::test
