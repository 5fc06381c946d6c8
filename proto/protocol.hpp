// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Message types and JSON codec of the client protocol (PROTOCOL.md), shared by the daemon
// (decodes requests, encodes replies and events) and librdmamcast (the reverse).
//
// Decoding is strict where the daemon reads untrusted input: every unknown key, wrong type or
// out-of-range value is an Error naming the field by JSON pointer. Decoders never throw.
//
// The codec is one source file per message family, each with both sides of it (codec.hpp
// lists them).
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/json_dom.hpp"

#include "common/error.hpp"
#include "common/record.hpp"
#include "common/request.hpp"

namespace mcastd::proto {

inline constexpr unsigned kVersion = 2;
inline constexpr std::array<unsigned, 2> kVersions{1, 2};
// A session token is 128 random bits written as 32 lowercase hex digits (version 2).
inline constexpr std::size_t kTokenChars = 32;
inline constexpr std::size_t kMaxMessageBytes = 65536;
inline constexpr std::size_t kMaxClientName = 64; // characters (UTF-8 code points)
// A request `id` (and a leave's `join`) is below 2^53 so that every JSON implementation,
// JavaScript's included, reads it exactly.
inline constexpr std::uint64_t kMaxId = (std::uint64_t{1} << 53) - 1;
// A `list` reply is one page of at most this many encoded bytes (version 2; the `next` cursor
// continues it). A SOCK_SEQPACKET message cannot exceed the socket's send buffer, and the
// smallest Linux gives a Unix socket by default is several times this.
inline constexpr std::size_t kListPageBytes = 64 * 1024;
// A `list` cursor (`after`, `next`) is at most this many bytes; it is opaque to clients.
inline constexpr std::size_t kMaxCursorBytes = 128;

// An error as it travels: the domain error plus the protocol's extras.
struct Failure {
    Error error;
    std::string field;              // JSON pointer ("/qkey"), empty when no field is at fault
    std::vector<unsigned> versions; // unsupported-version only

