/* SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB */
/*
 * librdmamcast: the C client API of rdma-mcastd.
 *
 * rdma-mcastd owns the InfiniBand SA multicast memberships of a host and shares them between
 * processes. A process connects to it over a Unix socket, joins groups through it and gets the
 * group record it needs to attach a UD QP (see <rdmamcast/verbs.h> for helpers that do that).
 * Memberships belong to the connection: closing it (or exiting, or crashing) leaves them all.
 *
 * A daemon restart does not close it. Under systemd the daemon keeps the connection across a
 * restart, and the handle notices nothing. When the connection is lost anyway (the daemon
 * crashed without systemd, or was replaced by hand), the daemon keeps the session's memberships
 * for a grace period, and the handle reconnects by itself and takes them back (protocol version
 * 2, see rdmamcast_set_reconnect()): it then queues one RDMAMCAST_EVENT_RECONNECTED event that
 * says which memberships came back and which were lost (join those again). A daemon stopped for
 * good says so first; the handle then does not reconnect and fails with RDMAMCAST_E_DISCONNECTED
 * and the daemon's message. With a version 1 daemon, or reconnecting disabled, a lost
 * connection is final: every later call fails with RDMAMCAST_E_DISCONNECTED.
 *
 * Conventions
 *   - Functions that can fail return 0 (or a non-negative count) on success and a negative
 *     errno-style code on failure. rdmamcast_last_error() then says what happened: the
 *     protocol's error code, the SA status and the daemon's message, which names the cause.
 *   - Synchronous calls (join, leave, list, status, monitor, evict) send one request and wait
 *     for its reply. Events that arrive meanwhile are queued for rdmamcast_next_event(), never lost.
 *     rdmamcast_join_start() is the asynchronous join: it returns at once and its completion
 *     arrives as an event, as rdma_join_multicast()'s does on an rdma_cm event channel.
 *   - Signals do not interrupt a synchronous call: EINTR is retried, because abandoning a join
 *     in flight would leave a membership nobody knows about. There is no client-side timeout:
 *     the daemon bounds every SA exchange (sa-timeout) and answers everything else at once.
 *   - The headers need C11 (anonymous unions) or C++.
 *
 * Thread safety
 *   A client handle is not thread-safe: use it from one thread at a time (or one handle per
 *   thread; handles are independent). Functions that take no handle are thread-safe.
 *
 * ABI (libclient/ABI.md)
 *   Only rdmamcast_* symbols are exported (SONAME librdmamcast.so.1), versioned RDMAMCAST_1.0,
 *   RDMAMCAST_1.1 for rdmamcast_set_reconnect(), RDMAMCAST_1.2 for rdmamcast_evict_uid()
 *   and rdmamcast_evict_membership(), RDMAMCAST_1.3 for rdmamcast_join_start() and
 *   rdmamcast_join_cancel(), RDMAMCAST_1.4 for rdmamcast_list_own() and
 *   rdmamcast_disconnect_uid(), RDMAMCAST_1.5 for the *_sized entry points, and RDMAMCAST_1.6
 *   for rdmamcast_membership_netdev().
 *   Every structure is one of three kinds, so that a program keeps working with a newer library
 *   and fails cleanly with an older one:
 *   - Fixed: rdmamcast_record and rdmamcast_event never change size (the caller allocates
 *     them, and events embed records). New fields take their reserved space, where zero means
 *     "not known", as from an older library.
 *   - Sized by the caller: rdmamcast_join_params carries its own size (set by its initialisers);
 *     fields are only appended.
 *   - Sized by the call: the structures the library allocates (the error, list and status
 *     trees) are only appended to. The functions that hand them out, rdmamcast_last_error(),
 *     rdmamcast_next_event(), rdmamcast_list(), rdmamcast_list_own() and rdmamcast_status(),
 *     are inline functions here that pass the *_sized entry points the sizes of the structures
 *     as this program was compiled (rdmamcast_compiled_sizes()). A library that knows smaller
 *     ones refuses with RDMAMCAST_E_ABI rather than hand out less than the program reads; one
 *     older than RDMAMCAST_1.5 does not load the program.
 */
#ifndef RDMAMCAST_CLIENT_H
#define RDMAMCAST_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RDMAMCAST_EXPORT __attribute__((visibility("default")))
#else
#define RDMAMCAST_EXPORT
#endif

/* Where clients find the daemon; the environment variable overrides the default. */
#define RDMAMCAST_DEFAULT_SOCKET "/run/rdma-mcastd.sock"
#define RDMAMCAST_SOCKET_ENV "RDMA_MCASTD_SOCKET"

/* The highest protocol version this library speaks (proto/PROTOCOL.md); it also speaks 1. */
#define RDMAMCAST_PROTOCOL_VERSION 2

struct rdmamcast_client;

/* The sizes of the public structures as this translation unit compiled them (see ABI above;
 * defined at the end of this header). */
struct rdmamcast_sizes;
static inline const struct rdmamcast_sizes *rdmamcast_compiled_sizes(void);

/* ---- errors ---- */

/*
 * Values 1..14 are the daemon's error codes, in PROTOCOL.md's order; values from 64 on are the
 * library's own. The numbers are part of the ABI and never change.
 */
enum rdmamcast_errc {
	RDMAMCAST_E_NONE = 0,
	RDMAMCAST_E_INVALID_ARGUMENT = 1,     /* -EINVAL: malformed request or argument */
	RDMAMCAST_E_NO_SUCH_DEVICE = 2,       /* -ENODEV */
	RDMAMCAST_E_NO_SUCH_PORT = 3,         /* -ENXIO */
	RDMAMCAST_E_PORT_NOT_ACTIVE = 4,      /* -ENETDOWN */
	RDMAMCAST_E_CONFLICT = 5,             /* -EEXIST: contradicts the group's record */
	RDMAMCAST_E_SA_ERROR = 6,             /* -EREMOTEIO: SA status in sa_status */
	RDMAMCAST_E_SA_TIMEOUT = 7,           /* -ETIMEDOUT */
	RDMAMCAST_E_DENIED = 8,               /* -EACCES: policy refuses the caller or the MGID (rule) */
	RDMAMCAST_E_TOO_LARGE = 9,            /* -EMSGSIZE */
	RDMAMCAST_E_UNSUPPORTED_VERSION = 10, /* -EPROTONOSUPPORT */
	RDMAMCAST_E_NOT_FOUND = 11,           /* -ENOENT: no such membership */
	RDMAMCAST_E_CANCELLED = 12,           /* -ECANCELED */
	RDMAMCAST_E_LIMIT = 13,               /* -ENOSPC: a daemon limit or quota was reached */
	RDMAMCAST_E_INTERNAL = 14,            /* -EIO: a daemon bug or system error */

