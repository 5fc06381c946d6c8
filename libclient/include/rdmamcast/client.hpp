// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// librdmamcast's C++ interface: header-only RAII over the C API in <rdmamcast/client.h>
// (C++17 or later).
//
//   rdmamcast::Client client;                        // connects, or throws rdmamcast::Error
//   auto m = client.join(rdmamcast::JoinParams("mlx5_0", 1).mgid("ff15::1:2").qkey(0x1234));
//   ... attach a QP to m.record() (rdmamcast::AttachSet in <rdmamcast/verbs.hpp> keeps it
//       attached when a restored event brings a new MLID) ...
//   poll client.event_fd(); while (auto ev = client.next_event()) m.update(*ev);
//                                                    // m leaves when it goes out of scope
//
// Asynchronous joins (rdmamcast_join_start()) take a callback, which next_event() runs when the
// join completes:
//   client.join_async(params, [&](rdmamcast::JoinOutcome r) {
//       if (auto *m = std::get_if<rdmamcast::Membership>(&r)) mine.push_back(std::move(*m));
//       else log(std::get<rdmamcast::Error>(r).what());
//   });
//
// It is compiled into the program, on the program's side of the ABI: its calls go through the
// inline functions of <rdmamcast/client.h>, which pass the library the sizes of the structures
// as this program's headers have them (libclient/ABI.md).
//
// A Client and the Memberships joined through it share one connection, which closes when the
// last of them is gone; like the C handle, they are not thread-safe. When a version 2 daemon
// restarts, the connection is made again and next_event() returns a ReconnectedEvent: the
// Memberships it lists as lost are gone (their objects then leave nothing; join again).
#pragma once

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <unordered_map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <rdmamcast/client.h>

namespace rdmamcast {

using Gid = std::array<std::uint8_t, 16>;
using Record = rdmamcast_record;

inline std::string gid_to_string(const std::uint8_t *gid) {
    char buf[INET6_ADDRSTRLEN];
    return inet_ntop(AF_INET6, gid, buf, sizeof buf) ? buf : "?";
}
inline std::string gid_to_string(const Gid &gid) { return gid_to_string(gid.data()); }

// IPv6 text form ("ff15::1:2") -> GID; nullopt if it is not one.
inline std::optional<Gid> gid_from_string(const std::string &text) {
    Gid gid{};
    if (inet_pton(AF_INET6, text.c_str(), gid.data()) != 1)
        return std::nullopt;
    return gid;
}

inline std::string join_state_name(std::uint8_t join_state) {
    return rdmamcast_join_state_name(join_state);
}

// ---- RoCE ----

enum class LinkLayer : std::uint8_t {
    infiniband = RDMAMCAST_LINK_LAYER_INFINIBAND,
    ethernet = RDMAMCAST_LINK_LAYER_ETHERNET,
};
enum class GidType : std::uint8_t {
    ib = RDMAMCAST_GID_TYPE_IB,
    roce_v1 = RDMAMCAST_GID_TYPE_ROCE_V1,
    roce_v2 = RDMAMCAST_GID_TYPE_ROCE_V2,
};

inline LinkLayer link_layer(const rdmamcast_record &r) { return static_cast<LinkLayer>(r.link_layer); }
inline bool is_roce(const rdmamcast_record &r) { return r.link_layer == RDMAMCAST_LINK_LAYER_ETHERNET; }

// "InfiniBand", "Ethernet" (as sysfs and the protocol spell them).
inline std::string link_layer_name(LinkLayer l) { return l == LinkLayer::ethernet ? "Ethernet" : "InfiniBand"; }
// "ib", "roce_v1", "roce_v2" (the protocol's gid_type names).
inline std::string gid_type_name(GidType t) {
    switch (t) {
    case GidType::roce_v1: return "roce_v1";
    case GidType::roce_v2: return "roce_v2";
    case GidType::ib: break;
    }
    return "ib";
}
// "roce_v1" or "roce_v2"; nullopt for anything else.
inline std::optional<GidType> roce_gid_type_from_string(const std::string &name) {
    if (name == "roce_v1")
        return GidType::roce_v1;
    if (name == "roce_v2")
        return GidType::roce_v2;
    return std::nullopt;
}

// "239.1.2.3" or an IPv6 address in text form -> 16 bytes as rdmamcast_record.ip has them
// (IPv4 as ::ffff:a.b.c.d); nullopt for anything else.
inline std::optional<Gid> ip_from_string(const std::string &text) {
    Gid ip{};
    std::uint8_t v4[4];
    if (inet_pton(AF_INET, text.c_str(), v4) == 1) {
        ip[10] = ip[11] = 0xff;
        std::memcpy(ip.data() + 12, v4, sizeof v4);
        return ip;
    }
    if (inet_pton(AF_INET6, text.c_str(), ip.data()) == 1)
        return ip;
    return std::nullopt;
}
// Whether 16 bytes of an IP address are an IPv4-mapped one, ::ffff:a.b.c.d.
inline bool is_ipv4_mapped(const std::uint8_t *ip) {
    static constexpr std::uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(ip, v4_mapped, sizeof v4_mapped) == 0;
}
// An IP multicast group: IPv4 224.0.0.0/4 (as ::ffff:a.b.c.d) or IPv6 ff00::/8.
inline bool is_multicast_ip(const Gid &ip) {
    return is_ipv4_mapped(ip.data()) ? (ip[12] & 0xf0) == 0xe0 : ip[0] == 0xff;
}

// An IP address of 16 bytes (rdmamcast_record.ip): an IPv4-mapped one (::ffff:a.b.c.d) as a
// dotted quad, any other in IPv6 text form.
inline std::string ip_to_string(const std::uint8_t *ip) {
    char buf[INET6_ADDRSTRLEN];
    const bool v4 = is_ipv4_mapped(ip);
    return inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? ip + 12 : ip, buf, sizeof buf) ? buf : "?";
}
// "01:00:5e:01:02:03".
inline std::string mac_to_string(const std::uint8_t *mac) {
    char buf[18];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
                  mac[5]);
    return buf;
}
inline double rate_gbps(std::uint8_t rate) { return rdmamcast_rate_gbps(rate); }

