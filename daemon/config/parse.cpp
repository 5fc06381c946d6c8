// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The config schema: every key, its type, range and default, checked in one pass. The keys and
// the reasons for their ranges are documented in config/README.md; keep the two in step.
#include <sys/un.h>

#include <algorithm>
#include <charconv>

#include "config.hpp"
#include "config/readers.hpp"
#include "common/device_name.hpp"
#include "common/join_bounds.hpp"
#include "common/json_check.hpp"
#include "common/port_name.hpp"
#include "proto/join_decoder.hpp"
#include "proto/protocol.hpp"

namespace mcastd::config {

using json_check::FieldError;
using json_check::json;
using json_check::ObjectReader;
using std::chrono::milliseconds;

namespace detail {

std::optional<ObjectReader> section(const ObjectReader &parent, std::string_view key) {
    if (const json *v = parent.object(key))
        return ObjectReader(*v, parent.pointer(key));
    return std::nullopt;
}

std::string hex(std::uint64_t v) {
    char buf[20] = "0x";
    auto r = std::to_chars(buf + 2, buf + sizeof buf, v, 16);
    return std::string(buf, r.ptr);
}

std::uint64_t int_or_hex_value(const json &v, const std::string &pointer, std::uint64_t max) {
    if (!v.is_string())
        return json_check::check_uint(v, pointer, 0, max);
    const std::string_view text = v.string();
    std::uint64_t value = 0;
    const bool prefixed = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    const char *first = text.data() + 2, *last = text.data() + text.size();
    auto [end, ec] = prefixed ? std::from_chars(first, last, value, 16)
                              : std::from_chars_result{first, std::errc::invalid_argument};
    if (!prefixed || end != last || (ec != std::errc() && ec != std::errc::result_out_of_range))
        throw FieldError(pointer, json_check::describe_value(v) +
                                      " is neither an integer nor a hex string such as \"0x1b\"");
    if (ec == std::errc::result_out_of_range || value > max)
        throw FieldError(pointer, std::string(text) + " out of range [0x0, " + hex(max) + "]");
    return value;
}

std::optional<std::uint64_t> int_or_hex(const ObjectReader &in, std::string_view key, std::uint64_t max) {
    const json *v = in.find(key);
    if (!v)
        return std::nullopt;
    return int_or_hex_value(*v, in.pointer(key), max);
}

std::uint16_t pkey_value(const json &v, const std::string &pointer) {
    const std::uint64_t p = int_or_hex_value(v, pointer, 0xffff);
    if ((p & 0x7fff) == 0)
        throw FieldError(pointer, hex(p) + " is the invalid P_Key");
    return static_cast<std::uint16_t>(p);
}

} // namespace detail

namespace {

using detail::each_element;
using detail::hex;
using detail::int_or_hex;
using detail::read_access;
using detail::section;

std::string read_socket(const ObjectReader &root) {
    const auto path = root.string("socket");
    if (!path)
        return kDefaultSocket;
    if (path->empty() || path->front() != '/')
        root.fail("socket", "must be an absolute path");
    constexpr std::size_t kMax = sizeof(sockaddr_un::sun_path) - 1;
    if (path->size() > kMax)
        root.fail("socket", "longer than " + std::to_string(kMax) +
                                " bytes, the most a Unix socket address holds");
    if (path->find('\0') != path->npos)
        root.fail("socket", "contains a NUL character");
    return std::string(*path);
}

void read_socket_group(const ObjectReader &root, DaemonConfig &c) {
    const json *v = root.find("socket_group");
    if (!v) {
        c.socket_gid = detail::group_id(c.socket_group);
        return;
    }
    if (v->is_number_integer()) {
        c.socket_gid = static_cast<gid_t>(json_check::check_uint(*v, root.pointer("socket_group"), 0, 0xfffffffe));
        c.socket_group = std::to_string(*c.socket_gid);
        return;
    }
    c.socket_group = std::string(root.string("socket_group").value_or(""));
    if (c.socket_group.empty())
        return; // root alone
    c.socket_gid = detail::group_id(c.socket_group);
    if (!c.socket_gid)
        root.fail("socket_group", "no group \"" + c.socket_group + "\" on this host (getgrnam)");
}

std::string read_log_level(const ObjectReader &root) {
    const auto level = root.string("log_level");
    if (!level)
        return "info";
    if (std::find(std::begin(kLogLevels), std::end(kLogLevels), *level) == std::end(kLogLevels))
        root.fail("log_level", json_check::describe_string(*level) +
                                   " is not a log level (trace, debug, info, warning, error, "
                                   "critical or off)");
    return std::string(*level);
}

// "mlx5_0" (every port of the device) or "mlx5_0/1", written the way Service compares them.
std::vector<std::string> read_ports(const ObjectReader &root) {
    std::vector<std::string> out;
    const json *ports = root.array("ports");
    if (!ports)
        return out;
    std::size_t i = 0;
    for (const json &v : *ports) {
        const std::string ptr = json_check::pointer_to(root.pointer("ports"), i++);
        const std::string_view name = json_check::check_string(v, ptr);
        const auto slash = name.find('/');
        const std::string_view device = name.substr(0, slash);
        if (device.empty())
            throw FieldError(ptr, json_check::describe_value(v) +
                                      " does not start with a device name (\"mlx5_0\" or "
                                      "\"mlx5_0/1\")");
        if (auto why = device_name_problem(device))
            throw FieldError(ptr, *why);
        if (slash != name.npos) {
            const std::string_view port = name.substr(slash + 1);
            unsigned n = 0;
            auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
            // Decimal without sign or leading zeros: "mlx5_0/01" would never match a port.
            if (ec != std::errc() || end != port.data() + port.size() || port[0] == '0' ||
                n < 1 || n > 254)
                throw FieldError(ptr, json_check::describe_value(v) +
                                          ": the port after '/' must be a number in [1, 254]");
        }
        if (auto dup = std::find(out.begin(), out.end(), name); dup != out.end())
            throw FieldError(ptr, json_check::describe_value(v) + " is already listed at " +
                                      json_check::pointer_to(root.pointer("ports"),
                                                             static_cast<std::size_t>(dup - out.begin())));
        out.emplace_back(name);
    }
    return out;
}

void read_sa(const ObjectReader &root, sa::TransactionConfig &sa) {
    const auto in = section(root, "sa");
    if (!in)
        return;
    in->require_only({"timeout_ms", "max_timeout_ms", "tries", "window", "max_rate", "congestion_control",
                      "rtt_target_ms"});
    if (auto v = in->uint("timeout_ms", 1, 60000))
        sa.first_timeout = milliseconds(*v);
    // The cap of the doubling cannot be below the first timeout. Left out, it follows a
    // first timeout above its default instead of contradicting it.
    const auto first = static_cast<std::uint64_t>(sa.first_timeout.count());
    if (auto v = in->uint("max_timeout_ms", first, 600000))
        sa.max_timeout = milliseconds(*v);
    else
        sa.max_timeout = std::max(sa.max_timeout, sa.first_timeout);
    if (auto v = in->uint("tries", 1, 100))
        sa.max_tries = static_cast<unsigned>(*v);
    // Above ~600 outstanding MADs umad2sim deadlocks; 256 is far from that and far more than an
    // SA should have to queue from one host.
    if (auto v = in->uint("window", 1, 256))
        sa.window = static_cast<unsigned>(*v);
    if (auto v = in->uint("max_rate", 0, 100000))
        sa.pacing_rate = static_cast<double>(*v);
    if (auto v = in->boolean("congestion_control"))
        sa.congestion.enabled = *v;
    if (auto v = in->uint("rtt_target_ms", 1, 10000))
        sa.congestion.rtt_target = milliseconds(*v);
}

// A number that may have a fraction. ObjectReader::number() already refuses booleans and
// strings (true is not 1, "0.2" is not 0.2) and what a double cannot hold.
std::optional<double> number_in(const ObjectReader &in, std::string_view key, double lo,
                                double hi, std::string_view range) {
    const auto v = in.number(key);
    if (v && (*v < lo || *v > hi))
        in.fail(key, json_check::describe_value(*in.find(key)) + " out of range " + std::string(range));
    return v;
}

// The port event sources' polls (port/port_poller.hpp). Every SA-facing rate here is paid by
// the SA once per host and port; config/README.md has the arithmetic.
void read_monitor(const ObjectReader &root, port::MonitorConfig &m) {
    const auto in = section(root, "monitor");
    if (!in)
        return;
    in->require_only({"portinfo_interval_ms", "sminfo_interval_ms", "sminfo_timeout_ms",
                      "audit_per_second", "jitter_percent"});
    if (auto v = in->uint("portinfo_interval_ms", 100, 600000))
        m.portinfo_interval = milliseconds(*v);
    if (auto v = in->uint("sminfo_interval_ms", 100, 3600000))
        m.sminfo_interval = milliseconds(*v);
    if (auto v = in->uint("sminfo_timeout_ms", 1, 60000))
        m.sminfo_timeout = milliseconds(*v);
    if (auto v = number_in(*in, "audit_per_second", 0, 100, "[0, 100]"))
        m.audit_per_second = *v;
    if (auto v = in->uint("jitter_percent", 0, 50))
        m.jitter_percent = static_cast<unsigned>(*v);
}

// Why a prefix of at least 32 bits (its flags, scope and signature fixed) cannot be the
// daemon's: a signature the engine refuses or the SA assigns, or the reserved scope 0.
std::optional<std::string> reserved_prefix_problem(const NamePrefix &p) {
    const std::uint16_t sig = mgid_signature(p.bits);
    if (sig == 0x401b || sig == 0x601b || sig == 0x4001 || sig == 0x6001 || sig == 0xa01b)
        return "has the signature " + hex(sig) + ", which IPoIB, rdma_cm or the SA's assigned MGIDs use";
    if (mgid_scope(p.bits) == 0)
        return "has scope 0, which is reserved";
    return std::nullopt;
}

// groups.names: the prefix must leave the MGID's flags, scope and signature to the operator
// (common/named_group.hpp) and not be one the engine refuses or the SA assigns.
void read_names(const ObjectReader &groups, NamedGroups &names) {
    const auto in = section(groups, "names");
    if (!in)
        return;
    in->require_only({"enabled", "prefix", "pkey"});
    if (auto v = in->boolean("enabled"))
        names.enabled = *v;
    if (auto text = in->string("prefix")) {
        std::string why;
        const auto p = parse_name_prefix(*text, &why);
        if (!p)
            in->fail("prefix", json_check::describe_string(*text) + " " + why);
        if (auto no = reserved_prefix_problem(*p))
            in->fail("prefix", json_check::describe_string(*text) + " " + *no);
        names.prefix = *p;
    }
    if (const json *v = in->find("pkey"))
        names.pkey = detail::pkey_value(*v, in->pointer("pkey"));
}

// groups.owned_prefixes: MGID prefixes no other agent on the host's ports joins, where a new
// group costs its Set alone (doc/architecture.md §5). At least 32 bits, so that the signature
// is the prefix's: an owned prefix can never take in the kernel's groups (IPoIB, rdma_cm),
// whose bits other agents hold by design.
std::vector<NamePrefix> read_owned_prefixes(const ObjectReader &groups) {
    std::vector<NamePrefix> out;
    each_element(groups, "owned_prefixes", [&](const json &v, const std::string &ptr) {
        std::string why;
        const auto p = parse_mgid_prefix_bits(json_check::check_string(v, ptr), kMinNamePrefixBits, 128, "", &why);
        if (!p)
            throw FieldError(ptr, json_check::describe_value(v) + " " + why);
        if (auto no = reserved_prefix_problem(*p))
            throw FieldError(ptr, json_check::describe_value(v) + " " + *no);
        out.push_back(*p);
    });
    return out;
}

void read_groups(const ObjectReader &root, EngineConfig &engine, NamedGroups &names, roce::RoceOptions &roce) {
    const auto in = section(root, "groups");
    if (!in) {
        engine.owned_prefixes = owned_prefixes({}, names);
        return;
    }
    in->require_only({"allow_ipoib_mgids", "allow_rdma_cm_mgids", "roce_ipv6", "owned_prefixes", "create", "names"});
    read_names(*in, names);
    engine.owned_prefixes = owned_prefixes(read_owned_prefixes(*in), names);
    if (auto v = in->boolean("roce_ipv6"))
        roce.ipv6_on_roce_v2 = *v;
    if (auto v = in->boolean("allow_ipoib_mgids"))
        engine.allow_ipoib_mgids = *v;
    if (auto v = in->boolean("allow_rdma_cm_mgids"))
        engine.allow_rdma_cm_mgids = *v;
    const auto create = section(*in, "create");
    if (!create)
        return;
    create->require_only({"qkey", "pkey", "sl", "traffic_class", "flow_label", "scope"});
    auto &d = engine.create;
    // The bounds a join's own fields have (the create's defaults fill them in).
    if (auto v = int_or_hex(*create, "qkey", 0xffffffff))
        roce.default_qkey = d.qkey = static_cast<std::uint32_t>(*v);
    // 0x0000 and 0x8000 are the invalid P_Key (IBA 10.9.1.2): no port can be a member.
    if (const json *v = create->find("pkey"))
        d.pkey = detail::pkey_value(*v, create->pointer("pkey"));
    if (auto v = create->uint("sl", 0, join_bounds::kSlMax))
        d.sl = static_cast<std::uint8_t>(*v);
    if (auto v = create->uint("traffic_class", 0, 255))
        d.tclass = static_cast<std::uint8_t>(*v);
    if (auto v = create->uint("flow_label", 0, join_bounds::kFlowLabelMax))
        d.flow_label = static_cast<std::uint32_t>(*v);
    if (auto v = create->uint("scope", join_bounds::kScopeMin, join_bounds::kScopeMax))
        d.scope = static_cast<std::uint8_t>(*v);
}

void read_retry(const ObjectReader &root, EngineConfig &engine) {
    const auto in = section(root, "retry");
    if (!in)
        return;
    in->require_only({"min_ms", "max_ms"});
    if (auto v = in->uint("min_ms", 10, 3600000))
        engine.retry_min = milliseconds(*v);
    const auto min_ms =
        static_cast<std::uint64_t>(std::chrono::duration_cast<milliseconds>(engine.retry_min).count());
    if (auto v = in->uint("max_ms", min_ms, 3600000))
        engine.retry_max = milliseconds(*v);
    else
        engine.retry_max = std::max(engine.retry_max, engine.retry_min);
}

// A port's re-join starts after a random pause of up to jitter_ms (EngineConfig::rejoin_jitter).
void read_rejoin(const ObjectReader &root, EngineConfig &engine) {
    const auto in = section(root, "rejoin");
    if (!in)
        return;
    in->require_only({"jitter_ms"});
    if (auto v = in->uint("jitter_ms", 0, 60000))
        engine.rejoin_jitter = milliseconds(*v);
}

// The fabric budget (sa/fabric_budget.hpp): both keys or neither (0 is none). Applied over
// `sa` and `rejoin` once they are read (apply_fabric).
sa::FabricBudget read_fabric(const ObjectReader &root) {
    sa::FabricBudget f;
    const auto in = section(root, "fabric");
    if (!in)
        return f;
    in->require_only({"hosts", "sa_budget"});
    f.hosts = static_cast<unsigned>(in->uint("hosts", 0, 1000000).value_or(0));
    f.budget = static_cast<unsigned>(in->uint("sa_budget", 0, 10000000).value_or(0));
    if ((f.hosts == 0) != (f.budget == 0)) {
        const bool no_hosts = f.hosts == 0;
        in->fail(no_hosts ? "hosts" : "sa_budget",
                 "missing or 0 while " + in->pointer(no_hosts ? "sa_budget" : "hosts") +
                     " is set: a budget needs both, the ports that share it and the MADs per second they share");
    }
    return f;
}

// config/README.md "limits" gives each default's reasoning (doc/architecture.md §12).
void read_limits(const ObjectReader &root, frontend::Limits &limits, logging::RoutineLimits &log) {
    const auto in = section(root, "limits");
    if (!in)
        return;
    in->require_only({"max_message_bytes", "max_requests_in_flight", "max_memberships_per_client",
                      "max_queued_bytes", "max_monitor_queued_bytes", "hello_timeout_ms", "max_clients",
                      "root_reserved_clients", "max_queued_bytes_total", "max_memberships", "max_clients_per_uid",
                      "max_monitors_per_uid", "max_queued_bytes_per_uid", "subuid_file", "log_routine_burst",
                      "log_routine_per_minute"});
    constexpr std::uint64_t kGiB = 1u << 30;
    if (auto v = in->uint("max_message_bytes", 1024, proto::kMaxMessageBytes))
        limits.max_message_bytes = *v;
    if (auto v = in->uint("max_requests_in_flight", 1, 100000))
        limits.max_requests_in_flight = *v;
    if (auto v = in->uint("max_memberships_per_client", 1, 10000000))
        limits.max_memberships_per_client = *v;
    // At least one largest reply (a list page or a status) and a few events.
    if (auto v = in->uint("max_queued_bytes", 256u << 10, kGiB))
        limits.max_queued_bytes = *v;
    if (auto v = in->uint("max_monitor_queued_bytes", 4096, kGiB))
        limits.max_monitor_queued_bytes = *v;
    if (auto v = in->uint("hello_timeout_ms", 100, 600000))
        limits.hello_timeout = milliseconds(*v);
    if (auto v = in->uint("max_clients", 1, 100000))
        limits.max_clients = *v;
    // Left out: 8, or an eighth of max_clients when that is fewer (a small daemon keeps most
    // of its slots for everyone).
    if (auto v = in->uint("root_reserved_clients", 0, limits.max_clients - 1))
        limits.root_reserved_clients = *v;
    else
        limits.root_reserved_clients = std::min(limits.root_reserved_clients, limits.max_clients / 8);
    if (auto v = in->uint("max_queued_bytes_total", 1u << 20, 64 * kGiB))
        limits.max_queued_bytes_total = *v;
    if (auto v = in->uint("max_memberships", 1, 100000000))
        limits.max_memberships = *v;
    if (auto v = in->uint("max_clients_per_uid", 1, 100000))
        limits.max_clients_per_uid = *v;
    if (auto v = in->uint("max_monitors_per_uid", 0, 100000))
        limits.max_monitors_per_uid = *v;
    if (auto v = in->uint("max_queued_bytes_per_uid", 256u << 10, 64 * kGiB))
        limits.max_queued_bytes_per_uid = *v;
    if (auto path = in->string("subuid_file")) {
        if (!path->empty() && path->front() != '/')
            in->fail("subuid_file", "must be an absolute path, or \"\" to charge every uid to itself");
        limits.subuid_file = *path;
    }
    // Routine membership lines per uid (logging/routine_limiter.hpp): at least one line, and
    // at most what the journal's own default rate limit (10,000 per 30 s) would take from one
    // uid in a burst; past that the per-uid limit would not protect anything.
    if (auto v = in->uint("log_routine_burst", 1, 10000))
        log.burst = *v;
    if (auto v = in->uint("log_routine_per_minute", 1, 20000))
        log.per_minute = *v;
}

void read_dbus(const ObjectReader &root, DbusConfig &dbus) {
    const auto in = section(root, "dbus");
    if (!in)
        return;
    in->require_only({"enabled"});
    if (auto v = in->boolean("enabled"))
        dbus.enabled = *v;
}

void read_restart(const ObjectReader &root, RestartConfig &restart) {
    const auto in = section(root, "restart");
    if (!in)
        return;
    in->require_only({"grace_ms"});
    if (auto v = in->uint("grace_ms", 0, 3600000))
        restart.grace = milliseconds(*v);
}

// Each entry is a protocol join request without id and op, checked by the same decoder.
std::vector<JoinRequest> read_static_groups(const ObjectReader &root, const std::vector<std::string> &ports,
                                            const NamedGroups &names) {
    std::vector<JoinRequest> out;
    const json *groups = root.array("static_groups");
    if (!groups)
        return out;
    std::size_t i = 0;
    for (const json &v : *groups) {
        const ObjectReader in(v, json_check::pointer_to(root.pointer("static_groups"), i++));
        JoinRequest r = proto::decode_join(in);
        if (!r.name.empty() && !names.enabled)
            in.fail("name", "named groups are disabled (/groups/names/enabled)");
        // A group on a port the daemon will not open could never be joined: say so now.
        const std::string full = port_name(r.device, r.port);
        if (!ports.empty() && std::find(ports.begin(), ports.end(), r.device) == ports.end() &&
            std::find(ports.begin(), ports.end(), full) == ports.end())
            in.fail("device", full + " is not one of the ports the daemon serves (/ports)");
        out.push_back(std::move(r));
    }
    return out;
}

DaemonConfig read_config(const ObjectReader &root) {
    root.require_only({"socket", "socket_group", "log_level", "ports", "sa", "groups", "retry", "rejoin", "monitor",
                       "fabric", "limits", "access", "dbus", "restart", "static_groups"});
    DaemonConfig c;
    c.socket = read_socket(root);
    read_socket_group(root, c);
    c.log_level = read_log_level(root);
    c.host.ports = read_ports(root);
    read_sa(root, c.host.sa);
    read_groups(root, c.engine, c.names, c.roce);
    read_retry(root, c.engine);
    read_monitor(root, c.host.monitor);
    read_rejoin(root, c.engine);
    c.fabric = read_fabric(root);
    apply_fabric(c);
    read_limits(root, c.limits, c.log_routine);
    c.access = read_access(root);
    read_dbus(root, c.dbus);
    read_restart(root, c.restart);
    c.static_groups = read_static_groups(root, c.host.ports, c.names);
    return c;
}

Error config_error(std::string_view origin, std::string_view what) {
    std::string msg(origin);
    msg += ": ";
    msg += what;
    return Error{Errc::invalid_argument, std::move(msg), std::nullopt};
}

} // namespace

void apply_fabric(DaemonConfig &c) {
    c.written = {c.host.sa.pacing_rate, c.engine.rejoin_jitter};
    sa::apply(c.fabric, c.host.sa, c.engine.rejoin_jitter);
}

DaemonConfig without_fabric(DaemonConfig c) {
    c.host.sa.pacing_rate = c.written.sa_max_rate;
    c.engine.rejoin_jitter = c.written.rejoin_jitter;
    return c;
}

ConfigResult parse_config(std::string_view text, std::string_view origin) {
    auto parsed = json_check::parse(text, json_check::ParseOptions{.comments = true});
    if (parsed.syntax_error)
        return config_error(origin, *parsed.syntax_error);
    try {
        if (parsed.duplicate)
            throw *parsed.duplicate;
        DaemonConfig c = read_config(ObjectReader(parsed.value(), ""));
        c.origin = origin;
        return c;
    } catch (const FieldError &e) {
        return config_error(origin, e.describe());
    }
}

} // namespace mcastd::config