	RDMAMCAST_E_UNKNOWN = 64,      /* -EIO: a daemon code this library does not know (code_name) */
	RDMAMCAST_E_SYSTEM = 65,       /* a system call failed; the return value is its -errno */
	RDMAMCAST_E_PROTOCOL = 66,     /* -EPROTO: the daemon sent something undecodable */
	RDMAMCAST_E_DISCONNECTED = 67, /* -ECONNRESET, -EPIPE, -ENOTCONN: the connection is gone */
	RDMAMCAST_E_ABI = 68,          /* -EINVAL (-E2BIG for join parameters): the program was
					  built against a newer librdmamcast than it runs with (1.5) */
};

/*
 * What the last failing call on a handle ran into. Strings are never NULL ("" when absent) and
 * stay valid until the next call on the same handle.
 */
struct rdmamcast_error {
	enum rdmamcast_errc code; /* RDMAMCAST_E_NONE when the last call succeeded */
	int err;                  /* the negative value the call returned, 0 on success */
	const char *code_name;    /* "sa-error", ...: the daemon's code text (also one this
				     library does not know), else rdmamcast_errc_name(code) */
	const char *message;      /* one sentence naming the real cause */
	const char *field;        /* JSON pointer of the request field at fault, e.g. "/qkey" */
	bool has_sa_status;
	uint16_t sa_status;         /* RDMAMCAST_E_SA_ERROR: the SA's MAD status */
	const char *sa_status_name; /* and its IBA name, "ERR_REQ_INVALID" */
	size_t num_versions;        /* RDMAMCAST_E_UNSUPPORTED_VERSION: versions the daemon serves */
	const unsigned *versions;
	/* The daemon's access policy (config access) refused the request (1.2): */
	const char *rule;  /* RDMAMCAST_E_DENIED: the rule that refused it; "" otherwise */
	const char *quota; /* RDMAMCAST_E_LIMIT: the config key reached, without its section:
			      "memberships_per_uid", "creates_per_uid", "max_requests_in_flight",
			      ... (a key of rdma-mcastd.json(5)); "" otherwise */
	uint64_t limit;    /* that quota's value (0 when quota is "") */
};

/*
 * The last error on c. With c == NULL: the last failed rdmamcast_connect() of the calling
 * thread, which has no handle to carry it. Never NULL. If this program's struct rdmamcast_error
 * is larger than the library's, it says so (RDMAMCAST_E_ABI), with every field past the
 * library's zero, instead of the last call's error.
 */
RDMAMCAST_EXPORT const struct rdmamcast_error *
rdmamcast_last_error_sized(const struct rdmamcast_client *c, const struct rdmamcast_sizes *sizes);
#ifndef RDMAMCAST_BUILDING_LIBRARY
static inline const struct rdmamcast_error *rdmamcast_last_error(const struct rdmamcast_client *c)
{
	return rdmamcast_last_error_sized(c, rdmamcast_compiled_sizes());
}
#else
RDMAMCAST_EXPORT const struct rdmamcast_error *rdmamcast_last_error(const struct rdmamcast_client *c);
#endif

/* "sa-error", "not-found", ... as in PROTOCOL.md; the library's own codes are "unknown",
 * "system", "protocol" and "disconnected"; "" for RDMAMCAST_E_NONE. The string is static. */
RDMAMCAST_EXPORT const char *rdmamcast_errc_name(enum rdmamcast_errc code);
/* One sentence describing the code in general (the message says what happened this time). */
RDMAMCAST_EXPORT const char *rdmamcast_strerror(enum rdmamcast_errc code);

/* ---- connection ---- */

/* The library's version, "0.1.0". */
RDMAMCAST_EXPORT const char *rdmamcast_version(void);

/*
 * Connects to the daemon at path (NULL: $RDMA_MCASTD_SOCKET if set and not empty, else
 * RDMAMCAST_DEFAULT_SOCKET; a path starting with '@' names an abstract socket) and negotiates
 * the protocol version. On failure *out is NULL and rdmamcast_last_error(NULL) says
 * why: -ENOENT/-ECONNREFUSED (the daemon is not running), -EACCES (denied by the socket's
 * permissions or by the daemon's policy), -EPROTONOSUPPORT (no common protocol version).
 */
RDMAMCAST_EXPORT int rdmamcast_connect(const char *path, struct rdmamcast_client **out);

/* Closes the connection; the daemon then leaves every membership it held. NULL is a no-op. */
RDMAMCAST_EXPORT void rdmamcast_close(struct rdmamcast_client *c);

/* The path connected to, the negotiated protocol version and the daemon's "rdma-mcastd 0.1.0"
 * (the last two as of the latest connection: see rdmamcast_set_reconnect()). */
RDMAMCAST_EXPORT const char *rdmamcast_socket_path(const struct rdmamcast_client *c);
RDMAMCAST_EXPORT unsigned rdmamcast_protocol_version(const struct rdmamcast_client *c);
RDMAMCAST_EXPORT const char *rdmamcast_daemon_version(const struct rdmamcast_client *c);

/* How long a handle keeps trying to reconnect, unless rdmamcast_set_reconnect() says otherwise. */
#define RDMAMCAST_RECONNECT_TIMEOUT_MS 60000u

/*
 * Whether the handle reconnects when the connection to a version 2 daemon breaks (on by
 * default), and for how long it tries (timeout_ms; 0 means RDMAMCAST_RECONNECT_TIMEOUT_MS).
 *
 * A break is noticed by the call that meets it: a synchronous call, or rdmamcast_next_event()
 * after the event descriptor polled readable. That call then reconnects before it returns,
 * blocking meanwhile: a new connection and a hello that resumes the session, tried at once, then
 * after 50 ms and at intervals doubling up to 2 s (each +-20 %), until timeout_ms after the
 * break (signals do not interrupt it, as they do not interrupt other calls). It then
 * queues one RDMAMCAST_EVENT_RECONNECTED event; memberships the daemon kept for the session that
 * this handle did not know of (a join whose reply the break swallowed) are left without a word,
 * and a monitor subscription is renewed if the session is a new one.
 *   - A call whose request was sent but not answered when the connection broke returns
 *     -ECONNRESET (RDMAMCAST_E_DISCONNECTED), its message saying that the daemon restarted and
 *     the request's outcome is unknown; the handle is connected again and usable.
 *   - A request that could not be sent at all is sent again on the new connection.
 *   - If no attempt succeeds in time, the call fails with RDMAMCAST_E_DISCONNECTED and the handle
 *     stays failed, as with reconnecting disabled.
 *
 * With enable == 0, a broken connection is final, as before this function existed. A daemon
 * that speaks only version 1 gives no session to resume, so the setting changes nothing there.
 * Returns 0, or -EINVAL for a NULL handle. (RDMAMCAST_1.1)
 */
