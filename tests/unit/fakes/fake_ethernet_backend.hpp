// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A MembershipBackend for Ethernet (RoCE) ports in tests: it records every make and drop the
// engine asks for, per group, and keeps what the kernel would hold. A group's kernel membership
// (IGMP/MLD) is held while its port holds FullMember or NonMember; the send-only bits hold none,
// and their make only answers the record. Answers come inside make()/drop() (as a socket option
// does) or, with `answer_later`, when the test calls run().
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
        std::uint8_t bits = 0;      // what the engine holds here
        unsigned makes = 0;         // make() calls
        unsigned drops = 0;         // drop() calls
        unsigned joined = 0;        // kernel memberships made (IP_ADD_MEMBERSHIP)
        unsigned left = 0;          // ... and dropped (IP_DROP_MEMBERSHIP)
        bool member() const { return bits & (join::full | join::non_member); }
    };

    std::map<Key, Group> groups;
    std::vector<FabricJoin> made;    // every make() asked, in order
    std::vector<FabricLeave> dropped; // every drop() asked, in order
    bool answer_later = false;
    // An error for a make (nullopt: it succeeds).
    std::function<std::optional<Error>(const FabricJoin &)> refuse;
    std::uint32_t qkey = 0x01234567; // rdma_cm's default on RoCE

    // Kernel memberships held now, over every port and group.
    std::size_t memberships() const {
        std::size_t n = 0;
        for (const auto &[key, g] : groups)
            n += g.member();
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
        return r;
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
                          const bool was = grp.member();
                          grp.bits = static_cast<std::uint8_t>(grp.bits | j.bits);
                          grp.joined += !was && grp.member();
                      });
    }

    Id drop(const FabricLeave &l, Done done) override {
        dropped.push_back(l);
        ++groups[{l.port, l.mgid}].drops;
        return answer(FabricResult{}, std::move(done), [this, l] {
            Group &grp = groups[{l.port, l.mgid}];
            const bool was = grp.member();
            grp.bits = static_cast<std::uint8_t>(grp.bits & ~l.bits);
            grp.left += was && !grp.member();
        });
    }

    void cancel(Id id) override {
        for (auto it = queue_.begin(); it != queue_.end(); ++it)
            if (it->id == id) {
                queue_.erase(it);
                return;
            }
    }

    // The kernel let go of every membership on the port (its netdev went away).
    void lose_port(PortIndex port) {
        for (auto &[key, g] : groups)
            if (key.first == port) {
                g.left += g.member();
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

} // namespace mcastd::test
