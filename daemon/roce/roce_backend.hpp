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
//
// Restarts (doc/architecture.md §9): kept() is what the restart state keeps of it, adopt()
// takes that back in the next instance, with the sockets the fd store kept, for the members
// the engine took back; hand_over() leaves every kernel membership to the next instance.
#pragma once

#include <functional>
#include <map>
#include <set>
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
    // The GID entry the group was made from against the one that serves it now: same, moved
    // (another index, a netdev re-created or with another MTU) or gone (no entry of its type and
    // family whose netdev is in the daemon's network namespace).
    SourceCheck check_source(PortIndex port, const Gid &mgid) const override;
    // Its members' kernel memberships are set aside (KernelMemberships::suspend) until a re-join
    // makes them again.
    void suspend(PortIndex port, const Gid &mgid) override;
    // The group's record goes with it, where no drop() erased it.
    void forget(PortIndex port, const Gid &mgid) override { groups_.erase({port, mgid}); }

    const KernelMemberships &kernel() const { return kernel_; }

    // Where kept sockets outlive the daemon (kernel_memberships.hpp).
    void set_store(SocketStore *store) { kernel_.set_store(store); }
    void set_before_add(KernelMemberships::BeforeAdd fn) { kernel_.set_before_add(std::move(fn)); }
    // A port as the restart state names it, and back (nullopt: not served now).
    using PortName = std::pair<std::string, std::uint8_t>;
    using NameOf = std::function<PortName(PortIndex)>;
    using PortOf = std::function<std::optional<PortIndex>(const std::string &device, std::uint8_t port)>;
    // What the restart state keeps: the groups made and the kept sockets, each membership with
    // the engine's memberships that hold it.
    KeptRoce kept(const NameOf &name_of) const;
    // A member the engine took back, and where its group is; `set_aside`: the group was being
    // made again (its source gone), so the member's kernel membership was set aside.
    struct TakenBack {
        PortIndex port = 0;
        Gid mgid{};
        bool set_aside = false;
    };
    // Takes back `saved` for the members the engine took back (`adopted`): the groups of those
    // members on the ports still served (made again from the port's GID table as it is now; one
    // no GID serves now waits for one, check_source() saying `gone`; a group none of them is in
    // is forgotten, as forget() would have), and the kernel memberships, from the `stored`
    // sockets or made again (KernelMemberships::adopt), those of `set_aside` members set aside.
    // A membership none of `adopted` holds is dropped; those of `adopted` whose membership could
    // not be kept are in the answer's `lost`, for the caller to release. Call after the engine's
    // adoption of the sessions, before anything joins.
    Adoption adopt(const KeptRoce &saved, std::map<std::uint64_t, int> stored, const PortOf &port_of,
                   const std::map<MembershipId, TakenBack> &adopted);
    // The daemon restarts: its kernel memberships stay for the next instance.
    void hand_over() { kernel_.hand_over(); }

private:
    struct Made {
        RoceGroup group;
        RoceGid source;
        bool sourced = true; // false: taken back after a restart with no GID to send from
    };
    struct Held {
        MembershipKey key;
        std::string netdev;
        PortIndex port = 0;
        Gid mgid{};
        bool suspended = false; // set aside: its group's source is gone
        bool own_ifname = false; // `netdev` is the interface the client named, not the source's
    };

    GidType default_type(const std::optional<RocePort> &port) const;
    std::variant<Made, Error> prepare(const FabricJoin &join) const;

    const RocePorts &ports_;
    KernelMemberships kernel_;
    RoceOptions options_;
    std::map<std::pair<PortIndex, Gid>, Made, PortGidLess> groups_; // made, not yet dropped
    std::map<MembershipId, Held> members_;             // those holding a kernel membership
    Id next_ = 1;
};

} // namespace mcastd::roce