RDMAMCAST_EXPORT int rdmamcast_set_reconnect(struct rdmamcast_client *c, int enable,
					     unsigned timeout_ms);

/* ---- group records ---- */

/* JoinState bits (IBA 15.2.5.17). A membership has exactly one. */
enum rdmamcast_join_state {
	RDMAMCAST_JOIN_STATE_FULL = 0x1,
	RDMAMCAST_JOIN_STATE_NONMEMBER = 0x2,
	RDMAMCAST_JOIN_STATE_SENDONLY_NONMEMBER = 0x4,
	RDMAMCAST_JOIN_STATE_SENDONLY_FULL = 0x8,
};

/* "full", "nonmember", "sendonly-nonmember", "sendonly-full"; several bits joined by '+';
 * "none" for 0. The string is static. */
RDMAMCAST_EXPORT const char *rdmamcast_join_state_name(uint8_t join_state);
/* The reverse, for one name. 0, or -EINVAL for an unknown name. */
RDMAMCAST_EXPORT int rdmamcast_join_state_parse(const char *name, uint8_t *join_state);

/* A static rate (enum ibv_rate value) in Gb/s, 0 for an unknown value. */
RDMAMCAST_EXPORT double rdmamcast_rate_gbps(uint8_t rate);

/* A port's link layer (rdmamcast_record.link_layer). Zero is InfiniBand: a record from a
 * daemon that knows no RoCE says nothing, and is InfiniBand's. */
enum rdmamcast_link_layer {
	RDMAMCAST_LINK_LAYER_INFINIBAND = 0,
	RDMAMCAST_LINK_LAYER_ETHERNET = 1, /* RoCE */
};

/* The type of the GID a RoCE membership is sent from (rdmamcast_record.gid_type, and a join's
 * choice: rdmamcast_join_params.gid_type). */
enum rdmamcast_gid_type {
	RDMAMCAST_GID_TYPE_IB = 0,      /* an InfiniBand port's GID */
	RDMAMCAST_GID_TYPE_ROCE_V1 = 1, /* RoCE v1: Ethernet frames, not routed */
	RDMAMCAST_GID_TYPE_ROCE_V2 = 2, /* RoCE v2: UDP/IP, routable */
};

/*
 * A group record: what a UD QP needs to attach (mgid, mlid) and to address the group
 * (rdmamcast_fill_ah_attr() in <rdmamcast/verbs.h>). GIDs are in network byte order, as in
 * union ibv_gid; everything else in host order.
 *
 * On a RoCE port (link_layer RDMAMCAST_LINK_LAYER_ETHERNET) the group is an IP multicast group:
 * ip is the group, mgid its MGID for the GID type (an IPv4 group a.b.c.d is ::ffff:a.b.c.d on
 * RoCE v2, ff0e::ffff:a.b.c.d on RoCE v1; an IPv6 group is its own MGID), mlid is 0, pkey
 * 0xffff, and the daemon holds the host's IGMP/MLD membership on the netdev of the GID at
 * sgid_index (rdmamcast_membership_netdev() names it). Fields from link_layer on are zero from a
 * daemon that knows no RoCE (1.6).
 */
struct rdmamcast_record {
	uint8_t mgid[16];     /* the group's MGID (the SA-assigned one after a create) */
	uint8_t port_gid[16]; /* the joining port's GID: the AH's source GID */
	uint32_t qkey;        /* the QP's Q_Key must equal it */
	uint32_t flow_label;  /* 20 bits */
	uint32_t mtu;         /* bytes: 256..4096 */
	uint16_t mlid;        /* the AH's DLID and ibv_attach_mcast()'s lid; 0 on RoCE */
	uint16_t pkey;
	uint8_t sl;
	uint8_t rate;         /* static rate: enum ibv_rate */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t scope;        /* the MGID's scope nibble */
	uint8_t join_state;   /* this membership's RDMAMCAST_JOIN_STATE_* bit */
	uint8_t link_layer;   /* enum rdmamcast_link_layer */
	uint8_t gid_type;     /* enum rdmamcast_gid_type: RoCE v1 or v2 on RoCE, IB otherwise */
	/* RoCE only; zero on InfiniBand: */
	uint8_t sgid_index;   /* the port's GID table index of port_gid: the AH's sgid_index */
	uint8_t reserved1;    /* zero */
	uint8_t dmac[6];      /* the destination MAC of the group's frames (01:00:5e:..., 33:33:...) */
	uint8_t ip[16];       /* the IP group, network byte order; IPv4 as ::ffff:a.b.c.d */
	uint64_t reserved[1]; /* zero; a later version may put fields here */
};

/* ---- join ---- */

/* Which optional fields of rdmamcast_join_params are set. A field that is not set is not
 * asserted: the group's value is taken (or, on create, the daemon's configured default). */
enum rdmamcast_join_flags {
	RDMAMCAST_JOIN_CREATE = 1 << 0, /* create a group with an SA-assigned MGID; mgid is ignored */
	RDMAMCAST_JOIN_SCOPE = 1 << 1,  /* with CREATE: the scope of the MGID (1..15) */
	RDMAMCAST_JOIN_QKEY = 1 << 2,
	RDMAMCAST_JOIN_PKEY = 1 << 3,
	RDMAMCAST_JOIN_SL = 1 << 4,
	RDMAMCAST_JOIN_TRAFFIC_CLASS = 1 << 5,
	RDMAMCAST_JOIN_FLOW_LABEL = 1 << 6,
	RDMAMCAST_JOIN_HOP_LIMIT = 1 << 7,
	RDMAMCAST_JOIN_MTU = 1 << 8,  /* mtu and mtu_selector */
	RDMAMCAST_JOIN_RATE = 1 << 9, /* rate and rate_selector */
	RDMAMCAST_JOIN_IP = 1 << 10,       /* ip: join an IP multicast group on a RoCE port (1.6) */
	RDMAMCAST_JOIN_GID_TYPE = 1 << 11, /* gid_type: the RoCE GID type to join with (1.6) */
};