    // A failure of the daemon's own making (no SA status).
    static Failure of(Errc code, std::string message, std::string field = {}) {
        return Failure{Error{code, std::move(message), std::nullopt}, std::move(field), {}};
    }
};

// ---- requests ----

// `t` has a session token's form: kTokenChars lowercase hex digits.
bool is_session_token(std::string_view t);

// A session and the secret that re-claims it after the daemon restarted (version 2).
struct SessionTicket {
    std::uint64_t id = 0;
    std::string token; // kTokenChars lowercase hex digits
    bool operator==(const SessionTicket &) const = default;
};
struct Hello {
    std::vector<unsigned> versions;
    std::string client;
    std::optional<SessionTicket> resume{}; // version 2: take this session back
};
struct Join {
    JoinRequest request; // mgid all zero and no ip = "create": true
    // RoCE (an addition inside version 2, PROTOCOL.md "RoCE ports"): the IP multicast group to
    // join instead of an MGID (`ip`; never with mgid, name or create, so request.mgid is zero
    // and request.name empty), and the GID type to join with (`gid_type`, RoCE v1 or v2; unset:
    // the daemon's choice for the port). The daemon maps the group to its MGID for the port's
    // GID type (roce_mgid()) before the request reaches the engine: left as it is, the zero MGID
    // would read as a create.
    std::optional<IpAddress> ip{};
    std::optional<GidType> gid_type{};
    // The interface of the client's network namespace the kernel membership is held on
    // (`ifname`; empty: the one named as the source GID's netdev).
    std::string ifname{};
};
struct Leave {
    // Exactly one is set.
    std::optional<std::uint64_t> membership;
    std::optional<std::uint64_t> join; // id of a pending join request
};
struct List {
    bool own = false;                 // version 2: only this connection's memberships
    std::optional<std::string> after; // version 2: the page after the one that returned it
};
struct Status {};
struct Monitor {
    bool enable = true;
};
// Root only: releases memberships as if their clients had left them. Exactly one is set.
struct Evict {
    std::optional<uid_t> uid;                 // every membership of this uid, on every transport
    std::optional<std::uint64_t> membership; // this one
    bool disconnect = false;                 // with uid: also close every connection of the uid
};
using Request = std::variant<Hello, Join, Leave, List, Status, Monitor, Evict>;

struct RequestEnvelope {
    std::uint64_t id = 0;
    Request request;
};

// A request that could not be decoded: `id` is set when it could be read.
struct BadRequest {
    std::optional<std::uint64_t> id;
    Failure failure;
};

std::variant<RequestEnvelope, BadRequest> decode_request(std::string_view message);
std::string encode_request(std::uint64_t id, const Request &request);

// "hello", "join", "leave", "list", "status", "monitor", "evict".
std::string_view op_name(const Request &request);

// ---- results ----

struct HelloResult {
    unsigned version = kVersion;
    std::string daemon; // "rdma-mcastd 0.1.0"
    // Version 2: the session this connection is, for a later resume.
    std::optional<SessionTicket> session{};
    // Version 2, when the hello asked to resume: whether it did, and the memberships the
    // session holds (their ids are those the client knew).
    std::optional<bool> resumed{};
    std::vector<std::uint64_t> memberships{};
};
struct JoinResult {
    std::uint64_t membership = 0;
    McRecord record; // record.join_state = this membership's bits
};
struct MemberInfo {
    std::uint64_t membership = 0;
    std::uint8_t join_state = 0;
    std::string state; // "pending", "active", "lost"
    pid_t pid = 0;
    uid_t uid = 0;
    std::string comm;
    // The access rule that admitted it ("root", "static", "any" when no rules are configured,
    // "restored" when the previous instance did not say), whether its join created the group,
    // and, when the rules in force now would refuse it (after a reload), why.
    std::string rule{};
    bool created = false;
    std::string flagged{};
    // The name it joined by (a named group), "" when it joined by MGID or created the group.
    std::string name{};
};
struct GroupInfo {
    Gid mgid{};
    std::uint16_t mlid = 0;
    std::uint32_t qkey = 0;
    bool busy = false;
    std::uint8_t held = 0;
    std::uint8_t foreign = 0;
    std::array<std::uint32_t, 4> counts{}; // by JoinState bit: full, nonmember, ...
    std::vector<MemberInfo> members;
    // A group on a RoCE port with its record (an addition inside version 2): where it is sent
    // from ("gid_type", "sgid_index", "netdev").
    std::optional<RoceSource> roce{};
};
struct PortGroups {
    std::string device;
    std::uint8_t port = 0;
    Gid port_gid{};
    std::vector<GroupInfo> groups;
    // The port's link layer (an addition inside version 2; absent from an older daemon, which
    // serves InfiniBand ports only).
    LinkLayer link_layer = LinkLayer::infiniband;
};
struct ListResult {
    std::vector<PortGroups> ports;
    // Version 2: set when the daemon stopped to keep the reply within one page; the next page
    // is the list request with `after` set to it. Unset on the last page.
    std::optional<std::string> next{};
};
// Adds one page of a paged `list` (version 2) to the pages before it, for a client that wants
// the whole view: ports are matched by device and port and keep their order; a page's first
// group continues the previous page's last when it is the same group (same port and MGID):
// its members are appended. A group whose MGID the SA has not assigned yet (MGID 0) is never
// continued: it has at most one member, and a page never splits a group before its first
// member. `into.next` becomes the page's.
void append_list_page(ListResult &into, ListResult page);

// The bytes a `list` reply takes in encode_reply()'s output, part by part, written by the
// codec's own writer: the daemon cuts a page to kListPageBytes as it builds it. A reply is
// envelope() + its ports, separated by commas; a port is port() + its groups, separated by
// commas; a group is group() + its members, separated by commas.
class ListReplySize {
public:
    // The reply without ports, with room for the longest request id and a `next` cursor of
    // kMaxCursorBytes.
    std::size_t envelope();
    std::size_t port(const PortGroups &p);  // without its groups
    std::size_t group(const GroupInfo &g);  // without its members
    std::size_t member(const MemberInfo &m);

private:
    std::string scratch_; // reused: sizing a member allocates nothing once it has grown
};

// A port's most recent re-join of its groups (after an SM change, LID change, port down/up...).
struct RejoinStatus {
    std::string reason;                // what triggered it
    double started_ago_s = 0;          // seconds since it started
    std::optional<double> duration_s;  // how long it took; nullopt while it runs
    std::uint64_t groups = 0;          // groups it covered
};
// The port's SA congestion window (sa.congestion_control), as `status` shows it.
struct SaCongestion {
    double window = 0;                   // MADs in flight allowed; below 1: one per srtt / window
    bool slow_start = false;
    std::optional<double> srtt_ms{};     // smoothed round trip; nullopt before the first answer
    std::optional<double> timeout_ms{};  // the next first try's timeout; nullopt: sa.timeout_ms
};
struct PortStatus {
    std::string device;
    std::uint8_t port = 0;
    std::string state; // "ACTIVE", "DOWN", ...
    std::uint16_t lid = 0;
    std::uint16_t sm_lid = 0;
    std::uint8_t sm_sl = 0;
    Gid port_gid{};
    std::string link_layer;
    double rate_gbps = 0;
    std::uint64_t groups = 0;
    std::uint32_t mtu = 0; // active MTU in bytes; 0 until the port answered a PortInfo query
    // The master SM as last seen (SMInfoRecord); nullopt until one answered.
    std::optional<std::uint64_t> sm_guid{};
    std::optional<std::uint32_t> sm_act_count{};
    bool rejoining = false;
    std::optional<RejoinStatus> last_rejoin{}; // nullopt: never re-joined
    std::uint64_t max_groups = 0;              // access.quotas.groups_per_port; 0: none
    std::optional<SaCongestion> sa{};          // nullopt: sa.congestion_control off (or older)
    // Version 2 additions; 0 from an older daemon. Active memberships per JoinState bit (full,
    // nonmember, sendonly-nonmember, sendonly-full; one of several bits counts under each), and
    // the re-joins of the port's groups started since the daemon started.
    std::array<std::uint64_t, 4> memberships{};
    std::uint64_t rejoins = 0;
};
// One uid's share of the daemon, against its quotas (access.quotas; 0: no quota).
struct UserUsage {
    uid_t uid = 0;
    std::string user; // the name, "" when the uid has none
    std::uint64_t memberships = 0, memberships_quota = 0;
    std::uint64_t creates = 0, creates_quota = 0;
    std::uint64_t flagged = 0; // memberships the rules in force would refuse now
    // Its shares of what every client shares (0 quota: none); absent from older daemons.
    std::uint64_t clients = 0, clients_quota = 0;
    std::uint64_t monitors = 0, monitors_quota = 0;
    std::uint64_t queued_bytes = 0, queued_bytes_quota = 0;
    std::uint64_t groups_per_port = 0, groups_per_port_quota = 0; // on its busiest port
    double sa_tokens = 0;                                       // SA MADs it may send now
    std::uint64_t sa_mads_per_second = 0;                       // its SA budget's rate
};
struct Counters {
    std::uint64_t sa_mads_sent = 0, sa_retransmits = 0, sa_timeouts = 0, sa_bounces = 0;
    std::uint64_t joins = 0, joins_local = 0, joins_failed = 0, leaves = 0;
    // MCMemberRecord transactions the engine started since this instance began (version 2;
    // 0 from an older daemon): a restart that takes everything back adds no Set or Delete.
    std::uint64_t sa_sets = 0, sa_deletes = 0, sa_gets = 0;
    // SA transactions answered, and answers that came for none (late or duplicate). MADs sent
    // per transaction ended (answered or timed out) is the amplification; 0 before any.
    std::uint64_t sa_responses = 0, sa_late = 0;
    double sa_amplification = 0;
    // Membership events the daemon told its clients (version 2; 0 from an older daemon).
    std::uint64_t restored = 0, lost = 0;
};
// How often the front door refused something for one reason since the daemon started: the
// config key of the rule, quota or limit that refused (a small fixed set; PROTOCOL.md).
struct RefusalCount {
    std::string reason;
    std::uint64_t count = 0;
    bool operator==(const RefusalCount &) const = default;
};
struct StatusResult {
    std::string daemon;
    unsigned protocol = kVersion;
    double uptime_s = 0;
    std::uint64_t clients = 0;
    std::vector<PortStatus> ports;
    Counters counters;
    std::vector<UserUsage> users{}; // every uid holding or waiting for a membership, by uid
    std::vector<RefusalCount> refused{}; // every reason the daemon counts, 0 included (version 2)
};
struct EvictResult {
    std::uint64_t released = 0;     // memberships released
    std::uint64_t disconnected = 0; // clients disconnected (`disconnect`)
};
struct Empty {}; // leave, monitor

using Result = std::variant<Empty, HelloResult, JoinResult, ListResult, StatusResult, EvictResult>;

std::string encode_reply(std::uint64_t id, const Result &result);
std::string encode_error(std::optional<std::uint64_t> id, const Failure &failure);

// The answer to a message longer than the transport accepts, which is never parsed, so its id
// is unknown: {"id": null, "ok": false, "error": {"code": "too-large", ...}}. `size` is what
// the transport saw (for SOCK_SEQPACKET, the MSG_TRUNC length), `limit` its maximum.
Failure too_large(std::size_t size, std::size_t limit);
std::string encode_too_large(std::size_t size, std::size_t limit);

// ---- events ----

struct RestoredEvent {
    std::uint64_t membership = 0;
    McRecord record;
    std::uint64_t changed = 0; // field:: bits; encoded as record key names, "mlid" first
};
struct LostEvent {
    std::uint64_t membership = 0;
    Failure why;
};
struct MonitorEvent {
    std::string kind; // joined, left, join-failed, deleted, lost, restored, warning, dropped
    std::string device;
    std::uint8_t port = 0;
    Gid mgid{};
    std::uint16_t mlid = 0;
    std::uint8_t join_state = 0;
    pid_t pid = 0;
    uid_t uid = 0;
    std::string comm;
    std::string message;
    std::optional<std::uint16_t> sa_status;
    std::optional<std::uint64_t> dropped; // kind "dropped": events this client missed
    // About a group on a RoCE port (an addition inside version 2): its source GID's type and
    // index and the netdev ("gid_type", "sgid_index", "netdev").
    std::optional<RoceSource> roce{};
};
// Version 2: the daemon is stopping for good and has left every group; a client that would
// reconnect after a restart does not.
struct StoppingEvent {
    std::string message;
};
using Event = std::variant<RestoredEvent, LostEvent, MonitorEvent, StoppingEvent>;

// What a monitor that did not read in time missed: one `monitor` event of kind "dropped" with
// `dropped` = `count`, sent once it has caught up. A monitor event, so that clients that know
// no such kind show it like any other.
MonitorEvent dropped_monitor_event(std::uint64_t count);

std::string encode_event(const Event &event);

// ---- what a client reads ----

// A reply before its result is interpreted: which result type it carries depends on the
// request, which only the client knows. The result is kept as parsed, so that nothing is
// parsed twice: a reply decodes in one pass of the text.
struct Reply {
    std::optional<std::uint64_t> id;
    std::variant<Failure, json_check::OwnedValue> body; // Failure, or the "result" object
};
// An event this version does not know, from a newer daemon (PROTOCOL.md, "Versioning": a later
// version may add events): a client skips it.
struct UnknownEvent {
    std::string name;
};
using Incoming = std::variant<Reply, Event, UnknownEvent>;

// Client-side decoders: decode_incoming() reads a message; a reply's result goes to the
// decode_*_result() of its request. Tolerant of keys they do not know (a newer daemon may add some),
// strict about the types and ranges of those they do.
std::variant<Incoming, Error> decode_incoming(std::string_view message);
std::variant<HelloResult, Error> decode_hello_result(const json_check::Value &result);
std::variant<JoinResult, Error> decode_join_result(const json_check::Value &result);
std::variant<ListResult, Error> decode_list_result(const json_check::Value &result);
std::variant<StatusResult, Error> decode_status_result(const json_check::Value &result);
std::variant<EvictResult, Error> decode_evict_result(const json_check::Value &result);

// ---- shared vocabulary ----

// "full", "nonmember", "sendonly-nonmember", "sendonly-full" <-> one JoinState bit.
std::optional<std::uint8_t> join_state_from_name(std::string_view name);
// "exactly", "greater", "less", "best".
std::optional<Selector> selector_from_name(std::string_view name);
std::string_view selector_name(Selector s);
// 256..4096 <-> IBA MTU enum 1..5.
std::optional<std::uint8_t> mtu_enum_from_bytes(unsigned bytes);
// Record key names of field:: bits, in the order events list them ("mlid" first). The MTU and
// rate bits (value or selector) name "mtu" and "rate" (then "rate_gbps", which changes with
// it); bits no record key shows (packet lifetime, proxy join) are left out. RoCE's
// field::sgid_index and field::netdev name "sgid_index" and "netdev", last.
std::vector<std::string> changed_field_names(std::uint64_t fields);
// The inverse, for clients: unknown names are ignored (a newer daemon may add record keys).
std::uint64_t changed_fields_from_names(const std::vector<std::string> &names);
// Join state as records and events carry it: one name, several joined by '+'
// ("full+sendonly-full"), or "none" (mcastd::join_state_name() writes these).
std::optional<std::uint8_t> join_state_bits_from_name(std::string_view name);

} // namespace mcastd::proto
