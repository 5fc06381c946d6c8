// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "logging/journal_sink.hpp"

// Without this, sd_journal_sendv is a macro that records this file's own location.
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <syslog.h>
#include <systemd/sd-journal.h>

namespace mcastd::logging {

int syslog_priority(spdlog::level::level_enum level) {
    switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug: return LOG_DEBUG;
    case spdlog::level::info: return LOG_INFO;
    case spdlog::level::warn: return LOG_WARNING;
    case spdlog::level::err: return LOG_ERR;
    case spdlog::level::critical: return LOG_CRIT;
    default: return LOG_INFO;
    }
}

std::vector<std::string> journal_entry(const spdlog::details::log_msg &msg, const std::string &identifier,
                                       const Fields *extra) {
    std::vector<std::string> items;
    items.push_back("MESSAGE=" + std::string(msg.payload.data(), msg.payload.size()));
    items.push_back("PRIORITY=" + std::to_string(syslog_priority(msg.level)));
    items.push_back("SYSLOG_IDENTIFIER=" + identifier);
    if (!msg.source.empty()) {
        items.push_back(std::string("CODE_FILE=") + msg.source.filename);
        items.push_back("CODE_LINE=" + std::to_string(msg.source.line));
        items.push_back(std::string("CODE_FUNC=") + msg.source.funcname);
    }
    if (extra)
        for (const Field &f : *extra)
            items.push_back(f.name + "=" + f.value);
    return items;
}

JournalSink::JournalSink(std::string identifier, Send send)
    : identifier_(std::move(identifier)), send_(std::move(send)) {
    if (!send_)
        send_ = [](const iovec *items, int count) { return sd_journal_sendv(items, count); };
}

void JournalSink::sink_it_(const spdlog::details::log_msg &msg) {
    std::vector<std::string> items = journal_entry(msg, identifier_, scope_fields());
    std::vector<iovec> iov;
    iov.reserve(items.size());
    for (std::string &s : items)
        iov.push_back(iovec{s.data(), s.size()});
    // A journal that refuses an entry must not stop the daemon; there is nowhere to report it.
    (void)send_(iov.data(), static_cast<int>(iov.size()));
}

} // namespace mcastd::logging
