// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the journal sink hands sd_journal_sendv.
#include <gtest/gtest.h>

#include <spdlog/logger.h>

#include <memory>

#include "logging/journal_sink.hpp"

namespace mcastd::logging {
namespace {

struct Capture {
    std::vector<std::vector<std::string>> entries;
    JournalSink::Send send() {
        return [this](const iovec *items, int count) {
            std::vector<std::string> e;
            for (int i = 0; i < count; ++i)
                e.emplace_back(static_cast<const char *>(items[i].iov_base), items[i].iov_len);
            entries.push_back(std::move(e));
            return 0;
        };
    }
};

class JournalSinkTest : public ::testing::Test {
protected:
    Capture cap;
    std::shared_ptr<spdlog::logger> log =
        std::make_shared<spdlog::logger>("t", std::make_shared<JournalSink>("rdma-mcastd", cap.send()));
    void SetUp() override { log->set_level(spdlog::level::trace); }
};

TEST_F(JournalSinkTest, PlainRecordHasMessagePriorityAndIdentifier) {
    log->warn("port {} down", 1);
    ASSERT_EQ(cap.entries.size(), 1u);
    EXPECT_EQ(cap.entries[0], (std::vector<std::string>{"MESSAGE=port 1 down", "PRIORITY=4",
                                                        "SYSLOG_IDENTIFIER=rdma-mcastd"}));
}

TEST_F(JournalSinkTest, ScopeFieldsRideAlongOnlyWhileTheScopeLives) {
    const Fields f{{"MESSAGE_ID", "f60dd3c5b678467c99198b6d374ef909"}, {"MCAST_MGID", "ff15::1"}};
    {
        FieldScope scope(f);
        log->info("joined");
    }
    log->info("after");
    ASSERT_EQ(cap.entries.size(), 2u);
    EXPECT_EQ(cap.entries[0], (std::vector<std::string>{"MESSAGE=joined", "PRIORITY=6", "SYSLOG_IDENTIFIER=rdma-mcastd",
                                                        "MESSAGE_ID=f60dd3c5b678467c99198b6d374ef909",
                                                        "MCAST_MGID=ff15::1"}));
    EXPECT_EQ(cap.entries[1].size(), 3u);
}

TEST_F(JournalSinkTest, SourceLocationBecomesCodeFields) {
    log->log(spdlog::source_loc{"file.cpp", 12, "fn"}, spdlog::level::err, "x");
    ASSERT_EQ(cap.entries.size(), 1u);
    const auto &e = cap.entries[0];
    EXPECT_NE(std::find(e.begin(), e.end(), "CODE_FILE=file.cpp"), e.end());
    EXPECT_NE(std::find(e.begin(), e.end(), "CODE_LINE=12"), e.end());
    EXPECT_NE(std::find(e.begin(), e.end(), "CODE_FUNC=fn"), e.end());
    EXPECT_NE(std::find(e.begin(), e.end(), "PRIORITY=3"), e.end());
}

TEST(SyslogPriority, EachSpdlogLevelMapsToItsSyslogPriority) {
    EXPECT_EQ(syslog_priority(spdlog::level::trace), 7);
    EXPECT_EQ(syslog_priority(spdlog::level::debug), 7);
    EXPECT_EQ(syslog_priority(spdlog::level::info), 6);
    EXPECT_EQ(syslog_priority(spdlog::level::warn), 4);
    EXPECT_EQ(syslog_priority(spdlog::level::err), 3);
    EXPECT_EQ(syslog_priority(spdlog::level::critical), 2);
}

} // namespace
} // namespace mcastd::logging
