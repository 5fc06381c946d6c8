// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The engine's state, shared by its parts (members.hpp, group_machine.hpp, port_rejoin.hpp):
// ports own their groups, groups queue and count their members, members belong to clients.
// Internal to daemon/core; engine.hpp is the contract.
//
// The deferred-callback invariant: join callbacks, membership events, notes, the
// memberships-gone listener and the debt meter never run in the middle of a change. They are queued as outputs and run at the end
// of the outermost entry point (the Entry guard below), when the state is consistent, so they
// may call the engine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "core/absent_mgids.hpp"
#include "core/engine.hpp"
#include "core/join_queue.hpp"
#include "core/join_state.hpp"
#include "core/membership_backend.hpp"
#include "core/rejoin_progress.hpp"
#include "core/sa_knowledge.hpp"
#include "core/slot_map.hpp"

namespace mcastd::core {

using GroupId = std::uint64_t; // a port's handle of one of its groups (SlotMap); 0 is never one

enum class MemberState : std::uint8_t { queued, active, lost };

struct Member {
    ClientId client = 0;
    PortIndex port = 0;
    GroupId group = 0;
    std::uint8_t bits = 0;
    GroupParams params;
    MemberState state = MemberState::queued;
    bool sent = false;      // an SA Set went out for this member (so it is not a local answer)
    bool suspended = false; // told `lost` while its port is down or re-joining; restored later
    JoinCallback done;
    // Asked while the join is pending (engine.hpp), dropped once it joined (null then): held
    // apart so that a membership costs a pointer for them, not three empty std::functions.
    std::unique_ptr<JoinGates> gates;
    // What the join carries for its port's membership backend (JoinRequest::roce), until the
    // backend has added the member.
    std::shared_ptr<const RoceJoin> roce;
    bool attached = false; // the port's membership backend added it (add_member), and holds it
};

// The one fabric operation a group may have in flight: an SA transaction, or a membership
// backend's make or drop.
struct Op {
    enum class Kind : std::uint8_t {
        probe_group,  // Get(MGID): does the group exist, and its record
        probe_member, // Get(MGID|PortGID): is this port a member
        probe_exact,  // Get(MGID|PortGID|JoinState): is the port's JoinState exactly `bits`
        join_set,     // Set for the member at the head of the queue
        repair_set,   // Set of bits active members need but the SA no longer holds
        del,          // Delete of bits nobody needs
        audit,        // Get(MGID|PortGID): does the SA still hold this port's membership
        refresh,      // Get(MGID): the group's record now, for a re-join that needs no Set
        make,         // MembershipBackend::make of `bits`
        drop,         // MembershipBackend::drop of `bits`
    };
    Kind kind = Kind::probe_group;
    SaService::TxnId txn = 0; // or the backend's MembershipBackend::Id
    bool background = false; // submitted as SaLane::background (a re-join nobody waits for)
    std::uint8_t bits = 0;
    MembershipId member = 0; // join_set only
    bool create = false;     // join_set: the create mask was used
    bool owned = false;      // join_set: sent with no probe before it (an owned MGID prefix)
    bool resync = false;     // probes: learning `held` (true) or `foreign` (false)
    std::uint64_t epoch = 0; // the port's epoch when sent: an answer from before an
                             // invalidation says nothing about the SA's state now
    std::vector<std::uint8_t> candidates; // probe_exact: JoinStates still to try
    std::optional<ClientInfo> leaver;     // del: the group's changer when it was sent (who made it due)
};

struct Group {
    GroupId id = 0;
    PortIndex port = 0;
    Gid mgid{};
    bool sa_assigned = false; // created with MGID 0; mgid is zero until the SA answers
    bool probe_owned = false; // an owned prefix's lone Set was refused: probe as anywhere else
    std::uint8_t create_scope = 0;
    SaKnowledge sa;
    bool warned_leak_hazard = false;
    bool rejoin = false; // the SA may have lost our bits: re-set them when the port allows
    BitCounts count{};   // active members per bit
    JoinQueue queue;                          // joins waiting, in arrival order
    std::set<MembershipId> settled;           // active and lost members, oldest first
    std::optional<Op> op;
    Timers::Id retry_timer = 0;
    Duration backoff{0};
    // Who last changed what the group needs (a leave, a withdrawn join whose Set went out, a
    // client gone; a join whose Set went out), until the group is in line with its members
    // again: the SA work that brings it in line is that client's doing (a release's Delete and
    // the repair Set that may follow it, the Delete of bits a join made redundant). The debt
    // meter charges its uid, the work goes in its uid's turn at the SA, and a Delete's note
    // names it (the log's per-uid rate limit counts it).
    std::optional<ClientInfo> changer;

