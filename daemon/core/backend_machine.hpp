// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The groups of a port whose memberships a MembershipBackend makes (Ethernet: kernel IGMP/MLD
// memberships; membership_backend.hpp). The same accounts as on InfiniBand (per-bit counts,
// one operation per group in flight, joins queued behind it, local answers, re-joins), with
// none of the SA's rules: nothing to probe (nobody else holds the daemon's kernel
// memberships), no audit, no MLID leak, no MGID to assign.
//
//   a join   its bits covered and a record known: the backend adds the member
//            (add_member; a refusal fails the join) and it is answered locally (after the
//            record's asserted fields are compared); otherwise first one make() of the bits
//            it adds.
//   a leave  the backend removes the member (remove_member, through the member book); with
//            no join waiting, bits nobody needs any more are dropped in one drop().
//   re-join  when the fabric lost the port's memberships (Engine::invalidate_port, or the
//            port coming back): what members want is made again after the port's jitter,
//            every member is added again, and they hear `restored`; those the backend
//            refuses hear `lost`.
//
// A backend may answer inside make() or drop(): that answer is applied at once and the group
// goes on in the same pass.
#pragma once

#include <functional>

#include "core/group_driver.hpp"

namespace mcastd::core {

class BackendMachine final : public GroupDriver {
public:
    using GroupDriver::GroupDriver;

    void pump(Group &g) override;
    // The fabric lost the group's bits (they are no longer held): re-made once the port allows.
    void mark_rejoin(Group &g) override;
    void abandon(Group &g) override;

private:
    using Call = std::function<MembershipBackend::Id(MembershipBackend::Done)>;

    // One decision for the group. True when the backend answered at once: look again.
    bool step(Group &g);
    bool reconcile(Group &g);
    // Starts a make of `bits` for queued member `member` (0: a re-join or a repair).
    bool make(Group &g, std::uint8_t bits, MembershipId member);
    bool drop(Group &g, std::uint8_t bits);
    // The backend adds queued member `id`; false when it refused (the join failed, and the
    // member is gone).
    bool attach(Group &g, MembershipId id);
    // After a re-join made the group again: every active member is added again; those the
    // backend refuses lose their membership.
    void reattach(Group &g);
    // Sends `op` through `call`; true when its answer came inside the call and is applied.
    bool start(Group &g, Op op, const Call &call);
    void on_answer(Group &g, const FabricResult &r); // a later answer
    void apply(Group &g, const Op &op, const FabricResult &r);
    void on_made(Group &g, const Op &op, const FabricResult &r);
    void on_dropped(Group &g, const Op &op, const FabricResult &r);

    MembershipBackend &backend(const Group &g) const { return *s_.ports[g.port].backend; }
};

} // namespace mcastd::core
