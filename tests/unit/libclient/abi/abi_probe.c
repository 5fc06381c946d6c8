/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * Every structure of the C API, read the way a program reads it: join (join parameters, the
 * record), the events (restored, lost, monitor, the asynchronous join's completions), the
 * errors (last_error, with the access policy's rule and quota), list (members), status and the
 * verbs helper that reads a record. Everything read is written out as "key=value" lines.
 *
 * It compiles against the headers of any release: test_abi_compat.cpp builds it against the
 * current ones (linked into the test) and against those of librdmamcast 0.1.0 (abi/0.1.0, into
 * a program of its own, as an application built then), runs both against one scripted daemon
 * and expects the same lines. The structures the caller allocates sit in front of canary bytes,
 * checked after every call that fills them.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>

#include <rdmamcast/client.h>
#include <rdmamcast/verbs.h>

#include "abi_probe.h"

#define CANARY 0xa5

#define FAIL(...)                                                                          \
	do {                                                                               \
		fprintf(out, "FAIL %s:%d: ", __FILE__, __LINE__);                          \
		fprintf(out, __VA_ARGS__);                                                 \
		fprintf(out, "\n");                                                        \
		goto fail;                                                                 \
	} while (0)
#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond))                                                               \
			FAIL("%s", #cond);                                                 \
	} while (0)

static const char *str(const char *s) { return s ? s : "(null)"; }

static void put_gid(FILE *out, const char *key, const uint8_t *gid)
{
	fprintf(out, "%s=", key);
	for (int i = 0; i < 16; i++)
		fprintf(out, "%02x", gid[i]);
	fprintf(out, "\n");
}

static int canary_intact(const unsigned char *bytes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (bytes[i] != CANARY)
			return 0;
	return 1;
}

static void put_record(FILE *out, const char *p, const struct rdmamcast_record *r)
{
	char key[96];
	snprintf(key, sizeof key, "%s.mgid", p);
	put_gid(out, key, r->mgid);
	snprintf(key, sizeof key, "%s.port_gid", p);
	put_gid(out, key, r->port_gid);
	fprintf(out, "%s.qkey=0x%" PRIx32 "\n%s.flow_label=0x%" PRIx32 "\n%s.mtu=%" PRIu32 "\n", p,
		r->qkey, p, r->flow_label, p, r->mtu);
	fprintf(out, "%s.mlid=0x%x\n%s.pkey=0x%x\n%s.sl=%u\n%s.rate=%u\n", p, r->mlid, p, r->pkey,
		p, r->sl, p, r->rate);
	fprintf(out, "%s.traffic_class=%u\n%s.hop_limit=%u\n%s.scope=%u\n%s.join_state=%u\n", p,
		r->traffic_class, p, r->hop_limit, p, r->scope, p, r->join_state);
	/* What follows join_state was reserved space in 0.1.0 and holds RoCE's fields since 1.6:
	 * read as the bytes they are, so that both programs print the same whatever the headers
	 * call them. */
	const unsigned char *tail = (const unsigned char *)&r->join_state + 1;
	const unsigned char *end = (const unsigned char *)r + sizeof *r;
	fprintf(out, "%s.tail=", p);
	for (; tail < end; tail++)
		fprintf(out, "%02x", *tail);
	fprintf(out, "\n");
}

static void put_error(FILE *out, const char *p, const struct rdmamcast_error *e)
{
	fprintf(out, "%s.code=%d\n%s.err=%d\n%s.code_name=%s\n%s.message=%s\n%s.field=%s\n", p,
		(int)e->code, p, e->err, p, str(e->code_name), p, str(e->message), p, str(e->field));
	fprintf(out, "%s.sa_status=%d:0x%x:%s\n", p, e->has_sa_status, e->sa_status,
		str(e->sa_status_name));
	fprintf(out, "%s.versions=%zu", p, e->num_versions);
	for (size_t i = 0; i < e->num_versions; i++)
		fprintf(out, ",%u", e->versions[i]);
	fprintf(out, "\n%s.rule=%s\n%s.quota=%s\n%s.limit=%" PRIu64 "\n", p, str(e->rule), p,
		str(e->quota), p, e->limit);
}

static void put_event(FILE *out, const char *p, const struct rdmamcast_event *ev)
{
	char key[96];
	fprintf(out, "%s.type=%d\n%s.membership=%" PRIu64 "\n", p, (int)ev->type, p,
		ev->membership);
	switch (ev->type) {
	case RDMAMCAST_EVENT_RESTORED:
		snprintf(key, sizeof key, "%s.restored.record", p);
		put_record(out, key, &ev->restored.record);
		fprintf(out, "%s.restored.changed=0x%" PRIx32 "\n", p, ev->restored.changed);
		break;
	case RDMAMCAST_EVENT_LOST:
		fprintf(out, "%s.lost=%d:%d:0x%x:%s:%s\n", p, (int)ev->lost.code,
			ev->lost.has_sa_status, ev->lost.sa_status, str(ev->lost.code_name),
			str(ev->lost.message));
		break;
	case RDMAMCAST_EVENT_MONITOR: {
		const struct rdmamcast_event_monitor *m = &ev->monitor;
		fprintf(out, "%s.monitor=%d:%s:%s:%u:0x%x:%u:%" PRId32 ":%" PRIu32 ":%d:0x%x:%s:%s\n",
			p, (int)m->kind, str(m->kind_name), str(m->device), m->port, m->mlid,
			m->join_state, m->pid, m->uid, m->has_sa_status, m->sa_status, str(m->comm),
			str(m->message));
		snprintf(key, sizeof key, "%s.monitor.mgid", p);
		put_gid(out, key, m->mgid);
		break;
	}
	case RDMAMCAST_EVENT_JOINED:
		fprintf(out, "%s.joined.context=%s\n%s.joined.join_id=%" PRIu64 "\n", p,
			(const char *)ev->joined.context, p, ev->joined.join_id);
		snprintf(key, sizeof key, "%s.joined.record", p);
		put_record(out, key, &ev->joined.record);
		break;
	case RDMAMCAST_EVENT_JOIN_ERROR:
		fprintf(out, "%s.join_error.context=%s\n%s.join_error.join_id=%" PRIu64 "\n", p,
			(const char *)ev->join_error.context, p, ev->join_error.join_id);
		snprintf(key, sizeof key, "%s.join_error.error", p);
		put_error(out, key, &ev->join_error.error);
		break;
	default:
		break;
	}
}

static void put_list(FILE *out, const struct rdmamcast_group_list *l)
{
	fprintf(out, "list.ports=%zu\n", l->num_ports);
	for (size_t i = 0; i < l->num_ports; i++) {
		const struct rdmamcast_port_groups *p = l->ports[i];
		char key[96];
		fprintf(out, "list.%zu=%s:%u:%zu\n", i, str(p->device), p->port, p->num_groups);
		snprintf(key, sizeof key, "list.%zu.port_gid", i);
		put_gid(out, key, p->port_gid);
		for (size_t j = 0; j < p->num_groups; j++) {
			const struct rdmamcast_group *g = p->groups[j];
			snprintf(key, sizeof key, "list.%zu.%zu.mgid", i, j);
			put_gid(out, key, g->mgid);
			fprintf(out, "list.%zu.%zu=0x%" PRIx32 ":0x%x:%u:%u:%d:%" PRIu32 ",%" PRIu32
				",%" PRIu32 ",%" PRIu32 ":%zu\n",
				i, j, g->qkey, g->mlid, g->held, g->foreign, g->busy, g->counts[0],
				g->counts[1], g->counts[2], g->counts[3], g->num_members);
			for (size_t k = 0; k < g->num_members; k++) {
				const struct rdmamcast_member *m = g->members[k];
				fprintf(out, "list.%zu.%zu.%zu=%" PRIu64 ":%" PRId32 ":%" PRIu32 ":%u:%s:%s\n",
					i, j, k, m->membership, m->pid, m->uid, m->join_state,
					str(m->state), str(m->comm));
				fprintf(out, "list.%zu.%zu.%zu.policy=%s:%d:%s\n", i, j, k, str(m->rule),
					m->created, str(m->flagged));
				fprintf(out, "list.%zu.%zu.%zu.name=%s\n", i, j, k, str(m->name));
			}
		}
	}
}

static void put_status(FILE *out, const struct rdmamcast_daemon_status *s)
{
	const struct rdmamcast_counters *c = s->counters;
	fprintf(out, "status=%s:%u:%.17g:%" PRIu64 ":%zu:%zu\n", str(s->daemon), s->protocol,
		s->uptime_s, s->clients, s->num_ports, s->num_users);
	fprintf(out,
		"status.counters=%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.17g,%" PRIu64 ",%" PRIu64
		",%" PRIu64 "\n",
		c->sa_mads_sent, c->sa_retransmits, c->sa_timeouts, c->sa_bounces, c->joins,
		c->joins_local, c->joins_failed, c->leaves, c->sa_responses, c->sa_late,
		c->sa_amplification, c->sa_sets, c->sa_deletes, c->sa_gets);
	for (size_t i = 0; i < s->num_ports; i++) {
		const struct rdmamcast_port_status *p = s->ports[i];
		char key[96];
		fprintf(out,
			"status.port.%zu=%s:%u:%u:%u:%u:%s:%s:%.17g:%" PRIu64 ":%" PRIu32 ":%d:%" PRIu32
			":0x%" PRIx64 ":%d:%" PRIu64 "\n",
			i, str(p->device), p->port, p->sm_sl, p->lid, p->sm_lid, str(p->state),
			str(p->link_layer), p->rate_gbps, p->groups, p->mtu, p->sm_known,
			p->sm_act_count, p->sm_guid, p->rejoining, p->max_groups);
		snprintf(key, sizeof key, "status.port.%zu.port_gid", i);
		put_gid(out, key, p->port_gid);
		if (p->last_rejoin)
			fprintf(out, "status.port.%zu.rejoin=%s:%.17g:%d:%.17g:%" PRIu64 "\n", i,
				str(p->last_rejoin->reason), p->last_rejoin->started_ago_s,
				p->last_rejoin->finished, p->last_rejoin->duration_s,
				p->last_rejoin->groups);
		if (p->sa)
			fprintf(out, "status.port.%zu.sa=%.17g:%d:%d:%.17g:%d:%.17g\n", i, p->sa->window,
				p->sa->slow_start, p->sa->has_srtt, p->sa->srtt_ms, p->sa->has_timeout,
				p->sa->timeout_ms);
	}
	for (size_t i = 0; i < s->num_users; i++) {
		const struct rdmamcast_user_usage *u = s->users[i];
		fprintf(out,
			"status.user.%zu=%" PRIu32 ":%s:%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRIu64
			":%" PRIu64 "\n",
			i, u->uid, str(u->user), u->memberships, u->memberships_quota, u->creates,
			u->creates_quota, u->flagged);
	}
}

static struct rdmamcast_join_params params(const char *mgid_last_bytes, const char *name)
{
	struct rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
	p.device = "mlx5_0";
	p.port = 1;
	p.flags = RDMAMCAST_JOIN_QKEY;
	p.qkey = 0x1234;
	if (name) {
		p.name = name;
	} else {
		/* ff15::<last 4 bytes> */
		p.mgid[0] = 0xff;
		p.mgid[1] = 0x15;
		memcpy(p.mgid + 12, mgid_last_bytes, 4);
	}
	return p;
}

/* The next event, waiting for one at most 10 s (a bound for a broken library, not a delay). */
static int next_event(struct rdmamcast_client *c, struct rdmamcast_event *ev)
{
	for (;;) {
		int rc = rdmamcast_next_event(c, ev);
		if (rc != -EAGAIN)
			return rc;
		struct pollfd pfd = {rdmamcast_event_fd(c), POLLIN, 0};
		if (poll(&pfd, 1, 10000) != 1)
			return -ETIMEDOUT;
	}
}

int abi_probe(const char *path, FILE *out)
{
	struct rdmamcast_client *c = NULL, *none = NULL;
	struct rdmamcast_group_list *list = NULL;
	struct rdmamcast_daemon_status *status = NULL;
	struct {
		struct rdmamcast_record rec;
		unsigned char after[64];
	} rec;
	struct {
		struct rdmamcast_event ev;
		unsigned char after[64];
	} ev;
	struct rdmamcast_join_params p;
	struct ibv_ah_attr ah;
	uint64_t m = 0, join_id[2] = {0, 0};
	int rc, ok = -1;

	/* The error of a failed connect, which no handle carries. */
	rc = rdmamcast_connect("/nonexistent/rdma-mcastd.sock", &none);
	fprintf(out, "connect_nowhere=%d\n", rc);
	put_error(out, "connect_nowhere", rdmamcast_last_error(NULL));
	CHECK(rc < 0 && none == NULL);

	rc = rdmamcast_connect(path, &c);
	fprintf(out, "connect=%d:%u:%s\n", rc, rc == 0 ? rdmamcast_protocol_version(c) : 0,
		rc == 0 ? rdmamcast_daemon_version(c) : "");
	CHECK(rc == 0);

	/* A named join, which the daemon answers after three events. */
	memset(&rec, CANARY, sizeof rec);
	p = params(NULL, "job-42");
	rc = rdmamcast_join(c, &p, &rec.rec, &m);
	fprintf(out, "join=%d:%" PRIu64 "\n", rc, m);
	CHECK(rc == 0);
	CHECK(canary_intact(rec.after, sizeof rec.after));
	put_record(out, "join.record", &rec.rec);
	put_error(out, "join.last_error", rdmamcast_last_error(c));

	for (int i = 0; i < 3; i++) {
		char key[32];
		memset(&ev, CANARY, sizeof ev);
		rc = rdmamcast_next_event(c, &ev.ev);
		CHECK(rc == 0);
		CHECK(canary_intact(ev.after, sizeof ev.after));
		snprintf(key, sizeof key, "event.%d", i);
		put_event(out, key, &ev.ev);
	}
	fprintf(out, "event.none=%d\n", rdmamcast_next_event(c, &ev.ev));

	/* The access policy's answers: a rule that denies, a quota reached. */
	p = params("\0\0\xde\xad", NULL);
	rc = rdmamcast_join(c, &p, NULL, NULL);
	fprintf(out, "denied=%d\n", rc);
	put_error(out, "denied", rdmamcast_last_error(c));
	p = params("\0\0\xbe\xef", NULL);
	rc = rdmamcast_join(c, &p, NULL, NULL);
	fprintf(out, "limit=%d\n", rc);
	put_error(out, "limit", rdmamcast_last_error(c));

	/* Asynchronous joins: one completes, one is denied. */
	p = params("\0\x01\0\x03", NULL);
	CHECK(rdmamcast_join_start(c, &p, "first", &join_id[0]) == 0);
	p = params("\0\0\xde\xad", NULL);
	CHECK(rdmamcast_join_start(c, &p, "second", &join_id[1]) == 0);
	fprintf(out, "join_start=%" PRIu64 ",%" PRIu64 "\n", join_id[0], join_id[1]);
	for (int i = 0; i < 2; i++) {
		char key[32];
		memset(&ev, CANARY, sizeof ev);
		rc = next_event(c, &ev.ev);
		CHECK(rc == 0);
		CHECK(canary_intact(ev.after, sizeof ev.after));
		snprintf(key, sizeof key, "completion.%d", i);
		put_event(out, key, &ev.ev);
	}

	rc = rdmamcast_list(c, &list);
	fprintf(out, "list=%d\n", rc);
	CHECK(rc == 0);
	put_list(out, list);

	rc = rdmamcast_status(c, &status);
	fprintf(out, "status_rc=%d\n", rc);
	CHECK(rc == 0);
	put_status(out, status);

	/* The verbs helper reads the record the join filled in. */
	memset(&ah, 0, sizeof ah);
	rc = rdmamcast_fill_ah_attr(&rec.rec, 1, 2, &ah);
	fprintf(out, "ah=%d:0x%x:%u:%u:%u:%u:0x%x:%u:%u:%u\n", rc, ah.dlid, ah.sl, ah.static_rate,
		ah.is_global, ah.port_num, ah.grh.flow_label, ah.grh.sgid_index, ah.grh.hop_limit,
		ah.grh.traffic_class);
	put_gid(out, "ah.dgid", ah.grh.dgid.raw);

	rc = rdmamcast_leave(c, m);
	fprintf(out, "leave=%d\n", rc);
	put_error(out, "leave.last_error", rdmamcast_last_error(c));
	ok = 0;
fail:
	rdmamcast_list_free(list);
	rdmamcast_status_free(status);
	rdmamcast_close(c);
	fprintf(out, "end=%d\n", ok);
	return ok;
}
