// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A MembershipBackend for Ethernet (RoCE) ports in tests: it records every make and drop the
// engine asks for per group, and every member it adds and removes, and keeps what the kernel
// would hold. The group's make only answers the record; a member holds a kernel membership
// (IGMP/MLD) when its bits include FullMember or NonMember, counted per (port, group) here (the
// real backend's count per network namespace is tested in tests/unit/roce). Answers to make
// and drop come inside the call (as a socket option does) or, with `answer_later`, when the
// test calls run().
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "core/membership_backend.hpp"

namespace mcastd::test {

class FakeEthernetBackend final : public MembershipBackend {
public:
    using Key = std::pair<PortIndex, Gid>;
    struct Group {
        std::uint8_t bits = 0; // what the engine holds here
        unsigned makes = 0;    // make() calls
        unsigned drops = 0;    // drop() calls
        unsigned holders = 0;  // members holding the kernel membership
        bool in_kernel = false; // the kernel holds it
        unsigned joined = 0;   // kernel memberships made (IP_ADD_MEMBERSHIP)
        unsigned left = 0;     // ... and dropped (IP_DROP_MEMBERSHIP)
    };

    std::map<Key, Group> groups;
    std::vector<FabricJoin> made;       // every make() asked, in order
    std::vector<FabricLeave> dropped;   // every drop() asked, in order
    std::vector<FabricMember> added;    // every add_member() asked, in order
    std::vector<FabricMember> removed;  // every remove_member() asked, in order
    std::map<MembershipId, FabricMember> members; // added and not removed
    bool answer_later = false;
    // An error for a make, or for a member (nullopt: it succeeds).
    std::function<std::optional<Error>(const FabricJoin &)> refuse;
    std::function<std::optional<Error>(const FabricMember &)> refuse_member;
    std::uint32_t qkey = 0x01234567; // rdma_cm's default on RoCE
    // Where a group is sent from now (check_source: same unless the test says), every group
    // the engine asked about, and every group it suspended.
    std::map<Key, SourceCheck> sources;
    mutable std::vector<Key> checked;
    std::vector<Key> suspended;
    // Where the groups are sent from, as the real backend's records say; unset: records that say
    // nothing of it (link layer InfiniBand's defaults).
    std::optional<RoceSource> source;

    static bool holds(std::uint8_t bits) { return bits & (join::full | join::non_member); }

    // Kernel memberships held now, over every port and group.
    std::size_t memberships() const {
        std::size_t n = 0;
        for (const auto &[key, g] : groups)
            n += g.in_kernel;
        return n;
    }
    const Group &at(PortIndex port, const Gid &mgid) const { return groups.at({port, mgid}); }
    std::size_t pending() const { return queue_.size(); }

    // The record a RoCE member gets: no MLID, the default partition.
    McRecord record_of(const Gid &mgid) const {
        McRecord r;
        r.mgid = mgid;
        r.mlid = 0;
        r.qkey = qkey;
        r.pkey = 0xffff;
        r.mtu_selector = Selector::exactly;
        r.mtu = 4; // 2048, the netdev's MTU below 4096
        r.rate_selector = Selector::exactly;
        r.rate = 7;      // 40 Gb/s
        r.hop_limit = 64; // RoCE v2, IPv4
        if (source) {
            r.link_layer = LinkLayer::ethernet;
            r.gid_type = source->gid_type;
            r.sgid_index = source->sgid_index;
            r.netdev = source->netdev;
        }
        return r;
    }

    // An IP group is its RoCE MGID (the join's GID type, else RoCE v2); else the request's.
    std::variant<Gid, Error> group_of(PortIndex port, const JoinRequest &req) const override {
        if (req.roce && req.roce->group)
            return roce_mgid(*req.roce->group, req.roce->gid_type.value_or(GidType::roce_v2));
        return MembershipBackend::group_of(port, req);
    }