// What a failing call ran into; what() is the daemon's (or the library's) message.
class Error : public std::runtime_error {
public:
    Error(int err, rdmamcast_errc code, const std::string &message)
        : std::runtime_error(message), err_(err), code_(code),
          code_name_(rdmamcast_errc_name(code)) {}

    // From the C API: `rc` is what the call returned, `e` its rdmamcast_last_error().
    static Error from(int rc, const rdmamcast_error *e) {
        if (!e || e->code == RDMAMCAST_E_NONE || e->err != rc)
            return Error(rc, RDMAMCAST_E_SYSTEM, std::strerror(-rc));
        Error out(rc, e->code, e->message);
        out.code_name_ = e->code_name;
        out.field_ = e->field;
        if (e->has_sa_status) {
            out.sa_status_ = e->sa_status;
            out.sa_status_name_ = e->sa_status_name;
        }
        out.versions_.assign(e->versions, e->versions + e->num_versions);
        out.rule_ = e->rule ? e->rule : "";
        out.quota_ = e->quota ? e->quota : "";
        out.limit_ = e->limit;
        return out;
    }

    int error_number() const { return -err_; } // a positive errno
    int result() const { return err_; }        // the C call's negative return value
    rdmamcast_errc code() const { return code_; }
    const std::string &code_name() const { return code_name_; } // "sa-error", ...
    std::string message() const { return what(); }
    std::optional<std::uint16_t> sa_status() const { return sa_status_; }
    const std::string &sa_status_name() const { return sa_status_name_; }
    const std::string &field() const { return field_; }
    const std::vector<unsigned> &versions() const { return versions_; }
    // The daemon's access policy: the rule that denied the request, or the quota reached and
    // its value ("" and 0 otherwise).
    const std::string &rule() const { return rule_; }
    const std::string &quota() const { return quota_; }
    std::uint64_t limit() const { return limit_; }

private:
    int err_;
    rdmamcast_errc code_;
    std::string code_name_;
    std::optional<std::uint16_t> sa_status_;
    std::string sa_status_name_;
    std::string field_;
    std::vector<unsigned> versions_;
    std::string rule_;
    std::string quota_;
    std::uint64_t limit_ = 0;
};

enum class JoinState : std::uint8_t {
    full = RDMAMCAST_JOIN_STATE_FULL,
    nonmember = RDMAMCAST_JOIN_STATE_NONMEMBER,
    sendonly_nonmember = RDMAMCAST_JOIN_STATE_SENDONLY_NONMEMBER,
    sendonly_full = RDMAMCAST_JOIN_STATE_SENDONLY_FULL,
};

enum class Selector : std::uint8_t {
    exactly = RDMAMCAST_SELECTOR_EXACTLY,
    greater = RDMAMCAST_SELECTOR_GREATER,
    less = RDMAMCAST_SELECTOR_LESS,
    best = RDMAMCAST_SELECTOR_BEST,
};

// Builds a join request: the device and port are required, then one of mgid(), create(),
// name() and ip() (the last one called wins).
class JoinParams {
public:
    JoinParams(std::string device, std::uint8_t port) : device_(std::move(device)) {
        rdmamcast_join_params_init(&p_);
        p_.port = port;
    }

