// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A spdlog sink that writes each record to the journal with sd_journal_sendv(): MESSAGE,
// PRIORITY, SYSLOG_IDENTIFIER, CODE_* when the record has a source location, and the fields
// of the live FieldScope (logging/fields.hpp). spdlog's own systemd_sink cannot carry extra
// fields and sends trace and debug alike.
#pragma once

#include <sys/uio.h>

#include <spdlog/sinks/base_sink.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "logging/fields.hpp"

namespace mcastd::logging {

// The syslog priority (0 emerg .. 7 debug) of a spdlog level.
int syslog_priority(spdlog::level::level_enum level);

// The "FIELD=value" items of one journal entry.
std::vector<std::string> journal_entry(const spdlog::details::log_msg &msg, const std::string &identifier,
                                       const Fields *extra);

class JournalSink final : public spdlog::sinks::base_sink<std::mutex> {
public:
    // Where the entry goes; sd_journal_sendv by default, a capture in tests.
    using Send = std::function<int(const iovec *items, int count)>;
    explicit JournalSink(std::string identifier, Send send = {});

protected:
    void sink_it_(const spdlog::details::log_msg &msg) override;
    void flush_() override {}

private:
    std::string identifier_;
    Send send_;
};

} // namespace mcastd::logging
