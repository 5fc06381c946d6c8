// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The membership engine: ports -> groups -> members, per-JoinState-bit counts, one SA
// transaction in flight per group, coalescing, local answers (doc/architecture.md §5).
//
// Pure logic: it asks the SA for work through SaService (InfiniBand ports) or a port's
// MembershipBackend (other link layers: membership_backend.hpp), keeps time through Timers,
// asks the port registry what a port is through PortFacts, and tells clients about their
// memberships through callbacks and a MembershipEventSink. It knows nothing of transports, MADs
// or libibumad. Single-threaded: call it only from the event loop.
//
// Inside, one piece per concern: the join rules (join_rules.hpp) and what the daemon knows of
// the SA for a group (sa_knowledge.hpp) are pure; the member book (members.hpp), the group
// state machines (group_machine.hpp at the SA, backend_machine.hpp through a backend) and the
// port re-join and audit (port_rejoin.hpp) act on the engine's state (engine_state.hpp); this
// file is the entry points.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "common/record.hpp"
#include "common/request.hpp"
#include "core/engine_config.hpp"
#include "core/membership_backend.hpp"
#include "core/port_facts.hpp"
#include "core/sa_service.hpp"
#include "core/timers.hpp"

namespace mcastd {

struct JoinResult {
    MembershipId id = 0;
    std::optional<Error> error; // set on failure; then `record` is meaningless
    McRecord record;            // the group record; join_state = this member's bits
};
using JoinCallback = std::function<void(const JoinResult &)>;
// A question the engine asks about one join: nullopt lets it go on, an error refuses the join
// with it. An empty function lets everything (static groups, root, tests).
using CreateGate = std::function<std::optional<Error>()>;

// What the client's session lets one join cost at the SA. The engine only asks; the access
// policy's rights, quotas and per-uid SA budget live behind these (frontend/). On a port whose
// memberships a MembershipBackend makes there is no SA, and none is asked.
struct JoinGates {
    // Asked once, right before the Set that creates the join's group (the SA said the MGID is
    // absent, or the join asks the SA for an MGID) or may create it (a new group's lone Set in
    // an owned prefix): nullopt lets it (and the session counts the create), an error refuses
    // the join with it.
    CreateGate create;
    // Asked, without counting anything, before the first probe of an MGID this port's SA said
    // was absent within the last kAbsentMemory: the join would most likely create, so a caller
    // who may not create is refused before any MAD. nullopt: go on and probe. Also asked before
    // a new group's lone Set in an owned prefix (EngineConfig::owned_prefixes), which may create:
    // an error there only sends the probe first, and `create` is asked (and charged) before the
    // lone Set.
    CreateGate would_create;
    // Asked before every SA transaction the engine sends on behalf of this join (its probes,
    // the refresh of an old record, its Set), with the method: an error refuses the join with
    // it and that transaction is not sent. Only the join at the head of its group's queue is
    // asked, for the transaction it causes: joins that share one already in flight are not,
    // and background work (re-joins, repairs, audits, the adoption's probes, Deletes) never is.
    std::function<std::optional<Error>(SaMethod)> sa;
};

// How long a port remembers that its SA answered "no such group" for an MGID (would_create
// above). Short, because another agent may create the group meanwhile: a join refused on that
// memory is refused wrongly, and a short memory keeps such a refusal short. Two seconds still
// covers a client that probes the same absent MGID again and again. An MGID is forgotten at once
// when the engine itself creates or learns of the group, and every MGID of a port when the port
// is invalidated or goes down or up (the SA's groups may have changed with it).
inline constexpr Duration kAbsentMemory = std::chrono::seconds(2);
// And how many MGIDs it remembers, oldest forgotten first: an attacker can name 2^112 MGIDs, so
// an unbounded memory would be memory anyone could fill. 4096 covers what one port's SA can
// answer in kAbsentMemory at the default sa.max_rate of 1000 MADs/s, twice over.
inline constexpr std::size_t kAbsentMemoryEntries = 4096;

struct MembershipEvent {
    enum class Kind : std::uint8_t {
        restored, // the membership holds again; `changed` lists the fields that differ
        lost,     // the SA no longer holds it; `reason` says why
    };
    Kind kind = Kind::lost;
    McRecord record;             // restored: the new record; lost: the last known one
    std::uint64_t changed = 0;   // field:: bits
    std::optional<Error> reason; // lost only
};

class MembershipEventSink {
public:
    virtual ~MembershipEventSink() = default;
    virtual void membership_event(ClientId client, MembershipId id, const MembershipEvent &ev) = 0;
};

// What the engine did, for the log and the journal: one note per membership change or SA
// problem, with the identifiers an operator filters on.
struct EngineNote {
    enum class Kind : std::uint8_t {
        joined,      // a member joined (record valid)
        left,        // a member left or its client went away
        join_failed, // a join was answered with an error
        deleted,     // the fabric dropped bits nobody needs (an SA Delete, or on RoCE the kernel
                     // membership closed); join_state = the bits deleted
        lost,        // a member's membership was lost
        restored,    // a member's membership holds again
        warning,     // something an operator should know; see message
    };
    Kind kind = Kind::warning;
    PortIndex port = 0;
    Gid mgid{};
    std::uint16_t mlid = 0;
    std::uint8_t join_state = 0;
    ClientId client = 0;                    // 0 when not about one client
    std::optional<std::uint16_t> sa_status; // when an SA status is involved
    std::string message;                    // empty for routine notes: see describe()
    bool local = false;                     // joined: answered without any SA work
    std::uint64_t changed = 0;              // restored: the record fields that changed
    // Who that client is, captured when the note is made: a client that went away is no
    // longer known by the time its last notes ("left") reach the observers.
    std::optional<ClientInfo> client_info{};
    // A group on an Ethernet (RoCE) port, once it has its record: where it is sent from (its
    // source GID's type and index, and the netdev), for monitor and the journal.
    std::optional<RoceSource> roce{};
    MembershipId member = 0; // joined, left: the membership (0 for the other kinds)
};
using EngineObserver = std::function<void(const EngineNote &)>;

// Why a port cannot be served: "rxe0/1 is an Ethernet port, and no membership backend serves
// Ethernet ports".
std::string no_backend_for(const std::string &port, LinkLayer link_layer);

// The note as one sentence ("joined group ff15::1 on mlx5_0/1 as full"); `port` names the port.
std::string describe(const EngineNote &note, const std::string &port);

struct EngineStats {
    std::uint64_t joins = 0;         // join requests
    std::uint64_t joins_local = 0;   // answered from the cached record, no MAD
    std::uint64_t joins_failed = 0;  // answered with an error
    std::uint64_t leaves = 0;        // memberships released (leave or client gone)
    std::uint64_t sa_sets = 0;
    std::uint64_t sa_deletes = 0;
    std::uint64_t sa_gets = 0;
    // Membership events told to members: `restored` (holds again, or its record changed) and
    // `lost` (the SA no longer holds it, or its port went down).
    std::uint64_t restored = 0;
    std::uint64_t lost = 0;
};

// A read-only snapshot for listings (`rdma-mcastctl list`).
struct MemberView {
    MembershipId id = 0;
    ClientId client = 0;
    std::uint8_t join_state = 0;
    enum class State : std::uint8_t { pending, active, lost } state = State::pending;
    GroupParams params{}; // what the member asserted
};
struct GroupView {
    PortIndex port = 0;
    Gid mgid{};
    // A group whose MGID the SA has not assigned yet (mgid zero, a create in flight): its
    // handle, which orders it among the port's others (GroupKey); 0 for every other group.
    std::uint64_t unassigned = 0;
    bool have_record = false;
    McRecord record;
    std::uint8_t held = 0;    // bits the daemon set and the SA holds
    std::uint8_t foreign = 0; // bits another agent on this port held before the daemon
    // Bits the daemon may have set although the SA never confirmed them: a Set or Delete went
    // unanswered, or one is in flight now. What a successor must check before trusting.
    std::uint8_t uncertain = 0;
    std::array<std::uint32_t, 4> counts{}; // active members per JoinState bit
    bool busy = false;        // a fabric operation (an SA transaction, a kernel membership call) is in flight
    std::vector<MemberView> members;
};
// A group's place in the order reads of the groups follow: by port, then MGID; groups whose
// MGID the SA has not assigned yet (MGID 0) among themselves by their handle.
struct GroupKey {
    PortIndex port = 0;
    Gid mgid{};
    std::uint64_t unassigned = 0; // GroupView::unassigned
    auto operator<=>(const GroupKey &) const = default;
};
inline GroupKey key_of(const GroupView &g) { return GroupKey{g.port, g.mgid, g.unassigned}; }
// Where a read of the groups goes on (`list`'s cursor): after member `member` of `group` (its
// later members, then the groups after it), or after the whole group when `member` is unset.
// The group need not exist any more: the read goes on with the next one.
struct GroupCursor {
    GroupKey group;
    std::optional<MembershipId> member;
    bool operator==(const GroupCursor &) const = default;
};
// One read of the groups (Engine::groups_from): each group's header with the members read,
// in id order. The first group may continue the one the cursor stopped in; the last one may
// stop inside a group (`next` then names a member of it).
struct GroupRead {
    std::vector<GroupView> groups;
    std::optional<GroupCursor> next; // where the next read goes on; unset: nothing is left
};

// The engine's side of a port (its name, GID and state are the registry's: PortFacts).
struct PortView {
    PortIndex index = 0;
    bool rejoining = false;    // a re-join of the port's groups is under way
    std::string rejoin_reason; // why the last re-join happened
    std::optional<TimePoint> rejoin_started, rejoin_finished;
    std::size_t rejoin_groups = 0; // groups the last re-join covered
    std::size_t groups = 0;        // groups the engine keeps on the port
    std::uint64_t rejoins = 0;     // re-joins started since the port was added
};
// Active memberships of a port per JoinState bit (index 0 = 0x1 ... 3 = 0x8, as BitCounts); a
// membership of several bits counts under each.
using PortMemberships = std::array<std::uint64_t, 4>;

class Engine {
public:
    // `ports` (the registry), `sa` and `timers` must outlive the engine.
    Engine(EngineConfig cfg, const PortFacts &ports, SaService &sa, Timers &timers);
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    void set_event_sink(MembershipEventSink *sink);
    void set_observer(EngineObserver observer);
    // Runs (like every output, once the engine's state is consistent) after every
    // invalidation of a port, whatever found it: invalidate_port(), or an audit that found a
    // full-type membership gone (audit_next). The one place what must go with a re-join of the
    // whole port hears of it (the SA window starts again, the SMInfo baseline is taken anew).
    void set_memberships_gone_listener(std::function<void(PortIndex)> fn);

