// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `list` in pages (views.cpp, list_cursor.cpp): every page's encoded reply within
// proto::kListPageBytes, the pages together the whole view, `own`, and cursors that point past
// the end or at a group that went away. A Service over the fake SA holds the memberships.
#include <gtest/gtest.h>

#include <cstdio>

#include "fakes/fake_port.hpp"
#include "fakes/fake_sa.hpp"
#include "fakes/fake_timers.hpp"
#include "service/list_cursor.hpp"
#include "service/views.hpp"

namespace mcastd {
namespace {

using test::FakeSa;
using test::FakeTimers;
using test::join_request;
using test::test_port;

struct NoSink final : MembershipEventSink {
    void membership_event(ClientId, MembershipId, const MembershipEvent &) override {}
};

// What a session adds to each member (Sessions::annotate), made up from its id so that a
// member shown under another's annotations shows.
void notes(const MemberView &m, proto::MemberInfo &out) {
    out.rule = "rule-" + std::to_string(m.id % 7);
    out.created = m.id % 3 == 0;
    if (m.id % 5 == 0)
        out.flagged = "flagged since the reload (" + std::to_string(m.id) + ")";
    if (m.id % 2 == 0)
        out.name = "job-" + std::to_string(m.id);
}

class ListPages : public ::testing::Test {
protected:
    ListPages() : service(EngineConfig{}, sa, timers) {
        const PortIndex p = service.add_port(test_port(), true);
        sa.port_gids[p] = test_port().port_gid();
    }

    ClientId client(pid_t pid, const char *comm) {
        return service.add_client(ClientInfo{pid, static_cast<uid_t>(1000 + pid), 100, comm}, &sink);
    }
    MembershipId join(ClientId c, const std::string &mgid) {
        bool ok = false;
        const MembershipId id =
            service.join(c, join_request(mgid.c_str()), [&ok](const JoinResult &r) { ok = !r.error; });
        sa.run();
        EXPECT_TRUE(ok) << mgid;
        return id;
    }
    static std::string mgid(unsigned n) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "ff15::%x", n + 1);
        return buf;
    }

    // Every page from `after` on, each checked against the page limit.
    std::vector<proto::ListResult> pages(std::optional<ClientId> only = std::nullopt,
                                         std::optional<GroupCursor> after = std::nullopt) {
        std::vector<proto::ListResult> out;
        for (;;) {
            ListQuery q{after, only, proto::kListPageBytes};
            out.push_back(list_view(service, q, notes));
            const proto::ListResult &page = out.back();
            const std::size_t bytes = proto::encode_reply(proto::kMaxId, page).size();
            EXPECT_LE(bytes, proto::kListPageBytes) << "page " << out.size();
            if (!page.next)
                return out;
            // A page stops only when the next member would not fit: it is nearly full.
            EXPECT_GT(bytes, proto::kListPageBytes - 1024) << "page " << out.size();
            after = parse_cursor(*page.next);
            EXPECT_TRUE(after) << *page.next;
            if (!after || out.size() > 1000)
                return out;
        }
    }
    static proto::ListResult together(std::vector<proto::ListResult> pages) {
        proto::ListResult all;
        for (auto &p : pages)
            proto::append_list_page(all, std::move(p));
        return all;
    }
    // The whole view in one, as D-Bus gets it; with `only`, that client's memberships cut out
    // of it by hand.
    proto::ListResult whole(std::optional<ClientId> only = std::nullopt) {
        proto::ListResult all = list_view(service, ListQuery{}, notes);
        EXPECT_FALSE(all.next) << "no limit, one page";
        if (!only)
            return all;
        const ClientInfo *who = service.client_info(*only);
        for (auto &p : all.ports) {
            for (auto &g : p.groups)
                std::erase_if(g.members, [&](const proto::MemberInfo &m) { return m.pid != who->pid; });
            std::erase_if(p.groups, [](const proto::GroupInfo &g) { return g.members.empty(); });
        }
        return all;
    }
    // Two lists are the same when they encode the same: every key of every member, in order.
    static std::string text(const proto::ListResult &l) { return proto::encode_reply(1, l); }
    static std::size_t members(const proto::ListResult &l) {
        std::size_t n = 0;
        for (const auto &p : l.ports)
            for (const auto &g : p.groups)
                n += g.members.size();
        return n;
    }

    FakeTimers timers;
    FakeSa sa;
    NoSink sink;
    Service service;
};

TEST_F(ListPages, TwoThousandMembershipsOfOneClientInOneGroup) {
    const ClientId hog = client(1, "hog");
    const ClientId small = client(2, "small");
    for (int i = 0; i < 2000; ++i)
        join(hog, "ff15::77");
    const MembershipId mine = join(small, "ff15::77");
    join(small, "ff15::78");

    const auto paged = pages();
    ASSERT_GT(paged.size(), 3u) << "2,000 members do not fit in one page";
    for (std::size_t i = 1; i < paged.size(); ++i) {
        const auto &first = paged[i].ports.at(0).groups.at(0);
        EXPECT_EQ(format_gid(first.mgid), "ff15::77") << "page " << i << " goes on with the group";
        EXPECT_EQ(first.counts, paged[0].ports[0].groups[0].counts) << "its header repeated";
    }
    const proto::ListResult all = together(paged);
    EXPECT_EQ(members(all), 2002u);
    EXPECT_EQ(text(all), text(whole()));

    const proto::ListResult own = together(pages(small));
    ASSERT_EQ(own.ports.at(0).groups.size(), 2u);
    ASSERT_EQ(own.ports[0].groups[0].members.size(), 1u);
    EXPECT_EQ(own.ports[0].groups[0].members[0].membership, mine);
    EXPECT_EQ(own.ports[0].groups[0].counts[0], 2001u) << "the group's counts";
    EXPECT_EQ(text(own), text(whole(small)));
    EXPECT_EQ(text(together(pages(hog))), text(whole(hog)));
}