    // Throws Error (-EINVAL) if `text` is not an IPv6-form GID.
    JoinParams &mgid(const std::string &text) {
        auto gid = gid_from_string(text);
        if (!gid)
            throw Error(-EINVAL, RDMAMCAST_E_INVALID_ARGUMENT,
                        "join: mgid \"" + text + "\" is not a GID in IPv6 form");
        return mgid(*gid);
    }
    JoinParams &mgid(const Gid &gid) {
        std::memcpy(p_.mgid, gid.data(), gid.size());
        p_.flags &= ~std::uint32_t{RDMAMCAST_JOIN_CREATE};
        name_.reset();
        has_ip_ = false;
        return *this;
    }
    // A named group: the daemon maps the name to its MGID (PROTOCOL.md, "Named groups").
    JoinParams &name(std::string n) {
        name_ = std::move(n);
        has_ip_ = false;
        std::memset(p_.mgid, 0, sizeof p_.mgid);
        p_.flags &= ~std::uint32_t{RDMAMCAST_JOIN_CREATE};
        return *this;
    }
    // An IP multicast group on a RoCE port ("239.1.2.3", "ff0e::1:2"): the daemon maps it to
    // the MGID of the port's GID type. The library checks the text when joining.
    JoinParams &ip(std::string group) {
        ip_ = std::move(group);
        has_ip_ = true;
        name_.reset();
        std::memset(p_.mgid, 0, sizeof p_.mgid);
        p_.flags &= ~std::uint32_t{RDMAMCAST_JOIN_CREATE};
        return *this;
    }
    // The RoCE GID type to join with (GidType::roce_v1 or roce_v2); by default the daemon's
    // choice for the port.
    JoinParams &gid_type(GidType t) {
        p_.gid_type = static_cast<rdmamcast_gid_type>(t);
        p_.flags |= RDMAMCAST_JOIN_GID_TYPE;
        return *this;
    }
    // On a RoCE port, the interface of this process's network namespace to hold the group's
    // IP membership on, when it is not named as the port's netdev (a container's "eth0").
    JoinParams &ifname(std::string name) {
        ifname_ = std::move(name);
        return *this;
    }
    // Create a group with an MGID the SA assigns, optionally of the given scope (1..15).
    JoinParams &create(std::optional<std::uint8_t> scope = std::nullopt) {
        p_.flags |= RDMAMCAST_JOIN_CREATE;
        name_.reset();
        has_ip_ = false;
        if (scope)
            set(RDMAMCAST_JOIN_SCOPE, p_.scope, *scope);
        return *this;
    }
    JoinParams &join_state(JoinState s) {
        p_.join_state = static_cast<std::uint8_t>(s);
        return *this;
    }
    JoinParams &qkey(std::uint32_t v) { return set(RDMAMCAST_JOIN_QKEY, p_.qkey, v); }
    JoinParams &pkey(std::uint16_t v) { return set(RDMAMCAST_JOIN_PKEY, p_.pkey, v); }
    JoinParams &sl(std::uint8_t v) { return set(RDMAMCAST_JOIN_SL, p_.sl, v); }
    JoinParams &traffic_class(std::uint8_t v) {
        return set(RDMAMCAST_JOIN_TRAFFIC_CLASS, p_.traffic_class, v);
    }
    JoinParams &flow_label(std::uint32_t v) { return set(RDMAMCAST_JOIN_FLOW_LABEL, p_.flow_label, v); }
    JoinParams &hop_limit(std::uint8_t v) { return set(RDMAMCAST_JOIN_HOP_LIMIT, p_.hop_limit, v); }
    // MTU in bytes (256..4096).
    JoinParams &mtu(std::uint32_t bytes, Selector sel = Selector::exactly) {
        p_.mtu_selector = static_cast<std::uint8_t>(sel);
        return set(RDMAMCAST_JOIN_MTU, p_.mtu, bytes);
    }
    // Static rate as enum ibv_rate (IBV_RATE_10_GBPS, ...).
    JoinParams &rate(std::uint8_t ibv_rate, Selector sel = Selector::exactly) {
        p_.rate_selector = static_cast<std::uint8_t>(sel);
        return set(RDMAMCAST_JOIN_RATE, p_.rate, ibv_rate);
    }

    // The C parameters; they point into this object, so use them while it lives.
    rdmamcast_join_params c_params() const {
        rdmamcast_join_params p = p_;
        p.device = device_.c_str();
        p.name = name_ ? name_->c_str() : nullptr;
        p.ip = has_ip_ ? ip_.c_str() : nullptr;
        p.ifname = ifname_.empty() ? nullptr : ifname_.c_str();
        if (has_ip_)
            p.flags |= RDMAMCAST_JOIN_IP;
        return p;
    }

private:
    template <class T, class V> JoinParams &set(int flag, T &field, V value) {
        field = static_cast<T>(value);
        p_.flags |= static_cast<std::uint32_t>(flag);
        return *this;
    }