/* How mtu and rate compare with the group's. NOT the IBA encoding: zero is "exactly", the
 * protocol's default, so that a zeroed structure means what it says. */
enum rdmamcast_selector {
	RDMAMCAST_SELECTOR_EXACTLY = 0,
	RDMAMCAST_SELECTOR_GREATER = 1,
	RDMAMCAST_SELECTOR_LESS = 2,
	RDMAMCAST_SELECTOR_BEST = 3,
};

/*
 * Initialise with RDMAMCAST_JOIN_PARAMS_INIT or rdmamcast_join_params_init(): both record the
 * size of the structure this program was compiled with, which is how the library tells which
 * fields the caller knows about. Later versions only append fields (and flags for them).
 */
struct rdmamcast_join_params {
	uint32_t size;      /* sizeof(struct rdmamcast_join_params), set by the initialisers */
	uint32_t flags;     /* enum rdmamcast_join_flags */
	const char *device; /* required: the CA name, "mlx5_0" */
	uint8_t port;       /* required: 1..254 */
	uint8_t join_state; /* one RDMAMCAST_JOIN_STATE_* bit; 0 means FULL */
	uint8_t scope;      /* RDMAMCAST_JOIN_SCOPE */
	uint8_t sl;         /* RDMAMCAST_JOIN_SL: 0..15 */
	uint8_t mgid[16];   /* the group, network byte order; required unless RDMAMCAST_JOIN_CREATE or name */
	uint32_t qkey;       /* RDMAMCAST_JOIN_QKEY */
	uint32_t flow_label; /* RDMAMCAST_JOIN_FLOW_LABEL: 0..0xfffff */
	uint32_t mtu;        /* RDMAMCAST_JOIN_MTU: bytes, 256..4096 */
	uint16_t pkey;       /* RDMAMCAST_JOIN_PKEY */
	uint8_t traffic_class; /* RDMAMCAST_JOIN_TRAFFIC_CLASS */
	uint8_t hop_limit;     /* RDMAMCAST_JOIN_HOP_LIMIT */
	uint8_t mtu_selector;  /* enum rdmamcast_selector */
	uint8_t rate;          /* RDMAMCAST_JOIN_RATE: enum ibv_rate, 2..22 */
	uint8_t rate_selector; /* enum rdmamcast_selector */
	uint8_t reserved0;
	/* A named group (proto/PROTOCOL.md, "Named groups"): non-NULL joins the group the daemon
	 * maps this name to (1..255 bytes of UTF-8 without control characters), under its configured
	 * MGID prefix and P_Key, so every host of a job reaches the same group by the same name.
	 * Excludes RDMAMCAST_JOIN_CREATE and SCOPE, and mgid must be all zero; the record's mgid is
	 * the group's. The string need only live during the call. NULL: join by mgid or create. */
	const char *name;
	/* RoCE (1.6). With RDMAMCAST_JOIN_IP: the IP multicast group to join on a RoCE port, as
	 * text ("239.1.2.3", "ff0e::1:2"); the daemon maps it to the MGID of the port's GID type.
	 * Excludes RDMAMCAST_JOIN_CREATE, SCOPE and name, and mgid must be all zero. NULL without
	 * the flag. The string need only live during the call. */
	const char *ip;
	/* With RDMAMCAST_JOIN_GID_TYPE: RDMAMCAST_GID_TYPE_ROCE_V1 or _V2, the GID type to join
	 * with (an IPv4 group's MGID differs between them). Without it, the daemon's choice for
	 * the port (its default RoCE mode, else RoCE v2). */
	enum rdmamcast_gid_type gid_type;
	uint32_t reserved1; /* zero */
	/* RoCE (1.6). Non-NULL: the interface of the caller's network namespace to hold the
	 * group's IP membership on ("eth0"), for a container whose interface is not named as the
	 * port's netdev; NULL: the port's netdev by name. The string need only live during the call. */
	const char *ifname;
};

static inline void rdmamcast_join_params_init(struct rdmamcast_join_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
}

static inline struct rdmamcast_join_params rdmamcast_join_params_make(void)
{
	struct rdmamcast_join_params p;
	rdmamcast_join_params_init(&p);
	return p;
}

/* struct rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT; (C++ compilers warn about a
 * partial designated initializer under -Wextra, so there it is a function call.) */
#ifdef __cplusplus
#define RDMAMCAST_JOIN_PARAMS_INIT rdmamcast_join_params_make()
#else
#define RDMAMCAST_JOIN_PARAMS_INIT {.size = sizeof(struct rdmamcast_join_params)}
#endif

/*
 * Joins a group and waits for the daemon's answer (an SA round trip unless the port already
 * holds the group; the daemon bounds it with its SA retry budget). On success fills *rec_out
 * and *membership_out (either may be NULL), the membership's id for rdmamcast_leave() and for
 * events. Parameters are checked before anything is sent (-EINVAL with last_error.field).
 * Unknown flags are -EOPNOTSUPP; non-zero bytes past the end of the structure this library
 * knows are -E2BIG.
 *
 * On a RoCE port a FullMember or NonMember join needs the host's IP membership of the group,
 * which the daemon holds on a UDP socket this library makes in the caller's network namespace
 * and hands over with the request (proto/PROTOCOL.md, "RoCE ports"); it is closed here as soon
 * as it is sent. The library does so for every such join on a port it has not yet seen answer
 * as InfiniBand.
 */
RDMAMCAST_EXPORT int rdmamcast_join(struct rdmamcast_client *c,
				    const struct rdmamcast_join_params *p,
				    struct rdmamcast_record *rec_out, uint64_t *membership_out);

