// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A spdlog sink for tests that keeps every entry with the journal fields in scope when it was
// logged, as the journal sink sees them; LogCapture makes it the default logger for a scope.
#pragma once

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "logging/fields.hpp"

namespace mcastd::logging::test {

struct Entry {
    spdlog::level::level_enum level;
    std::string text;
    Fields fields;
};

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

// The value of field `name` of `e`, "(absent)" when it has none.
inline std::string field(const Entry &e, const std::string &name) {
    for (const Field &f : e.fields)
        if (f.name == name)
            return f.value;
    return "(absent)";
}

// Records at `level` while it lives, then puts the previous default logger back.
class LogCapture {
public:
    explicit LogCapture(spdlog::level::level_enum level = spdlog::level::info) : before_(spdlog::default_logger()) {
        spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", recorder));
        spdlog::set_level(level);
    }
    ~LogCapture() { spdlog::set_default_logger(before_); }
    LogCapture(const LogCapture &) = delete;
    LogCapture &operator=(const LogCapture &) = delete;

    const std::vector<Entry> &entries() const { return recorder->entries; }

    std::shared_ptr<Recorder> recorder = std::make_shared<Recorder>();

private:
    std::shared_ptr<spdlog::logger> before_;
};

} // namespace mcastd::logging::test
