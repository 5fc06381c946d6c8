// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// An Ethernet (RoCE) port beside an InfiniBand one in one engine: its memberships are made by a
// MembershipBackend (a recording fake), with the same per-bit counts, sharing and events as
// at the SA. The backend makes each group once, hears of every member as it joins and as its
// membership ends (leave, client gone, lost), and of every member again after a re-join; the
// last member's end drops the group; neither port's work reaches the other's fabric.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include "engine_fixture.hpp"
#include "fakes/fake_ethernet_backend.hpp"

namespace mcastd::test {
namespace {

using Kind = MembershipEvent::Kind;

const Gid kG = *parse_gid("ff0e::ffff:ef01:203"); // 239.1.2.3 as RoCE v1 maps it
const Gid kH = *parse_gid("ff0e::ffff:ef01:204");

class EngineBackend : public EngineFixture {
protected:
    EngineBackend() {
        engine.set_backend(LinkLayer::ethernet, eth);
        engine.set_observer([this](const EngineNote &n) { notes.push_back(n); });
        eth_port = serve_port(ports, engine, port_attributes("rxe0", 1, kPrefix, 0x200001, "Ethernet"));
        third = engine.add_client(ClientInfo{300, 1002, 1002, "third"});
    }

    static JoinRequest on_eth(const Gid &mgid, std::uint8_t bits) { return request(mgid, bits, "rxe0", 1); }

    // Runs the SA, the backend and the clock until nothing is left to do.
    void run_all() {
        for (int i = 0; i < 10000; ++i) {
            sa.run();
            eth.run();
            if (engine.idle() && sa.pending() == 0 && eth.pending() == 0)
                return;
            if (sa.pending() == 0 && eth.pending() == 0 && !timers.step())
                return;
        }
        FAIL() << "engine did not settle";
    }

    const FakeEthernetBackend::Group &at(const Gid &mgid) const { return eth.at(eth_port, mgid); }

    bool told(MembershipId id, Kind kind) const {
        for (const auto &e : sink.events)
            if (e.id == id && e.ev.kind == kind)
                return true;
        return false;
    }