    // ---- ports (fed by daemon/port) ----
    // How memberships are made on ports of `link_layer` (not InfiniBand: the SA makes those).
    // Before such a port is added; `backend` must outlive the engine.
    void set_backend(LinkLayer link_layer, MembershipBackend &backend);
    // Whether the engine can serve ports of `link_layer` (InfiniBand always).
    bool serves(LinkLayer link_layer) const;
    // The engine serves the registry's port `port` from now on, its memberships made as its
    // link layer says (the SA, or that link layer's backend). Ports are added in index order,
    // each once (std::logic_error otherwise); a port whose link layer has no backend throws
    // std::invalid_argument naming it.
    void add_port(PortIndex port);
    // The registry's usable flag of the port changed (PortFacts::usable says to what). Going
    // down tells every member `lost` (with `why`) but keeps the memberships; coming back
    // re-joins them and tells them `restored`. Joins for a port that is down fail with
    // port-not-active. A port whose memberships a backend makes keeps them across its link's
    // flap (membership_backend.hpp): nothing is re-joined and nobody is told.
    void port_usable_changed(PortIndex port, const std::string &why = {});
    // Where a backend port's groups are sent from may have changed (on RoCE: an entry of its GID
    // table, or its netdev, went or came; `why` says which). The backend judges each group
    // (MembershipBackend::check_source): one whose source is gone has its fabric memberships
    // let go (suspend) and its members told `lost`, kept for later; one a source serves again,
    // or serves from elsewhere (another index), is made again after the jitter and its members
    // told `restored` with what changed (sgid_index). Joins of a group whose source is gone
    // fail. No-op on an InfiniBand port.
    void sources_changed(PortIndex port, const std::string &why);
    // The SA may have lost this port's memberships (SM restart or failover, client
    // re-registration, LID change, ...): re-join them all once the port is usable, after the
    // jitter, and tell every member `restored` (with what changed) or `lost` (and why). Joins
    // that arrive meanwhile wait for the re-join of their group. The memberships-gone listener
    // hears of it.
    void invalidate_port(PortIndex port, const std::string &why);
    // Audits one group of the port, round robin: a Get of the port's membership. A lost
    // full-type membership (FullMember, SendOnlyFullMember) means the SA lost the port's whole
    // state, so the port is invalidated as above; a lost non-member membership re-joins just
    // its group. A changed MLID is told to its members. Paced by the caller.
    void audit_next(PortIndex port);