    std::uint8_t wanted() const { return wanted_bits(count); }
    bool in_progress() const { return op || retry_timer; } // a fabric operation (SA transaction, kernel call) or its retry
};

// The engine's state of one port: its memberships. What the port is (name, GID, usable) is the
// registry's (EngineState::facts).
struct Port {
    std::uint64_t epoch = 0; // bumped by every invalidation and by going down
    // What makes the port's memberships when there is no SA (its link layer's backend);
    // nullptr: the SA (InfiniBand).
    MembershipBackend *backend = nullptr;
    SlotMap<Group> groups;          // owns them; a group never moves while it lives
    GidMap<GroupId> by_mgid; // MGID order, for lookups, the audit and listings
    std::set<GroupId> unassigned;   // groups waiting for the SA to assign their MGID (MGID 0)
    RejoinProgress rejoin;
    Timers::Id rejoin_timer = 0; // the jitter before a re-join starts
    Gid audit_cursor{};
    AbsentMgids absent{kAbsentMemory, kAbsentMemoryEntries}; // what its SA recently said is absent
};

struct Client {
    ClientInfo info;
    std::unordered_set<MembershipId> members;
};

// What the engine has to say, queued until its state is consistent. Typed rather than a
// std::function per output: queueing one allocates nothing once the vector has grown.
struct Reply {
    JoinCallback done;
    JoinResult result;
};
struct Event {
    ClientId client = 0;
    MembershipId id = 0;
    MembershipEvent ev;
};
struct MembershipsGone { // the port's memberships are gone at the fabric: it re-joins them all
    PortIndex port = 0;
};
struct DebtSent { // SA work a client's change made due went out (the debt meter)
    uid_t uid = 0;
};
using Output = std::variant<Reply, Event, EngineNote, MembershipsGone, DebtSent>;

struct EngineState {
    EngineState(EngineConfig c, const PortFacts &f, SaService &s, Timers &t)
        : cfg(std::move(c)), facts(f), sa(s), timers(t), rng(cfg.seed) {}

    EngineConfig cfg;
    const PortFacts &facts; // the port registry
    SaService &sa;
    Timers &timers;
    MembershipEventSink *sink = nullptr;
    EngineObserver observer;
    std::function<void(PortIndex)> memberships_gone; // Engine::set_memberships_gone_listener
    std::function<void(uid_t)> debt_meter;   // Engine::set_debt_meter
    EngineStats stats;
    std::mt19937_64 rng;

    std::vector<Port> ports;
    std::unordered_map<ClientId, Client> clients;
    std::unordered_map<MembershipId, Member> members;
    ClientId next_client = 1;
    MembershipId next_member = 1;
    // SA transactions in flight, retries and re-join pauses pending: zero means idle.
    std::size_t outstanding = 0;

    std::vector<Output> deferred;
    std::vector<std::function<void()>> idle_waiters;
    int depth = 0; // entry points on the stack

    Group *find_group(PortIndex port, GroupId id) { return ports[port].groups.find(id); }
    // The registry's facts of a port the engine serves.
    const std::string &name(PortIndex port) const { return facts.name(port); }
    Gid port_gid(PortIndex port) const { return facts.gid(port); }
    bool usable(PortIndex port) const { return facts.usable(port); }
    Group &group_of(const Member &m) { return ports[m.port].groups.at(m.group); }

    // "group ff15::1 on mlx5_0/1", or "new group on ..." before the SA assigned its MGID.
    std::string where(const Group &g) const;
    // The record a member is told: the group's, with this port's GID and the member's bits.
    McRecord member_record(const Group &g, const Member &m) const;

    // ---- the deferred outputs ----
    void reply(JoinCallback done, JoinResult result) {
        deferred.emplace_back(Reply{std::move(done), std::move(result)});
    }
    void note(EngineNote n);
    // A note about group `g`, with its RoCE source when it has one.
    static EngineNote group_note(EngineNote::Kind kind, const Group &g, std::uint8_t bits, ClientId client);
    void note_group(EngineNote::Kind kind, const Group &g, std::uint8_t bits, ClientId client, std::string msg,
                    std::optional<std::uint16_t> status = {});
    void event(ClientId client, MembershipId id, MembershipEvent ev);
    void port_memberships_gone(PortIndex port) {
        if (memberships_gone)
            deferred.emplace_back(MembershipsGone{port});
    }
    void debt_sent(uid_t uid) {
        if (debt_meter)
            deferred.emplace_back(DebtSent{uid});
    }
    // Runs the deferred outputs, then the idle waiters if nothing is left to do.
    void flush();
};

// Every entry point into the engine (an API call, an SA answer, a timer) holds one: the
// outermost one flushes the deferred outputs when it ends.
class Entry {
public:
    explicit Entry(EngineState &s) : s_(s) { ++s_.depth; }
    ~Entry() {
        if (--s_.depth == 0)
            s_.flush();
    }
    Entry(const Entry &) = delete;
    Entry &operator=(const Entry &) = delete;

private:
    EngineState &s_;
};

} // namespace mcastd::core
