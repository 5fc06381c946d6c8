// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Where the daemon's log goes and how much of it: the console (stderr lines, "info: ...") or
// the journal (structured entries, logging/journal_sink.hpp), switchable at run time for
// org.freedesktop.LogControl1.
//
// One spdlog logger is the default logger; its sink is swapped, never the logger, so code
// that logs keeps calling spdlog::info() and friends.
#pragma once

#include <spdlog/common.h>

#include <optional>
#include <string>
#include <string_view>

namespace mcastd::logging {

inline constexpr const char *kSyslogIdentifier = "rdma-mcastd";

// True when `journal_stream` (the value of $JOURNAL_STREAM, "<dev>:<ino>") names the file
// `fd` is open on: systemd connected that fd to the journal, so structured entries can go
// there directly instead.
bool is_journal_stream(const char *journal_stream, int fd);

// Installs the default logger at `level` (spdlog names) and `target`. Returns an error
// sentence for an unknown target.
std::optional<std::string> setup(spdlog::level::level_enum level, std::string_view target = "auto");

// Log level by its syslog name: emerg, alert, crit, err, warning, notice, info or debug.
// Levels the daemon has no messages at round up to the next one it has (notice shows what
// warning shows); log_level() still reports the name that was set.
std::optional<std::string> set_log_level(std::string_view name);
std::string log_level();

// Log target: "console" (stderr), "journal", or "auto" (the journal when stderr is
// connected to it, see is_journal_stream(), else the console). log_target() reports the name
// that was set; resolved_log_target() what "auto" resolved to.
std::optional<std::string> set_log_target(std::string_view target);
std::string log_target();
std::string resolved_log_target();

} // namespace mcastd::logging