    std::string device_;
    std::optional<std::string> name_;
    // A plain string and a flag, not an optional one: GCC 12 warns of the optional's
    // destructor (a false -Wmaybe-uninitialized) in programs that build JoinParams inline.
    std::string ip_;
    bool has_ip_ = false;
    std::string ifname_; // empty: none
    rdmamcast_join_params p_{};
};

// ---- events ----

struct RestoredEvent {
    std::uint64_t membership = 0;
    Record record{};
    std::uint32_t changed = 0; // RDMAMCAST_FIELD_* bits

    // MLID changed: detach the old (mgid, mlid), attach the new, rebuild address handles.
    bool mlid_changed() const { return changed & RDMAMCAST_FIELD_MLID; }
    // Record key names of `changed`, "mlid" first.
    std::vector<std::string_view> changed_names() const {
        static constexpr std::string_view names[] = {
            "mlid", "mgid", "port_gid", "qkey", "pkey", "sl", "mtu", "rate",
            "flow_label", "traffic_class", "hop_limit", "scope", "join_state", "sgid_index", "netdev"};
        std::vector<std::string_view> out;
        for (unsigned i = 0; i < std::size(names); ++i)
            if (changed & (1u << i))
                out.push_back(names[i]);
        return out;
    }
};

struct LostEvent {
    std::uint64_t membership = 0;
    rdmamcast_errc code = RDMAMCAST_E_NONE;
    std::string code_name;
    std::string message;
    std::optional<std::uint16_t> sa_status;
};

struct MonitorEvent {
    rdmamcast_monitor_kind kind = RDMAMCAST_MONITOR_OTHER;
    std::string kind_name;
    std::string device;
    std::uint8_t port = 0;
    Gid mgid{};
    std::uint16_t mlid = 0;
    std::uint8_t join_state = 0;
    std::int32_t pid = 0;
    std::uint32_t uid = 0;
    std::string comm;
    std::string message;
    std::optional<std::uint16_t> sa_status;
    // About a group on a RoCE port: where it is sent from ("" netdev otherwise).
    GidType gid_type = GidType::ib;
    std::uint8_t sgid_index = 0;
    std::string netdev;
};

// The client reconnected after the daemon restarted (see rdmamcast_set_reconnect()): the
// memberships in `kept` hold as before; those in `lost` are gone (join them again). With
// `resumed` false the connection is a new session.
struct ReconnectedEvent {
    bool resumed = false;
    std::vector<std::uint64_t> kept; // ascending
    std::vector<std::uint64_t> lost; // ascending
    std::chrono::milliseconds gap{0}; // from noticing the break to the new session
};

using Event = std::variant<RestoredEvent, LostEvent, MonitorEvent, ReconnectedEvent>;

// (Join completions, RDMAMCAST_EVENT_JOINED and JOIN_ERROR, are not Events: Client::next_event()
// hands them to the join's callback. Given one anyway, this returns an empty MonitorEvent.)
inline Event event_from_c(const rdmamcast_event &ev) {
    auto str = [](const char *s) { return std::string(s ? s : ""); };
    switch (ev.type) {
    case RDMAMCAST_EVENT_JOINED:
    case RDMAMCAST_EVENT_JOIN_ERROR:
        return MonitorEvent{};
    case RDMAMCAST_EVENT_RESTORED:
        return RestoredEvent{ev.membership, ev.restored.record, ev.restored.changed};
    case RDMAMCAST_EVENT_LOST: {
        LostEvent l{ev.membership, ev.lost.code, str(ev.lost.code_name), str(ev.lost.message), {}};
        if (ev.lost.has_sa_status)
            l.sa_status = ev.lost.sa_status;
        return l;
    }
    case RDMAMCAST_EVENT_RECONNECTED: {
        const auto &c = ev.reconnected;
        ReconnectedEvent r;
        r.resumed = c.resumed != 0;
        if (c.num_kept)
            r.kept.assign(c.kept, c.kept + c.num_kept);
        if (c.num_lost)
            r.lost.assign(c.lost, c.lost + c.num_lost);
        r.gap = std::chrono::milliseconds(c.gap_ms);
        return r;
    }
    case RDMAMCAST_EVENT_MONITOR:
    default: {
        const auto &c = ev.monitor;
        MonitorEvent m;
        m.kind = c.kind;
        m.kind_name = str(c.kind_name);
        m.device = str(c.device);
        m.port = c.port;
        std::memcpy(m.mgid.data(), c.mgid, m.mgid.size());
        m.mlid = c.mlid;
        m.join_state = c.join_state;
        m.pid = c.pid;
        m.uid = c.uid;
        m.comm = str(c.comm);
        m.message = str(c.message);
        if (c.has_sa_status)
            m.sa_status = c.sa_status;
        m.gid_type = static_cast<GidType>(c.gid_type);
        m.sgid_index = c.sgid_index;
        m.netdev = str(c.netdev);
        return m;
    }
    }
}

