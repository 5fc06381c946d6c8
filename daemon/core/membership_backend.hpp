// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// How a port's memberships are made at the fabric where there is no SA: the seam for a second
// link layer (doc/architecture.md §6.1).
//
// A port's link layer picks how its memberships are made. On InfiniBand the engine talks to the
// SA itself (SaService, the group state machine's probes, Sets, Deletes and audits), because
// the port's SA membership is shared with other agents and the SA's rules are subtle
// (doc/sa-multicast.md). On Ethernet (RoCE) there is no SA, no SM, no audit and no MLID: a
// group is an IP multicast group, and a membership is the kernel's IGMP/MLD membership of it,
// made at once (a socket option) and held by nobody but the daemon. There the engine asks a
// MembershipBackend.
//
// Everything else is the engine's, the same on both: per-JoinState-bit counts, one fabric
// operation per group at a time, joins queued behind it, local answers, sessions, policy,
// quotas, restart state, events and views. A backend hears of two things:
//
//   the group   make() when the port's members first need a bit, drop() when nobody does, as
//               the SA gets Sets and Deletes: one make() per group however many members share
//               it. make() answers the group's record. On RoCE that is all they do (no wire
//               action: a group exists as soon as somebody sends to it).
//   a member    add_member() before a join is answered, remove_member() when the membership
//               ends (a leave, its client gone, an eviction, lost). On RoCE a FullMember or
//               NonMember holds the kernel membership in its own network namespace, on the
//               socket its client handed over, so the backend counts per (namespace, netdev,
//               group): clients in two namespaces on one port need one membership in each,
//               any number in one namespace cost one. The send-only states hold none (as
//               rdma_cm: no report), which is the backend's business.
//
// A backend port's memberships are the host's own and outlive the port's link going down and
// up (the kernel keeps an IGMP/MLD membership across a link flap and reports it again by
// itself): the port's usable changes re-join nothing there. What does end them (a source GID
// or its netdev gone) its owner reports with Engine::sources_changed, and the backend says
// group by group (check_source) which ones it touched.
//
// The engine is pure: a backend does the I/O, and answers through a callback (the group's
// operations) or at once (a member's).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "common/error.hpp"
#include "common/record.hpp"
#include "common/request.hpp"
#include "core/sa_service.hpp" // PortIndex

namespace mcastd {

// Make `bits` of the port's membership of group `mgid`.
struct FabricJoin {
    PortIndex port = 0;
    Gid mgid{};
    std::uint8_t bits = 0; // the JoinState bits to add, none of them held (normalized: 0x1 or 0x8)
    std::uint8_t held = 0; // the bits held already
    // What the join that needs the bits asserted, and what it carries for this backend
    // (JoinRequest::roce: an IP group, a GID type, the client's socket). Unset for a re-join
    // or a repair, which re-makes what the group held.
    GroupParams params;
    std::shared_ptr<const RoceJoin> roce;
    bool rejoin = false; // the fabric lost the port's memberships, and this makes them again
};

// Let go of `bits` of the port's membership of group `mgid`: nobody needs them any more.
struct FabricLeave {
    PortIndex port = 0;
    Gid mgid{};
    std::uint8_t bits = 0; // to drop
    std::uint8_t kept = 0; // still held afterwards (0: the group's last bits)
};

// One member of a group on one of the backend's ports.
struct FabricMember {
    PortIndex port = 0;
    Gid mgid{};
    MembershipId id = 0;   // the engine's membership id: the same in add and remove
    std::uint8_t bits = 0; // its JoinState
    // What its join carried for this backend (JoinRequest::roce); null on a re-join. The
    // engine lets go of it once the member is added: a backend keeps what it needs (a copy of
    // the socket), and the client's descriptor is closed with the request's last copy.
    std::shared_ptr<const RoceJoin> roce;
    // The fabric lost the port's memberships and the group was made again: a member the
    // backend holds is made again too (or found still held).
    bool rejoin = false;
};

// Whether the group as it was made still reaches the fabric from where it was made (on RoCE:
// the GID entry it is sent from, its index and netdev). Asked of every group of the port after
// Engine::sources_changed.
struct SourceCheck {
    enum class State : std::uint8_t {
        same,  // as made (or not made yet): nothing to do
        moved, // a source serves it, not the one it was made from: made again, members `restored`
        gone,  // no source serves it now: its members are `lost` until one does
    };
    State state = State::same;
    std::string why; // moved, gone: what changed, for the members' event and the log
};

struct FabricResult {
    std::optional<Error> error; // set on failure, naming the real cause (errno, the option)
    // make(): the group's record as members get it (MGID, MLID 0, Q_Key, P_Key 0xffff, MTU,
    // rate, traffic class, hop limit, and the GID the group is sent from as the port GID; the
    // port's own when it names none); the engine fills in each member's JoinState.
    // drop(): unused.
    McRecord record;
};

class MembershipBackend {
public:
    using Id = std::uint64_t; // 0 is never one
    using Done = std::function<void(const FabricResult &)>;

    virtual ~MembershipBackend() = default;

    // The MGID of the group a join names on one of this backend's ports, or why it names none.
    // The default takes the request's MGID and refuses MGID 0 (no SA assigns one here); a RoCE
    // backend maps an IP group (JoinRequest::roce) to its MGID. Runs before the join is queued.
    virtual std::variant<Gid, Error> group_of(PortIndex /*port*/, const JoinRequest &req) const {
        if (is_zero(req.mgid))
            return Error{Errc::invalid_argument, "an MGID is needed: this port has no SA to assign one", {}};
        return req.mgid;
    }

    // Starts making `join.bits`. `done` runs exactly once unless the id is cancelled first:
    // from inside make() (a socket option is answered at once) or later, from the event loop.
    virtual Id make(const FabricJoin &join, Done done) = 0;
    // Starts letting `leave.bits` go, answered as make() is. An error leaves the bits with
    // the backend: the engine counts them as gone (it has nobody to keep them for).
    virtual Id drop(const FabricLeave &leave, Done done) = 0;
    // Forgets an operation: its `done` will not run. A no-op for finished ids.
    virtual void cancel(Id id) = 0;

    // A member joins the group, whose make() has answered: called before its join is
    // answered (or, with `rejoin`, before it hears `restored`). An error fails that join (or
    // tells the member `lost`), naming the real cause.
    virtual std::optional<Error> add_member(const FabricMember &member) = 0;
    // The membership of a member add_member() accepted ends. Called once; an error is only
    // reported (a warning): the engine counts the member as gone.
    virtual std::optional<Error> remove_member(const FabricMember &member) = 0;

    // Where the group's members reach the fabric from (SourceCheck). The default: always as made.
    virtual SourceCheck check_source(PortIndex /*port*/, const Gid & /*mgid*/) const { return {}; }
    // The group's source is gone (check_source said so): the backend lets go of what its members
    // hold at the fabric (on RoCE the kernel membership, so that the switch prunes the port) and
    // keeps what making it again needs; the members stay, suspended, until add_member with
    // `rejoin` makes them again (or remove_member ends them).
    virtual void suspend(PortIndex /*port*/, const Gid & /*mgid*/) {}
    // The engine forgets the group: nobody is in it and nothing of it is held. What the backend
    // kept of it goes: a drop() of its last bits already said so, but a group can go without one
    // (a make() answered after the port's memberships were lost leaves the engine nothing held).
    virtual void forget(PortIndex /*port*/, const Gid & /*mgid*/) {}
};

} // namespace mcastd
