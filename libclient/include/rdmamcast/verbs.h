/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * librdmamcast's libibverbs helpers: turn a group record into what a UD QP needs.
 *
 * Kept apart from <rdmamcast/client.h> so that programs which only join (or only talk to the
 * daemon) do not need the libibverbs headers. Programs that include this header call ibv_*
 * themselves and link libibverbs.
 *
 * Functions return 0 (or a non-negative count) or a negative errno. They do not touch any
 * rdmamcast_client, so rdmamcast_last_error() does not describe their failures.
 */
#ifndef RDMAMCAST_VERBS_H
#define RDMAMCAST_VERBS_H

#include <infiniband/verbs.h>

#include <rdmamcast/client.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Fills *ah for sending to the group through port_num: a global route to the MGID from the
 * local GID at sgid_index (the one equal to rec->port_gid: look it up with ibv_query_gid),
 * DLID = MLID, and the group's SL, static rate, flow label, hop limit and traffic class.
 * Send with remote_qpn 0xffffff and remote_qkey rec->qkey.
 *
 * On a RoCE port (rec->link_layer RDMAMCAST_LINK_LAYER_ETHERNET) the source GID is the one the
 * daemon joined with, rec->sgid_index (the argument is not used), and DLID is 0: there are no
 * LIDs on Ethernet, and the device sends to the MGID's multicast MAC (rec->dmac).
 */
RDMAMCAST_EXPORT int rdmamcast_fill_ah_attr(const struct rdmamcast_record *rec, uint8_t port_num,
					    uint8_t sgid_index, struct ibv_ah_attr *ah);

/*
 * ibv_attach_mcast()/ibv_detach_mcast() of qp with the record's (mgid, mlid). Send-only
 * memberships need no attachment. The QP's Q_Key must be rec->qkey to receive anything. On a
 * RoCE port the MLID is 0, which the kernel ignores there (the RoCE annex has no LIDs): the
 * attachment is by MGID alone, and 0 is a group like any other for these helpers.
 */
RDMAMCAST_EXPORT int rdmamcast_attach(struct ibv_qp *qp, const struct rdmamcast_record *rec);
RDMAMCAST_EXPORT int rdmamcast_detach(struct ibv_qp *qp, const struct rdmamcast_record *rec);

/*
 * An attach set keeps UD QPs attached to their groups across record changes. Register each QP
 * with the membership it receives for; hand every event to rdmamcast_attach_set_update(), and
 * on a RESTORED event whose MGID or MLID differ from what a QP is attached to, it detaches the
 * QP from the old (mgid, mlid) and attaches it to the new one. A LOST event changes nothing:
 * the QPs stay registered (and attached) until the daemon restores the membership, and the
 * RESTORED event that follows moves them if the MLID changed meanwhile.
 *
 * The set only remembers QPs: freeing it detaches nothing (destroying a QP detaches it), and a
 * QP must be removed from the set before it is destroyed if the set lives on.
 */
struct rdmamcast_attach_set;

RDMAMCAST_EXPORT int rdmamcast_attach_set_new(struct rdmamcast_attach_set **out);
RDMAMCAST_EXPORT void rdmamcast_attach_set_free(struct rdmamcast_attach_set *set);

/* Attaches qp to rec's group and remembers it under membership. -EEXIST if already there. */
RDMAMCAST_EXPORT int rdmamcast_attach_set_add(struct rdmamcast_attach_set *set, struct ibv_qp *qp,
					      uint64_t membership,
					      const struct rdmamcast_record *rec);

/* Detaches qp from membership's group and forgets it. -ENOENT if it is not in the set. */
RDMAMCAST_EXPORT int rdmamcast_attach_set_remove(struct rdmamcast_attach_set *set,
						 struct ibv_qp *qp, uint64_t membership);

/*
 * Applies an event. For a RESTORED event of a membership in the set, every QP of that
 * membership ends up attached to the event's (mgid, mlid), and if ah is not NULL it is filled
 * from the new record (as rdmamcast_fill_ah_attr() does): destroy the old ibv_ah and create a
 * new one from it. Returns how many QPs were (re)attached, 0 when nothing had to change or the
 * event is not for the set; or the first error, in which case every QP still reached the
 * state the set records for it: attached to the new group, or (attach failed) to none, and a
 * later RESTORED event of the membership retries.
 */
RDMAMCAST_EXPORT int rdmamcast_attach_set_update(struct rdmamcast_attach_set *set,
						 const struct rdmamcast_event *ev, uint8_t port_num,
						 uint8_t sgid_index, struct ibv_ah_attr *ah);

#ifdef __cplusplus
}
#endif

#endif /* RDMAMCAST_VERBS_H */