/*
 * Asynchronous join (RDMAMCAST_1.3), as rdma_join_multicast() does it: checks the parameters
 * as rdmamcast_join() does (a bad one fails here, with last_error, and nothing is started),
 * starts the join and returns at once with *join_id_out (may be NULL) naming it for
 * rdmamcast_join_cancel(). Its completion arrives exactly once through rdmamcast_next_event()
 * (rdmamcast_event_fd() polls readable): RDMAMCAST_EVENT_JOINED with the membership and the
 * record, or RDMAMCAST_EVENT_JOIN_ERROR with the error, both carrying `context` untouched and
 * the join id. Completions keep the order in which the daemon answered, among the other events:
 * one never comes before a RESTORED or LOST event the daemon sent earlier.
 *
 * Any number of joins may be started. The daemon lets a connection have only so many joins
 * waiting for the SA (limits.max_requests_in_flight, 64 by default), so the handle sends at most
 * RDMAMCAST_JOIN_WINDOW at a time and keeps the rest in a local queue, sending the next one as an
 * answer frees a slot (while the caller is in any call on the handle: rdmamcast_next_event() in
 * an event loop). A daemon configured below RDMAMCAST_JOIN_WINDOW answers the joins over its
 * limit with RDMAMCAST_E_LIMIT completions. The blocking rdmamcast_join() takes the same path:
 * it queues behind joins already started, and waits for its own completion only (other
 * completions are queued as events meanwhile).
 *
 * When the connection breaks (see rdmamcast_set_reconnect()), joins already sent complete with
 * RDMAMCAST_EVENT_JOIN_ERROR, code RDMAMCAST_E_DISCONNECTED (err -ECONNRESET): the library does
 * not know whether the daemon made them, and leaves whatever membership a resumed session
 * brings back that it was never told of, so they do not hold: start them again. They come
 * before the RDMAMCAST_EVENT_RECONNECTED event. Joins still in the local queue are sent on the
 * new connection. If the handle fails for good, every join not yet completed completes with its
 * error.
 *
 * Returns 0, or -EINVAL, -EOPNOTSUPP, -E2BIG as rdmamcast_join() (nothing started), or
 * RDMAMCAST_E_DISCONNECTED when the handle has failed for good. Never blocks on the daemon: a
 * broken connection is made again by the next call (rdmamcast_next_event(): the descriptor then
 * polls readable).
 */
#define RDMAMCAST_JOIN_WINDOW 64u
RDMAMCAST_EXPORT int rdmamcast_join_start(struct rdmamcast_client *c,
					  const struct rdmamcast_join_params *p, void *context,
					  uint64_t *join_id_out);

/*
 * Withdraws a join started with rdmamcast_join_start() that has not completed yet
 * (RDMAMCAST_1.3). Returns 0 when it is withdrawn: its one completion is then (or already was)
 * queued as an RDMAMCAST_EVENT_JOIN_ERROR with code RDMAMCAST_E_CANCELLED, and nothing else
 * comes for it. A join still in the local queue is withdrawn at once; one the daemon has is
 * withdrawn with a round trip (leave {"join": id}), during which other completions and events
 * are queued.
 * Returns -ENOENT (RDMAMCAST_E_NOT_FOUND) when there is no such join or it completed first:
 * its completion, queued or already taken, says how it ended (leave the membership with
 * rdmamcast_leave() if it was JOINED and is not wanted). Other errors as rdmamcast_leave().
 */
RDMAMCAST_EXPORT int rdmamcast_join_cancel(struct rdmamcast_client *c, uint64_t join_id);

/*
 * The netdev of a RoCE membership this handle holds: the network interface of its source GID
 * (the GID table's gid_attrs/ndevs entry), on which the daemon holds the host's IGMP/MLD
 * membership, as the latest record the daemon sent for it says (rdmamcast_join(), a JOINED or
 * RESTORED event). The name is the daemon's, as its network namespace calls the interface.
 * Copies it, NUL-terminated, into buf (size bytes; IF_NAMESIZE is always enough) and returns its
 * length; -ENOENT (RDMAMCAST_E_NOT_FOUND) when the handle holds no such membership, -ENODATA
 * when the membership's port is InfiniBand's, -ERANGE when it does not fit. (RDMAMCAST_1.6)
 */
RDMAMCAST_EXPORT int rdmamcast_membership_netdev(struct rdmamcast_client *c, uint64_t membership,
						 char *buf, size_t size);

/* Leaves a membership of this connection. -ENOENT (RDMAMCAST_E_NOT_FOUND) if there is none. */
RDMAMCAST_EXPORT int rdmamcast_leave(struct rdmamcast_client *c, uint64_t membership);

/* Starts (or stops) receiving the daemon's activity log as RDMAMCAST_EVENT_MONITOR events. */
RDMAMCAST_EXPORT int rdmamcast_monitor(struct rdmamcast_client *c, bool enable);

/*
 * Root only: releases memberships whoever holds them, as if their clients had left them; each
 * holder gets an RDMAMCAST_EVENT_LOST with code RDMAMCAST_E_DENIED, and the daemon never restores
 * it (leaving it afterwards succeeds). rdmamcast_evict_uid() takes every membership of uid (not
 * (uid_t)-1: -EINVAL before anything is sent), rdmamcast_evict_membership() the one with that id.
 * On success *released (may be NULL) is how many were released, 0 when the uid held none.
 * -EACCES (RDMAMCAST_E_DENIED) for a caller that is not root; -ENOENT (RDMAMCAST_E_NOT_FOUND)
 * for a membership that does not exist; -EINVAL from a daemon older than evict. (RDMAMCAST_1.2)
 */
RDMAMCAST_EXPORT int rdmamcast_evict_uid(struct rdmamcast_client *c, uint32_t uid,
					 uint64_t *released);
RDMAMCAST_EXPORT int rdmamcast_evict_membership(struct rdmamcast_client *c, uint64_t membership,
						uint64_t *released);
/*
 * Root only: rdmamcast_evict_uid(), and every connection of uid closed (a D-Bus caller's session
 * ended): a user who must not hold anything any more, or whose idle connections take slots.
 * *disconnected (may be NULL) is how many clients were disconnected; the caller's own connection
 * is never one of them. -EINVAL from a daemon older than disconnect. (RDMAMCAST_1.4)
 */
RDMAMCAST_EXPORT int rdmamcast_disconnect_uid(struct rdmamcast_client *c, uint32_t uid, uint64_t *released,
					      uint64_t *disconnected);

/* ---- events ---- */

/* Fields of a record, for rdmamcast_event_restored.changed. */
enum rdmamcast_record_field {
	RDMAMCAST_FIELD_MLID = 1 << 0, /* detach the old (mgid, mlid), attach the new, rebuild AHs */
	RDMAMCAST_FIELD_MGID = 1 << 1,
	RDMAMCAST_FIELD_PORT_GID = 1 << 2,
	RDMAMCAST_FIELD_QKEY = 1 << 3,
	RDMAMCAST_FIELD_PKEY = 1 << 4,
	RDMAMCAST_FIELD_SL = 1 << 5,
	RDMAMCAST_FIELD_MTU = 1 << 6,
	RDMAMCAST_FIELD_RATE = 1 << 7,
	RDMAMCAST_FIELD_FLOW_LABEL = 1 << 8,
	RDMAMCAST_FIELD_TRAFFIC_CLASS = 1 << 9,
	RDMAMCAST_FIELD_HOP_LIMIT = 1 << 10,
	RDMAMCAST_FIELD_SCOPE = 1 << 11,
	RDMAMCAST_FIELD_JOIN_STATE = 1 << 12,
	/* RoCE (1.6): the source GID moved in the port's GID table (rebuild AHs), or its netdev
	 * changed (see rdmamcast_membership_netdev()). */
	RDMAMCAST_FIELD_SGID_INDEX = 1 << 13,
	RDMAMCAST_FIELD_NETDEV = 1 << 14,
};