// ---- list and status ----

struct Member {
    std::uint64_t membership = 0;
    std::int32_t pid = 0;
    std::uint32_t uid = 0;
    std::uint8_t join_state = 0;
    std::string state; // "pending", "active", "lost"
    std::string comm;
    std::string rule;    // the access rule that admitted it ("" from an older daemon)
    bool created = false; // its join created the group
    std::string flagged; // why the rules in force now would refuse it; "" when they would not
    std::string name;    // the named group's name it joined by; "" when it joined by MGID
};

struct Group {
    Gid mgid{};
    std::uint32_t qkey = 0;
    std::uint16_t mlid = 0;
    std::uint8_t held = 0;
    std::uint8_t foreign = 0;
    bool busy = false;
    std::array<std::uint32_t, 4> counts{}; // full, nonmember, sendonly-nonmember, sendonly-full
    std::vector<Member> members;
    // A group on a RoCE port with its record: where it is sent from ("" netdev otherwise).
    GidType gid_type = GidType::ib;
    std::uint8_t sgid_index = 0;
    std::string netdev;
};

struct PortGroups {
    std::string device;
    std::uint8_t port = 0;
    Gid port_gid{};
    std::vector<Group> groups;
    std::string link_layer = "InfiniBand"; // or "Ethernet" (RoCE)
};

// A port's latest re-join of its groups.
struct Rejoin {
    std::string reason;
    double started_ago_s = 0;
    std::optional<double> duration_s; // nullopt while it runs
    std::uint64_t groups = 0;
};

// A port's SA congestion window (config sa.congestion_control), learned from the SA's round trips.
struct PortSa {
    double window = 0;                // MADs in flight allowed; below 1: one per srtt / window
    bool slow_start = false;          // the window still doubles per round trip
    std::optional<double> srtt_ms;    // the smoothed round trip; nullopt before the first answer
    std::optional<double> timeout_ms; // the next first try's timeout; nullopt: sa.timeout_ms
};

struct PortStatus {
    std::string device;
    std::uint8_t port = 0;
    std::string state;
    std::uint16_t lid = 0;
    std::uint16_t sm_lid = 0;
    std::uint8_t sm_sl = 0;
    Gid port_gid{};
    std::string link_layer;
    double rate_gbps = 0;
    std::uint64_t groups = 0;
    std::uint32_t mtu = 0; // bytes; 0 until known
    // The master SM, once the daemon has read its SMInfoRecord.
    std::optional<std::uint64_t> sm_guid;
    std::optional<std::uint32_t> sm_act_count;
    bool rejoining = false;
    std::optional<Rejoin> last_rejoin; // nullopt: none yet
    std::uint64_t max_groups = 0;      // access.quotas.groups_per_port; 0: none
    std::optional<PortSa> sa;          // nullopt: congestion control off, or an older daemon
    // Active memberships per JoinState bit (full, nonmember, sendonly-nonmember, sendonly-full)
    // and the re-joins started since the daemon started; 0 from an older daemon.
    std::array<std::uint64_t, 4> memberships{};
    std::uint64_t rejoins = 0;
};

// One uid's share of the daemon against its quotas (0: no quota).
struct UserUsage {
    std::uint32_t uid = 0;
    std::string user; // "" when the uid has no name
    std::uint64_t memberships = 0, memberships_quota = 0;
    std::uint64_t creates = 0, creates_quota = 0;
    std::uint64_t flagged = 0;
    // Its shares against each share (0: none); 0 from an older daemon.
    std::uint64_t clients = 0, clients_quota = 0;
    std::uint64_t monitors = 0, monitors_quota = 0;
    std::uint64_t queued_bytes = 0, queued_bytes_quota = 0;
    std::uint64_t groups_per_port = 0, groups_per_port_quota = 0;
    double sa_tokens = 0;
    std::uint64_t sa_mads_per_second = 0;
};

// What the daemon refused since it started for one reason (the config key that refused).
struct Refusal {
    std::string reason;
    std::uint64_t count = 0;
};

struct Status {
    std::string daemon;
    unsigned protocol = 0;
    double uptime_s = 0;
    std::uint64_t clients = 0;
    rdmamcast_counters counters{};
    std::vector<PortStatus> ports;
    std::vector<UserUsage> users; // by uid; empty from an older daemon
    std::vector<Refusal> refused; // every reason, 0 included; empty from an older daemon
};