    FakeEthernetBackend eth;
    std::vector<EngineNote> notes;
    PortIndex eth_port = 0;
    ClientId third = 0;
};

TEST_F(EngineBackend, ThreeClientsShareOneFabricMembership) {
    std::vector<std::shared_ptr<JoinOutcome>> outs;
    for (ClientId c : {client, other, third})
        outs.push_back(join(c, on_eth(kG, join::full)));
    run_all();
    for (const auto &o : outs) {
        ASSERT_TRUE(o->ok()) << o->message();
        EXPECT_EQ(o->result.record.mgid, kG);
        EXPECT_EQ(o->result.record.mlid, 0) << "no MLID on Ethernet";
        EXPECT_EQ(o->result.record.qkey, 0x01234567u) << "the backend's record";
        EXPECT_EQ(o->result.record.pkey, 0xffff);
        EXPECT_EQ(o->result.record.port_gid, ports.gid(eth_port));
        EXPECT_EQ(o->result.record.join_state, join::full);
    }
    EXPECT_EQ(at(kG).makes, 1u) << "one make for three members";
    ASSERT_EQ(eth.added.size(), 3u) << "each member added";
    for (const FabricMember &m : eth.added) {
        EXPECT_EQ(m.port, eth_port);
        EXPECT_EQ(m.mgid, kG);
        EXPECT_EQ(m.bits, join::full);
        EXPECT_FALSE(m.rejoin);
    }
    EXPECT_NE(eth.added[0].id, eth.added[1].id);
    EXPECT_EQ(at(kG).joined, 1u);
    EXPECT_EQ(eth.memberships(), 1u);
    ASSERT_EQ(eth.made.size(), 1u);
    EXPECT_EQ(eth.made[0].bits, join::full);
    EXPECT_EQ(eth.made[0].held, 0);
    EXPECT_FALSE(eth.made[0].rejoin);
    EXPECT_TRUE(sa.log.empty()) << "nothing reaches the SA";
    const GroupView g = engine.groups().at(0);
    EXPECT_EQ(g.port, eth_port);
    EXPECT_EQ(g.counts[0], 3u);
    EXPECT_EQ(g.held, join::full);
}

// Notes about a group on an Ethernet port say where it is sent from (monitor, the journal).
TEST_F(EngineBackend, NotesOfARoceGroupCarryItsSource) {
    eth.source = RoceSource{GidType::roce_v1, 4, "veth1"};
    MembershipId a = 0;
    join(client, on_eth(kG, join::full), &a);
    run_all();
    engine.leave(client, a);
    run_all();
    std::set<EngineNote::Kind> seen;
    for (const EngineNote &n : notes) {
        EXPECT_EQ(n.roce, eth.source) << describe(n, "rxe0/1");
        seen.insert(n.kind);
    }
    EXPECT_EQ(seen, (std::set<EngineNote::Kind>{EngineNote::Kind::joined, EngineNote::Kind::left,
                                                 EngineNote::Kind::deleted}));
    notes.clear();
    join(client, request(*parse_gid("ff15::1"), join::full));
    run_all();
    ASSERT_FALSE(notes.empty());
    EXPECT_FALSE(notes.front().roce) << "an InfiniBand group's notes have none";
}

TEST_F(EngineBackend, TheLastLeaveOrClientRemovalDropsIt) {
    MembershipId a = 0;
    join(client, on_eth(kG, join::full), &a);
    join(other, on_eth(kG, join::full));
    join(third, on_eth(kG, join::full));
    run_all();
    ASSERT_EQ(eth.memberships(), 1u);
    EXPECT_FALSE(engine.leave(client, a));
    ASSERT_EQ(eth.removed.size(), 1u) << "the leave ends its member";
    EXPECT_EQ(eth.removed[0].id, a);
    engine.remove_client(other);
    run_all();
    EXPECT_EQ(eth.removed.size(), 2u) << "so does its client's end";
    EXPECT_TRUE(eth.dropped.empty()) << "a member is left";
    EXPECT_EQ(eth.memberships(), 1u);
    engine.remove_client(third); // the last one goes, as a killed process's connection does
    run_all();
    EXPECT_EQ(eth.removed.size(), 3u);
    EXPECT_TRUE(eth.members.empty());
    ASSERT_EQ(eth.dropped.size(), 1u);
    EXPECT_EQ(eth.dropped[0].bits, join::full);
    EXPECT_EQ(eth.dropped[0].kept, 0);
    EXPECT_EQ(at(kG).left, 1u);
    EXPECT_EQ(eth.memberships(), 0u);
    EXPECT_TRUE(engine.groups().empty());
}

TEST_F(EngineBackend, SendOnlyHoldsNone) {
    MembershipId so = 0, full = 0;
    auto s = join(client, on_eth(kG, join::send_only_non_member), &so);
    run_all();
    ASSERT_TRUE(s->ok()) << s->message();
    EXPECT_EQ(s->result.record.qkey, 0x01234567u) << "a send-only member gets the record";
    EXPECT_EQ(at(kG).makes, 1u);
    EXPECT_EQ(eth.memberships(), 0u) << "no report for a sender";
    join(other, on_eth(kG, join::send_only_full));
    run_all();
    EXPECT_EQ(eth.memberships(), 0u);
    join(third, on_eth(kG, join::full), &full);
    run_all();
    EXPECT_EQ(eth.memberships(), 1u) << "a full member holds it";
    EXPECT_FALSE(engine.leave(third, full));
    run_all();
    EXPECT_EQ(eth.memberships(), 0u) << "the senders hold none";
    EXPECT_EQ(at(kG).bits & (join::send_only_non_member | join::send_only_full),
              join::send_only_non_member | join::send_only_full);
}

TEST_F(EngineBackend, EachBitIsCountedOnItsOwn) {
    MembershipId f1 = 0, f2 = 0, n = 0;
    join(client, on_eth(kG, join::full), &f1);
    join(other, on_eth(kG, join::non_member), &n);
    join(third, on_eth(kG, join::full), &f2);
    run_all();
    ASSERT_EQ(eth.made.size(), 2u) << "a make per bit first needed";
    EXPECT_EQ(eth.made[0].bits, join::full);
    EXPECT_EQ(eth.made[1].bits, join::non_member);
    EXPECT_EQ(eth.made[1].held, join::full);
    EXPECT_EQ(at(kG).joined, 1u) << "one kernel membership for both bits";
    EXPECT_FALSE(engine.leave(client, f1));
    run_all();
    EXPECT_TRUE(eth.dropped.empty()) << "full has another member";
    EXPECT_FALSE(engine.leave(third, f2));
    run_all();
    ASSERT_EQ(eth.dropped.size(), 1u);
    EXPECT_EQ(eth.dropped[0].bits, join::full);
    EXPECT_EQ(eth.dropped[0].kept, join::non_member);
    EXPECT_EQ(eth.memberships(), 1u) << "the non-member still holds it";
    EXPECT_FALSE(engine.leave(other, n));
    run_all();
    ASSERT_EQ(eth.dropped.size(), 2u);
    EXPECT_EQ(eth.dropped[1].bits, join::non_member);
    EXPECT_EQ(eth.memberships(), 0u);
}

TEST_F(EngineBackend, AnInfiniBandPortAndAnEthernetPortDoNotInterfere) {
    // The same MGID on both: two groups, each at its own fabric.
    MembershipId ib = 0, en = 0;
    ASSERT_TRUE((join(client, request(kG, join::full), &ib), true));
    join(client, on_eth(kG, join::full), &en);
    run_all();
    EXPECT_EQ(sa_bits(kG), join::full);
    EXPECT_EQ(eth.memberships(), 1u);
    for (const SaRequest &r : sa.log)
        EXPECT_EQ(r.port, port) << "the SA sees only the InfiniBand port";
    ASSERT_EQ(eth.made.size(), 1u);
    EXPECT_EQ(eth.made[0].port, eth_port);
    EXPECT_EQ(engine.groups().size(), 2u);

    // The audit and a re-join of the InfiniBand port stay there.
    const std::size_t sa_before = sa.log.size();
    engine.audit_next(eth_port);
    run_all();
    EXPECT_EQ(sa.log.size(), sa_before) << "nothing to audit on Ethernet";
    sa.state = FakeSaState{};
    engine.invalidate_port(port, "SM restarted");
    run_all();
    EXPECT_EQ(sa_bits(kG), join::full);
    EXPECT_EQ(eth.made.size(), 1u) << "the Ethernet port is not re-joined";
    ASSERT_EQ(sink.events.size(), 1u);
    EXPECT_EQ(sink.events[0].id, ib);

    // Leaving the Ethernet group deletes nothing at the SA.
    const std::size_t sa_now = sa.log.size();
    EXPECT_FALSE(engine.leave(client, en));
    run_all();
    EXPECT_EQ(sa.log.size(), sa_now);
    EXPECT_EQ(eth.memberships(), 0u);
    EXPECT_EQ(sa_bits(kG), join::full);
}

TEST_F(EngineBackend, TheJoinsAttachmentReachesTheBackendAndTheEngineLetsGoOfIt) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    ::close(fds[1]);
    const IpAddress group = IpAddress::v4({239, 1, 2, 3});
    JoinRequest r = on_eth(kG, join::full);
    r.roce = std::make_shared<const RoceJoin>(group, GidType::roce_v2, fds[0]);
    const RoceJoin *attachment = r.roce.get();
    MembershipId id = 0;
    auto out = join(client, r, &id);
    r = {}; // the session's copy goes
    run_all();
    ASSERT_TRUE(out->ok()) << out->message();
    ASSERT_EQ(eth.made.size(), 1u);
    ASSERT_EQ(eth.made[0].roce.get(), attachment) << "carried untouched";
    EXPECT_EQ(eth.made[0].roce->group, group);
    EXPECT_EQ(eth.made[0].roce->gid_type, GidType::roce_v2);
    EXPECT_EQ(eth.made[0].roce->fd, fds[0]);
    ASSERT_EQ(eth.added.size(), 1u);
    EXPECT_EQ(eth.added[0].roce.get(), attachment) << "the member gets it too";
    // The backend keeps what it needs (a copy of the socket) and lets go of what it was
    // handed: the engine does not hold the client's descriptor for the membership's life.
    eth.made.clear();
    eth.added.clear();
    eth.members.at(id).roce.reset();
    EXPECT_EQ(::fcntl(fds[0], F_GETFD), -1) << "closed while the membership lasts";
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(eth.memberships(), 1u);
    EXPECT_FALSE(engine.leave(client, id));
    run_all();
    ASSERT_EQ(eth.removed.size(), 1u);
    EXPECT_EQ(eth.removed[0].roce, nullptr);
}

TEST_F(EngineBackend, ARoceJoinOwnsItsFdAndMovesIt) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    ::close(fds[1]);
    {
        RoceJoin a(std::nullopt, std::nullopt, fds[0]);
        RoceJoin b(std::move(a));
        EXPECT_EQ(a.fd, -1);
        EXPECT_EQ(b.fd, fds[0]);
        RoceJoin c;
        c = std::move(b);
        EXPECT_EQ(b.fd, -1);
        EXPECT_NE(::fcntl(fds[0], F_GETFD), -1);
    }
    EXPECT_EQ(::fcntl(fds[0], F_GETFD), -1);
}

