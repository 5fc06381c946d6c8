// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// ClientSession: one client of the daemon, whichever front door it came through, and the rules
// every client lives by: hello and the protocol version, the access policy (its allow lists,
// rules and quotas, asked before every join), the limits (joins in flight, memberships held),
// the pending joins, the monitor subscription. The transports
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
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "frontend/access.hpp"
#include "proto/protocol.hpp"
#include "service/service.hpp"

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
    // Something happened in the daemon, for a client that asked to monitor (socket only). A
    // transport may drop such events for a client that does not read them (it says how many).
    virtual void monitor_event(const proto::MonitorEvent &) {}
    // Root evicted this client with `disconnect`: the transport ends the client's connection
    // (the session is destroyed with it, later, from the loop). `why` is for the log.
    virtual void disconnect(const std::string &why) = 0;
    // False for the stand-in of a detached session (Sessions): what it is told nobody hears.
    virtual bool attached() const { return true; }

protected:
    ~SessionOutlet() = default;
};

// A membership the daemon no longer holds for the client, with where it was: what not_held()
// tells, and what a detached session keeps of it for the transport that takes it back.
struct LostMembership {
    MembershipId id = 0;
    std::string device;
    std::uint8_t port = 0;
    Gid mgid{};
    Error why;
};

// A join's answer: the membership and its record, or why not. `membership` is 0 when the
// session refused the join before the engine saw it.
struct JoinAnswer {
    MembershipId membership = 0;
    std::optional<proto::Failure> failure;
    McRecord record;
};
using JoinDone = std::function<void(const JoinAnswer &)>;

// What the access policy made of one membership (`list` shows it), and where it is counted.
struct Grant {
    std::string rule;         // the rule that admitted it, or one of policy::k*Label
    bool created = false;     // its join created the group (or it carries on the create of the
                              // uid's membership that did): counted in creates_per_uid
    bool sa_assigned = false; // its join asked the SA for an MGID
    std::string flagged;      // why the rules in force would refuse it now; "" if they would not
    std::string name{};       // a named group's name (`list` shows it), "" when joined by MGID
    Gid mgid{};               // its group's MGID; zero until the SA assigns one
    PortIndex port = 0;       // its port (kNoPort: none the daemon serves; the join fails)
};
inline constexpr PortIndex kNoPort = static_cast<PortIndex>(-1);

// Any answer, for transports that take whole protocol requests (the socket).
using Answer = std::variant<proto::Result, proto::Failure>;
using Respond = std::function<void(Answer)>;

// A session as a previous instance of the daemon left it (restart/keeper.hpp restores them):
// greeted already, with its id, token and monitor subscription; its memberships follow.
struct RestoredSession {
    std::uint64_t id = 0;
    std::string token;
    Door door = Door::socket;
    Credentials who;
    std::uint64_t start_time = 0;
    unsigned version = 1;
    bool monitor = false;
};

class ClientSession final : private MembershipEventSink {
public:
    // Through Sessions::open(), which admits it (its client slot is taken here).
    ClientSession(Sessions &sessions, Door door, Credentials who, SessionOutlet &outlet);
    // Through Sessions::restore(): a session of the previous instance, with no transport yet.
    ClientSession(Sessions &sessions, const RestoredSession &saved, SessionOutlet &outlet);
    ~ClientSession() override;
    ClientSession(const ClientSession &) = delete;
    ClientSession &operator=(const ClientSession &) = delete;

    Door door() const { return door_; }
    const Credentials &who() const { return who_; }
    // The access policy refused this client's hello: its transport closes the connection once
    // the answer is out, and the session takes no request any more.
    bool refused() const { return refused_; }
    // The client said hello (or needs none: D-Bus, the daemon's own door, a restored session).
    // Only a greeted session is kept across a restart.
    bool greeted() const { return greeted_; }
    bool monitoring() const { return monitor_; }
    // The daemon-wide session id and its secret (proto::SessionTicket); the protocol version
    // hello chose (0 before it); the engine's client; memberships joined and not left.
    std::uint64_t id() const { return id_; }
    const std::string &token() const { return token_; }
    unsigned version() const { return version_; }
    ClientId client() const { return client_; }
    std::size_t held() const { return grants_.size(); }
    // The memberships joined and not left, with what the policy made of each.
    const std::unordered_map<MembershipId, Grant> &grants() const { return grants_; }
    // How many of them are flagged: counted as flags come and go, so that `status`, which any
    // client may ask for at will, costs the sessions and not every membership the host holds.
    std::size_t flagged() const { return flagged_; }
    // When the client process started (/proc/PID/stat), to tell it from a reused pid later.
    std::uint64_t start_time() const { return start_time_; }

    // The socket connection's inode (fstat), by which a connection the service manager kept
    // is matched to its session after a restart; 0 for other doors.
    std::uint64_t inode() const { return inode_; }
    void set_inode(std::uint64_t inode);
    // The D-Bus caller's unique name (":1.42"), by which a restarted daemon finds the caller on
    // the bus again; "" for other doors.
    const std::string &bus_name() const { return bus_name_; }
    void set_bus_name(std::string name);

