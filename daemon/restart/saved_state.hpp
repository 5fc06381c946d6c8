// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What rdma-mcastd keeps across its own restarts and crashes (doc/architecture.md §9): for each
// port, the SA bits the daemon itself set in each group; for each client session, its token
// and the memberships it holds. A value type with its JSON form; no I/O (state_file.hpp writes
// and reads it).
//
// The decoder trusts nothing: the file lives in a root-only directory, but it may be torn,
// hand-edited, from another version or from another boot. Every problem is one sentence that
// names the place ("/sessions/2/token: must be 32 lowercase hex digits").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/gid.hpp"
#include "common/record.hpp"
#include "common/request.hpp"
#include "roce/kept_state.hpp"

namespace mcastd::restart {

inline constexpr std::string_view kFormatName = "rdma-mcastd-state";
// Version 2 adds `generation`, which ties a change log (change_log.hpp) to the state file it
// follows; version 1 (no change log) is still read, for the upgrade from the release before.
inline constexpr unsigned kFormatVersion = 2;
inline constexpr unsigned kFormatVersionWithoutLog = 1;

// One group on one port, as far as the daemon's own SA work goes.
struct SavedGroup {
    Gid mgid{};
    std::uint8_t held = 0;      // bits the daemon set and the SA confirmed
    std::uint8_t uncertain = 0; // bits the daemon may have set (a Set or Delete unanswered or in flight)
    std::optional<McRecord> record;
    bool operator==(const SavedGroup &) const = default;
};

struct SavedPort {
    std::string device;
    std::uint8_t port = 0;
    Gid port_gid{}; // the groups are this GID's: a port with another GID now is another member
    std::vector<SavedGroup> groups;
    bool operator==(const SavedPort &) const = default;
};

struct SavedMembership {
    std::uint64_t id = 0;
    std::string device;
    std::uint8_t port = 0;
    Gid mgid{};
    std::uint8_t join_state = 0;
    GroupParams params;
    // What the access policy made of it (frontend::Grant); absent from older files.
    std::string rule{};
    bool created = false;
    bool sa_assigned = false;
    std::string name{}; // the named group's name it joined by; "" when none (and in older files)
    bool operator==(const SavedMembership &) const = default;
};

enum class SavedDoor : std::uint8_t { socket, dbus };

struct SavedSession {
    std::uint64_t id = 0;
    std::string token; // 32 lowercase hex digits (proto::kTokenChars)
    SavedDoor door = SavedDoor::socket;
    ClientInfo who;
    std::vector<gid_t> groups;    // supplementary, and the cgroup: what the access rules match
    std::string cgroup;
    std::string cgroup_unattested; // why its cgroup could not be attested ("" when it was)
    std::uint64_t start_time = 0; // the client's start time (/proc/PID/stat), to tell a reused pid
    unsigned version = 0;         // the protocol version its hello chose
    bool monitor = false;
    std::uint64_t inode = 0;      // socket: the connection's inode, to match its stored fd
    std::string bus_name;         // dbus: the caller's unique name (":1.42"); "" in older files
    std::vector<SavedMembership> memberships;
    bool operator==(const SavedSession &) const = default;
};

struct SavedState {
    std::string boot_id;   // /proc/sys/kernel/random/boot_id: memberships do not survive a reboot
    std::string daemon;    // "rdma-mcastd 0.1.0", for the log
    bool clean = false;    // written by a planned restart after every SA transaction ended
    std::uint64_t next_session = 1;
    // Which write of the state file this is: the change log that follows it says the same
    // (change_log.hpp), so a log older than the file is known as covered by it. 0: a file of
    // format version 1, or a state made of a change log alone.
    std::uint64_t generation = 0;
    // The system bus the D-Bus sessions' unique names are on (its id, 32 lowercase hex digits;
    // sd_bus_get_bus_id()): a bus that restarted hands the same names to other connections.
    // "" when the daemon had no bus.
    std::string bus_id;
    std::vector<SavedPort> ports;
    std::vector<SavedSession> sessions;
    // The RoCE ports' groups and kernel memberships, each on a socket stored in the fd store
    // as "roce-membership-<id>" (roce/kept_state.hpp); absent from older files.
    roce::KeptRoce roce;
    bool operator==(const SavedState &) const = default;
};

std::string encode(const SavedState &state);
// The same text, handed to `drain` in pieces of about 64 KiB (it may consume the string).
void encode(const SavedState &state, const std::function<void(std::string &)> &drain);
// The state, or why it cannot be trusted (one sentence naming the place).
std::variant<SavedState, std::string> decode(std::string_view text);

// ---- the sets log ----
// A Set about to go out, kept in the log beside the state file (state_file.hpp) until the next
// state file covers it: whatever the pace of the state file's writes, the next instance learns
// of every bit the daemon may have set (doc/architecture.md §9). JSON lines: a header, then one
// line per Set.
inline constexpr std::string_view kSetsFormatName = "rdma-mcastd-sets";
inline constexpr unsigned kSetsFormatVersion = 1;

struct SavedSet {
    std::string device;
    std::uint8_t port = 0;
    Gid port_gid{};
    Gid mgid{};
    std::uint8_t bits = 0;
    bool operator==(const SavedSet &) const = default;
};

struct SetsLog {
    std::string boot_id;
    std::string daemon;
    std::vector<SavedSet> sets;
    std::vector<std::string> skipped; // one sentence per line that could not be read ("line 3: ...")
};

// The header line and a Set's line, each with its '\n'.
std::string encode_sets_header(std::string_view boot_id, std::string_view daemon);
std::string encode_set(const SavedSet &s);
// The log, or why its header cannot be trusted. A later line that cannot be read (a torn last
// line) is skipped and named in `skipped`.
std::variant<SetsLog, std::string> decode_sets(std::string_view text);

// Adds each Set's bits to `state` as uncertain, but for those it holds: the port (same device,
// port and GID) and the group are added when missing.
void add_uncertain(SavedState &state, std::span<const SavedSet> sets);

} // namespace mcastd::restart
