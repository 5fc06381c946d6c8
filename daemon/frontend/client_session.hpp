// ClientSession: one client of the daemon, whichever front door it came through, and the rules
// every client lives by: hello and the protocol version, the access policy, the limits (joins
// in flight, memberships held), the pending joins, the monitor subscription. The transports
// (server/ for the Unix socket, dbus/ for D-Bus, the daemon's own static groups) keep only
// their framing: they hand a session decoded requests and deliver what it answers.
//
// Requests answer through a callback that runs exactly once, possibly before the call returns
// (a join the engine answers locally, a refusal). The session must outlive its pending joins'
// callbacks only as long as it exists: destroying it releases every membership and drops the
// answers still owed (nobody is left to tell).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>

#include "frontend/access.hpp"
#include "proto/protocol.hpp"
#include "service.hpp"

namespace mcastd::frontend {

class Sessions;

// The front door a client came through: its transport, and the rules it brings.
enum class Door : std::uint8_t {
    socket, // the Unix socket: hello first, the config's access policy
    dbus,   // the system bus: no hello (the interface is versioned), the bus policy admitted it
    daemon, // the daemon's own static groups: no hello, no limits, not counted as a client
};

// What a session's transport does with what the session has to say outside of answers.
class SessionOutlet {
public:
    // A membership of this client was lost or restored.
    virtual void membership_event(MembershipId id, const MembershipEvent &ev) = 0;
    // Something happened in the daemon, for a client that asked to monitor (socket only).
    virtual void monitor_event(const proto::MonitorEvent &) {}

protected:
    ~SessionOutlet() = default;
};

// A join's answer: the membership and its record, or why not. `membership` is 0 when the
// session refused the join before the engine saw it.
struct JoinAnswer {
    MembershipId membership = 0;
    std::optional<proto::Failure> failure;
    McRecord record;
};
using JoinDone = std::function<void(const JoinAnswer &)>;

// Any answer, for transports that take whole protocol requests (the socket).
using Answer = std::variant<proto::Result, proto::Failure>;
using Respond = std::function<void(Answer)>;

class ClientSession final : private MembershipEventSink {
public:
    // Through Sessions::open(), which admits it.
    ClientSession(Sessions &sessions, Door door, Credentials who, SessionOutlet &outlet);
    ~ClientSession() override;
    ClientSession(const ClientSession &) = delete;
    ClientSession &operator=(const ClientSession &) = delete;

    Door door() const { return door_; }
    const Credentials &who() const { return who_; }
    // The access policy refused this client's hello: its transport closes the connection once
    // the answer is out, and the session takes no request any more.
    bool refused() const { return refused_; }
    bool monitoring() const { return monitor_; }

    // Runs one decoded request of the client protocol; `respond` runs exactly once.
    void handle(std::uint64_t request_id, const proto::Request &request, const Respond &respond);

    // The parts handle() dispatches to, for transports that read requests their own way.
    std::variant<proto::HelloResult, proto::Failure> hello(const proto::Hello &h);
    // Starts a join identified by `request_id` (unique among this session's pending joins).
    // Returns the membership id while it is pending (0 when refused at once); `done` runs once.
    MembershipId join(std::uint64_t request_id, const JoinRequest &req, JoinDone done);
    std::optional<proto::Failure> leave(const proto::Leave &l);
    proto::ListResult list() const;
    proto::StatusResult status() const;
    void set_monitor(bool on);

private:
    friend class Sessions;
    void membership_event(ClientId client, MembershipId id, const MembershipEvent &ev) override;
    std::optional<proto::Failure> check_join(std::uint64_t request_id) const;

    Sessions &sessions_;
    Door door_;
    Credentials who_;
    SessionOutlet &outlet_;
    ClientId client_ = 0;
    bool greeted_;
    bool refused_ = false;
    bool monitor_ = false;
    std::unordered_map<std::uint64_t, MembershipId> pending_; // join request id -> membership
    std::size_t held_ = 0;                                    // memberships joined and not left
    // Set while the session exists: join answers that arrive after it is gone are dropped.
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} // namespace mcastd::frontend