TEST_F(ListPages, ThreeThousandMembershipsOverThreeHundredGroups) {
    const ClientId c[3] = {client(1, "a"), client(2, "bb"), client(3, "a-longer-name")};
    for (unsigned g = 0; g < 300; ++g)
        for (unsigned k = 0; k < 10; ++k)
            join(c[(g + k) % 3], mgid(g));
    const auto paged = pages();
    EXPECT_GT(paged.size(), 5u);
    const proto::ListResult all = together(paged);
    EXPECT_EQ(members(all), 3000u);
    EXPECT_EQ(all.ports.at(0).groups.size(), 300u);
    EXPECT_EQ(text(all), text(whole()));
    for (ClientId who : c) {
        const proto::ListResult own = together(pages(who));
        EXPECT_EQ(members(own), 1000u);
        EXPECT_EQ(text(own), text(whole(who)));
    }
}

TEST_F(ListPages, PastTheEndIsAnEmptyLastPage) {
    join(client(1, "a"), "ff15::1");
    for (const GroupCursor &past : {GroupCursor{GroupKey{0, *parse_gid("ff1f::1"), 0}, std::nullopt},
                                    GroupCursor{GroupKey{0, *parse_gid("ff15::1"), 0}, MembershipId{1} << 60},
                                    GroupCursor{GroupKey{9, {}, 0}, std::nullopt}}) {
        const proto::ListResult page = list_view(service, ListQuery{past, std::nullopt, proto::kListPageBytes}, notes);
        ASSERT_EQ(page.ports.size(), 1u) << "every port, as on every page";
        EXPECT_TRUE(page.ports[0].groups.empty());
        EXPECT_FALSE(page.next);
    }
}

TEST_F(ListPages, ACursorWhoseGroupWentAwayGoesOnWithTheNext) {
    const ClientId a = client(1, "a");
    std::vector<std::vector<MembershipId>> ids(100);
    for (unsigned g = 0; g < 100; ++g)
        for (unsigned k = 0; k < 10; ++k)
            ids[g].push_back(join(a, mgid(g)));
    const proto::ListResult first =
        list_view(service, ListQuery{std::nullopt, std::nullopt, proto::kListPageBytes}, notes);
    ASSERT_TRUE(first.next);
    const auto at = parse_cursor(*first.next);
    ASSERT_TRUE(at && at->member) << *first.next << " stops inside a group (10 members each)";
    // The group the page stopped in goes away, every member with it.
    unsigned g = 0;
    while (mgid(g) != format_gid(at->group.mgid))
        ++g;
    ASSERT_LT(g, 99u);
    for (MembershipId id : ids[g])
        ASSERT_FALSE(service.leave(a, id));
    sa.run();
    const proto::ListResult next = list_view(service, ListQuery{at, std::nullopt, proto::kListPageBytes}, notes);
    ASSERT_FALSE(next.ports.at(0).groups.empty());
    EXPECT_EQ(format_gid(next.ports[0].groups[0].mgid), mgid(g + 1));
    EXPECT_EQ(next.ports[0].groups[0].members.size(), 10u);
}

TEST(ListCursor, WhatIsWrittenReadsBack) {
    const std::vector<GroupCursor> cursors = {
        {GroupKey{0, *parse_gid("ff15::1:2"), 0}, 17},
        {GroupKey{3, *parse_gid("ff12:601b:ffff::1"), 0}, std::nullopt},
        {GroupKey{0, kZeroGid, (std::uint64_t{5} << 32) | 9}, 4},
        {GroupKey{UINT32_MAX, *parse_gid("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), 0}, UINT64_MAX},
    };
    for (const GroupCursor &c : cursors) {
        const std::string text = format_cursor(c);
        EXPECT_LE(text.size(), proto::kMaxCursorBytes);
        EXPECT_EQ(parse_cursor(text), c) << text;
    }
    EXPECT_EQ(format_cursor(cursors[0]), "0,ff15::1:2,0,17");
    EXPECT_EQ(format_cursor(cursors[1]), "3,ff12:601b:ffff::1,0,-");
}

TEST(ListCursor, AnythingElseIsRefused) {
    for (const char *bad : {"", "-", "0,ff15::1,0", "0,ff15::1,0,-,", "0,ff15::1,0,-,1", " 0,ff15::1,0,-",
                            "+0,ff15::1,0,-", "-1,ff15::1,0,-", "0x0,ff15::1,0,-", "4294967296,ff15::1,0,-",
                            "0,ff15::zz,0,-", "0,,0,-", "0,ff15::1,,-", "0,ff15::1,0,", "0,ff15::1,0,x",
                            "0,ff15::1,0,18446744073709551616", "0,ff15::1,7,-", "0,ff15::1,0,1 "})
        EXPECT_FALSE(parse_cursor(bad)) << bad;
}

} // namespace
} // namespace mcastd