enum rdmamcast_event_type {
	RDMAMCAST_EVENT_RESTORED = 1, /* the membership holds again, or its record changed */
	RDMAMCAST_EVENT_LOST = 2,     /* the SA no longer holds it; the daemon will restore it */
	RDMAMCAST_EVENT_MONITOR = 3,  /* an entry of the daemon's activity log */
	RDMAMCAST_EVENT_RECONNECTED = 4, /* the library reconnected after the daemon restarted */
	/* The completions of rdmamcast_join_start() (1.3); only a caller of it gets these. */
	RDMAMCAST_EVENT_JOINED = 5,     /* the join holds: membership and record */
	RDMAMCAST_EVENT_JOIN_ERROR = 6, /* the join failed or was cancelled */
};

enum rdmamcast_monitor_kind {
	RDMAMCAST_MONITOR_OTHER = 0, /* a kind this library does not know: see kind_name */
	RDMAMCAST_MONITOR_JOINED = 1,
	RDMAMCAST_MONITOR_LEFT = 2,
	RDMAMCAST_MONITOR_JOIN_FAILED = 3,
	RDMAMCAST_MONITOR_DELETED = 4,
	RDMAMCAST_MONITOR_LOST = 5,
	RDMAMCAST_MONITOR_RESTORED = 6,
	RDMAMCAST_MONITOR_WARNING = 7,
};

struct rdmamcast_event_restored {
	struct rdmamcast_record record; /* the record as it is now */
	uint32_t changed;               /* enum rdmamcast_record_field bits */
};

struct rdmamcast_event_lost {
	enum rdmamcast_errc code; /* why, as in rdmamcast_error */
	bool has_sa_status;
	uint16_t sa_status;
	const char *code_name;
	const char *message;
};

struct rdmamcast_event_monitor {
	enum rdmamcast_monitor_kind kind;
	uint8_t port;
	uint8_t join_state;
	uint16_t mlid;
	const char *kind_name; /* "joined", ... */
	const char *device;
	uint8_t mgid[16];
	int32_t pid;
	uint32_t uid;
	bool has_sa_status;
	uint16_t sa_status;
	const char *comm;
	const char *message;
	/* About a group on a RoCE port (1.6, in the event's reserved space; zero and NULL otherwise
	 * and from an older library or daemon): where it is sent from. */
	uint8_t gid_type;   /* enum rdmamcast_gid_type */
	uint8_t sgid_index; /* the source GID's index in the port's GID table */
	const char *netdev; /* the source GID's netdev */
};

/*
 * The handle lost its connection and made a new one (see rdmamcast_set_reconnect()). With
 * resumed, the daemon handed the session back: the memberships in kept hold as before, with
 * their ids, and so does a monitor subscription. Otherwise the new connection is a new session.
 * Either way, the memberships in lost are gone: join them again if they are still wanted.
 * Arrays hold membership ids this handle joined (and had not left), in ascending order.
 */
struct rdmamcast_event_reconnected {
	int resumed;              /* 1: the session came back; 0: a new session */
	uint32_t gap_ms;          /* from noticing the break to the new session */
	/* Zero: where older headers' event structures have pointers, so that a program built on
	 * a C++ wrapper that does not know this type reads empty strings here. */
	uint64_t reserved0[2];
	const uint64_t *kept;     /* num_kept ids */
	const uint64_t *lost;     /* num_lost ids */
	size_t num_kept;
	size_t num_lost;
	uint64_t reserved1[2];    /* zero, as reserved0 */
};

/* rdmamcast_join_start()'s join holds (RDMAMCAST_1.3). The event's membership is its id. */
struct rdmamcast_event_joined {
	void *context;                  /* as passed to rdmamcast_join_start() */
	uint64_t join_id;               /* as rdmamcast_join_start() returned it */
	struct rdmamcast_record record; /* as rdmamcast_join() fills it in */
};

/* rdmamcast_join_start()'s join failed, or was cancelled (RDMAMCAST_1.3). The event's
 * membership is 0. error is what rdmamcast_last_error() would have said after rdmamcast_join():
 * code, err (the negative value rdmamcast_join() would have returned), the daemon's message,
 * the SA status, and the access policy's rule or quota. */
struct rdmamcast_event_join_error {
	void *context;
	uint64_t join_id;
	struct rdmamcast_error error;
};

/* Strings and arrays in an event stay valid until the next rdmamcast_next_event() or
 * rdmamcast_close(). */
struct rdmamcast_event {
	enum rdmamcast_event_type type;
	uint32_t reserved0;
	uint64_t membership; /* RESTORED, LOST and JOINED: which membership; 0 for the others */
	union {
		struct rdmamcast_event_restored restored;
		struct rdmamcast_event_lost lost;
		struct rdmamcast_event_monitor monitor;
		struct rdmamcast_event_reconnected reconnected;
		struct rdmamcast_event_joined joined;         /* 1.3 */
		struct rdmamcast_event_join_error join_error; /* 1.3 */
		uint64_t reserved[32]; /* fixes the size: later event types fit in it */
	};
};

/*
 * A descriptor that polls readable (POLLIN) whenever rdmamcast_next_event() has something to
 * return: an event from the socket, or one queued while a synchronous call waited for its
 * reply. (The socket alone could not say so: a queued event has already been read from it.)
 * It is an epoll descriptor, so it also nests in the caller's own epoll set. It stays owned
 * by the handle; do not read from or close it.
 */
RDMAMCAST_EXPORT int rdmamcast_event_fd(const struct rdmamcast_client *c);

/*
 * Takes the next event without blocking: 0 with *ev filled, -EAGAIN if there is none (poll
 * rdmamcast_event_fd()), or an error (-ECONNRESET when the daemon closed the connection).
 * Call it until -EAGAIN after each wake-up. The one exception to "without blocking": when it
 * finds the connection broken and may reconnect (rdmamcast_set_reconnect()), it reconnects
 * first and then returns the RDMAMCAST_EVENT_RECONNECTED event. The descriptor stays the same
 * across a reconnect.
 */
