// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "logging/logging.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "logging/journal_sink.hpp"

namespace mcastd::logging {

namespace {

struct LevelName {
    std::string_view name;
    spdlog::level::level_enum level;
};
// spdlog has no alert, emergency or notice: each takes the nearest level that shows at most
// what was asked for.
constexpr std::array<LevelName, 8> kLevels{{{"emerg", spdlog::level::critical},
                                            {"alert", spdlog::level::critical},
                                            {"crit", spdlog::level::critical},
                                            {"err", spdlog::level::err},
                                            {"warning", spdlog::level::warn},
                                            {"notice", spdlog::level::warn},
                                            {"info", spdlog::level::info},
                                            {"debug", spdlog::level::debug}}};

struct State {
    std::shared_ptr<spdlog::sinks::dist_sink_mt> dist;
    std::string target = "auto";
    std::string resolved = "console";
    std::string level_name; // as set through set_log_level(); empty when set otherwise
    spdlog::level::level_enum level_set = spdlog::level::info;
};

State &state() {
    static State s;
    return s;
}

spdlog::sink_ptr make_sink(const std::string &resolved) {
    if (resolved == "journal")
        return std::make_shared<JournalSink>(kSyslogIdentifier);
    auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    console->set_pattern("%^%l%$: %v");
    return console;
}

} // namespace

bool is_journal_stream(const char *journal_stream, int fd) {
    if (!journal_stream)
        return false;
    unsigned long long dev = 0, ino = 0;
    char tail = 0;
    if (std::sscanf(journal_stream, "%llu:%llu%c", &dev, &ino, &tail) != 2)
        return false;
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        return false;
    return st.st_dev == dev && st.st_ino == ino;
}

std::optional<std::string> setup(spdlog::level::level_enum level, std::string_view target) {
    State &s = state();
    if (!s.dist) {
        s.dist = std::make_shared<spdlog::sinks::dist_sink_mt>();
        spdlog::set_default_logger(std::make_shared<spdlog::logger>(kSyslogIdentifier, s.dist));
    }
    spdlog::set_level(level);
    s.level_name.clear();
    return set_log_target(target);
}

std::optional<std::string> set_log_level(std::string_view name) {
    for (const LevelName &l : kLevels) {
        if (l.name != name)
            continue;
        spdlog::set_level(l.level);
        state().level_name = name;
        state().level_set = l.level;
        return std::nullopt;
    }
    return "unknown log level '" + std::string(name) +
           "': use emerg, alert, crit, err, warning, notice, info or debug";
}

std::string log_level() {
    const State &s = state();
    const auto now = spdlog::get_level();
    if (!s.level_name.empty() && now == s.level_set)
        return s.level_name;
    switch (now) {
    case spdlog::level::trace:
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warning";
    case spdlog::level::err: return "err";
    case spdlog::level::critical: return "crit";
    default: return "emerg"; // off: syslog has no level that shows nothing
    }
}

std::optional<std::string> set_log_target(std::string_view target) {
    std::string resolved;
    if (target == "console" || target == "journal")
        resolved = target;
    else if (target == "auto")
        resolved = is_journal_stream(std::getenv("JOURNAL_STREAM"), STDERR_FILENO) ? "journal" : "console";
    else
        return "unknown log target '" + std::string(target) + "': use console, journal or auto";
    State &s = state();
    if (!s.dist)
        return "logging::setup() has not run";
    s.dist->set_sinks({make_sink(resolved)});
    s.target = target;
    s.resolved = std::move(resolved);
    return std::nullopt;
}

std::string log_target() { return state().target; }
std::string resolved_log_target() { return state().resolved; }

} // namespace mcastd::logging