TEST_F(EngineBackend, AnAnswerLaterKeepsJoinsWaitingAndCoalesced) {
    eth.answer_later = true;
    auto a = join(client, on_eth(kG, join::full));
    auto b = join(other, on_eth(kG, join::full));
    sa.run();
    EXPECT_EQ(a->calls, 0);
    EXPECT_EQ(eth.made.size(), 1u) << "one operation per group in flight";
    eth.run();
    EXPECT_TRUE(a->ok());
    EXPECT_TRUE(b->ok());
    EXPECT_EQ(eth.made.size(), 1u);
    EXPECT_TRUE(engine.idle());
}

TEST_F(EngineBackend, ARefusedMakeFailsTheJoinWithTheBackendsError) {
    eth.refuse = [](const FabricJoin &) {
        return std::optional<Error>(Error{Errc::limit, "IP_ADD_MEMBERSHIP: No buffer space available", {}});
    };
    auto out = join(client, on_eth(kG, join::full));
    run_all();
    EXPECT_EQ(out->code(), Errc::limit);
    EXPECT_EQ(out->message(), "IP_ADD_MEMBERSHIP: No buffer space available");
    EXPECT_TRUE(engine.groups().empty());
    EXPECT_EQ(eth.memberships(), 0u);
}

TEST_F(EngineBackend, TheBackendNamesTheGroupAndMgidZeroIsNone) {
    auto zero = join(client, on_eth(kZeroGid, join::full));
    EXPECT_EQ(zero->code(), Errc::invalid_argument);
    EXPECT_NE(zero->message().find("no SA"), std::string::npos) << zero->message();
    // The SA's MGID rules are not Ethernet's: an IPv4-mapped RoCE v2 MGID is no ff group.
    const Gid v2 = *parse_gid("::ffff:ef01:203");
    auto mapped = join(client, on_eth(v2, join::full));
    run_all();
    EXPECT_TRUE(mapped->ok()) << mapped->message();
    auto bad = join(client, on_eth(kG, 0x10));
    EXPECT_EQ(bad->code(), Errc::invalid_argument) << "the JoinState is checked as everywhere";
    EXPECT_TRUE(sa.log.empty());
}

