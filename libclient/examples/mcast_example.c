/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * mcast_example: join an InfiniBand multicast group through rdma-mcastd and use it, in the
 * spirit of rdma-core's mckey.
 *
 *   mcast_example --device mlx5_0 --port 1 (--mgid ff15::1:2 | --create) [--qkey Q]
 *                 [--socket PATH]
 *
 * It joins through librdmamcast and prints the group record. Then, if libibverbs finds the
 * device, it creates a UD QP on that port, attaches it to the group, sends one message to the
 * group and receives it back (HCAs loop multicast back to local QPs attached to the group).
 * Without RDMA hardware it says so and exits 0 after printing the record.
 *
 * Build against an installed librdmamcast:
 *   cc mcast_example.c $(pkg-config --cflags --libs rdmamcast libibverbs)
 */
#define _GNU_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdmamcast/client.h>
#include <rdmamcast/verbs.h>

#define MSG_SIZE 64
#define GRH_SIZE 40 /* a UD receive buffer starts with the GRH */
#define MCAST_QPN 0xffffff

struct args {
	const char *device;
	const char *socket;
	const char *mgid;
	int port;
	int create;
	int has_qkey;
	uint32_t qkey;
};

static int usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s --device DEV --port N (--mgid MGID | --create) [--qkey Q] [--socket PATH]\n",
		prog);
	return 2;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{"device", required_argument, NULL, 'd'}, {"port", required_argument, NULL, 'p'},
		{"mgid", required_argument, NULL, 'm'},   {"create", no_argument, NULL, 'c'},
		{"qkey", required_argument, NULL, 'q'},   {"socket", required_argument, NULL, 's'},
		{NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "d:p:m:cq:s:", opts, NULL)) != -1) {
		switch (c) {
		case 'd': a->device = optarg; break;
		case 'p': a->port = atoi(optarg); break;
		case 'm': a->mgid = optarg; break;
		case 'c': a->create = 1; break;
		case 'q':
			a->has_qkey = 1;
			a->qkey = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 's': a->socket = optarg; break;
		default: return -1;
		}
	}
	if (!a->device || a->port < 1 || a->port > 254 || (!a->mgid == !a->create))
		return -1;
	return 0;
}

static void print_record(const struct rdmamcast_record *r, uint64_t membership)
{
	char mgid[INET6_ADDRSTRLEN], gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, r->mgid, mgid, sizeof(mgid));
	inet_ntop(AF_INET6, r->port_gid, gid, sizeof(gid));
	printf("joined membership %" PRIu64 "\n"
	       "  mgid %s  mlid 0x%x  qkey 0x%x  pkey 0x%x\n"
	       "  sl %u  mtu %u  rate %u (%g Gb/s)  flow_label 0x%x  traffic_class %u  hop_limit %u\n"
	       "  scope %u  join_state %s  port_gid %s\n",
	       membership, mgid, r->mlid, r->qkey, r->pkey, r->sl, r->mtu, r->rate,
	       rdmamcast_rate_gbps(r->rate), r->flow_label, r->traffic_class, r->hop_limit,
	       r->scope, rdmamcast_join_state_name(r->join_state), gid);
	fflush(stdout);
}

/* ---- the verbs part ---- */

struct ud {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	int attached;
	char buf[GRH_SIZE + MSG_SIZE + MSG_SIZE]; /* receive (GRH + message), then send */
};

static void ud_destroy(struct ud *u, const struct rdmamcast_record *rec)
{
	if (u->attached)
		rdmamcast_detach(u->qp, rec);
	if (u->ah)
		ibv_destroy_ah(u->ah);
	if (u->qp)
		ibv_destroy_qp(u->qp);
	if (u->mr)
		ibv_dereg_mr(u->mr);
	if (u->cq)
		ibv_destroy_cq(u->cq);
	if (u->pd)
		ibv_dealloc_pd(u->pd);
	if (u->ctx)
		ibv_close_device(u->ctx);
}