    Id make(const FabricJoin &j, Done done) override {
        made.push_back(j);
        Group &g = groups[{j.port, j.mgid}];
        ++g.makes;
        std::optional<Error> no = refuse ? refuse(j) : std::nullopt;
        return answer(no ? FabricResult{no, {}} : FabricResult{std::nullopt, record_of(j.mgid)}, std::move(done),
                      [this, j, no] {
                          if (no)
                              return;
                          Group &grp = groups[{j.port, j.mgid}];
                          grp.bits = static_cast<std::uint8_t>(grp.bits | j.bits);
                      });
    }

    Id drop(const FabricLeave &l, Done done) override {
        dropped.push_back(l);
        ++groups[{l.port, l.mgid}].drops;
        return answer(FabricResult{}, std::move(done), [this, l] {
            Group &grp = groups[{l.port, l.mgid}];
            grp.bits = static_cast<std::uint8_t>(grp.bits & ~l.bits);
        });
    }

    std::optional<Error> add_member(const FabricMember &m) override {
        added.push_back(m);
        if (auto no = refuse_member ? refuse_member(m) : std::nullopt)
            return no;
        const bool known = members.count(m.id);
        if (known && !m.rejoin)
            return Error{Errc::internal, "added twice", {}};
        if (!holds(m.bits))
            return std::nullopt;
        Group &grp = groups[{m.port, m.mgid}];
        if (!known) {
            members.emplace(m.id, m);
            ++grp.holders;
        }
        if (!grp.in_kernel) { // the first holder, or a re-join after the kernel lost it
            grp.in_kernel = true;
            ++grp.joined;
        }
        return std::nullopt;
    }

    SourceCheck check_source(PortIndex port, const Gid &mgid) const override {
        checked.emplace_back(port, mgid);
        auto it = sources.find({port, mgid});
        return it == sources.end() ? SourceCheck{} : it->second;
    }
    void suspend(PortIndex port, const Gid &mgid) override { suspended.emplace_back(port, mgid); }

    std::optional<Error> remove_member(const FabricMember &m) override {
        removed.push_back(m);
        auto it = members.find(m.id);
        if (it == members.end())
            return holds(m.bits) ? std::optional<Error>(Error{Errc::internal, "removed a member never added", {}})
                                 : std::nullopt;
        members.erase(it);
        Group &grp = groups[{m.port, m.mgid}];
        if (--grp.holders == 0 && grp.in_kernel) {
            grp.in_kernel = false;
            ++grp.left;
        }
        return std::nullopt;
    }

    void cancel(Id id) override {
        for (auto it = queue_.begin(); it != queue_.end(); ++it)
            if (it->id == id) {
                queue_.erase(it);
                return;
            }
    }

    // The kernel let go of every membership on the port (its netdev went away); the members
    // stay counted, and a re-join's add makes the membership again.
    void lose_port(PortIndex port) {
        for (auto &[key, g] : groups)
            if (key.first == port) {
                g.left += g.in_kernel;
                g.in_kernel = false;
                g.bits = 0;
            }
    }

    // Answers every operation waiting (answer_later), oldest first.
    void run() {
        while (!queue_.empty()) {
            Pending p = std::move(queue_.front());
            queue_.pop_front();
            p.apply();
            p.done(p.result);
        }
    }

private:
    struct Pending {
        Id id;
        FabricResult result;
        Done done;
        std::function<void()> apply;
    };

    Id answer(FabricResult r, Done done, std::function<void()> apply) {
        const Id id = next_++;
        if (answer_later) {
            queue_.push_back(Pending{id, std::move(r), std::move(done), std::move(apply)});
            return id;
        }
        apply();
        done(r);
        return id;
    }

    Id next_ = 1;
    std::deque<Pending> queue_;
};

// A fixture's first base: the backend is built before the Service (or front door) of the
// bases after it and gone after it, since the service's engine calls its backend to the end.
struct EthernetBackendFirst {
    FakeEthernetBackend eth;
};

} // namespace mcastd::test