TEST_F(EngineBackend, ALostPortIsMadeAgainAndItsMembersRestored) {
    MembershipId a = 0, b = 0;
    join(client, on_eth(kG, join::full), &a);
    join(other, on_eth(kH, join::send_only_non_member), &b);
    run_all();
    eth.lose_port(eth_port);
    engine.invalidate_port(eth_port, "the netdev went away");
    EXPECT_EQ(eth.made.size(), 2u) << "nothing before the jitter";
    run_all();
    ASSERT_EQ(eth.made.size(), 4u);
    EXPECT_TRUE(eth.made[2].rejoin);
    EXPECT_TRUE(eth.made[3].rejoin);
    ASSERT_EQ(eth.added.size(), 4u) << "every member added again";
    for (std::size_t i = 2; i < 4; ++i) {
        EXPECT_TRUE(eth.added[i].rejoin);
        EXPECT_EQ(eth.added[i].roce, nullptr) << "nothing to hand over again";
    }
    EXPECT_TRUE(eth.removed.empty()) << "nobody left";
    EXPECT_EQ(eth.memberships(), 1u);
    EXPECT_EQ(at(kG).joined, 2u) << "made again";
    for (MembershipId id : {a, b})
        EXPECT_TRUE(told(id, Kind::restored)) << "membership " << id;
    EXPECT_TRUE(sa.log.empty());
    EXPECT_FALSE(engine.ports()[eth_port].rejoining);
}