    // ---- clients (fed by the transports) ----
    ClientId add_client(ClientInfo info);
    // Releases every membership of the client as if it had left; its pending joins are dropped
    // without their callbacks running (nobody is left to tell).
    void remove_client(ClientId client);
    const ClientInfo *client_info(ClientId client) const;

    // Starts a join. `done` runs exactly once (possibly before join() returns, after the
    // engine's state is consistent) unless the client is removed first. The returned id
    // names the membership for leave(), also while the join is still pending.
    // `gates` are what the client's session lets the join cost at the SA (JoinGates). A join the
    // gates refuse fails with their error, and its group goes on with the next queued join.
    MembershipId join(ClientId client, const JoinRequest &req, JoinCallback done, JoinGates gates = {});
    // The MGID of the group `req` names, as join() would take it: on a port with a membership
    // backend the backend's answer (on RoCE an IP group or MGID and a GID type give the MGID);
    // on an InfiniBand port the request's MGID (zero: a create), and an IP group is refused.
    // A port the engine does not serve gives the request's MGID (join() names the port).
    std::variant<Gid, Error> group_of(const JoinRequest &req) const;

    // Releases a membership. A pending join is withdrawn (its callback gets `cancelled`).
    // The SA Delete, if one is due, happens in the background.
    std::optional<Error> leave(ClientId client, MembershipId id);
    // Runs (as an output, once the engine's state is consistent) for every SA MAD the engine
    // sends to bring a group in line with its members after a client changed what it needs,
    // with that client's uid, retries too: the Deletes and repair Set after a release (a leave,
    // a withdrawn join whose Set went out, a removed client), the Delete of bits a join's Set
    // made redundant (full over sendonly-full). Work nobody's change caused (bits nobody took
    // back after a restart, a bad SA-assigned MGID) is reported to nobody. Such work cannot
    // be refused (the group would stay out of line): the frontend charges it to the uid's SA
    // budget as a debt. The join's own probes and Set go through JoinGates::sa instead.
    void set_debt_meter(std::function<void(uid_t)> meter);

