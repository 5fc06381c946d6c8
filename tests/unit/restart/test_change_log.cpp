// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The change log's lines (change_log.hpp), their replay over a state file, and the mirror that
// decides which lines a change needs (state_mirror.hpp).
#include <gtest/gtest.h>

#include "restart/change_log.hpp"
#include "restart/state_mirror.hpp"

namespace mcastd::restart {
namespace {

Gid gid(const char *text) { return *parse_gid(text); }

const PortKey kPort{"mlx5_0", 1, gid("fe80::1")};

SavedSession session(std::uint64_t id) {
    SavedSession s;
    s.id = id;
    s.token = std::string(32, 'b');
    s.who = ClientInfo{4321, 1000, 1000, "app"};
    s.version = 2;
    s.inode = 77;
    return s;
}

SavedMembership membership(std::uint64_t id, const char *mgid, std::uint8_t bits = join::full) {
    SavedMembership m{id, kPort.device, kPort.port, gid(mgid), bits, {}};
    m.rule = "hpc";
    return m;
}

SavedState base() {
    SavedState st;
    st.boot_id = "boot-a";
    st.daemon = "d";
    st.next_session = 3;
    st.generation = 4;
    st.ports.push_back(SavedPort{kPort.device, kPort.port, kPort.port_gid, {SavedGroup{gid("ff15::1"), 1, 0, {}}}});
    SavedSession s = session(2);
    s.memberships.push_back(membership(10, "ff15::1"));
    st.sessions.push_back(s);
    return st;
}

std::vector<Change> every_kind() {
    roce::KeptRoce r;
    r.groups.push_back(roce::KeptGroup{"rxe0", 1, gid("ff0e::1:2"), GidType::roce_v2});
    return {
        SavedSet{kPort.device, kPort.port, kPort.port_gid, gid("ff15::2"), 0x3},
        GroupChange{kPort, SavedGroup{gid("ff15::2"), 0x1, 0x2, std::nullopt}},
        SessionChange{session(5)},
        SessionGone{2},
        MembershipChange{5, membership(11, "ff15::2", join::non_member)},
        MembershipGone{10},
        NextSession{6},
        RoceChange{r},
        RoceAdding{roce::KeptAdding{3, *parse_ip("239.1.2.4"), 7}},
    };
}

TEST(ChangeLog, EveryKindOfLineRoundTrips) {
    const std::vector<Change> changes = every_kind();
    std::string text = encode_log_header("boot-a", "rdma-mcastd 1", 4);
    for (const Change &c : changes)
        text += encode_change(c);
    auto back = decode_log(text);
    ASSERT_TRUE(std::holds_alternative<ChangeLog>(back)) << std::get<std::string>(back);
    const ChangeLog &log = std::get<ChangeLog>(back);
    EXPECT_EQ(log.boot_id, "boot-a");
    EXPECT_EQ(log.daemon, "rdma-mcastd 1");
    EXPECT_EQ(log.generation, 4u);
    EXPECT_EQ(log.changes, changes);
    EXPECT_TRUE(log.skipped.empty());
}

// A header that cannot be trusted sets the whole log aside; a later line is skipped, named.
TEST(ChangeLog, EveryCorruptionIsNamedByItsLine) {
    const std::string header = encode_log_header("boot-a", "d", 1);
    auto whole = [](const std::string &text) {
        auto d = decode_log(text);
        return std::holds_alternative<std::string>(d) ? std::get<std::string>(d) : "(accepted)";
    };
    EXPECT_EQ(whole(""), "the file is empty");
    EXPECT_EQ(whole(R"({"format":"rdma-mcastd-sets","version":1})" "\n"), "line 1: /format: not an rdma-mcastd change log");
    EXPECT_NE(whole(R"({"format":"rdma-mcastd-log","version":2,"boot_id":"b","daemon":"d","generation":1})" "\n")
                  .find("line 1: /version: format version 2 is not 1"),
              std::string::npos);
    EXPECT_NE(whole(R"({"format":"rdma-mcastd-log","version":1,"boot_id":"b","daemon":"d"})" "\n").find("generation"),
              std::string::npos);
    EXPECT_EQ(whole(header), "(accepted)");

    auto skipped = [&](const std::string &line) {
        auto d = decode_log(header + encode_change(NextSession{4}) + line);
        if (!std::holds_alternative<ChangeLog>(d))
            return "(set aside: " + std::get<std::string>(d) + ")";
        const ChangeLog &log = std::get<ChangeLog>(d);
        EXPECT_EQ(log.changes.size(), 1u);
        return log.skipped.empty() ? std::string("(accepted)") : log.skipped.front();
    };
    EXPECT_EQ(skipped(R"({"membership_gone":0})" "\n").rfind("line 3: /membership_gone", 0), 0u);
    EXPECT_EQ(skipped(R"({"what":1})" "\n").rfind("line 3: ", 0), 0u);
    EXPECT_EQ(skipped(R"({"next_session":4,"x":1})" "\n"), "line 3: /x: unknown key");
    EXPECT_NE(skipped(R"({"session":{"session":5,"token":"x"}})" "\n").find("line 3: /session/token"), std::string::npos);
    EXPECT_EQ(skipped(R"({"set":{"device":"mlx5_0","port":1,"port_gid":"fe80::1","mgid":"::","bits":1}})" "\n"),
              "line 3: /set/mgid: is zero");
    EXPECT_EQ(skipped(R"({"membership_gone":1)"), "line 3: torn (no end of line)");
    EXPECT_EQ(skipped(R"({"roce_adding":{"socket":3,"group":"10.1.2.3","ifindex":7}})" "\n"),
              "line 3: /roce_adding/group: not an IP multicast group");
}

TEST(ChangeLog, ReplaySaysWhatEachKeyIsNow) {
    SavedState st = base();
    replay(st, every_kind());
    ASSERT_EQ(st.ports.size(), 1u);
    ASSERT_EQ(st.ports[0].groups.size(), 2u);
    EXPECT_EQ(st.ports[0].groups[0], (SavedGroup{gid("ff15::1"), 1, 0, {}}));
    // The Set's uncertain bits, then the group's line: the line says what they became.
    EXPECT_EQ(st.ports[0].groups[1], (SavedGroup{gid("ff15::2"), 0x1, 0x2, {}}));
    // Session 2 went, and its membership 10 with it; session 5 came with membership 11.
    ASSERT_EQ(st.sessions.size(), 1u);
    SavedSession five = session(5);
    five.memberships.push_back(membership(11, "ff15::2", join::non_member));
    EXPECT_EQ(st.sessions[0], five);
    EXPECT_EQ(st.next_session, 6u);
    ASSERT_EQ(st.roce.groups.size(), 1u);
    EXPECT_EQ(st.roce.adding, (std::vector<roce::KeptAdding>{{3, *parse_ip("239.1.2.4"), 7}}));
    EXPECT_EQ(st.generation, 4u);
}

// A membership being added is kept until the next RoCE section, which names what came of it.
TEST(ChangeLog, ARoceSectionReplacesTheMembershipsBeingAdded) {
    SavedState st = base();
    const roce::KeptAdding a{3, *parse_ip("239.1.2.4"), 7};
    replay(st, std::vector<Change>{RoceAdding{a}, RoceChange{}});
    EXPECT_TRUE(st.roce.adding.empty());
    replay(st, std::vector<Change>{RoceChange{}, RoceAdding{a}, RoceAdding{a}});
    EXPECT_EQ(st.roce.adding, std::vector<roce::KeptAdding>{a});
}

TEST(ChangeLog, AGroupWithoutBitsIsGoneAndAMembershipOfAGoneSessionGoesWithIt) {
    SavedState st = base();
    replay(st, std::vector<Change>{GroupChange{kPort, SavedGroup{gid("ff15::1"), 0, 0, {}}},
                                   MembershipChange{9, membership(12, "ff15::1")}});
    EXPECT_TRUE(st.ports[0].groups.empty());
    ASSERT_EQ(st.sessions.size(), 1u);
    EXPECT_EQ(st.sessions[0].memberships, (std::vector<SavedMembership>{membership(10, "ff15::1")}));
}

// Replaying lines the state already has changes nothing (a line says what a key is now).
TEST(ChangeLog, ReplayingTwiceIsReplayingOnce) {
    SavedState once = base(), twice = base();
    replay(once, every_kind());
    replay(twice, every_kind());
    replay(twice, every_kind());
    EXPECT_EQ(once, twice);
}

// ---- the mirror ----

TEST(StateMirror, AGroupCostsALineWhenItsBitsDifferFromTheDisks) {
    StateMirror m;
    m.reset(base()); // ff15::1 held 0x1
    std::vector<Change> out;
    const SavedGroup held{gid("ff15::1"), 1, 0, {}};
    m.group(kPort, gid("ff15::1"), held, out);
    EXPECT_TRUE(out.empty()) << "as the file has it";
    const SavedGroup more{gid("ff15::1"), 1, 2, {}};
    m.group(kPort, gid("ff15::1"), more, out);
    EXPECT_EQ(out, (std::vector<Change>{GroupChange{kPort, more}}));
    out.clear();
    m.group(kPort, gid("ff15::1"), more, out);
    EXPECT_TRUE(out.empty());
    // The group is gone.
    m.group(kPort, gid("ff15::1"), std::nullopt, out);
    EXPECT_EQ(out, (std::vector<Change>{GroupChange{kPort, SavedGroup{gid("ff15::1"), 0, 0, {}}}}));
    out.clear();
    m.group(kPort, gid("ff15::1"), std::nullopt, out);
    EXPECT_TRUE(out.empty()) << "already gone";
    // A group on another port GID (nothing of it on disk).
    const PortKey other{"mlx5_0", 1, gid("fe80::9")};
    m.group(other, gid("ff15::1"), held, out);
    EXPECT_EQ(out, (std::vector<Change>{GroupChange{other, held}}));
}

TEST(StateMirror, SessionsComeChangeAndGo) {
    StateMirror m;
    m.reset(base());
    std::vector<Change> out;
    SavedSession two = session(2);
    m.sessions({two}, out);
    EXPECT_TRUE(out.empty()) << "as the file has it";
    EXPECT_TRUE(m.has_session(2));
    EXPECT_FALSE(m.has_session(5));
    two.monitor = true;
    m.sessions({two, session(5)}, out);
    EXPECT_EQ(out, (std::vector<Change>{SessionChange{two}, SessionChange{session(5)}}));
    EXPECT_TRUE(m.has_session(5));
    out.clear();
    m.sessions({session(5)}, out);
    EXPECT_EQ(out, (std::vector<Change>{SessionGone{2}}));
    out.clear();
    m.next_session(3, out);
    EXPECT_TRUE(out.empty());
    m.next_session(6, out);
    EXPECT_EQ(out, (std::vector<Change>{NextSession{6}}));
}

TEST(StateMirror, SessionsInAnyOrderOnlyTheAbsentOnesGo) {
    // The registry hands its sessions over in no order.
    StateMirror m;
    m.reset(base());
    std::vector<Change> out;
    m.sessions({session(9), session(2), session(7), session(5), session(11)}, out);
    out.clear();
    m.sessions({session(11), session(5), session(9)}, out);
    EXPECT_EQ(out, (std::vector<Change>{SessionGone{2}, SessionGone{7}}));
    for (std::uint64_t id : {5, 9, 11})
        EXPECT_TRUE(m.has_session(id)) << id;
    EXPECT_FALSE(m.has_session(2));
    EXPECT_FALSE(m.has_session(7));
}

// What the mirror says is what a replay of its lines over the file gives.
TEST(StateMirror, ItsLinesReplayedOverTheFileGiveWhatItWasTold) {
    StateMirror m;
    const SavedState file = base();
    m.reset(file);
    std::vector<Change> out;
    m.sessions({session(2), session(5)}, out);
    m.group(kPort, gid("ff15::9"), SavedGroup{gid("ff15::9"), 0, 1, {}}, out);
    m.next_session(6, out);
    SavedState replayed = file;
    replay(replayed, out);
    SavedState expected = file;
    expected.next_session = 6;
    expected.ports[0].groups.push_back(SavedGroup{gid("ff15::9"), 0, 1, {}});
    expected.sessions.push_back(session(5));
    EXPECT_EQ(replayed, expected);
}

} // namespace
} // namespace mcastd::restart
