// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// How a port's memberships are made at the fabric where there is no SA: the seam for a second
// link layer (doc/architecture.md §6.1).
//
// A port's link layer picks how its memberships are made. On InfiniBand the engine talks to the
// SA itself (SaService, the group state machine's probes, Sets, Deletes and audits), because
// the port's SA membership is shared with other agents and the SA's rules are subtle
// (doc/sa-multicast.md). On Ethernet (RoCE) there is no SA, no SM, no audit and no MLID: a
// membership is the kernel's IGMP/MLD membership of an IP group, made at once (a socket option)
// and held by nobody but the daemon. There the engine asks a MembershipBackend.
//
// Everything else is the engine's, the same on both: per-JoinState-bit counts, one fabric
// operation per group at a time, joins queued behind it, local answers, sessions, policy,
// quotas, restart state, events and views. The engine asks a backend for a group's bits when
// members first need them and lets them go when nobody does, exactly as it sends SA Sets and
// Deletes, so a backend sees one make() per group however many members share it. Which bits
// hold a fabric membership is the backend's business: on RoCE FullMember and NonMember hold the
// kernel membership, SendOnlyNonMember and SendOnlyFullMember none (as rdma_cm: no report), and
// their make() only answers the record.
//
// The engine is pure: a backend does the I/O, and answers through a callback.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
    // (JoinRequest::roce: an IP group, a GID type, the client's socket). Unset for a re-join,
    // which re-makes what the group held: `roce` is then the attachment of the group's oldest
    // member that has one.
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

struct FabricResult {
    std::optional<Error> error; // set on failure, naming the real cause (errno, the option)
    // make(): the group's record as members get it (MGID, MLID 0, Q_Key, P_Key 0xffff, MTU,
    // rate, traffic class, hop limit, ...); the engine fills in the port GID and each
    // member's JoinState. drop(): unused.
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
    virtual std::variant<Gid, Error> group_of(const JoinRequest &req) const {
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
};

} // namespace mcastd