TEST_F(EngineBackend, AReJoinTheBackendRefusesTellsItsMembersLost) {
    MembershipId a = 0;
    join(client, on_eth(kG, join::full), &a);
    run_all();
    eth.refuse = [](const FabricJoin &j) {
        return j.rejoin ? std::optional<Error>(Error{Errc::internal, "no netdev for GID index 3", {}}) : std::nullopt;
    };
    eth.lose_port(eth_port);
    engine.invalidate_port(eth_port, "the netdev went away");
    run_all();
    ASSERT_EQ(sink.events.size(), 1u);
    EXPECT_EQ(sink.events[0].id, a);
    EXPECT_EQ(sink.events[0].ev.kind, Kind::lost);
    EXPECT_EQ(sink.events[0].ev.reason->message, "no netdev for GID index 3");
    EXPECT_FALSE(engine.ports()[eth_port].rejoining);
    EXPECT_EQ(eth.memberships(), 0u);
    ASSERT_EQ(eth.removed.size(), 1u) << "a lost member ends at the backend";
    EXPECT_EQ(eth.removed[0].id, a);
    EXPECT_TRUE(eth.members.empty());
}

// The host's memberships outlive the link (the kernel keeps them across a flap): going down
// and back re-joins nothing and tells nobody; joins meanwhile fail as the port is down.
TEST_F(EngineBackend, APortThatGoesDownAndComesBackKeepsItsMembershipsAndSaysNothing) {
    MembershipId a = 0;
    join(client, on_eth(kG, join::full), &a);
    run_all();
    set_usable(eth_port, false, "netdev down");
    EXPECT_EQ(join(other, on_eth(kG, join::full))->code(), Errc::port_not_active);
    set_usable(eth_port, true, "netdev up");
    run_all();
    EXPECT_TRUE(sink.events.empty());
    EXPECT_EQ(eth.made.size(), 1u) << "not made again";
    EXPECT_TRUE(eth.removed.empty());
    EXPECT_EQ(eth.added.size(), 1u) << "its member not added again";
    EXPECT_EQ(eth.memberships(), 1u);
}

// Where the group is sent from, as the backend judges it after Engine::sources_changed: gone
// lets the members' memberships go (suspend) and tells them `lost`, and fails joins; served
// again, the group is made again and they hear `restored`; moved, only `restored`.
TEST_F(EngineBackend, AGroupWhoseSourceGoesIsLostAndRestoredWhenItComesBack) {
    MembershipId a = 0;
    join(client, on_eth(kG, join::full), &a);
    run_all();
    eth.sources[{eth_port, kG}] = SourceCheck{SourceCheck::State::gone, "the GID is gone"};
    engine.sources_changed(eth_port, "GID table");
    run_all();
    EXPECT_EQ(eth.suspended, (std::vector<FakeEthernetBackend::Key>{{eth_port, kG}}));
    ASSERT_EQ(sink.events.size(), 1u);
    EXPECT_EQ(sink.events[0].ev.kind, Kind::lost);
    EXPECT_EQ(sink.events[0].ev.reason->message, "rxe0/1: the GID is gone");
    EXPECT_TRUE(eth.removed.empty()) << "the member stays, suspended";
    EXPECT_EQ(join(other, on_eth(kG, join::full))->code(), Errc::port_not_active);

    eth.sources[{eth_port, kG}] = SourceCheck{SourceCheck::State::moved, "back at index 5"};
    engine.sources_changed(eth_port, "GID table");
    run_all();
    ASSERT_EQ(sink.events.size(), 2u);
    EXPECT_EQ(sink.events[1].ev.kind, Kind::restored);
    EXPECT_EQ(eth.made.size(), 2u) << "made again";
    ASSERT_EQ(eth.added.size(), 2u);
    EXPECT_TRUE(eth.added[1].rejoin) << "its member added again";

    // Moved while held: made again, `restored`, no `lost`.
    engine.sources_changed(eth_port, "GID table");
    run_all();
    ASSERT_EQ(sink.events.size(), 3u);
    EXPECT_EQ(sink.events[2].ev.kind, Kind::restored);
    EXPECT_EQ(eth.suspended.size(), 1u);
    EXPECT_EQ(eth.made.size(), 3u);
}