// ---- client and memberships ----

namespace detail {
using Handle = std::shared_ptr<rdmamcast_client>;
[[noreturn]] inline void fail(int rc, const rdmamcast_client *c) {
    throw Error::from(rc, rdmamcast_last_error(c));
}
inline Gid gid(const std::uint8_t *raw) {
    Gid g;
    std::memcpy(g.data(), raw, g.size());
    return g;
}
} // namespace detail

// One membership, left when the object is destroyed (errors there are ignored: the daemon
// leaves it anyway when the connection closes).
class Membership {
public:
    Membership() = default;
    Membership(Membership &&o) noexcept
        : c_(std::move(o.c_)), id_(std::exchange(o.id_, 0)), record_(o.record_) {}
    Membership &operator=(Membership &&o) noexcept {
        if (this != &o) {
            reset();
            c_ = std::move(o.c_);
            id_ = std::exchange(o.id_, 0);
            record_ = o.record_;
        }
        return *this;
    }
    Membership(const Membership &) = delete;
    Membership &operator=(const Membership &) = delete;
    ~Membership() { reset(); }

    explicit operator bool() const { return c_ != nullptr; }
    std::uint64_t id() const { return id_; }
    const Record &record() const { return record_; }
    // On a RoCE port, the netdev the daemon holds the host's IP membership on ("" on an
    // InfiniBand port, or once the membership is gone); see rdmamcast_membership_netdev().
    std::string netdev() const {
        char buf[64];
        if (!c_ || rdmamcast_membership_netdev(c_.get(), id_, buf, sizeof buf) < 0)
            return {};
        return buf;
    }

    // Leaves now and reports failure; the object is empty afterwards either way.
    void leave() {
        if (!c_)
            return;
        auto c = std::move(c_);
        if (int rc = rdmamcast_leave(c.get(), id_); rc < 0)
            detail::fail(rc, c.get());
    }
    // Stops managing the membership, which then lasts until the connection closes.
    std::uint64_t release() noexcept {
        c_.reset();
        return id_;
    }
    // Takes a restored event of this membership into record(); true if it was one. A
    // reconnected event that lists it as lost empties the object (there is nothing left to
    // leave; join again), and is also true.
    bool update(const Event &ev) {
        if (!c_)
            return false;
        if (const auto *rc = std::get_if<ReconnectedEvent>(&ev)) {
            for (std::uint64_t m : rc->lost)
                if (m == id_) {
                    c_.reset();
                    return true;
                }
            return false;
        }
        const auto *r = std::get_if<RestoredEvent>(&ev);
        if (!r || r->membership != id_)
            return false;
        record_ = r->record;
        return true;
    }

private:
    friend class Client;
    Membership(detail::Handle c, std::uint64_t id, const Record &record)
        : c_(std::move(c)), id_(id), record_(record) {}
    void reset() noexcept {
        if (c_)
            rdmamcast_leave(c_.get(), id_);
        c_.reset();
    }

    detail::Handle c_;
    std::uint64_t id_ = 0;
    Record record_{};
};

// What an asynchronous join ends with: the Membership (which leaves when destroyed, so keep
// it), or the Error rdmamcast_join() would have thrown (code RDMAMCAST_E_CANCELLED after
// Client::cancel()).
using JoinOutcome = std::variant<Membership, Error>;

class Client {
public:
    // Connects to `path`, or to $RDMA_MCASTD_SOCKET / the default when it is null.
    explicit Client(const char *path = nullptr) {
        rdmamcast_client *c = nullptr;
        if (int rc = rdmamcast_connect(path, &c); rc < 0)
            detail::fail(rc, nullptr);
        c_.reset(c, rdmamcast_close);
    }
    explicit Client(const std::string &path) : Client(path.c_str()) {}
    // One owner per connection (handles are not thread-safe, so copies would invite sharing
    // across threads); Memberships hold their own reference.
    Client(Client &&) noexcept = default;
    Client &operator=(Client &&) noexcept = default;
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;
    ~Client() = default;

    rdmamcast_client *get() const { return c_.get(); }
    std::string socket_path() const { return rdmamcast_socket_path(c_.get()); }
    unsigned protocol_version() const { return rdmamcast_protocol_version(c_.get()); }
    std::string daemon_version() const { return rdmamcast_daemon_version(c_.get()); }

