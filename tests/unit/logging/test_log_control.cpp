// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The switches org.freedesktop.LogControl1 drives: level by syslog name, target, and what
// "auto" resolves to.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string>

#include "logging/logging.hpp"

namespace mcastd::logging {
namespace {

std::string dev_ino(int fd) {
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

class LogControl : public ::testing::Test {
protected:
    void SetUp() override {
        ::unsetenv("JOURNAL_STREAM");
        ASSERT_FALSE(setup(spdlog::level::info, "console"));
    }
    void TearDown() override {
        ::unsetenv("JOURNAL_STREAM");
        setup(spdlog::level::info, "console");
    }
};

TEST(JournalStream, MatchesOnlyTheFileTheFdIsOpenOn) {
    const int a = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    EXPECT_TRUE(is_journal_stream(dev_ino(a).c_str(), a));
    EXPECT_FALSE(is_journal_stream(dev_ino(p[0]).c_str(), a));
    EXPECT_FALSE(is_journal_stream(nullptr, a));
    EXPECT_FALSE(is_journal_stream("", a));
    EXPECT_FALSE(is_journal_stream((dev_ino(a) + "x").c_str(), a)) << "trailing garbage";
    EXPECT_FALSE(is_journal_stream("12", a));
    ::close(a);
    ::close(p[0]);
    ::close(p[1]);
}

TEST_F(LogControl, LevelsBySyslogNameRoundTrip) {
    for (const char *name : {"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}) {
        ASSERT_FALSE(set_log_level(name)) << name;
        EXPECT_EQ(log_level(), name);
    }
}

TEST_F(LogControl, LevelsMapToTheSpdlogLevelThatShowsAtMostThat) {
    ASSERT_FALSE(set_log_level("notice"));
    EXPECT_EQ(spdlog::get_level(), spdlog::level::warn) << "info messages are below notice";
    ASSERT_FALSE(set_log_level("crit"));
    EXPECT_EQ(spdlog::get_level(), spdlog::level::critical);
    ASSERT_FALSE(set_log_level("debug"));
    EXPECT_EQ(spdlog::get_level(), spdlog::level::debug);
}

TEST_F(LogControl, LevelSetThroughSpdlogIsReportedBySyslogName) {
    ASSERT_FALSE(setup(spdlog::level::warn, "console"));
    EXPECT_EQ(log_level(), "warning");
    ASSERT_FALSE(set_log_level("notice"));
    spdlog::set_level(spdlog::level::err); // e.g. --log-level after a LogControl1 set
    EXPECT_EQ(log_level(), "err");
    spdlog::set_level(spdlog::level::trace);
    EXPECT_EQ(log_level(), "debug");
}

TEST_F(LogControl, UnknownLevelIsRefusedByName) {
    ASSERT_FALSE(set_log_level("info"));
    auto err = set_log_level("verbose");
    ASSERT_TRUE(err);
    EXPECT_NE(err->find("'verbose'"), std::string::npos) << *err;
    EXPECT_EQ(log_level(), "info") << "unchanged";
}

TEST_F(LogControl, ConsoleWritesPlainStderrLines) {
    ::testing::internal::CaptureStderr();
    spdlog::warn("port {} down", 1);
    spdlog::default_logger()->flush();
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "warning: port 1 down\n");
    EXPECT_EQ(log_target(), "console");
    EXPECT_EQ(resolved_log_target(), "console");
}

TEST_F(LogControl, AutoPicksTheJournalOnlyWhenStderrIsTheJournalStream) {
    ASSERT_FALSE(set_log_target("auto"));
    EXPECT_EQ(log_target(), "auto");
    EXPECT_EQ(resolved_log_target(), "console") << "no JOURNAL_STREAM";

    ::setenv("JOURNAL_STREAM", "1:2", 1);
    ASSERT_FALSE(set_log_target("auto"));
    EXPECT_EQ(resolved_log_target(), "console") << "JOURNAL_STREAM names another file (inherited)";

    ::setenv("JOURNAL_STREAM", dev_ino(STDERR_FILENO).c_str(), 1);
    ASSERT_FALSE(set_log_target("auto"));
    EXPECT_EQ(resolved_log_target(), "journal");
    ::testing::internal::CaptureStderr();
    spdlog::warn("to the journal, not stderr");
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(LogControl, ExplicitTargetsAndUnknownOnes) {
    ASSERT_FALSE(set_log_target("journal"));
    EXPECT_EQ(log_target(), "journal");
    EXPECT_EQ(resolved_log_target(), "journal");
    auto err = set_log_target("kmsg");
    ASSERT_TRUE(err);
    EXPECT_NE(err->find("'kmsg'"), std::string::npos) << *err;
    EXPECT_EQ(log_target(), "journal") << "unchanged";
}

} // namespace
} // namespace mcastd::logging