TEST_F(EngineBackend, AMemberTheBackendRefusesFailsItsJoinAlone) {
    MembershipId first = 0;
    join(client, on_eth(kG, join::full), &first);
    run_all();
    eth.refuse_member = [](const FabricMember &m) {
        return m.bits == join::non_member ? std::optional<Error>(Error{Errc::invalid_argument,
                                                                        "SIOCGIFINDEX veth1: ENODEV (No such device)", {}})
                                          : std::nullopt;
    };
    auto refused = join(other, on_eth(kG, join::non_member));
    run_all();
    EXPECT_EQ(refused->code(), Errc::invalid_argument);
    EXPECT_EQ(refused->message(), "SIOCGIFINDEX veth1: ENODEV (No such device)");
    ASSERT_EQ(eth.made.size(), 2u) << "the bit was made for it";
    ASSERT_EQ(eth.dropped.size(), 1u) << "and dropped again: nobody needs it";
    EXPECT_EQ(eth.dropped[0].bits, join::non_member);
    EXPECT_EQ(eth.dropped[0].kept, join::full);
    EXPECT_EQ(eth.removed.size(), 0u) << "never added, never removed";
    EXPECT_EQ(eth.memberships(), 1u) << "the first member keeps its own";
    ASSERT_EQ(engine.groups().size(), 1u);
    EXPECT_EQ(engine.groups()[0].counts[1], 0u);

    // The only member of a new group: the group goes with the join.
    auto alone = join(third, on_eth(kH, join::non_member));
    run_all();
    EXPECT_EQ(alone->code(), Errc::invalid_argument);
    EXPECT_EQ(at(kH).makes, 1u);
    EXPECT_EQ(at(kH).drops, 1u);
    EXPECT_EQ(engine.groups().size(), 1u);
    EXPECT_FALSE(told(first, Kind::lost));
}

TEST_F(EngineBackend, AMemberRefusedAtTheReJoinIsLostAndTheOthersRestored) {
    MembershipId a = 0, b = 0;
    join(client, on_eth(kG, join::full), &a);
    join(other, on_eth(kG, join::full), &b);
    run_all();
    eth.refuse_member = [b](const FabricMember &m) {
        return m.rejoin && m.id == b ? std::optional<Error>(Error{Errc::invalid_argument,
                                                                   "SIOCGIFINDEX veth1 in the client's network "
                                                                   "namespace: ENODEV (No such device)",
                                                                   {}})
                                     : std::nullopt;
    };
    eth.lose_port(eth_port);
    engine.invalidate_port(eth_port, "the netdev went away");
    run_all();
    EXPECT_TRUE(told(a, Kind::restored));
    EXPECT_FALSE(told(b, Kind::restored));
    ASSERT_TRUE(told(b, Kind::lost));
    for (const auto &e : sink.events) {
        if (e.id == b) {
            EXPECT_EQ(e.ev.reason->message,
                      "SIOCGIFINDEX veth1 in the client's network namespace: ENODEV (No such device)");
        }
    }
    ASSERT_EQ(eth.removed.size(), 1u) << "the lost member ends at the backend";
    EXPECT_EQ(eth.removed[0].id, b);
    EXPECT_EQ(eth.memberships(), 1u);
    EXPECT_EQ(engine.groups().at(0).counts[0], 1u);
}

TEST_F(EngineBackend, ARemovalTheKernelRefusesIsAWarningAndTheMemberGoes) {
    MembershipId a = 0;
    join(client, on_eth(kG, join::full), &a);
    run_all();
    eth.members.clear(); // the fake refuses to remove what it does not know
    notes.clear();
    EXPECT_FALSE(engine.leave(client, a));
    run_all();
    bool warned = false;
    for (const EngineNote &n : notes)
        warned |= n.kind == EngineNote::Kind::warning &&
                  n.message == "leave of full from group ff0e::ffff:ef01:203 on rxe0/1: removed a member never added";
    EXPECT_TRUE(warned);
    EXPECT_TRUE(engine.groups().empty()) << "counted as gone";
    EXPECT_EQ(eth.dropped.size(), 1u);
}

