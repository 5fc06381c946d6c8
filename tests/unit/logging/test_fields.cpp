// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The structured fields of an engine note.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "logging/fields.hpp"
#include "logging/message_ids.hpp"

namespace mcastd::logging {
namespace {

EngineNote joined_note() {
    EngineNote n;
    n.kind = EngineNote::Kind::joined;
    n.mgid = *parse_gid("ff15:3::1");
    n.mlid = 0xc001;
    n.join_state = 0x1;
    n.client = 7;
    n.client_info = ClientInfo{4242, 1000, 1000, "my-app"};
    return n;
}

TEST(NoteFields, JoinedCarriesEveryFieldFormatted) {
    const Fields f = note_fields(joined_note(), PortName{"mlx5_0", 1});
    const Fields want{{"MESSAGE_ID", "f60dd3c5b678467c99198b6d374ef909"},
                      {"RDMA_DEVICE", "mlx5_0"},
                      {"RDMA_PORT", "1"},
                      {"MCAST_MGID", "ff15:3::1"},
                      {"MCAST_MLID", "0xc001"},
                      {"MCAST_JOIN_STATE", "0x1"},
                      {"CLIENT_PID", "4242"},
                      {"CLIENT_UID", "1000"},
                      {"CLIENT_COMM", "my-app"}};
    EXPECT_EQ(f, want);
}

// A client whose uid is in another user's subordinate range names that user too: the journal
// can be searched by either.
TEST(NoteFields, ASubordinateUidsNoteNamesTheAccountToo) {
    EngineNote n = joined_note();
    n.client_info = ClientInfo{4242, 100005, 100005, "in-container", 1000};
    const Fields f = note_fields(n, PortName{"mlx5_0", 1});
    const Fields client(f.end() - 4, f.end());
    EXPECT_EQ(client, (Fields{{"CLIENT_PID", "4242"},
                              {"CLIENT_UID", "100005"},
                              {"CLIENT_ACCOUNT_UID", "1000"},
                              {"CLIENT_COMM", "in-container"}}));
}

// A RoCE group's note says where the group is sent from, in its fields and in its sentence.
TEST(NoteFields, ARoceGroupCarriesItsNetdevGidTypeAndSgidIndex) {
    EngineNote n = joined_note();
    n.mgid = *parse_gid("::ffff:239.1.2.3");
    n.mlid = 0;
    n.roce = RoceSource{GidType::roce_v2, 1, "veth1"};
    const Fields f = note_fields(n, PortName{"rxe0", 1});
    const Fields tail(f.end() - 3, f.end());
    EXPECT_EQ(tail, (Fields{{"RDMA_NETDEV", "veth1"}, {"RDMA_GID_TYPE", "roce_v2"}, {"RDMA_SGID_INDEX", "1"}}));
    EXPECT_EQ(describe(n, "rxe0/1"), "joined group ::ffff:239.1.2.3 on rxe0/1 (veth1, roce_v2 GID 1) as full");
    n.kind = EngineNote::Kind::left;
    EXPECT_EQ(describe(n, "rxe0/1"), "left group ::ffff:239.1.2.3 on rxe0/1 (veth1, roce_v2 GID 1)");
    for (const Field &x : note_fields(joined_note(), PortName{"mlx5_0", 1}))
        EXPECT_NE(x.name, "RDMA_NETDEV") << "an InfiniBand group has none";
}

TEST(NoteFields, SaStatusIsFourHexDigits) {
    EngineNote n = joined_note();
    n.kind = EngineNote::Kind::join_failed;
    n.mlid = 0;
    n.sa_status = 0x0200;
    const Fields f = note_fields(n, PortName{"mlx5_0", 2});
    EXPECT_EQ(f.front(), (Field{"MESSAGE_ID", "c559c617bded4f48b010f1ee8791182a"}));
    EXPECT_EQ(f.back(), (Field{"SA_STATUS", "0x0200"}));
    for (const Field &x : f)
        EXPECT_NE(x.name, "MCAST_MLID") << "no MLID before the SA gave one";
}

TEST(NoteFields, AbsentFactsAreLeftOutNotSentEmpty) {
    EngineNote n; // a warning about a port: no group, no client, no status
    n.message = "something";
    const Fields f = note_fields(n, std::nullopt);
    EXPECT_EQ(f, (Fields{{"MESSAGE_ID", std::string(kWarning.id)}}));
}

TEST(NoteFields, SmallMlidKeepsFourDigits) {
    EngineNote n = joined_note();
    n.mlid = 0x00c;
    n.join_state = 0x8;
    const Fields f = note_fields(n, PortName{"d", 1});
    EXPECT_NE(std::find(f.begin(), f.end(), Field{"MCAST_MLID", "0x000c"}), f.end());
    EXPECT_NE(std::find(f.begin(), f.end(), Field{"MCAST_JOIN_STATE", "0x8"}), f.end());
}

TEST(MessageIds, OnePerKindEachA128BitIdInLowercaseHex) {
    const EngineNote::Kind kinds[] = {EngineNote::Kind::joined, EngineNote::Kind::left,
                                      EngineNote::Kind::join_failed, EngineNote::Kind::deleted,
                                      EngineNote::Kind::lost, EngineNote::Kind::restored,
                                      EngineNote::Kind::warning};
    std::set<std::string_view> seen;
    for (auto k : kinds)
        EXPECT_TRUE(seen.insert(message_id(k).id).second) << message_id(k).name;
    for (const MessageId &m :
         {kPolicyRefused, kPolicyFlagged, kEvicted, kClientRefused, kDisconnected, kSaAmplified, kRoutineFolded,
          kRoceSource})
        EXPECT_TRUE(seen.insert(m.id).second) << m.name;
    EXPECT_EQ(seen.size(), kMessageIds.size());
    for (const MessageId &m : kMessageIds)
        EXPECT_TRUE(std::regex_match(std::string(m.id), std::regex("[0-9a-f]{32}"))) << m.name;
}

TEST(FieldScope, NestsAndRestoresTheOuterScope) {
    EXPECT_EQ(scope_fields(), nullptr);
    const Fields outer{{"A", "1"}}, inner{{"B", "2"}};
    {
        FieldScope a(outer);
        EXPECT_EQ(scope_fields(), &outer);
        {
            FieldScope b(inner);
            EXPECT_EQ(scope_fields(), &inner);
        }
        EXPECT_EQ(scope_fields(), &outer);
    }
    EXPECT_EQ(scope_fields(), nullptr);
}

} // namespace
} // namespace mcastd::logging
