// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// StateKeeper: keeps the state file (state_file.hpp) in step with the daemon, and at start
// takes back what a previous instance left (doc/architecture.md §9).
//
// Writing. Every change (a Set going out, an SA answer, a join, a leave, a client coming or
// going) is written within kCoalesce, so that a burst of joins costs one write, not one each;
// and never more than a fifth of the daemon's time: a large state (100,000 memberships take
// tens of milliseconds) waits four times its last write's cost. The Sets going out are also
// appended to the sets log at the end of the loop iteration that sent them, before their
// answers can be read (both come through the loop's one post queue, in order), so a crash never
// leaves bits at the SA the next instance does not know as possibly its own, however the state
// file's writes are paced. What a crash can lose is what else changed since the last write: a
// join answered a moment before it (its client learns it as lost).
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
#include <string>
#include <vector>

#include "frontend/sessions.hpp"
#include "restart/state_file.hpp"
#include "roce/roce_backend.hpp"
#include "runtime/event_loop.hpp"
#include "server/activation.hpp"
#include "server/socket_server.hpp"
#include "service/service.hpp"

namespace mcastd::restart {

inline constexpr std::chrono::milliseconds kCoalesce{2};

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
    // The RoCE ports' backend, whose groups and kernel memberships the state keeps too.
    void set_roce(roce::RoceBackend *roce) { roce_ = roce; }

    // Something the file keeps changed.
    void changed();
    // A Set is going out: logged at the end of this iteration, and changed().
    void set_going_out(const SaRequest &req);
    // Writes now. Returns whether it could (a failure is logged once per kind).
    bool write(bool clean);
    // From now on nothing is written (a restart wrote its last state, or a stop for good
    // removed the file); `remove` deletes the file.
    void seal(bool remove);

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
    std::string sets_header_;          // a new sets log's first line
    std::vector<SavedSet> sets_;       // going out this iteration, not yet logged
    bool append_posted_ = false;
    Timers::Id timer_ = 0;
    Duration last_cost_{0};
    TimePoint last_end_{};
    std::string last_error_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} // namespace mcastd::restart
