// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// `list` through the socket, in pages: one client holding thousands of memberships locks nobody
// out of the view (every page within proto::kListPageBytes, no `limit`), `own` shows a caller
// its own memberships, a cursor the daemon did not write is refused, and the send-buffer check
// stays the last resort for a buffer set below a page.
#include <sys/socket.h>
#include <unistd.h>

#include "front_door.hpp"

namespace mcastd::test {
namespace {

class ListSessions : public FrontDoor {
protected:
    // `n` joins of `mgid` by `fd`, pipelined a few at a time; all must succeed.
    void joins(int fd, const char *mgid, int n) {
        std::uint64_t id = 1000;
        for (int done = 0; done < n;) {
            const int batch = std::min(50, n - done);
            for (int i = 0; i < batch; ++i)
                send(fd, ++id, join_of(mgid));
            for (int i = 0; i < batch; ++i) {
                const proto::Reply r = reply(fd);
                ASSERT_TRUE(ok(r)) << failure(r).error.message;
            }
            done += batch;
        }
    }

    // One page: its raw size, and the result (or the failure).
    struct Page {
        std::size_t bytes = 0;
        proto::Reply reply;
    };
    Page page(int fd, const proto::List &l) {
        send(fd, ++id_, l);
        for (;;) {
            auto msg = next(fd);
            if (!msg) {
                ADD_FAILURE() << "closed";
                return {};
            }
            auto in = proto::decode_incoming(*msg);
            if (auto *r = std::get_if<proto::Reply>(&std::get<proto::Incoming>(in)))
                return Page{msg->size(), *r};
        }
    }
    // Every page of a list, put together; each page checked.
    proto::ListResult all_pages(int fd, bool own, std::size_t *pages = nullptr) {
        proto::ListResult all;
        proto::List l{own, std::nullopt};
        for (std::size_t n = 1;; ++n) {
            const Page p = page(fd, l);
            EXPECT_LE(p.bytes, proto::kListPageBytes) << "page " << n;
            if (!ok(p.reply)) {
                ADD_FAILURE() << "page " << n << ": " << failure(p.reply).error.message;
                return all;
            }
            auto decoded = proto::decode_list_result(std::get<mcastd::json_check::OwnedValue>(p.reply.body).get());
            proto::append_list_page(all, std::get<proto::ListResult>(std::move(decoded)));
            if (pages)
                *pages = n;
            if (!all.next || n > 1000)
                return all;
            l.after = std::exchange(all.next, std::nullopt);
        }
    }
    static std::vector<MembershipId> ids(const proto::ListResult &l) {
        std::vector<MembershipId> out;
        for (const auto &p : l.ports)
            for (const auto &g : p.groups)
                for (const auto &m : g.members)
                    out.push_back(m.membership);
        return out;
    }

    std::uint64_t id_ = 1;
};

TEST_F(ListSessions, OneClientsThousandsOfMembershipsLockNobodyOutOfTheList) {
    const int hog = greeted();
    joins(hog, "ff15::1", 1000);
    joins(hog, "ff15::2", 1000);
    const int viewer = greeted();
    send(viewer, 2, join_of("ff15::2"));
    const proto::Reply joined = reply(viewer);
    ASSERT_TRUE(ok(joined));
    const auto mine = std::get<proto::JoinResult>(proto::decode_join_result(std::get<mcastd::json_check::OwnedValue>(joined.body).get()));

    std::size_t pages = 0;
    const proto::ListResult all = all_pages(viewer, false, &pages);
    EXPECT_GT(pages, 3u) << "2,001 members are more than a page";
    const auto listed = ids(all);
    EXPECT_EQ(listed.size(), 2001u);
    ASSERT_EQ(all.ports.at(0).groups.size(), 2u);
    EXPECT_EQ(all.ports[0].groups[0].members.size(), 1000u);
    EXPECT_EQ(all.ports[0].groups[1].members.size(), 1001u);
    EXPECT_EQ(all.ports[0].groups[1].members.back().membership, mine.membership);
    const std::string rule = ::getuid() == 0 ? "root" : "any"; // no rules configured
    for (const auto &g : all.ports[0].groups)
        for (const auto &m : g.members)
            ASSERT_EQ(m.rule, rule) << "each member's grant, on every page";

    // Its own: the one membership, and only the group that has it.
    const proto::ListResult own = all_pages(viewer, true, &pages);
    EXPECT_EQ(pages, 1u);
    ASSERT_EQ(own.ports.at(0).groups.size(), 1u);
    EXPECT_EQ(format_gid(own.ports[0].groups[0].mgid), "ff15::2");
    EXPECT_EQ(own.ports[0].groups[0].counts[0], 1001u) << "the group's counts";
    EXPECT_EQ(ids(own), std::vector<MembershipId>{mine.membership});
    // The hog's own are all of its own, in pages too.
    EXPECT_EQ(ids(all_pages(hog, true)).size(), 2000u);
}

TEST_F(ListSessions, AnOldClientGetsTheFirstPageAndACursorTheDaemonDidNotWriteIsRefused) {
    const int hog = greeted();
    joins(hog, "ff15::1", 1500);
    const int old = greeted();
    send_raw(old, R"({"id":7,"op":"list"})");
    const proto::Reply first = reply(old);
    ASSERT_TRUE(ok(first)) << failure(first).error.message;
    EXPECT_TRUE(std::get<mcastd::json_check::OwnedValue>(first.body).get().find("next"));

    for (const char *bad : {"", "0,ff15::1,0", "1,2,3,4", "0,ff15::1,0,-1"}) {
        const Page p = page(old, proto::List{false, std::string(bad)});
        EXPECT_EQ(failure(p.reply).error.code, Errc::invalid_argument) << bad;
        EXPECT_EQ(failure(p.reply).field, "/after") << bad;
    }
}

// A send buffer set below a page (the kernel's default is several times one): the page cannot
// go out as one message, and the daemon says so rather than failing the send.
TEST_F(ListSessions, ABufferSetBelowAPageStillGetsLimitAsTheLastResort) {
    const int hog = greeted();
    joins(hog, "ff15::1", 1000);
    const int small = greeted(4096);
    const Page p = page(small, proto::List{});
    EXPECT_EQ(failure(p.reply).error.code, Errc::limit);
    EXPECT_NE(failure(p.reply).error.message.find("more than one message can carry"), std::string::npos);
    send(small, 3, proto::Status{});
    EXPECT_TRUE(ok(reply(small))) << "the connection goes on";
}

} // namespace
} // namespace mcastd::test
