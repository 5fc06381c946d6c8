// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// AbsentMgids: what a port's SA recently said does not exist, for a while and up to a bound.
#include <gtest/gtest.h>

#include "core/absent_mgids.hpp"

namespace mcastd {
namespace {

using namespace std::chrono_literals;

const TimePoint t0{std::chrono::seconds(100)};

Gid mgid(std::uint8_t n) {
    Gid g{0xff, 0x15};
    g[15] = n;
    return g;
}

TEST(AbsentMgids, RemembersForTheMemoryOnly) {
    AbsentMgids a(2s, 8);
    a.seen_absent(mgid(1), t0);
    EXPECT_TRUE(a.recently_absent(mgid(1), t0));
    EXPECT_TRUE(a.recently_absent(mgid(1), t0 + 2s - 1us));
    EXPECT_FALSE(a.recently_absent(mgid(1), t0 + 2s));
    EXPECT_FALSE(a.recently_absent(mgid(2), t0));
}

TEST(AbsentMgids, SeenAgainStartsItsMemoryAgain) {
    AbsentMgids a(2s, 2);
    a.seen_absent(mgid(1), t0);
    a.seen_absent(mgid(2), t0 + 1s);
    a.seen_absent(mgid(1), t0 + 1500ms); // now the younger of the two
    EXPECT_TRUE(a.recently_absent(mgid(1), t0 + 3s));
    a.seen_absent(mgid(3), t0 + 1600ms); // over the bound: 2 goes, being the oldest
    EXPECT_FALSE(a.recently_absent(mgid(2), t0 + 1600ms));
    EXPECT_TRUE(a.recently_absent(mgid(1), t0 + 1600ms));
    EXPECT_TRUE(a.recently_absent(mgid(3), t0 + 1600ms));
    EXPECT_EQ(a.size(), 2u);
}

TEST(AbsentMgids, KeepsAtMostItsCapacityOldestForgottenFirst) {
    AbsentMgids a(2s, 3);
    for (std::uint8_t n = 1; n <= 5; ++n)
        a.seen_absent(mgid(n), t0);
    EXPECT_EQ(a.size(), 3u);
    EXPECT_FALSE(a.recently_absent(mgid(1), t0));
    EXPECT_FALSE(a.recently_absent(mgid(2), t0));
    for (std::uint8_t n = 3; n <= 5; ++n)
        EXPECT_TRUE(a.recently_absent(mgid(n), t0)) << int(n);
}

TEST(AbsentMgids, ExpiredEntriesMakeRoomFirst) {
    AbsentMgids a(2s, 2);
    a.seen_absent(mgid(1), t0);
    a.seen_absent(mgid(2), t0 + 1s);
    a.seen_absent(mgid(3), t0 + 2s); // 1 expired: 2 stays
    EXPECT_TRUE(a.recently_absent(mgid(2), t0 + 2s));
    EXPECT_EQ(a.size(), 2u);
}

TEST(AbsentMgids, ForgetAndClear) {
    AbsentMgids a(2s, 8);
    a.seen_absent(mgid(1), t0);
    a.seen_absent(mgid(2), t0);
    a.forget(mgid(1));
    a.forget(mgid(9)); // unknown: a no-op
    EXPECT_FALSE(a.recently_absent(mgid(1), t0));
    EXPECT_TRUE(a.recently_absent(mgid(2), t0));
    a.clear();
    EXPECT_FALSE(a.recently_absent(mgid(2), t0));
    EXPECT_EQ(a.size(), 0u);
}

} // namespace
} // namespace mcastd