RDMAMCAST_EXPORT int rdmamcast_next_event_sized(struct rdmamcast_client *c,
					       struct rdmamcast_event *ev,
					       const struct rdmamcast_sizes *sizes);
#ifndef RDMAMCAST_BUILDING_LIBRARY
static inline int rdmamcast_next_event(struct rdmamcast_client *c, struct rdmamcast_event *ev)
{
	return rdmamcast_next_event_sized(c, ev, rdmamcast_compiled_sizes());
}
#else
RDMAMCAST_EXPORT int rdmamcast_next_event(struct rdmamcast_client *c, struct rdmamcast_event *ev);
#endif

/* ---- list and status ---- */

/*
 * Results are allocated by the library as a tree of structures and freed in one call: typed
 * fields, so C callers need no JSON parser (rdma-mcastctl --json serves scripts). Arrays hold
 * pointers, so the structures can grow in later versions without moving the elements.
 */
struct rdmamcast_member {
	uint64_t membership; /* the id on its own connection */
	int32_t pid;
	uint32_t uid;
	uint8_t join_state;
	const char *state; /* "pending", "active", "lost" */
	const char *comm;  /* process name */
	/* The daemon's access policy (1.2; "", false and NULL from an older daemon): */
	const char *rule;    /* the rule that admitted it, "root", "static", "any", "restored" */
	bool created;        /* its join created the group, or carries that create on */
	const char *flagged; /* NULL unless the rules in force now would refuse it: then why */
	const char *name;    /* NULL unless it joined a named group: then that name */
};

struct rdmamcast_group {
	uint8_t mgid[16];
	uint32_t qkey;
	uint16_t mlid;
	uint8_t held;    /* JoinState bits the daemon set and the SA holds for the port */
	uint8_t foreign; /* bits another agent on the host held before the daemon */
	bool busy;       /* SA work in progress */
	uint32_t counts[4]; /* members per JoinState bit: full, nonmember, sendonly-nonmember,
			       sendonly-full */
	size_t num_members;
	struct rdmamcast_member **members;
	/* A group on a RoCE port (1.6; zero and NULL on InfiniBand, before the group has its
	 * record, and from an older daemon): where it is sent from, as its record says. */
	uint8_t gid_type;   /* enum rdmamcast_gid_type: RoCE v1 or v2 */
	uint8_t sgid_index; /* the source GID's index in the port's GID table */
	const char *netdev; /* the source GID's netdev, which holds the IGMP/MLD membership */
};

struct rdmamcast_port_groups {
	const char *device;
	uint8_t port;
	uint8_t port_gid[16];
	size_t num_groups;
	struct rdmamcast_group **groups;
	const char *link_layer; /* "InfiniBand" or "Ethernet" (1.6; "InfiniBand" from an older daemon) */
};

struct rdmamcast_group_list {
	size_t num_ports;
	struct rdmamcast_port_groups **ports;
};

/* Every group the daemon handles, per port. The daemon answers in pages of at most 64 KiB;
 * the library asks for each and returns them as one list. Free with rdmamcast_list_free(). */
RDMAMCAST_EXPORT int rdmamcast_list_sized(struct rdmamcast_client *c,
					 struct rdmamcast_group_list **out,
					 const struct rdmamcast_sizes *sizes);
/* The same for this handle's own memberships only: the groups its connection has members in,
 * with only those members (RDMAMCAST_1.4). -EINVAL from a daemon older than it. */
RDMAMCAST_EXPORT int rdmamcast_list_own_sized(struct rdmamcast_client *c,
					     struct rdmamcast_group_list **out,
					     const struct rdmamcast_sizes *sizes);
#ifndef RDMAMCAST_BUILDING_LIBRARY
static inline int rdmamcast_list(struct rdmamcast_client *c, struct rdmamcast_group_list **out)
{
	return rdmamcast_list_sized(c, out, rdmamcast_compiled_sizes());
}
static inline int rdmamcast_list_own(struct rdmamcast_client *c, struct rdmamcast_group_list **out)
{
	return rdmamcast_list_own_sized(c, out, rdmamcast_compiled_sizes());
}
#else
RDMAMCAST_EXPORT int rdmamcast_list(struct rdmamcast_client *c, struct rdmamcast_group_list **out);
RDMAMCAST_EXPORT int rdmamcast_list_own(struct rdmamcast_client *c,
					struct rdmamcast_group_list **out);
#endif
RDMAMCAST_EXPORT void rdmamcast_list_free(struct rdmamcast_group_list *list);

/* A port's latest re-join of its groups (after an SM restart or failover, a LID change, the port
 * going down and up, ...). */
struct rdmamcast_rejoin {
	const char *reason;   /* what triggered it, in the daemon's words */
	double started_ago_s; /* seconds since it started */
	bool finished;        /* false while it runs */
	double duration_s;    /* how long it took, when finished */
	uint64_t groups;      /* groups it covered */
};

/* A port's SA congestion window (config sa.congestion_control), as the daemon learned it from
 * the SA's round trips (1.3). */
struct rdmamcast_port_sa {
	double window;     /* MADs in flight allowed; below 1: one per srtt_ms / window */
	bool slow_start;   /* the window still doubles per round trip */
	bool has_srtt;     /* false before the first answer: */
	double srtt_ms;    /* the smoothed round trip (0 when !has_srtt) */
	bool has_timeout;  /* false before the first answer (the configured sa.timeout_ms): */
	double timeout_ms; /* the next first try's timeout (0 when !has_timeout) */
};

struct rdmamcast_port_status {
	const char *device;
	uint8_t port;
	uint8_t sm_sl;
	uint16_t lid;
	uint16_t sm_lid;
	const char *state;      /* "ACTIVE", "DOWN", ... */
	const char *link_layer; /* "InfiniBand" */
	uint8_t port_gid[16];
	double rate_gbps;
	uint64_t groups;
	uint32_t mtu;           /* active MTU in bytes; 0 until the daemon read the port's PortInfo */
	bool sm_known;          /* the daemon has read the master SM's SMInfoRecord: */
	uint32_t sm_act_count;  /* its ActCount (it goes backwards when the SM restarts) */
	uint64_t sm_guid;       /* and its port GUID, host order */
	bool rejoining;         /* a re-join of the port's groups is under way */
	const struct rdmamcast_rejoin *last_rejoin; /* the latest re-join; NULL if none yet */
	uint64_t max_groups;    /* the cap on groups (access.quotas.groups_per_port); 0: none (1.2) */
	/* The port's SA window; NULL with sa.congestion_control off, or from an older daemon (1.3) */
	const struct rdmamcast_port_sa *sa;
	/* 1.5; 0 from an older daemon: */
	uint64_t memberships[4]; /* active memberships per JoinState bit: full, nonmember,
				    sendonly-nonmember, sendonly-full (one of several bits counts
				    under each) */
	uint64_t rejoins;        /* re-joins of the port's groups started since the daemon started */
};