    // Where the session's events go from now on: a transport took it over.
    void attach(SessionOutlet &outlet) { outlet_ = &outlet; }
    // A membership the client held before the daemon restarted (Service::adopt_member).
    bool adopt_member(MembershipId id, PortIndex port, const Gid &mgid, std::uint8_t bits, const GroupParams &params,
                      Grant grant);

    // Runs one decoded request of the client protocol; `respond` runs exactly once.
    void handle(std::uint64_t request_id, const proto::Request &request, const Respond &respond);

    // The parts handle() dispatches to, for transports that read requests their own way.
    std::variant<proto::HelloResult, proto::Failure> hello(const proto::Hello &h);
    // Starts a join identified by `request_id` (unique among this session's pending joins).
    // Returns the membership id while it is pending (0 when refused at once); `done` runs once.
    MembershipId join(std::uint64_t request_id, const JoinRequest &req, JoinDone done);
    std::optional<proto::Failure> leave(const proto::Leave &l);
    // One page of `list` (views.hpp), with each member's grant; `invalid-argument` (/after)
    // for a cursor this daemon did not write.
    std::variant<proto::ListResult, proto::Failure> list(const proto::List &l) const;
    proto::StatusResult status() const;
    // Starts or stops the monitor subscription; starting is refused over the uid's share.
    std::optional<proto::Failure> set_monitor(bool on);
    // Root only: releases the memberships `e` names, whoever holds them.
    std::variant<proto::EvictResult, proto::Failure> evict(const proto::Evict &e);
    // Why the allow lists in force refuse this client now (a reload removed it), or nullopt.
    // Such a client may still leave what it holds, and nothing else.
    std::optional<proto::Failure> not_allowed() const;

    // ---- for the front door's other parts (sessions.hpp, monitor_outlet.hpp) ----

    // One of the daemon's activity notes, for a monitoring client.
    void monitor_event(const proto::MonitorEvent &ev) { outlet_->monitor_event(ev); }
    // Releases what `e` names among this session's memberships (held and pending): a held one
    // is told `lost` with `why` first. Returns how many.
    std::size_t evict_matching(const proto::Evict &e, const std::string &why);
    // Releases the held membership `id`, which the daemon can no longer keep and will never
    // restore: the client is told `lost` with `why` first (a detached session's client finds it
    // missing from resume's `memberships`), and a later leave of it succeeds. False when the
    // session holds no such membership.
    bool withdraw(MembershipId id, const Error &why);
    // The client held membership `lost.id`, which this instance of the daemon does not have (the
    // restart state's group did not hold its bits): it is told `lost` with `lost.why`, as
    // withdraw() tells it, and a later leave of it succeeds.
    void not_held(LostMembership lost);
    // What not_held() told while the session was detached, for the transport that takes it back
    // and has objects to make for it (the D-Bus server); a socket client's resume lists what it
    // holds instead.
    std::vector<LostMembership> take_untold() { return std::exchange(untold_, {}); }
    // Root's evict with `disconnect`: the transport ends the connection.
    void disconnect(const std::string &why) { outlet_->disconnect(why); }
    // The flag a reload's review sets on a held membership ("" clears it); false when the session
    // holds no such membership.
    bool flag(MembershipId id, std::string why);
    // Takes on the create of another membership of this uid in group `mgid` on `port` that ends
    // (Sessions::pass_create): one of this session's memberships of that group (held first,
    // else pending) that carries no create is marked as created. False when there is none.
    bool carry_create(PortIndex port, const Gid &mgid);

private:
    struct PendingJoin;
    void membership_event(ClientId client, MembershipId id, const MembershipEvent &ev) override;
    std::optional<proto::Failure> check_join(std::uint64_t request_id) const;
    // The gates the engine asks before this join's SA work (core/engine.hpp): the access
    // policy's create right and quota, and the uid's SA budget.
    JoinGates gates(const std::shared_ptr<PendingJoin> &pj);
    // Counts `g` in this client's uid's account (and a named one in the name registry), or gives
    // it back.
    void charge(const Grant &g);
    void uncharge(const Grant &g);
    // hello's `resume`: becomes the detached session `old` (its engine client, memberships,
    // id, token and monitor subscription); `old` is left empty for its owner to drop.
    void take_over(ClientSession &old);

    Sessions &sessions_;
    Door door_;
    Credentials who_;
    SessionOutlet *outlet_;
    ClientId client_ = 0;
    std::uint64_t id_ = 0;
    std::string token_;
    unsigned version_ = 0;
    std::uint64_t start_time_ = 0;
    std::uint64_t inode_ = 0;
    std::string bus_name_;
    bool greeted_;
    bool refused_ = false;
    bool monitor_ = false;
    // Join request id -> the join; memberships joined and not left; memberships evicted (a
    // later leave of one succeeds, as the client still thinks it holds it).
    std::unordered_map<std::uint64_t, std::shared_ptr<PendingJoin>> pending_;
    std::unordered_map<MembershipId, Grant> grants_;
    std::size_t flagged_ = 0; // grants_ whose `flagged` is set
    std::unordered_set<MembershipId> evicted_;
    std::vector<LostMembership> untold_; // see take_untold()
    // Set while the session exists: join answers that arrive after it is gone are dropped.
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

} // namespace mcastd::frontend