    Membership join(const JoinParams &params) {
        rdmamcast_join_params p = params.c_params();
        Record rec{};
        std::uint64_t id = 0;
        check(rdmamcast_join(c_.get(), &p, &rec, &id));
        return Membership(c_, id, rec);
    }
    // Starts a join and returns at once with its id (for cancel()); `done` runs exactly once,
    // from a later next_event(), with the outcome. Throws Error for bad parameters, as join() does; then `done` never runs.
    //
    // A callback rather than a std::future: the handle is single-threaded and only moves when
    // the caller polls event_fd() and calls next_event(), so a future's get() would wait for
    // something only its own thread could make happen. A callback runs where the completion is
    // read, in the caller's event loop, with the other events in the daemon's order. Callbacks
    // may call this Client again (join_async, cancel, leave...). Destroying the Client drops
    // the callbacks of joins not yet completed, uncalled.
    std::uint64_t join_async(const JoinParams &params, std::function<void(JoinOutcome)> done) {
        rdmamcast_join_params p = params.c_params();
        std::uint64_t id = 0;
        check(rdmamcast_join_start(c_.get(), &p, nullptr, &id));
        callbacks_[id] = std::move(done);
        return id;
    }
    // Withdraws a join started with join_async(): true when it is withdrawn (a later
    // next_event() runs its callback with an Error of code RDMAMCAST_E_CANCELLED); false when
    // it completed first (its callback ran or will run with the real outcome). See
    // rdmamcast_join_cancel().
    bool cancel(std::uint64_t join_id) {
        int rc = rdmamcast_join_cancel(c_.get(), join_id);
        if (rc == -ENOENT)
            return false;
        check(rc);
        return true;
    }
    // Joins started and not completed yet.
    std::size_t joins_pending() const { return callbacks_.size(); }

    void leave(std::uint64_t membership) { check(rdmamcast_leave(c_.get(), membership)); }
    void monitor(bool enable = true) { check(rdmamcast_monitor(c_.get(), enable)); }

    // Root only: releases every membership of `uid`, or one membership, whoever holds it (see
    // rdmamcast_evict_uid()). Returns how many were released.
    std::uint64_t evict_uid(std::uint32_t uid) {
        std::uint64_t released = 0;
        check(rdmamcast_evict_uid(c_.get(), uid, &released));
        return released;
    }
    std::uint64_t evict_membership(std::uint64_t membership) {
        std::uint64_t released = 0;
        check(rdmamcast_evict_membership(c_.get(), membership, &released));
        return released;
    }
    // Root only: evict_uid(), and every connection of `uid` closed (rdmamcast_disconnect_uid()).
    struct Disconnected {
        std::uint64_t released = 0, disconnected = 0;
    };
    Disconnected disconnect_uid(std::uint32_t uid) {
        Disconnected out;
        check(rdmamcast_disconnect_uid(c_.get(), uid, &out.released, &out.disconnected));
        return out;
    }

    // Whether to reconnect after the daemon restarted, and for how long to try (zero: the
    // library's default, RDMAMCAST_RECONNECT_TIMEOUT_MS); see rdmamcast_set_reconnect(). A
    // reconnect shows as a ReconnectedEvent from next_event(); a call whose request was in
    // flight throws Error with code RDMAMCAST_E_DISCONNECTED, and the Client stays usable.
    void set_reconnect(bool enable,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
        const auto ms = timeout.count() < 0 ? 0 : timeout.count();
        check(rdmamcast_set_reconnect(c_.get(), enable ? 1 : 0,
                                      ms > UINT_MAX ? UINT_MAX : static_cast<unsigned>(ms)));
    }

    // Poll for POLLIN, then call next_event() until it returns nullopt.
    int event_fd() const { return rdmamcast_event_fd(c_.get()); }
    // Join completions run their callbacks here and are not returned.
    std::optional<Event> next_event() {
        for (;;) {
            rdmamcast_event ev;
            int rc = rdmamcast_next_event(c_.get(), &ev);
            if (rc == -EAGAIN)
                return std::nullopt;
            check(rc);
            if (ev.type != RDMAMCAST_EVENT_JOINED && ev.type != RDMAMCAST_EVENT_JOIN_ERROR)
                return event_from_c(ev);
            complete(ev);
        }
    }

    // Every group the daemon handles (every page of its answer, put together).
    std::vector<PortGroups> list() { return list_of(rdmamcast_list); }
    // This client's own memberships only (RDMAMCAST_1.4).
    std::vector<PortGroups> list_own() { return list_of(rdmamcast_list_own); }

