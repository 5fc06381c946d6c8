// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The state file on disk: `state.json` in the daemon's state directory ($RUNTIME_DIRECTORY under
// systemd, /run/rdma-mcastd; --state-dir DIR otherwise), replaced atomically on every write (a
// temporary file in the same directory, then rename(2)), so a reader sees the old file or the
// new one, never half of one. /run is a tmpfs: the file survives a crash of the daemon, not a
// reboot, and neither do the SA's memberships of the port.
//
// Beside it, `state.log` (change_log.hpp): what changed since the state file was written, one
// line per change, appended in one write(2) per loop iteration; a Set about to go out is a line
// there before the SA can answer it. Writing the state file is a compaction: the file, then a
// new log holding only its header (both by rename(2)); the header names the file's generation,
// so a crash between the two renames leaves a log the file is known to cover. `state.sets`, the
// sets log of the release before, is still read (an upgrade) and removed by the next state file.
//
// A file that cannot be trusted (torn, not JSON, another format, another boot, a symbolic link
// or anything but a regular file; a log of a generation the file does not have) is renamed to
// `state.json.rejected` (`state.log.rejected`, `state.sets.rejected`) for whoever wants to
// look, named in the log by the caller, and never used; a log goes with its state file. A torn
// line of a log (its last, as a crash leaves it) is named and skipped. Nothing here is fatal: without a state file the daemon starts as if for
// the first time.
//
// The state decides which bits the daemon deletes at the SA and which sessions (tokens
// included) it re-creates, so the directory must be the daemon's alone: a directory (not a
// symbolic link to one), owned by the daemon's effective uid, writable by nobody else. It is
// checked when the StateFile is made, and then used through the descriptor opened for the check
// (openat(2) and friends), so what is checked is what is used. Every file in it is opened with
// O_NOFOLLOW | O_CLOEXEC: a symbolic link planted there is refused, named in the error, never
// followed; renames replace what is at their target without following it either.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "restart/change_log.hpp"
#include "restart/saved_state.hpp"

namespace mcastd::restart {

// /proc/sys/kernel/random/boot_id, or "" when it cannot be read.
std::string current_boot_id();

// Why `dir` cannot be the state directory of a daemon running as `owner`, as a sentence naming
// the directory, its owner and mode and what is wrong ("state directory /run/x (owner uid 1001,
// mode 0775) is owned by uid 1001, not by the daemon's uid 0, and writable by its group"), or
// nullopt. The daemon refuses to start on it (main.cpp, exit 78).
std::optional<std::string> state_dir_problem(const std::filesystem::path &dir, uid_t owner = ::geteuid());

class StateFile {
public:
    // Opens the state directory `dir`. Throws std::runtime_error with state_dir_problem()'s
    // sentence when it cannot be trusted.
    explicit StateFile(std::filesystem::path dir, uid_t owner = ::geteuid());

    const std::filesystem::path &path() const { return path_; }

    const std::filesystem::path &sets_path() const { return sets_path_; }
    const std::filesystem::path &log_path() const { return log_path_; }

    struct Loaded {
        std::optional<SavedState> state; // absent: no file, or it was set aside
        std::string set_aside;           // why the file was set aside (empty: it was not)
        std::size_t sets = 0;            // Sets the old release's sets log added (as uncertain bits)
        std::vector<std::string> sets_skipped; // its lines that could not be read
        std::string sets_set_aside;      // why it was set aside (empty: it was not)
        std::size_t changes = 0;         // lines of the change log replayed over the file
        std::vector<std::string> log_skipped; // the change log's lines that could not be read
        std::string log_set_aside;       // why the change log was set aside (empty: it was not)
        std::string log_covered;         // why the change log was dropped as covered by the file
    };
    // Reads the file, then the logs on top of it (a log alone makes a state too: a crash
    // before the first state file). Any of them from another boot than `boot_id` is set aside.
    Loaded load(const std::string &boot_id) const;

    struct Written {
        bool replaced = false;        // the state file was replaced (its generation is on disk)
        std::uint64_t state_bytes = 0; // the state file's size
        std::uint64_t log_bytes = 0;   // the new change log's (its header)
    };
    // A compaction: writes `state` atomically, then starts its generation's change log (the
    // header alone) and removes the old release's sets log. Returns an error sentence (with
    // errno's text) or nullopt; `written` says how far it got.
    std::optional<std::string> write(const SavedState &state, Written *written = nullptr) const;
    // Appends `lines` (change lines, encode_change()) to the change log in one write(2); a new
    // log starts with `header` (encode_log_header()). Returns an error sentence or nullopt.
    std::optional<std::string> append(std::string_view header, std::string_view lines) const;
    // Removes every file (a stop for good: nothing is left to adopt). Errors are ignored.
    void remove() const;

private:
    struct Dir; // the directory's descriptor, shared by copies
    std::filesystem::path dir_;
    std::filesystem::path path_;
    std::filesystem::path sets_path_;
    std::filesystem::path log_path_;
    std::shared_ptr<const Dir> fd_;

    int dir_fd() const;
};

} // namespace mcastd::restart
