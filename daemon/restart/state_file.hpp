// The state file on disk: `state.json` in the daemon's state directory ($RUNTIME_DIRECTORY under
// systemd, /run/rdma-mcastd; --state-dir DIR otherwise), replaced atomically on every write (a
// temporary file in the same directory, then rename(2)), so a reader sees the old file or the
// new one, never half of one. /run is a tmpfs: the file survives a crash of the daemon, not a
// reboot, and neither do the SA's memberships of the port.
//
// A file that cannot be trusted (torn, not JSON, another format, another boot) is renamed to
// `state.json.rejected` for whoever wants to look, named in the log by the caller, and never
// used. Nothing here is fatal: without a state file the daemon starts as if for the first time.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "restart/saved_state.hpp"

namespace mcastd::restart {

// /proc/sys/kernel/random/boot_id, or "" when it cannot be read.
std::string current_boot_id();

class StateFile {
public:
    explicit StateFile(std::filesystem::path dir);

    const std::filesystem::path &path() const { return path_; }

    struct Loaded {
        std::optional<SavedState> state; // absent: no file, or it was set aside
        std::string set_aside;           // why the file was set aside (empty: it was not)
    };
    // Reads the file; one from another boot than `boot_id` is set aside too.
    Loaded load(const std::string &boot_id) const;

    // Writes `state` atomically. Returns an error sentence (with errno's text) or nullopt.
    std::optional<std::string> write(const SavedState &state) const;
    // Removes the file (a stop for good: nothing is left to adopt). Errors are ignored.
    void remove() const;

private:
    std::filesystem::path dir_;
    std::filesystem::path path_;
};

} // namespace mcastd::restart