/* The GID table index of the port's GID that the daemon joined with: the AH's source. */
static int find_sgid_index(struct ibv_context *ctx, uint8_t port, const uint8_t gid[16])
{
	struct ibv_port_attr pa;
	union ibv_gid g;

	if (ibv_query_port(ctx, port, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++)
		if (!ibv_query_gid(ctx, port, i, &g) && !memcmp(g.raw, gid, 16))
			return i;
	return -1;
}

/* The P_Key table index of the group's P_Key (compared without the membership bit). */
static int find_pkey_index(struct ibv_context *ctx, uint8_t port, uint16_t pkey)
{
	struct ibv_port_attr pa;
	uint16_t p;

	if (ibv_query_port(ctx, port, &pa))
		return -1;
	for (int i = 0; i < pa.pkey_tbl_len; i++)
		if (!ibv_query_pkey(ctx, port, i, &p) && (ntohs(p) & 0x7fff) == (pkey & 0x7fff))
			return i;
	return -1;
}

static int ud_setup(struct ud *u, uint8_t port, const struct rdmamcast_record *rec)
{
	int pkey_index = find_pkey_index(u->ctx, port, rec->pkey);
	int sgid_index = find_sgid_index(u->ctx, port, rec->port_gid);
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_qp_attr attr;
	struct ibv_ah_attr ah_attr;
	int rc;

	if (pkey_index < 0 || sgid_index < 0) {
		fprintf(stderr, "the port has no %s matching the record\n",
			pkey_index < 0 ? "P_Key" : "GID");
		return -1;
	}
	if (!(u->pd = ibv_alloc_pd(u->ctx)) || !(u->cq = ibv_create_cq(u->ctx, 2, NULL, NULL, 0)) ||
	    !(u->mr = ibv_reg_mr(u->pd, u->buf, sizeof(u->buf), IBV_ACCESS_LOCAL_WRITE))) {
		perror("allocate PD, CQ or MR");
		return -1;
	}
	init.send_cq = init.recv_cq = u->cq;
	if (!(u->qp = ibv_create_qp(u->pd, &init))) {
		perror("ibv_create_qp");
		return -1;
	}
	/* The QP's Q_Key must be the group's, or the HCA drops what the group sends. */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.pkey_index = (uint16_t)pkey_index;
	attr.port_num = port;
	attr.qkey = rec->qkey;
	if ((rc = ibv_modify_qp(u->qp, &attr,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))) {
		fprintf(stderr, "QP to INIT: %s\n", strerror(rc));
		return -1;
	}
	attr.qp_state = IBV_QPS_RTR;
	if ((rc = ibv_modify_qp(u->qp, &attr, IBV_QP_STATE))) {
		fprintf(stderr, "QP to RTR: %s\n", strerror(rc));
		return -1;
	}
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	if ((rc = ibv_modify_qp(u->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN))) {
		fprintf(stderr, "QP to RTS: %s\n", strerror(rc));
		return -1;
	}
	if ((rc = rdmamcast_attach(u->qp, rec)) < 0) {
		fprintf(stderr, "attach to the group: %s\n", strerror(-rc));
		return -1;
	}
	u->attached = 1;
	rdmamcast_fill_ah_attr(rec, port, (uint8_t)sgid_index, &ah_attr);
	if (!(u->ah = ibv_create_ah(u->pd, &ah_attr))) {
		perror("ibv_create_ah");
		return -1;
	}
	return 0;
}

/* Posts one receive and one send to the group; waits up to two seconds for both. */
static int ud_ping(struct ud *u, const struct rdmamcast_record *rec)
{
	char *send_buf = u->buf + GRH_SIZE + MSG_SIZE;
	struct ibv_sge rsge = {(uintptr_t)u->buf, GRH_SIZE + MSG_SIZE, u->mr->lkey};
	struct ibv_sge ssge = {(uintptr_t)send_buf, MSG_SIZE, u->mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &rsge, .num_sge = 1}, *bad_rwr;
	struct ibv_send_wr swr = {.wr_id = 2, .sg_list = &ssge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED},
			   *bad_swr;
	struct timespec start, now;
	int got_send = 0, got_recv = 0;

	snprintf(send_buf, MSG_SIZE, "hello from pid %ld", (long)getpid());
	swr.wr.ud.ah = u->ah;
	swr.wr.ud.remote_qpn = MCAST_QPN;
	swr.wr.ud.remote_qkey = rec->qkey;
	if (ibv_post_recv(u->qp, &rwr, &bad_rwr) || ibv_post_send(u->qp, &swr, &bad_swr)) {
		fprintf(stderr, "post receive or send failed\n");
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!got_send || !got_recv) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(u->cq, 1, &wc);

		if (n < 0) {
			fprintf(stderr, "ibv_poll_cq failed\n");
			return -1;
		}
		if (n == 1) {
			if (wc.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "%s completion: %s\n", wc.wr_id == 1 ? "receive" : "send",
					ibv_wc_status_str(wc.status));
				return -1;
			}
			if (wc.wr_id == 1) {
				got_recv = 1;
				printf("received %u bytes from QPN 0x%x: \"%.*s\"\n",
				       wc.byte_len - GRH_SIZE, wc.src_qp, MSG_SIZE, u->buf + GRH_SIZE);
			} else {
				got_send = 1;
				printf("sent \"%s\" to the group\n", send_buf);
			}
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= 2) {
			fprintf(stderr, "no %s within 2 s\n", got_send ? "message back" : "send completion");
			return -1;
		}
	}
	return 0;
}

