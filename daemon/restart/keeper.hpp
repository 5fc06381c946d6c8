// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// StateKeeper: keeps the state file (state_file.hpp) in step with the daemon, and at start
// takes back what a previous instance left (doc/architecture.md §9).
//
// Writing. The state file is written whole only at a compaction; every change in between is a
// line of the change log (change_log.hpp), so a join costs a line whatever else the daemon
// holds. The keeper learns what changed by key: a membership (the engine's note that it joined
// or left), a group's bits (an engine note about it, an SA transaction about it going out or
// answered), the sessions (a session came, went, said hello). Within kCoalesce of a change (a
// burst of joins: one append) it reads what those keys hold now (Service::member_view, and
// Service::group_view without the members: O(1) each), compares the groups and sessions with
// what the disk says (state_mirror.hpp) and appends a line for each difference and for each
// membership that came or went, in one write(2). A membership that came and went within the
// delay costs nothing.
//
// Compaction writes the state file and starts a new log. It happens once the log has grown to
// kCompactFactor times the state file (and kCompactMinBytes), so every byte of state file
// written is paid for by at least that many bytes of changes: the cost per change stays O(1)
// on average however large the state, and what the next instance reads at start is at most
// (1 + kCompactFactor) times the state. It is paced as every full write was: a state whose
// write takes over a millisecond is compacted at most a fifth of the time (meanwhile the log
// just grows). The first write after start, the first after a port came or changed its GID
// (its groups are under another key), and one after changed() are compactions too.
//
// The Sets going out are log lines too, appended at the end of the loop iteration that sent
// them, before their answers can be read (both come through the loop's one post queue, in
// order), so a crash never leaves bits at the SA the next instance does not know as possibly
// its own. So is a RoCE kernel membership about to be added on a socket the fd store keeps: its
// line goes out at once, before the kernel is asked, so the next instance can drop it if the
// state never came to name it. What a crash can lose is what changed within kCoalesce before it:
// a join answered a moment before (its client learns it as lost).
//
// Taking back. restore() adopts, for each port the host still has under the same GID, the
// groups the previous instance set; re-creates every session detached, with its memberships
// under their old ids; and gives each connection the service manager kept back to its session
// (once its inode and its peer's uid match); then the RoCE ports' groups and kernel
// memberships, for the memberships taken back (roce_backend.hpp: the sockets the fd store kept,
// or made again). The caller ends the adoption once the static groups are joined too, and
// releases the detached sessions nobody resumes within the grace.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/sessions.hpp"
#include "restart/state_file.hpp"
#include "restart/state_mirror.hpp"
#include "roce/roce_backend.hpp"
#include "runtime/event_loop.hpp"
#include "server/activation.hpp"
#include "server/socket_server.hpp"
#include "service/service.hpp"

namespace mcastd::restart {

inline constexpr std::chrono::milliseconds kCoalesce{2};
// Compaction once the change log holds this many times the state file's bytes. Every byte of
// state file written is paid for by that many bytes of changes, so a change costs at most
// 1 + 1/kCompactFactor times its own line on average; what a start after a crash reads is at
// most 1 + kCompactFactor times the state (a planned restart compacts first: the next instance
// reads the state file alone). 2: a membership's line is about as long as its part of the
// file, so with 1 a host taking on memberships rewrote its whole state at every doubling
// and then some (100,000 joins ran a third slower); 2 halves that, and a crash's start reads
// at most three times the state.
inline constexpr std::uint64_t kCompactFactor = 2;
// ... and at least this much: a small state is not rewritten for every few changes.
inline constexpr std::uint64_t kCompactMinBytes = 256 * 1024;

class StateKeeper {
public:
    StateKeeper(runtime::EventLoop &loop, Service &service, frontend::Sessions &sessions, StateFile file,
                std::string daemon_name);
    ~StateKeeper();
    StateKeeper(const StateKeeper &) = delete;
    StateKeeper &operator=(const StateKeeper &) = delete;

    // What the daemon holds now; `clean` for a planned restart that drained the SA first.
    SavedState snapshot(bool clean) const;

    // The system bus the D-Bus sessions are on (SavedState::bus_id); "" without one.
    void set_bus_id(std::string id) { bus_id_ = std::move(id); }
    // The RoCE ports' backend, whose groups and kernel memberships the state keeps too; a
    // kernel membership it is about to add on a stored socket is written down at once.
    void set_roce(roce::RoceBackend *roce);

