// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// AmplificationWatch: one report when an interval's MADs per transaction go above the
// threshold, none while it stays there, one when it comes back; quiet intervals say nothing.
#include <gtest/gtest.h>

#include "sa/amplification_watch.hpp"

namespace mcastd::sa {
namespace {

TxnStats counters(std::uint64_t sent, std::uint64_t responses, std::uint64_t timeouts = 0,
                  std::uint64_t retransmits = 0, std::uint64_t late = 0) {
    TxnStats s;
    s.sent = sent;
    s.responses = responses;
    s.timeouts = timeouts;
    s.retransmits = retransmits;
    s.late = late;
    return s;
}

TEST(AmplificationWatch, ReportsAnEpisodeOnceWhenItStartsAndOnceWhenItEnds) {
    AmplificationWatch w(1.2, 10);
    EXPECT_FALSE(w.sample(counters(100, 100))) << "one MAD per transaction";
    // 300 more MADs for 100 more transactions (200 retransmits, 150 answers came late).
    const auto start = w.sample(counters(400, 190, 10, 200, 150));
    ASSERT_TRUE(start);
    EXPECT_TRUE(start->amplified);
    EXPECT_DOUBLE_EQ(start->ratio, 3.0);
    EXPECT_EQ(start->sent, 300u);
    EXPECT_EQ(start->ended, 100u);
    EXPECT_EQ(start->retransmits, 200u);
    EXPECT_EQ(start->late, 150u);
    EXPECT_FALSE(w.sample(counters(700, 290, 10, 400, 300))) << "still amplified: no second report";
    EXPECT_TRUE(w.amplified());
    const auto end = w.sample(counters(800, 390, 10, 400, 300));
    ASSERT_TRUE(end);
    EXPECT_FALSE(end->amplified);
    EXPECT_DOUBLE_EQ(end->ratio, 1.0);
}

TEST(AmplificationWatch, AQuietIntervalJudgesNothing) {
    AmplificationWatch w(1.2, 10);
    EXPECT_FALSE(w.sample(counters(5, 1, 1, 3))) << "2 transactions: too few to call a storm";
    EXPECT_FALSE(w.amplified());
    ASSERT_TRUE(w.sample(counters(105, 32, 1, 50)));
    EXPECT_FALSE(w.sample(counters(106, 32, 1, 51))) << "an idle interval does not end the episode";
    EXPECT_TRUE(w.amplified());
}

} // namespace
} // namespace mcastd::sa
