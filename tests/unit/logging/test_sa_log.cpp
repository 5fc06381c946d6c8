// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA-load entries (logging/sa_log.hpp): a warning when amplification starts, an info
// entry when it ends, each with its MESSAGE_ID and the interval's figures as fields.
#include <gtest/gtest.h>

#include "log_recorder.hpp"
#include "logging/message_ids.hpp"
#include "logging/sa_log.hpp"

namespace mcastd::logging {
namespace {

using test::field;

TEST(SaLog, AWarningWhenItStartsAndANoteWhenItEndsWithTheFigures) {
    std::vector<test::Entry> entries;
    {
        test::LogCapture capture;
        log_sa_load({true, 3.0, 300, 100, 200, 150, 60});
        log_sa_load({false, 1.0, 100, 100, 0, 0, 60});
        entries = capture.entries();
    }

    ASSERT_EQ(entries.size(), 2u);
    const test::Entry &w = entries[0];
    EXPECT_EQ(w.level, spdlog::level::warn);
    EXPECT_NE(w.text.find("3.00 MADs per transaction in the last 60 s"), std::string::npos) << w.text;
    EXPECT_EQ(field(w, "MESSAGE_ID"), kSaAmplified.id);
    EXPECT_EQ(field(w, "SA_AMPLIFICATION"), "3.00");
    EXPECT_EQ(field(w, "SA_MADS_SENT"), "300");
    EXPECT_EQ(field(w, "SA_TRANSACTIONS"), "100");
    EXPECT_EQ(field(w, "SA_RETRANSMITS"), "200");
    EXPECT_EQ(field(w, "SA_LATE"), "150");
    const test::Entry &i = entries[1];
    EXPECT_EQ(i.level, spdlog::level::info);
    EXPECT_EQ(field(i, "MESSAGE_ID"), kSaAmplified.id);
    EXPECT_EQ(field(i, "SA_AMPLIFICATION"), "1.00");
}

} // namespace
} // namespace mcastd::logging