struct rdmamcast_counters {
	uint64_t sa_mads_sent;
	uint64_t sa_retransmits;
	uint64_t sa_timeouts;
	uint64_t sa_bounces;
	uint64_t joins;
	uint64_t joins_local;
	uint64_t joins_failed;
	uint64_t leaves;
	/* 1.3; 0 from an older daemon: */
	uint64_t sa_responses;   /* SA transactions answered */
	uint64_t sa_late;        /* answers that came for no live transaction (late or duplicate) */
	double sa_amplification; /* sa_mads_sent per transaction ended (answered or timed out),
				    0 before any: well above 1, the SA serves retransmits */
	/* MCMemberRecord transactions the daemon started (1.3; 0 from an older daemon): */
	uint64_t sa_sets, sa_deletes, sa_gets;
	/* Membership events told to clients, one per membership (1.5; 0 from an older daemon): */
	uint64_t restored, lost;
};

/* One uid's share of the daemon against its quotas (access.quotas; a quota of 0 is none). */
struct rdmamcast_user_usage {
	uint32_t uid;
	const char *user; /* its name; "" when it has none */
	uint64_t memberships, memberships_quota; /* held or waiting */
	uint64_t creates, creates_quota;         /* groups its joins created that it still holds */
	uint64_t flagged; /* memberships the rules in force now would refuse */
	/* Its shares of what every client shares, against each share (limits, access.quotas; 0:
	 * none, as for root). 1.5; 0 from an older daemon: */
	uint64_t clients, clients_quota;           /* connections and D-Bus callers */
	uint64_t monitors, monitors_quota;         /* monitor subscriptions */
	uint64_t queued_bytes, queued_bytes_quota; /* what the daemon owes its connections now */
	uint64_t groups_per_port, groups_per_port_quota; /* groups on its busiest port */
	double sa_tokens;            /* SA MADs it may send now; below 0, a debt its next join
					waits out */
	uint64_t sa_mads_per_second; /* its SA budget's rate */
};

/* What the daemon refused since it started, for one reason: the config key of the rule, quota
 * or limit that refused ("access.rules", "limits.max_clients_per_uid", ...; rdma-mcastd's
 * PROTOCOL.md lists them), or "identity" (1.5). */
struct rdmamcast_refusal {
	const char *reason;
	uint64_t count;
};

struct rdmamcast_daemon_status {
	const char *daemon; /* "rdma-mcastd 0.1.0" */
	unsigned protocol;
	double uptime_s;
	uint64_t clients;
	const struct rdmamcast_counters *counters;
	size_t num_ports;
	struct rdmamcast_port_status **ports;
	/* Every uid holding or waiting for a membership, by uid (1.2; none from an older daemon). */
	size_t num_users;
	struct rdmamcast_user_usage **users;
	/* Every reason the daemon counts refusals for, 0 included, by reason (1.5; none from an
	 * older daemon). */
	size_t num_refused;
	struct rdmamcast_refusal **refused;
};

/* The daemon's ports, counters and users. Free with rdmamcast_status_free(). */
RDMAMCAST_EXPORT int rdmamcast_status_sized(struct rdmamcast_client *c,
					   struct rdmamcast_daemon_status **out,
					   const struct rdmamcast_sizes *sizes);
#ifndef RDMAMCAST_BUILDING_LIBRARY
static inline int rdmamcast_status(struct rdmamcast_client *c, struct rdmamcast_daemon_status **out)
{
	return rdmamcast_status_sized(c, out, rdmamcast_compiled_sizes());
}
#else
RDMAMCAST_EXPORT int rdmamcast_status(struct rdmamcast_client *c, struct rdmamcast_daemon_status **out);
#endif
RDMAMCAST_EXPORT void rdmamcast_status_free(struct rdmamcast_daemon_status *status);

/* ---- ABI ---- */

/*
 * The sizes of the structures a program was compiled with, which the *_sized entry points take
 * (RDMAMCAST_1.5). The inline functions above pass rdmamcast_compiled_sizes(); a program (or a
 * binding) calling an entry point directly passes its own. For each structure the library hands
 * out, a size up to the library's is served (the program reads the fields it knows); a larger
 * one is refused with RDMAMCAST_E_ABI, -EINVAL. The fixed structures must match exactly. Later
 * versions append members for new structures: a member the caller's table lacks is a structure
 * it does not know.
 */
struct rdmamcast_sizes {
	uint32_t size; /* sizeof(struct rdmamcast_sizes) */
	uint32_t error;
	uint32_t record; /* fixed */
	uint32_t event;  /* fixed */
	uint32_t member;
	uint32_t group;
	uint32_t port_groups;
	uint32_t group_list;
	uint32_t rejoin;
	uint32_t port_sa;
	uint32_t port_status;
	uint32_t counters;
	uint32_t user_usage;
	uint32_t daemon_status;
	uint32_t refusal;
};

static inline const struct rdmamcast_sizes *rdmamcast_compiled_sizes(void)
{
	static const struct rdmamcast_sizes sizes = {
		sizeof(struct rdmamcast_sizes),      sizeof(struct rdmamcast_error),
		sizeof(struct rdmamcast_record),     sizeof(struct rdmamcast_event),
		sizeof(struct rdmamcast_member),     sizeof(struct rdmamcast_group),
		sizeof(struct rdmamcast_port_groups), sizeof(struct rdmamcast_group_list),
		sizeof(struct rdmamcast_rejoin),     sizeof(struct rdmamcast_port_sa),
		sizeof(struct rdmamcast_port_status), sizeof(struct rdmamcast_counters),
		sizeof(struct rdmamcast_user_usage), sizeof(struct rdmamcast_daemon_status),
		sizeof(struct rdmamcast_refusal),
	};
	return &sizes;
}

#ifdef __cplusplus
}
#endif

#endif /* RDMAMCAST_CLIENT_H */
