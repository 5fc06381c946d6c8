/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/* The C API used from C11: the headers must compile as C (verbs.h included), and the basic
 * calls must work from a C caller. Driven by test_client_c.cpp against the fake daemon. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdmamcast/client.h>
#include <rdmamcast/verbs.h>

#include "c_api_smoke.h"

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			snprintf(err, errlen, "%s:%d: %s", __FILE__, __LINE__, #cond);     \
			goto out;                                                          \
		}                                                                          \
	} while (0)

int c_api_smoke(const char *path, char *err, size_t errlen)
{
	struct rdmamcast_client *c = NULL;
	struct rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
	struct rdmamcast_record rec;
	struct rdmamcast_event ev;
	struct rdmamcast_group_list *list = NULL;
	struct rdmamcast_daemon_status *status = NULL;
	struct ibv_ah_attr ah;
	uint64_t membership = 0, released = 99;
	int ok = -1;

	err[0] = '\0';
	CHECK(rdmamcast_connect(path, &c) == 0);
	CHECK(rdmamcast_event_fd(c) >= 0);
	CHECK(rdmamcast_next_event(c, &ev) == -EAGAIN);
	CHECK(rdmamcast_set_reconnect(c, 1, 5000) == 0);
	CHECK(sizeof(ev.reconnected) <= sizeof(ev.reserved));

	p.device = "mlx5_0";
	p.port = 1;
	p.flags = RDMAMCAST_JOIN_CREATE | RDMAMCAST_JOIN_QKEY;
	p.qkey = 0x1234;
	CHECK(rdmamcast_join(c, &p, &rec, &membership) == 0);
	CHECK(membership == 7);
	CHECK(rec.mlid == 0xc001);
	CHECK(rdmamcast_fill_ah_attr(&rec, 1, 0, &ah) == 0);
	CHECK(ah.dlid == 0xc001 && ah.is_global == 1);

	CHECK(rdmamcast_list(c, &list) == 0);
	CHECK(list->num_ports == 0);
	CHECK(rdmamcast_status(c, &status) == 0);
	CHECK(status->counters != NULL);
	CHECK(status->num_users == 0);
	CHECK(status->counters->sa_responses == 0 && status->counters->sa_late == 0);
	CHECK(!(status->counters->sa_amplification > 0));
	for (size_t i = 0; i < status->num_ports; i++) {
		const struct rdmamcast_port_sa *sa = status->ports[i]->sa;
		CHECK(!sa || (sa->window > 0 && (sa->has_srtt || sa->srtt_ms <= 0)));
	}

	/* The fake daemon releases nothing; uid -1 never leaves the library. */
	CHECK(rdmamcast_evict_membership(c, membership, &released) == 0);
	CHECK(released == 0);
	CHECK(rdmamcast_evict_uid(c, 0xffffffffu, NULL) == -EINVAL);
	CHECK(strcmp(rdmamcast_last_error(c)->rule, "") == 0);
	CHECK(strcmp(rdmamcast_last_error(c)->quota, "") == 0);

	CHECK(rdmamcast_leave(c, membership) == 0);
	CHECK(rdmamcast_last_error(c)->code == RDMAMCAST_E_NONE);
	ok = 0;
out:
	rdmamcast_list_free(list);
	rdmamcast_status_free(status);
	rdmamcast_close(c);
	return ok;
}
