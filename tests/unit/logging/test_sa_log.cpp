// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The SA-load entries (logging/sa_log.hpp): a warning when amplification starts, an info
// entry when it ends, each with its MESSAGE_ID and the interval's figures as fields.
#include <gtest/gtest.h>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <mutex>

#include "logging/fields.hpp"
#include "logging/message_ids.hpp"
#include "logging/sa_log.hpp"

namespace mcastd::logging {
namespace {

struct Entry {
    spdlog::level::level_enum level;
    std::string text;
    Fields fields;
};

// Records each entry with the fields in scope when it was logged, as the journal sink sees them.
class Recorder : public spdlog::sinks::base_sink<std::mutex> {
public:
    std::vector<Entry> entries;

protected:
    void sink_it_(const spdlog::details::log_msg &msg) override {
        const Fields *f = scope_fields();
        entries.push_back({msg.level, std::string(msg.payload.begin(), msg.payload.end()), f ? *f : Fields{}});
    }
    void flush_() override {}
};

std::string field(const Entry &e, const std::string &name) {
    for (const Field &f : e.fields)
        if (f.name == name)
            return f.value;
    return "(absent)";
}

TEST(SaLog, AWarningWhenItStartsAndANoteWhenItEndsWithTheFigures) {
    auto recorder = std::make_shared<Recorder>();
    const auto before = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", recorder));
    spdlog::set_level(spdlog::level::info);
    log_sa_load({true, 3.0, 300, 100, 200, 150, 60});
    log_sa_load({false, 1.0, 100, 100, 0, 0, 60});
    spdlog::set_default_logger(before);

    ASSERT_EQ(recorder->entries.size(), 2u);
    const Entry &w = recorder->entries[0];
    EXPECT_EQ(w.level, spdlog::level::warn);
    EXPECT_NE(w.text.find("3.00 MADs per transaction in the last 60 s"), std::string::npos) << w.text;
    EXPECT_EQ(field(w, "MESSAGE_ID"), kSaAmplified.id);
    EXPECT_EQ(field(w, "SA_AMPLIFICATION"), "3.00");
    EXPECT_EQ(field(w, "SA_MADS_SENT"), "300");
    EXPECT_EQ(field(w, "SA_TRANSACTIONS"), "100");
    EXPECT_EQ(field(w, "SA_RETRANSMITS"), "200");
    EXPECT_EQ(field(w, "SA_LATE"), "150");
    const Entry &i = recorder->entries[1];
    EXPECT_EQ(i.level, spdlog::level::info);
    EXPECT_EQ(field(i, "MESSAGE_ID"), kSaAmplified.id);
    EXPECT_EQ(field(i, "SA_AMPLIFICATION"), "1.00");
}

} // namespace
} // namespace mcastd::logging