/* Returns 0 when done (or when there is no hardware to do it on), -1 on failure. */
static int use_group(const char *device, uint8_t port, const struct rdmamcast_record *rec)
{
	struct ibv_device **list;
	struct ud u;
	int n, rc = -1;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		printf("no RDMA devices found by libibverbs: skipping the send/receive part\n");
		if (list)
			ibv_free_device_list(list);
		return 0;
	}
	memset(&u, 0, sizeof(u));
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), device))
			u.ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!u.ctx) {
		printf("device %s not found (or not openable) by libibverbs: skipping the "
		       "send/receive part\n", device);
		return 0;
	}
	if (rec->join_state & (RDMAMCAST_JOIN_STATE_SENDONLY_NONMEMBER | RDMAMCAST_JOIN_STATE_SENDONLY_FULL))
		printf("send-only membership: not attaching, so nothing will come back\n");
	if (ud_setup(&u, port, rec) == 0)
		rc = ud_ping(&u, rec);
	ud_destroy(&u, rec);
	return rc;
}

int main(int argc, char **argv)
{
	struct args a = {0};
	struct rdmamcast_client *c;
	struct rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
	struct rdmamcast_record rec;
	uint64_t membership;
	int rc;

	if (parse_args(argc, argv, &a) < 0)
		return usage(argv[0]);

	rc = rdmamcast_connect(a.socket, &c);
	if (rc < 0) {
		fprintf(stderr, "%s\n", rdmamcast_last_error(NULL)->message);
		return 1;
	}
	printf("connected to %s (%s)\n", rdmamcast_socket_path(c), rdmamcast_daemon_version(c));

	p.device = a.device;
	p.port = (uint8_t)a.port;
	if (a.create) {
		p.flags |= RDMAMCAST_JOIN_CREATE;
	} else if (inet_pton(AF_INET6, a.mgid, p.mgid) != 1) {
		fprintf(stderr, "--mgid %s is not a GID in IPv6 form\n", a.mgid);
		rdmamcast_close(c);
		return 2;
	}
	if (a.has_qkey) {
		p.flags |= RDMAMCAST_JOIN_QKEY;
		p.qkey = a.qkey;
	}
	rc = rdmamcast_join(c, &p, &rec, &membership);
	if (rc < 0) {
		const struct rdmamcast_error *e = rdmamcast_last_error(c);

		fprintf(stderr, "join: %s: %s\n", e->code_name, e->message);
		rdmamcast_close(c);
		return 1;
	}
	print_record(&rec, membership);

	rc = use_group(a.device, (uint8_t)a.port, &rec);

	/* Closing would leave too; leaving first reports a failure, if any. */
	if (rdmamcast_leave(c, membership) < 0)
		fprintf(stderr, "leave: %s\n", rdmamcast_last_error(c)->message);
	rdmamcast_close(c);
	return rc < 0 ? 1 : 0;
}