    // Listens to the service and the sessions for what changes (after restore()); the
    // destructor stops listening.
    void watch();
    // Something changed that the keeper cannot name (or an instance's first state is due): the
    // next write, within kCoalesce, is a compaction.
    void changed();
    // A Set is going out: logged at the end of this iteration, and its group re-read.
    void set_going_out(const SaRequest &req);
    // Writes now: the changes, or (`clean`, for a planned restart; or when due) a compaction.
    // Returns whether it could (a failure is logged once per kind).
    bool write(bool clean);
    // From now on nothing is written (a restart wrote its last state, or a stop for good
    // removed the file); `remove` deletes the file.
    void seal(bool remove);

    // What the disk holds, for tests and the benchmark: the state file's bytes at the last
    // compaction, the change log's since, and the compactions so far.
    std::uint64_t state_bytes() const { return state_bytes_; }
    std::uint64_t log_bytes() const { return log_bytes_; }
    std::uint64_t compactions() const { return compactions_; }
    // kCompactMinBytes by default; tests lower it.
    void set_compact_min_bytes(std::uint64_t bytes) { compact_min_bytes_ = bytes; }

    struct Restored {
        std::size_t groups = 0, memberships = 0, sessions = 0, connections = 0;
        std::size_t kernel_adopted = 0, kernel_remade = 0; // RoCE kernel memberships (roce::Adoption)
        std::size_t kernel_lost = 0; // memberships released: their kernel membership was not kept
        std::vector<std::string> set_aside; // one sentence per thing not taken back
    };
    // Takes back `state` (see above). `stored` are the connections the service manager kept;
    // those no session claims are closed and removed from the store. `kernel_sockets` are the
    // RoCE membership sockets it kept, by id: adopted, or closed and removed.
    Restored restore(const SavedState &state, std::vector<server::StoredConnection> stored,
                     server::SocketServer &server, std::map<std::uint64_t, int> kernel_sockets = {});

private:
    void append_sets();
    // A kernel membership about to be added on a stored socket: its line, appended at once.
    void roce_adding(const roce::KeptAdding &a);
    // `m` as the state keeps it, with its session's id; nullopt when the state does not keep
    // it (pending, or its session is not kept).
    std::optional<MembershipChange> saved_member(const MemberView &m, PortIndex port, const Gid &mgid) const;
    roce::KeptRoce kept_roce() const;
    void group_changed(PortIndex port, const Gid &mgid);
    // A membership joined or left (the note names it).
    void member_changed(const EngineNote &n);
    // Whether a port's name or GID is not what the last compaction saw.
    bool ports_changed() const;
    void sessions_changed();
    void arm();
    // The coalescing timer's work: the changes, then a compaction if one is due.
    void flush();
    // Appends what the keys changed since hold now; false when the append failed.
    bool append_changes();
    // A compaction now, or when the pace allows.
    void compact_when_due();
    bool compact(bool clean);
    // Logs `err` once per kind (nullopt: the write worked, said once after a failure).
    bool report(const std::optional<std::string> &err);

    runtime::EventLoop &loop_;
    Service &service_;
    frontend::Sessions &sessions_;
    StateFile file_;
    std::string daemon_name_;
    std::string boot_id_;
    std::string bus_id_;
    roce::RoceBackend *roce_ = nullptr;
    bool sealed_ = false;
    bool watching_ = false;
    std::uint64_t generation_ = 0;      // of the state file on disk
    std::string log_header_;            // a new change log's first line (this generation's)
    StateMirror mirror_;                // what the disk says, once a compaction made it known
    bool mirror_valid_ = false;
    std::vector<PortKey> port_keys_;    // the ports as the last compaction saw them, by index
    std::set<std::pair<PortIndex, Gid>, PortGidLess> dirty_groups_;
    // The memberships that joined or left since the last write, by id: what the last note said.
    struct MemberChange {
        bool joined = false;
        PortIndex port = 0;
        Gid mgid{};
        ClientId client = 0;
    };
    std::map<MembershipId, MemberChange> members_;
    bool sessions_dirty_ = false;
    std::vector<SavedSet> sets_;        // going out this iteration, not yet logged
    bool append_posted_ = false;
    Timers::Id timer_ = 0;              // the coalescing delay
    Timers::Id compact_timer_ = 0;      // a compaction waiting for its pace
    std::uint64_t state_bytes_ = 0, log_bytes_ = 0, compactions_ = 0;
    std::uint64_t compact_min_bytes_ = kCompactMinBytes;
    Duration last_cost_{0};
    TimePoint last_end_{};
    std::string last_error_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} // namespace mcastd::restart