    Status status() {
        rdmamcast_daemon_status *s = nullptr;
        check(rdmamcast_status(c_.get(), &s));
        std::unique_ptr<rdmamcast_daemon_status, decltype(&rdmamcast_status_free)> guard(s, rdmamcast_status_free);
        Status out{s->daemon, s->protocol, s->uptime_s, s->clients, *s->counters, {}, {}, {}};
        for (std::size_t i = 0; i < s->num_ports; ++i) {
            const auto &p = *s->ports[i];
            PortStatus ps{p.device, p.port, p.state, p.lid, p.sm_lid, p.sm_sl,
                          detail::gid(p.port_gid), p.link_layer, p.rate_gbps, p.groups, p.mtu,
                          {}, {}, p.rejoining, {}, p.max_groups, {}};
            if (p.sm_known) {
                ps.sm_guid = p.sm_guid;
                ps.sm_act_count = p.sm_act_count;
            }
            if (const rdmamcast_rejoin *r = p.last_rejoin) {
                ps.last_rejoin = Rejoin{r->reason, r->started_ago_s, std::nullopt, r->groups};
                if (r->finished)
                    ps.last_rejoin->duration_s = r->duration_s;
            }
            if (const rdmamcast_port_sa *w = p.sa) {
                ps.sa = PortSa{w->window, w->slow_start, std::nullopt, std::nullopt};
                if (w->has_srtt)
                    ps.sa->srtt_ms = w->srtt_ms;
                if (w->has_timeout)
                    ps.sa->timeout_ms = w->timeout_ms;
            }
            std::copy(std::begin(p.memberships), std::end(p.memberships), ps.memberships.begin());
            ps.rejoins = p.rejoins;
            out.ports.push_back(std::move(ps));
        }
        for (std::size_t i = 0; i < s->num_users; ++i) {
            const auto &u = *s->users[i];
            out.users.push_back(UserUsage{u.uid, u.user, u.memberships, u.memberships_quota,
                                          u.creates, u.creates_quota, u.flagged,
                                          u.clients, u.clients_quota, u.monitors, u.monitors_quota,
                                          u.queued_bytes, u.queued_bytes_quota, u.groups_per_port,
                                          u.groups_per_port_quota, u.sa_tokens, u.sa_mads_per_second});
        }
        for (std::size_t i = 0; i < s->num_refused; ++i)
            out.refused.push_back(Refusal{s->refused[i]->reason, s->refused[i]->count});
        return out;
    }

private:
    void check(int rc) const {
        if (rc < 0)
            detail::fail(rc, c_.get());
    }

    // The tree one of the C list functions returns, as C++ values.
    std::vector<PortGroups> list_of(int (*fn)(rdmamcast_client *, rdmamcast_group_list **)) {
        rdmamcast_group_list *l = nullptr;
        check(fn(c_.get(), &l));
        std::unique_ptr<rdmamcast_group_list, decltype(&rdmamcast_list_free)> guard(l, rdmamcast_list_free);
        std::vector<PortGroups> out;
        for (std::size_t i = 0; i < l->num_ports; ++i) {
            const auto &p = *l->ports[i];
            PortGroups pg{p.device, p.port, detail::gid(p.port_gid), {}, p.link_layer ? p.link_layer : "InfiniBand"};
            for (std::size_t j = 0; j < p.num_groups; ++j) {
                const auto &g = *p.groups[j];
                Group og{detail::gid(g.mgid), g.qkey, g.mlid, g.held, g.foreign, g.busy,
                         {g.counts[0], g.counts[1], g.counts[2], g.counts[3]}, {},
                         static_cast<GidType>(g.gid_type), g.sgid_index, g.netdev ? g.netdev : ""};
                for (std::size_t k = 0; k < g.num_members; ++k) {
                    const auto &m = *g.members[k];
                    og.members.push_back(Member{m.membership, m.pid, m.uid, m.join_state,
                                                m.state, m.comm, m.rule ? m.rule : "",
                                                m.created, m.flagged ? m.flagged : "",
                                                m.name ? m.name : ""});
                }
                pg.groups.push_back(std::move(og));
            }
            out.push_back(std::move(pg));
        }
        return out;
    }

    // Runs the callback of a completed join (one started through the C API on get() has none:
    // its completion is dropped, so start joins on a Client with join_async()).
    void complete(const rdmamcast_event &ev) {
        const bool ok = ev.type == RDMAMCAST_EVENT_JOINED;
        auto it = callbacks_.find(ok ? ev.joined.join_id : ev.join_error.join_id);
        if (it == callbacks_.end())
            return;
        auto done = std::move(it->second);
        callbacks_.erase(it); // first: the callback may start or cancel joins
        if (ok)
            done(JoinOutcome(std::in_place_type<Membership>,
                             Membership(c_, ev.membership, ev.joined.record)));
        else
            done(JoinOutcome(std::in_place_type<Error>,
                             Error::from(ev.join_error.error.err, &ev.join_error.error)));
    }

    detail::Handle c_;
    std::unordered_map<std::uint64_t, std::function<void(JoinOutcome)>> callbacks_;
};

} // namespace rdmamcast
