// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "rdmamcast/verbs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <vector>

#include "verbs_ops.hpp"

namespace rdmamcast::detail {

VerbsOps &verbs_ops() {
    static VerbsOps ops{ibv_attach_mcast, ibv_detach_mcast};
    return ops;
}

namespace {

// libibverbs returns 0 or a positive errno from attach/detach; we return negative ones.
int from_verbs(int rc) { return rc > 0 ? -rc : rc; }

ibv_gid to_gid(const std::uint8_t (&mgid)[16]) {
    ibv_gid gid;
    std::memcpy(gid.raw, mgid, sizeof gid.raw);
    return gid;
}

int attach(ibv_qp *qp, const std::uint8_t (&mgid)[16], std::uint16_t mlid) {
    ibv_gid gid = to_gid(mgid);
    return from_verbs(verbs_ops().attach_mcast(qp, &gid, mlid));
}

int detach(ibv_qp *qp, const std::uint8_t (&mgid)[16], std::uint16_t mlid) {
    ibv_gid gid = to_gid(mgid);
    return from_verbs(verbs_ops().detach_mcast(qp, &gid, mlid));
}

} // namespace

} // namespace rdmamcast::detail

// What the set knows of one QP: the (mgid, mlid) it is attached to, if it is.
struct rdmamcast_attach_set {
    struct Entry {
        ibv_qp *qp;
        std::uint64_t membership;
        std::uint8_t mgid[16];
        std::uint16_t mlid;
        bool attached;
    };
    std::vector<Entry> entries;

    std::vector<Entry>::iterator find(ibv_qp *qp, std::uint64_t membership) {
        return std::find_if(entries.begin(), entries.end(), [&](const Entry &e) {
            return e.qp == qp && e.membership == membership;
        });
    }
};

using rdmamcast::detail::attach;
using rdmamcast::detail::detach;

extern "C" {

int rdmamcast_fill_ah_attr(const rdmamcast_record *rec, uint8_t port_num, uint8_t sgid_index,
                           ibv_ah_attr *ah) {
    if (!rec || !ah)
        return -EINVAL;
    *ah = ibv_ah_attr{};
    ah->is_global = 1;
    std::memcpy(ah->grh.dgid.raw, rec->mgid, sizeof ah->grh.dgid.raw);
    ah->grh.flow_label = rec->flow_label;
    ah->grh.hop_limit = rec->hop_limit;
    ah->grh.traffic_class = rec->traffic_class;
    // On RoCE the daemon chose the source GID (of the GID type it joined with) and says where
    // it is; there is no LID: the frames go to the MGID's MAC (the kernel derives it).
    const bool roce = rec->link_layer == RDMAMCAST_LINK_LAYER_ETHERNET;
    ah->grh.sgid_index = roce ? rec->sgid_index : sgid_index;
    ah->dlid = roce ? 0 : rec->mlid;
    ah->sl = rec->sl;
    ah->static_rate = rec->rate;
    ah->port_num = port_num;
    return 0;
}

int rdmamcast_attach(ibv_qp *qp, const rdmamcast_record *rec) {
    if (!qp || !rec)
        return -EINVAL;
    return attach(qp, rec->mgid, rec->mlid);
}

int rdmamcast_detach(ibv_qp *qp, const rdmamcast_record *rec) {
    if (!qp || !rec)
        return -EINVAL;
    return detach(qp, rec->mgid, rec->mlid);
}

int rdmamcast_attach_set_new(rdmamcast_attach_set **out) {
    if (!out)
        return -EINVAL;
    *out = new (std::nothrow) rdmamcast_attach_set;
    return *out ? 0 : -ENOMEM;
}

void rdmamcast_attach_set_free(rdmamcast_attach_set *set) { delete set; }

int rdmamcast_attach_set_add(rdmamcast_attach_set *set, ibv_qp *qp, uint64_t membership,
                             const rdmamcast_record *rec) {
    if (!set || !qp || !rec)
        return -EINVAL;
    if (set->find(qp, membership) != set->entries.end())
        return -EEXIST;
    try {
        set->entries.reserve(set->entries.size() + 1); // cannot fail after attaching
    } catch (const std::exception &) {
        return -ENOMEM;
    }
    if (int rc = attach(qp, rec->mgid, rec->mlid); rc < 0)
        return rc;
    rdmamcast_attach_set::Entry e{qp, membership, {}, rec->mlid, true};
    std::memcpy(e.mgid, rec->mgid, sizeof e.mgid);
    set->entries.push_back(e);
    return 0;
}

int rdmamcast_attach_set_remove(rdmamcast_attach_set *set, ibv_qp *qp, uint64_t membership) {
    if (!set || !qp)
        return -EINVAL;
    auto it = set->find(qp, membership);
    if (it == set->entries.end())
        return -ENOENT;
    int rc = it->attached ? detach(qp, it->mgid, it->mlid) : 0;
    set->entries.erase(it); // forgotten even if the detach failed: there is nothing to retry
    return rc;
}

int rdmamcast_attach_set_update(rdmamcast_attach_set *set, const rdmamcast_event *ev,
                                uint8_t port_num, uint8_t sgid_index, ibv_ah_attr *ah) {
    if (!set || !ev)
        return -EINVAL;
    if (ev->type != RDMAMCAST_EVENT_RESTORED)
        return 0;
    const rdmamcast_record &rec = ev->restored.record;
    int changed = 0, first_error = 0;
    bool ours = false;
    for (auto &e : set->entries) {
        if (e.membership != ev->membership)
            continue;
        ours = true;
        if (e.attached && e.mlid == rec.mlid && std::memcmp(e.mgid, rec.mgid, 16) == 0)
            continue;
        // Detach first: the old MLID may already belong to another group, and a QP attached
        // to it would receive that group's traffic.
        if (e.attached) {
            if (int rc = detach(e.qp, e.mgid, e.mlid); rc < 0 && !first_error)
                first_error = rc;
            e.attached = false;
        }
        std::memcpy(e.mgid, rec.mgid, sizeof e.mgid);
        e.mlid = rec.mlid;
        if (int rc = attach(e.qp, e.mgid, e.mlid); rc < 0) {
            if (!first_error)
                first_error = rc;
            continue;
        }
        e.attached = true;
        ++changed;
    }
    if (ours && ah)
        rdmamcast_fill_ah_attr(&rec, port_num, sgid_index, ah);
    return first_error ? first_error : changed;
}

} // extern "C"
