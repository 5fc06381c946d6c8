// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The state file on disk: `state.json` in the daemon's state directory ($RUNTIME_DIRECTORY under
// systemd, /run/rdma-mcastd; --state-dir DIR otherwise), replaced atomically on every write (a
// temporary file in the same directory, then rename(2)), so a reader sees the old file or the
// new one, never half of one. /run is a tmpfs: the file survives a crash of the daemon, not a
// reboot, and neither do the SA's memberships of the port.
//
// Beside it, `state.sets` (saved_state.hpp): the Sets sent since the state file was last written,
// appended in one write(2) per loop iteration and removed by the next state file, which covers
// them. The state file's writes are paced; the log's are not, so every bit the daemon may have
// set is on disk before the SA can answer the Set that carries it.
//
// A file that cannot be trusted (torn, not JSON, another format, another boot, a symbolic link
// or anything but a regular file) is renamed to `state.json.rejected` (`state.sets.rejected`)
// for whoever wants to look, named in the log by the caller, and never used; a sets log goes
// with its state file. Nothing here is fatal: without a state file the daemon starts as if for
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

    struct Loaded {
        std::optional<SavedState> state; // absent: no file, or it was set aside
        std::string set_aside;           // why the file was set aside (empty: it was not)
        std::size_t sets = 0;            // Sets the log added to `state` (as uncertain bits)
        std::vector<std::string> sets_skipped; // the log's lines that could not be read
        std::string sets_set_aside;      // why the log was set aside (empty: it was not)
    };
    // Reads the file, then the sets log on top of it (the log alone makes a state too: a crash
    // before the first state file). Either from another boot than `boot_id` is set aside too.
    Loaded load(const std::string &boot_id) const;

    // Writes `state` atomically, then removes the sets log it covers. Returns an error sentence
    // (with errno's text) or nullopt.
    std::optional<std::string> write(const SavedState &state) const;
    // Appends `sets` to the sets log in one write(2); a new log starts with `header`
    // (encode_sets_header()). Returns an error sentence or nullopt.
    std::optional<std::string> append(std::string_view header, std::span<const SavedSet> sets) const;
    // Removes both files (a stop for good: nothing is left to adopt). Errors are ignored.
    void remove() const;

private:
    struct Dir; // the directory's descriptor, shared by copies
    std::filesystem::path dir_;
    std::filesystem::path path_;
    std::filesystem::path sets_path_;
    std::shared_ptr<const Dir> fd_;

    int dir_fd() const;
};

} // namespace mcastd::restart
