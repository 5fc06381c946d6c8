// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// librdmamcast's libibverbs helpers for C++: header-only over <rdmamcast/verbs.h> (C++17 or
// later). Include it only where the program links libibverbs.
//
//   rdmamcast::AttachSet attached;
//   attached.add(qp, membership);                 // attaches qp to membership.record()
//   ibv_ah_attr ah = rdmamcast::ah_attr(membership.record(), port, sgid_index);
//   while (auto ev = client.next_event())
//       if (auto fresh = attached.update(*ev, port, sgid_index))
//           ah = *fresh;                          // destroy the old ibv_ah, create one from it
#pragma once

#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include <rdmamcast/client.hpp>
#include <rdmamcast/verbs.h>

namespace rdmamcast {

// The address of the group in `rec`, sent through port_num from the GID at sgid_index.
inline ibv_ah_attr ah_attr(const Record &rec, std::uint8_t port_num, std::uint8_t sgid_index) {
    ibv_ah_attr ah{};
    rdmamcast_fill_ah_attr(&rec, port_num, sgid_index, &ah);
    return ah;
}

// RAII over rdmamcast_attach_set: UD QPs that follow their memberships' MLID changes. Freeing
// the set detaches nothing (destroying a QP does); remove() a QP before destroying it if the
// set lives on. Failures throw Error with the errno of ibv_attach_mcast()/ibv_detach_mcast().
class AttachSet {
public:
    AttachSet() {
        rdmamcast_attach_set *s = nullptr;
        check(rdmamcast_attach_set_new(&s), "create an attach set");
        set_.reset(s);
    }

    // Attaches qp to the membership's group and remembers it.
    void add(ibv_qp *qp, std::uint64_t membership, const Record &rec) {
        check(rdmamcast_attach_set_add(set_.get(), qp, membership, &rec),
              "attach a QP to membership " + std::to_string(membership));
    }
    void add(ibv_qp *qp, const Membership &m) { add(qp, m.id(), m.record()); }

    // Detaches qp from the membership's group and forgets it.
    void remove(ibv_qp *qp, std::uint64_t membership) {
        check(rdmamcast_attach_set_remove(set_.get(), qp, membership),
              "detach a QP from membership " + std::to_string(membership));
    }

    // Applies an event: a restored event of a membership in the set moves its QPs to the new
    // (mgid, mlid) and returns the new AH attributes; anything else returns nullopt (a lost
    // event keeps the QPs registered until the membership is restored). If a re-attach fails
    // it throws, and the QP is re-attached by the membership's next restored event.
    std::optional<ibv_ah_attr> update(const Event &ev, std::uint8_t port_num,
                                      std::uint8_t sgid_index) {
        const auto *r = std::get_if<RestoredEvent>(&ev);
        if (!r)
            return std::nullopt;
        rdmamcast_event c{};
        c.type = RDMAMCAST_EVENT_RESTORED;
        c.membership = r->membership;
        c.restored.record = r->record;
        c.restored.changed = r->changed;
        // The C call fills the AH only for a membership of the set, and a filled AH is always
        // global: that is how a zeroed one tells the two apart.
        ibv_ah_attr ah{};
        check(rdmamcast_attach_set_update(set_.get(), &c, port_num, sgid_index, &ah),
              "re-attach the QPs of membership " + std::to_string(r->membership));
        if (!ah.is_global)
            return std::nullopt;
        return ah;
    }

    rdmamcast_attach_set *get() const { return set_.get(); }

private:
    static void check(int rc, const std::string &what) {
        if (rc < 0)
            throw Error(rc, RDMAMCAST_E_SYSTEM, what + ": " + std::strerror(-rc));
    }

    struct Free {
        void operator()(rdmamcast_attach_set *s) const { rdmamcast_attach_set_free(s); }
    };
    std::unique_ptr<rdmamcast_attach_set, Free> set_;
};

} // namespace rdmamcast
