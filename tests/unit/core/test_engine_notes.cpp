// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The engine's notes carry who the client is, even when the client is already gone; a Delete's
// note names the client whose leave made it due; a port's warning names nobody.
#include "engine_fixture.hpp"

namespace mcastd::test {
namespace {

const Gid kGroup = gid("ff15::a1");

class EngineNotes : public EngineFixture {
protected:
    EngineNotes() {
        engine.set_observer([this](const EngineNote &n) { notes.push_back(n); });
    }
    const EngineNote *last(EngineNote::Kind kind) const {
        for (auto it = notes.rbegin(); it != notes.rend(); ++it)
            if (it->kind == kind)
                return &*it;
        return nullptr;
    }
    std::vector<EngineNote> notes;
};

TEST_F(EngineNotes, JoinedAndLeftNameTheClient) {
    MembershipId id = 0;
    auto j = join(client, request(kGroup, join::full), &id);
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    const EngineNote *joined = last(EngineNote::Kind::joined);
    ASSERT_TRUE(joined);
    ASSERT_TRUE(joined->client_info);
    EXPECT_EQ(joined->client_info->pid, 100);
    EXPECT_EQ(joined->client_info->uid, 1000u);
    EXPECT_EQ(joined->client_info->comm, "app");

    ASSERT_FALSE(engine.leave(client, id));
    settle();
    const EngineNote *left = last(EngineNote::Kind::left);
    ASSERT_TRUE(left && left->client_info);
    EXPECT_EQ(left->client_info->pid, 100);
}

// The restart state's change log writes a membership as it comes and goes, by these ids.
TEST_F(EngineNotes, JoinedAndLeftNameTheMembership) {
    MembershipId id = 0;
    auto j = join(client, request(kGroup, join::full), &id);
    settle();
    ASSERT_TRUE(j->ok()) << j->message();
    ASSERT_TRUE(last(EngineNote::Kind::joined));
    EXPECT_EQ(last(EngineNote::Kind::joined)->member, id);
    ASSERT_FALSE(engine.leave(client, id));
    settle();
    ASSERT_TRUE(last(EngineNote::Kind::left));
    EXPECT_EQ(last(EngineNote::Kind::left)->member, id);
}

TEST_F(EngineNotes, LeftOfAClientThatWentAwayStillNamesIt) {
    join(other, request(kGroup, join::full));
    settle();
    engine.remove_client(other);
    settle();
    EXPECT_EQ(engine.client_info(other), nullptr);
    const EngineNote *left = last(EngineNote::Kind::left);
    ASSERT_TRUE(left);
    ASSERT_TRUE(left->client_info) << "the note was made while the client was still known";
    EXPECT_EQ(left->client_info->pid, 200);
    EXPECT_EQ(left->client_info->uid, 1001u);
    EXPECT_EQ(left->client_info->comm, "other");
}

// The Delete is the leaver's doing: its note names that client (the log's per-uid rate limit
// counts it), though the client is gone by the time the SA answers.
TEST_F(EngineNotes, ADeleteNamesTheClientWhoseLeaveMadeItDue) {
    auto j = join(client, request(kGroup, join::full));
    settle();
    ASSERT_TRUE(j->ok());
    engine.remove_client(client);
    settle();
    const EngineNote *deleted = last(EngineNote::Kind::deleted);
    ASSERT_TRUE(deleted);
    EXPECT_EQ(deleted->client, 0u) << "the client is gone: no id to look up";
    ASSERT_TRUE(deleted->client_info);
    EXPECT_EQ(deleted->client_info->pid, 100);
    EXPECT_EQ(deleted->client_info->uid, 1000u);
}

TEST_F(EngineNotes, TheLastLeaverIsTheOneNamed) {
    MembershipId a = 0, b = 0;
    join(client, request(kGroup, join::full), &a);
    join(other, request(kGroup, join::full), &b);
    settle();
    ASSERT_FALSE(engine.leave(client, a));
    settle();
    EXPECT_FALSE(last(EngineNote::Kind::deleted)) << "other still holds the bit";
    ASSERT_FALSE(engine.leave(other, b));
    settle();
    const EngineNote *deleted = last(EngineNote::Kind::deleted);
    ASSERT_TRUE(deleted && deleted->client_info);
    EXPECT_EQ(deleted->client_info->uid, 1001u);
}

TEST_F(EngineNotes, NotesAboutNoClientCarryNoClientInfo) {
    join(client, request(kGroup, join::full));
    settle();
    engine.invalidate_port(port, "test");
    settle();
    const EngineNote *warning = last(EngineNote::Kind::warning);
    ASSERT_TRUE(warning);
    EXPECT_EQ(warning->client, 0u);
    EXPECT_FALSE(warning->client_info);
}

} // namespace
} // namespace mcastd::test