TEST_F(EngineBackend, TheGroupAJoinNamesIsItsPortsToSay) {
    JoinRequest by_ip = on_eth(kZeroGid, join::full);
    by_ip.roce = std::make_shared<const RoceJoin>(IpAddress::v4({239, 1, 2, 3}), GidType::roce_v1, -1);
    EXPECT_EQ(std::get<Gid>(engine.group_of(by_ip)), kG) << "the backend maps the IP group";
    EXPECT_EQ(std::get<Gid>(engine.group_of(request(kG, join::full))), kG) << "InfiniBand: the request's";
    EXPECT_EQ(std::get<Gid>(engine.group_of(request(kZeroGid, join::full))), kZeroGid) << "a create";

    JoinRequest ip_on_ib = request(kZeroGid, join::full);
    ip_on_ib.roce = by_ip.roce;
    const auto refused = engine.group_of(ip_on_ib);
    ASSERT_TRUE(std::holds_alternative<Error>(refused));
    EXPECT_EQ(std::get<Error>(refused).message,
              "mlx5_0/1 is an InfiniBand port: an IP multicast group names a group on RoCE ports only");
    auto out = join(client, ip_on_ib);
    EXPECT_EQ(out->code(), Errc::invalid_argument) << "not a create";
    EXPECT_TRUE(sa.log.empty());
    auto mapped = join(client, by_ip);
    run_all();
    ASSERT_TRUE(mapped->ok()) << mapped->message();
    EXPECT_EQ(mapped->result.record.mgid, kG);
}

// After a restart the backend takes its members back itself (RoceBackend::adopt): an adopted
// member on its port is one it holds, and hears of its end as of any other's, so that the
// last one's leave drops the kernel membership.
TEST_F(EngineBackend, AnAdoptedMembersEndReachesTheBackend) {
    McRecord rec;
    rec.mgid = kG;
    rec.qkey = 0x01234567;
    rec.pkey = 0xffff;
    engine.adopt_group(eth_port, kG, join::full, 0, rec);
    ASSERT_TRUE(engine.adopt_member(client, 41, eth_port, kG, join::full, {}));
    ASSERT_TRUE(engine.adopt_member(other, 42, eth_port, kG, join::full, {}));
    engine.end_adoption();
    run_all();
    EXPECT_TRUE(eth.made.empty()) << "held already: nothing made again";
    EXPECT_TRUE(eth.added.empty()) << "nor added: the backend took them back itself";
    eth.members[41] = FabricMember{eth_port, kG, 41, join::full, nullptr, false}; // as its adopt() did
    eth.members[42] = FabricMember{eth_port, kG, 42, join::full, nullptr, false};
    eth.groups[{eth_port, kG}].holders = 2;
    eth.groups[{eth_port, kG}].in_kernel = true;
    EXPECT_FALSE(engine.leave(client, 41));
    engine.remove_client(other);
    run_all();
    ASSERT_EQ(eth.removed.size(), 2u);
    EXPECT_EQ(eth.removed[0].id, 41u);
    EXPECT_EQ(eth.removed[1].id, 42u);
    EXPECT_EQ(at(kG).left, 1u) << "the last one's end dropped it";
    ASSERT_EQ(eth.dropped.size(), 1u) << "and the group with it";
}

TEST_F(EngineBackend, APortWithNoBackendForItsLinkLayerIsRefused) {
    port::PortRegistry other_ports;
    FakeSa other_sa;
    Engine bare(EngineConfig{}, other_ports, other_sa, timers);
    EXPECT_TRUE(bare.serves(LinkLayer::infiniband));
    EXPECT_FALSE(bare.serves(LinkLayer::ethernet));
    const PortIndex p = other_ports.add(port_attributes("rxe0", 1, kPrefix, 0x200001, "Ethernet"), true);
    try {
        bare.add_port(p);
        FAIL() << "served without a backend";
    } catch (const std::invalid_argument &e) {
        EXPECT_STREQ(e.what(), "rxe0/1 is an Ethernet port, and no membership backend serves Ethernet ports");
    }
    EXPECT_THROW(bare.set_backend(LinkLayer::infiniband, eth), std::logic_error) << "the SA makes those";
}

} // namespace
} // namespace mcastd::test
