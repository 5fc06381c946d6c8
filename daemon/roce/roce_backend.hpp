// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The MembershipBackend of Ethernet (RoCE) ports (core/membership_backend.hpp,
// doc/architecture.md §6.1): no SA, no SM, no MLID. A group is an IP multicast group
// (doc/roce-multicast.md):
//
//   group_of   the join's IP group (or MGID) and GID type give the MGID (roce_mgid);
//   make       the group's record, from the port's GID entry of that type and the netdev's MTU
//              (no wire action: a group exists as soon as somebody sends to it);
//   drop       forgets it;
//   members    FullMember and NonMember hold the host's IGMP/MLD membership on the GID's
//              netdev, made in each member's network namespace on the socket its client handed
//              over, one per (namespace, netdev, group) however many members share it
//              (kernel_memberships.hpp); the send-only states hold none, as with rdma_cm.
//
// Every answer comes inside the call: a socket option is answered at once.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "core/membership_backend.hpp"
#include "roce/kernel_memberships.hpp"
#include "roce/roce_options.hpp"
#include "roce/roce_port.hpp"

namespace mcastd::roce {

// The IP group a join names on a RoCE port, the GID type it joins with, and the MGID both give.
struct RoceGroup {
    IpAddress ip;
    GidType type = GidType::roce_v2;
    Gid mgid{};
};

// Resolves a join's group (pure): its IP group (`roce->group`) or its MGID, whose IPv4 forms
// carry their GID type (::ffff:a.b.c.d is RoCE v2, ff0e::ffff:a.b.c.d RoCE v1); an IPv6 group
// takes the join's type, else `default_type`. Refuses what names no IP multicast group, a
// type that contradicts the MGID, and an IP group and MGID that differ.
std::variant<RoceGroup, Error> resolve_group(const Gid &mgid, const RoceJoin *roce, GidType default_type);

// The GID entry a group of `type` is sent from (pure): the lowest index of that type whose
// address family is the group's (RoCE v2 packets are IP: an IPv4 group needs an IPv4 GID,
// ::ffff:a.b.c.d); on RoCE v1 any entry of the type, the group's family first.
std::optional<RoceGid> source_gid(const std::vector<RoceGid> &gids, GidType type, const IpAddress &group);

class RoceBackend final : public MembershipBackend {
public:
    RoceBackend(const RocePorts &ports, MembershipSyscalls &sys, RoceOptions options = {})
        : ports_(ports), kernel_(sys), options_(options) {}

    std::variant<Gid, Error> group_of(PortIndex port, const JoinRequest &req) const override;
    Id make(const FabricJoin &join, Done done) override;
    Id drop(const FabricLeave &leave, Done done) override;
    void cancel(Id) override {} // every answer came inside its call
    std::optional<Error> add_member(const FabricMember &member) override;
    std::optional<Error> remove_member(const FabricMember &member) override;

    const KernelMemberships &kernel() const { return kernel_; }

private:
    struct Made {
        RoceGroup group;
        RoceGid source;
    };
    struct Held {
        MembershipKey key;
        std::string netdev;
    };

    GidType default_type(const std::optional<RocePort> &port) const;
    std::variant<Made, Error> prepare(const FabricJoin &join) const;

    const RocePorts &ports_;
    KernelMemberships kernel_;
    RoceOptions options_;
    std::map<std::pair<PortIndex, Gid>, Made> groups_; // made, not yet dropped
    std::map<MembershipId, Held> members_;             // those holding a kernel membership
    Id next_ = 1;
};

} // namespace mcastd::roce