    // ---- adoption, after the daemon restarted (doc/architecture.md §9) ----
    // A group whose bits the previous instance of the daemon set on this port: `held` bits
    // the SA confirmed, `uncertain` ones whose fate it never learned. No MAD is sent: the bits are
    // the daemon's own (never foreign), held ones are trusted until an audit says otherwise,
    // uncertain ones are probed when the adoption ends. Call before anything joins the group.
    void adopt_group(PortIndex port, const Gid &mgid, std::uint8_t held, std::uint8_t uncertain,
                     const std::optional<McRecord> &record);
    // A membership a client held before the restart: active at once under its old id, with no
    // SA work and no answer. Fails (false) when its group was not adopted, the bits are not
    // held by it, or the id is taken. On a backend's port the backend takes the member back
    // itself (RoceBackend::adopt) and hears of its end as of any member's.
    bool adopt_member(ClientId client, MembershipId id, PortIndex port, const Gid &mgid, std::uint8_t bits,
                      const GroupParams &params);
    // Adoption is over: every group is brought in line with its members. Bits nobody holds any
    // more are deleted (after a probe, for uncertain ones), as after any leave. On a backend's
    // port a group with uncertain bits was being made again: its members stay `lost` until it
    // is (a source still gone waits for it); then every group's source is checked again.
    void end_adoption();

    // ---- introspection ----
    // Whether the port has the group (held, joining or leaving), and how many groups it has:
    // cheap, for a check before every join.
    bool has_group(PortIndex port, const Gid &mgid) const;
    std::size_t group_count(PortIndex port) const;
    std::vector<PortView> ports() const;
    // The port's active memberships per JoinState bit: its groups' counts summed, O(groups) (not
    // O(memberships)); for `status`, not for every page of `list` as ports() is.
    PortMemberships memberships(PortIndex port) const;
    // Every group with every member, in GroupKey order.
    std::vector<GroupView> groups() const;
    // One group (its MGID on the port), with every member (O(its members)) or none (O(1)), or
    // nullopt when the engine keeps no such group. For the restart state's change log.
    std::optional<GroupView> group(PortIndex port, const Gid &mgid, bool with_members = true) const;
    // One membership, or nullopt when the engine has no such membership.
    std::optional<MemberView> member(MembershipId id) const;
    // The groups in GroupKey order from `from` on (from the start when unset), costing what it
    // reads (ordered lookups, no walk of the rest): at most `max_members` members, a group read
    // without any counting as one. With `only`, just that client's memberships: the groups it
    // has members in, with only those (a walk of that client's memberships).
    GroupRead groups_from(const std::optional<GroupCursor> &from, std::size_t max_members,
                          std::optional<ClientId> only = std::nullopt) const;
    const EngineStats &stats() const;
    // True when no SA transaction is in flight and no retry is scheduled.
    bool idle() const;
    // Runs `fn` once, as soon as the engine is idle (at once if it is). For a graceful stop:
    // every Delete answered before the daemon lets go of the SA.
    void when_idle(std::function<void()> fn);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace mcastd
