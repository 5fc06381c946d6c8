// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd::eth::EthernetBed: the namespaces, veths and bridge of doc/ethernet-bed.md §2, built
// with iproute2 (one `ip -batch` per namespace) and removed in reverse.
#include "ethernet/ethernet_bed.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <list>
#include <set>
#include <stdexcept>

#include "ethernet/netns.hpp"

namespace mcastd::eth {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kMaxHosts = 250; // 10.77.0.<i>, one octet; .251-.254 stay free
// An `ip` command takes milliseconds; the margin is for a machine busy with other builds.
constexpr auto kToolTimeout = 30s;
constexpr auto kStopGrace = 5s;
// One round of wait_until_snooping waits this long for its unicast marker (normally < 1 ms).
constexpr auto kMarkerTimeout = 2s;
// Ports pass traffic within milliseconds of the last `link set up`; the kernel's link watcher,
// which makes them, runs from a work queue that a loaded machine may hold back.
constexpr auto kReadyTimeout = 30s;
// How long one round of the readiness check waits for each host's marker.
constexpr auto kReadyRound = 200ms;

// The bridge (§2). The querier makes the bridge send the queries a real network's router
// would, so memberships are refreshed and leaves confirmed by last-member queries. The bridge
// floods every group until "another querier may exist" has been ruled out for one query
// response interval after the querier is switched on (§6), and it reads the interval at that
// moment: so the interval (1 s by default, not the kernel's 10 s) is set when the bridge is
// made, and the querier switched on by a later command. IGMPv3 and MLDv2 queries keep hosts at
// the versions they speak by default.
std::string bridge_line(std::chrono::milliseconds query_response_interval) {
    return "link add br0 type bridge mcast_snooping 1 mcast_query_response_interval " +
           std::to_string(query_response_interval.count() / 10) + " mcast_igmp_version 3 mcast_mld_version 2";
}
constexpr const char *kQuerierOn = "link set br0 type bridge mcast_querier 1";

// Groups nobody joins, for wait_until_snooping.
const IpGroup kProbeV4 = IpGroup::of("239.255.77.77");
const IpGroup kProbeV6 = IpGroup::of("ff0e::77:77");

std::string tool_path(const std::string &name) {
    auto p = sim::find_tool(name);
    if (!p)
        throw std::runtime_error("no " + name + " in PATH, /usr/sbin or /sbin");
    return p->string();
}

RunResult run(std::vector<std::string> argv, std::chrono::milliseconds timeout = kToolTimeout) {
    Process p(Process::Options{.argv = std::move(argv), .cwd = "/"});
    return sim::finish(p, timeout);
}

std::string describe(const std::vector<std::string> &argv, const RunResult &r) {
    std::string cmd;
    for (const auto &a : argv)
        cmd += (cmd.empty() ? "" : " ") + a;
    return "'" + cmd + "' exited " + std::to_string(r.exit_code) + ": " + r.err + r.out;
}

std::array<std::uint8_t, 4> ipv4_bytes(int host) { return {10, 77, 0, static_cast<std::uint8_t>(host)}; }

} // namespace

std::optional<std::string> EthernetBed::unavailable() {
    static const std::optional<std::string> reason = []() -> std::optional<std::string> {
        if (::geteuid() != 0)
            return "the Ethernet bed needs root: it makes network namespaces, veth pairs and a bridge (euid " +
                   std::to_string(::geteuid()) + ")";
        for (const char *t : {"ip", "bridge", "unshare"})
            if (!sim::find_tool(t))
                return std::string("no ") + t + " (iproute2, util-linux) in PATH, /usr/sbin or /sbin";
        const std::string ip = tool_path("ip"), unshare = tool_path("unshare");
        // Each check runs in a namespace of its own that vanishes with the command.
        const std::vector<std::pair<std::vector<std::string>, std::string>> checks{
            {{unshare, "-n", "true"}, "no network namespaces here"},
            {{unshare, "-n", ip, "link", "add", "br0", "type", "bridge", "mcast_snooping", "1"},
             "the kernel makes no snooping bridge (CONFIG_BRIDGE, CONFIG_BRIDGE_IGMP_SNOOPING)"},
            {{unshare, "-n", ip, "link", "add", "v0", "type", "veth", "peer", "name", "v1"},
             "the kernel makes no veth pair (CONFIG_VETH)"},
        };
        for (const auto &[argv, why] : checks)
            if (auto r = run(argv); r.exit_code != 0)
                return why + ": " + describe(argv, r);
        // Named namespaces need a writable /run/netns that ip can bind-mount onto.
        const std::string probe = sim::unique_name("mcastd-eth") + "-probe";
        if (auto r = run({ip, "netns", "add", probe}); r.exit_code != 0)
            return "ip netns add fails: " + describe({ip, "netns", "add", probe}, r);
        run({ip, "netns", "del", probe});
        return std::nullopt;
    }();
    return reason;
}

struct EthernetBed::Impl {
    Options opts;
    std::string base, sw;
    fs::path scratch;
    std::string ip, bridge; // full paths
    std::vector<std::string> namespaces; // every one this bed tried to make, switch first
    std::vector<unsigned> ifindex;       // [host - 1]
    std::list<Process> processes;        // stable addresses: spawn_on hands out references
    std::chrono::milliseconds setup{};
    int batches = 0;

    ~Impl() {
        const std::string problems = teardown();
        if (!problems.empty())
            ADD_FAILURE() << "EthernetBed teardown: " << problems;
    }

    std::string host_ns(int host) const { return base + "-h" + std::to_string(host); }
    std::string ifname(int host) const {
        auto it = opts.ifnames.find(host);
        return it != opts.ifnames.end() ? it->second : "veth" + std::to_string(host);
    }
    std::string port(int host) const { return "p" + std::to_string(host); }
    Mac mac(int host) const { return {0x02, 0x00, 0x4d, 0x00, 0x00, static_cast<std::uint8_t>(host)}; }
    std::string ipv4(int host) const { return "10.77.0." + std::to_string(host); }
    std::string ipv6(int host) const { return "fd00:77::" + std::to_string(host); }

    void check_host(int host) const {
        if (host < 1 || host > opts.hosts)
            throw std::invalid_argument("no host " + std::to_string(host) + " on this bed (1.." +
                                        std::to_string(opts.hosts) + ")");
    }

    // Runs `lines` as one `ip [-n ns] -batch FILE`; the file stays in the scratch directory.
    void batch(const std::string &ns, const std::vector<std::string> &lines, bool force = false) {
        const fs::path file = scratch / ("ip-batch-" + std::to_string(++batches) + (ns.empty() ? "" : "-" + ns));
        std::ofstream out(file);
        for (const auto &l : lines)
            out << l << '\n';
        if (!out.flush())
            throw std::runtime_error("cannot write " + file.string() + ": " + std::strerror(errno));
        std::vector<std::string> argv{ip};
        if (!ns.empty())
            argv.insert(argv.end(), {"-n", ns});
        if (force)
            argv.push_back("-force");
        argv.insert(argv.end(), {"-batch", file.string()});
        const RunResult r = run(argv);
        if (r.exit_code != 0)
            throw std::runtime_error(describe(argv, r) + "\n--- " + file.string() + " ---\n" +
                                     sim::read_text_file(file));
    }

    // What the beds of test processes that died before their teardown (SIGKILL, a crash, a
    // ctest timeout) left: their namespaces and scratch directories. Their processes died with
    // them (PR_SET_PDEATHSIG); a namespace lives on as long as its name.
    void sweep_leftovers() {
        std::vector<std::string> names, del;
        std::error_code ec;
        for (const auto &e : fs::directory_iterator("/run/netns", ec))
            if (sim::left_by_dead_process(e.path().filename().string(), "mcastd-eth-")) {
                names.push_back(e.path().filename().string());
                del.push_back("netns del " + names.back());
            }
        if (!del.empty()) {
            try {
                batch("", del, true);
            } catch (const std::runtime_error &) {
                // The bed of a test running beside this one sweeps too, and may have deleted
                // one first ("Cannot remove namespace file"): only one still there is a failure.
                for (const auto &n : names)
                    if (fs::exists("/run/netns/" + n))
                        throw;
            }
        }
        for (const auto &e : fs::directory_iterator(scratch.parent_path(), ec))
            if (sim::left_by_dead_process(e.path().filename().string(), "mcastd-eth-"))
                fs::remove_all(e.path(), ec);
    }

    void build() {
        const auto start = Clock::now();
        sweep_leftovers();
        namespaces.push_back(sw);
        for (int i = 1; i <= opts.hosts; ++i)
            namespaces.push_back(host_ns(i));
        std::vector<std::string> add;
        for (const auto &ns : namespaces)
            add.push_back("netns add " + ns);
        batch("", add);
        // No duplicate address detection: addresses are usable at once (the bed's are unique
        // by construction), and the link-local source MLD reports need is there from the start.
        // Devices take the namespace's default when they are made, so this comes first.
        for (const auto &ns : namespaces)
            write_sysctl(ns, "net/ipv6/conf/default/accept_dad", "0");

        // The switch: the bridge, up and alone until it has its link-local address, then one
        // veth pair per host (the peer made directly in the host's namespace, so no name ever
        // exists in the test's), the ports up, then the querier (§2).
        batch(sw, {bridge_line(opts.query_response_interval), "link set br0 up"});
        wait_bridge_address();
        std::vector<std::string> sw_lines;
        for (int i = 1; i <= opts.hosts; ++i) {
            sw_lines.push_back("link add " + port(i) + " type veth peer name " + ifname(i) + " address " +
                               format_mac(mac(i)) + " netns " + host_ns(i));
            sw_lines.push_back("link set " + port(i) + " master br0 up");
        }
        sw_lines.push_back(kQuerierOn);
        batch(sw, sw_lines);

        // Each host: its addresses, the veth up, the multicast routes, and every other host as a
        // permanent neighbour, so that unicast markers need no ARP or neighbour discovery.
        for (int i = 1; i <= opts.hosts; ++i) {
            const std::string dev = " dev " + ifname(i);
            std::vector<std::string> lines{"link set lo up", "addr add " + ipv4(i) + "/24" + dev};
            if (opts.ipv6)
                lines.push_back("addr add " + ipv6(i) + "/64" + dev + " nodad");
            lines.push_back("link set " + ifname(i) + " up");
            lines.push_back("route add 224.0.0.0/4" + dev);
            if (opts.ipv6)
                lines.push_back("route add ff00::/8" + dev);
            for (int j = 1; j <= opts.hosts; ++j) {
                if (j == i)
                    continue;
                const std::string lladdr = " lladdr " + format_mac(mac(j)) + dev + " nud permanent";
                lines.push_back("neigh add " + ipv4(j) + lladdr);
                if (opts.ipv6)
                    lines.push_back("neigh add " + ipv6(j) + lladdr);
            }
            batch(host_ns(i), lines);
            ifindex.push_back(ifindex_in(host_ns(i), ifname(i)));
        }
        wait_ready();
        setup = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    }

    // The bridge sends an MLD query only from an IPv6 address of its own, and a query it could
    // not send counts its own querier as absent until the next one (§2): the startup queries
    // go one startup query interval apart, 31 s by default. br0 alone has its carrier, so its
    // link-local address comes as it goes up (no DAD here); ports without a carrier yet would
    // take the carrier away until a host's veth is up. So the ports and the querier wait for it.
    void wait_bridge_address() {
        const std::vector<std::string> argv{ip, "-n", sw, "-j", "-6", "addr", "show", "dev", "br0"};
        std::string text;
        const bool usable = sim::poll_until(kReadyTimeout, [&] {
            const RunResult r = run(argv);
            if (r.exit_code != 0)
                throw std::runtime_error(describe(argv, r));
            text = r.out;
            return !parse_usable_link_locals(r.out).empty();
        });
        if (!usable)
            throw std::runtime_error("br0 has no usable IPv6 link-local address after " +
                                     std::to_string(kReadyTimeout.count()) + " s: " + text);
    }

    // A port forwards, and a veth sends, only once the kernel's link watcher has handled its
    // carrier, a moment after both ends are up; until then frames are dropped (§2). The bed is
    // ready when the bridge lists every port forwarding and a unicast marker from each host
    // has reached the next one (host i to host i+1, the last to host 1): every veth has sent and
    // received, and every port has forwarded both ways.
    void wait_ready() {
        std::string states_text;
        const bool forwarding = sim::poll_until(kReadyTimeout, [&] {
            const std::vector<std::string> argv{bridge, "-n", sw, "-j", "link", "show"};
            const RunResult r = run(argv);
            if (r.exit_code != 0)
                throw std::runtime_error(describe(argv, r));
            states_text = r.out;
            const auto states = parse_bridge_port_states(r.out);
            for (int i = 1; i <= opts.hosts; ++i)
                if (auto it = states.find(port(i)); it == states.end() || it->second != "forwarding")
                    return false;
            return true;
        });
        if (!forwarding)
            throw std::runtime_error("the bridge ports are not all forwarding after " +
                                     std::to_string(kReadyTimeout.count()) + " s: " + states_text);
        if (opts.hosts < 2)
            return;
        std::vector<FrameCounter> counters;
        std::vector<DatagramSender> senders;
        for (int i = 1; i <= opts.hosts; ++i) {
            counters.emplace_back(host_ns(i), ifname(i));
            senders.emplace_back(host_ns(i), ifname(i), ipv4(i));
        }
        std::set<int> waiting; // hosts whose marker from the previous host has not come
        for (int i = 1; i <= opts.hosts; ++i)
            waiting.insert(i);
        const bool connected = sim::poll_until(kReadyTimeout, [&] {
            for (int to : waiting)
                senders.at(static_cast<std::size_t>((to + opts.hosts - 2) % opts.hosts)).send_to(ipv4(to), "ready");
            for (auto it = waiting.begin(); it != waiting.end();)
                it = counters.at(static_cast<std::size_t>(*it - 1)).wait_for(mac(*it), 1, kReadyRound)
                         ? waiting.erase(it)
                         : std::next(it);
            return waiting.empty();
        });
        if (!connected) {
            std::string hosts_text;
            for (int h : waiting)
                hosts_text += " " + std::to_string(h);
            throw std::runtime_error("no marker reached host(s)" + hosts_text + " from the previous host within " +
                                     std::to_string(kReadyTimeout.count()) + " s");
        }
    }

    // Clients first, then the hosts' namespaces, then the switch's (their veths and the bridge
    // go with them), then the scratch directory. Returns the problems found, "" when none.
    std::string teardown() {
        std::string problems;
        for (auto &p : processes)
            p.signal(SIGTERM); // all at once: each may take a moment to exit
        for (auto &p : processes)
            p.stop(kStopGrace);
        processes.clear();
        std::vector<std::string> del;
        for (auto it = namespaces.rbegin(); it != namespaces.rend(); ++it)
            if (fs::exists("/run/netns/" + *it))
                del.push_back("netns del " + *it);
        if (!del.empty()) {
            try {
                batch("", del, true); // -force: go on past a failing line
            } catch (const std::exception &e) {
                problems += e.what() + std::string("\n");
            }
        }
        for (const auto &ns : namespaces)
            if (fs::exists("/run/netns/" + ns))
                problems += "namespace " + ns + " is still there\n";
        namespaces.clear();
        if (!scratch.empty()) {
            const char *keep = std::getenv("MCASTD_KEEP_SCRATCH");
            if (keep && std::string_view(keep) == "1") {
                std::fprintf(stderr, "mcastd::eth::EthernetBed: kept scratch dir %s\n", scratch.c_str());
            } else {
                std::error_code ec;
                fs::remove_all(scratch, ec);
                if (ec)
                    problems += "cannot remove " + scratch.string() + ": " + ec.message() + "\n";
            }
            scratch.clear();
        }
        return problems;
    }
};

EthernetBed::EthernetBed() : EthernetBed(Options{}) {}

EthernetBed::EthernetBed(Options opts) : impl_(std::make_unique<Impl>()) {
    auto &d = *impl_;
    d.opts = opts;
    if (opts.hosts < 1 || opts.hosts > kMaxHosts)
        throw std::invalid_argument("EthernetBed: hosts must be 1.." + std::to_string(kMaxHosts) + ", got " +
                                    std::to_string(opts.hosts));
    if (opts.query_response_interval < 100ms || opts.query_response_interval > 60s ||
        opts.query_response_interval.count() % 10 != 0)
        throw std::invalid_argument("EthernetBed: query_response_interval must be 0.1-60 s in 10 ms steps, got " +
                                    std::to_string(opts.query_response_interval.count()) + " ms");
    if (auto why = unavailable())
        throw std::runtime_error("EthernetBed cannot be built here: " + *why);
    d.ip = tool_path("ip");
    d.bridge = tool_path("bridge");
    // Namespace names are global to the machine: unique per bed, also across processes.
    d.base = sim::unique_name("mcastd-eth");
    d.sw = d.base + "-sw";
    d.scratch = sim::make_scratch_dir("mcastd-eth-" + std::to_string(::getpid()));
    try {
        d.build();
    } catch (const std::exception &e) {
        // ~Impl would run too, but only after the exception has left with this message.
        const std::string problems = d.teardown();
        throw std::runtime_error(std::string("EthernetBed: ") + e.what() +
                                 (problems.empty() ? "" : "\n--- teardown ---\n" + problems));
    }
}

EthernetBed::~EthernetBed() = default;

int EthernetBed::hosts() const { return impl_->opts.hosts; }
bool EthernetBed::ipv6() const { return impl_->opts.ipv6; }
const fs::path &EthernetBed::scratch() const { return impl_->scratch; }
const std::string &EthernetBed::switch_ns() const { return impl_->sw; }
std::chrono::milliseconds EthernetBed::setup_time() const { return impl_->setup; }

std::string EthernetBed::host_ns(int host) const {
    impl_->check_host(host);
    return impl_->host_ns(host);
}

std::string EthernetBed::ifname(int host) const {
    impl_->check_host(host);
    return impl_->ifname(host);
}

std::string EthernetBed::port(int host) const {
    impl_->check_host(host);
    return impl_->port(host);
}

std::optional<int> EthernetBed::host_of_port(const std::string &port) const {
    for (int i = 1; i <= hosts(); ++i)
        if (impl_->port(i) == port)
            return i;
    return std::nullopt;
}

std::string EthernetBed::ipv4(int host) const {
    impl_->check_host(host);
    return impl_->ipv4(host);
}

std::string EthernetBed::ipv6(int host) const {
    impl_->check_host(host);
    if (!impl_->opts.ipv6)
        throw std::logic_error("EthernetBed::ipv6: the bed was built without Options::ipv6");
    return impl_->ipv6(host);
}

Mac EthernetBed::mac(int host) const {
    impl_->check_host(host);
    return impl_->mac(host);
}

unsigned EthernetBed::ifindex(int host) const {
    impl_->check_host(host);
    return impl_->ifindex.at(static_cast<std::size_t>(host - 1));
}

Process &EthernetBed::spawn_on(int host, std::vector<std::string> argv, bool stdin_pipe,
                               std::map<std::string, std::string> env, std::vector<int> pass_fds) {
    impl_->check_host(host);
    const fs::path cwd = impl_->scratch / ("h" + std::to_string(host));
    fs::create_directories(cwd);
    argv.insert(argv.begin(), {impl_->ip, "netns", "exec", impl_->host_ns(host)});
    // `ip netns exec` execs the command: the Process's pid is the command's own.
    return impl_->processes.emplace_back(Process::Options{
        .argv = std::move(argv), .env = std::move(env), .cwd = cwd, .stdin_pipe = stdin_pipe,
        .pass_fds = std::move(pass_fds)});
}

RunResult EthernetBed::run_on(int host, std::vector<std::string> argv, std::chrono::milliseconds timeout) {
    impl_->check_host(host);
    argv.insert(argv.begin(), {impl_->ip, "netns", "exec", impl_->host_ns(host)});
    return run(std::move(argv), timeout);
}

RunResult EthernetBed::run_on_switch(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
    argv.insert(argv.begin(), {impl_->ip, "netns", "exec", impl_->sw});
    return run(std::move(argv), timeout);
}

std::vector<MdbEntry> EthernetBed::mdb() {
    const std::vector<std::string> argv{impl_->bridge, "-n", impl_->sw, "-j", "mdb", "show", "dev", "br0"};
    const RunResult r = run(argv);
    if (r.exit_code != 0)
        throw std::runtime_error("EthernetBed::mdb: " + describe(argv, r));
    return parse_mdb_json(r.out);
}

std::set<int> EthernetBed::mdb_hosts(const IpGroup &group) {
    std::set<int> hosts;
    for (const auto &e : mdb())
        if (e.group == group)
            if (auto h = host_of_port(e.port))
                hosts.insert(*h);
    return hosts;
}

GroupUsers EthernetBed::igmp(int host) {
    auto all = parse_proc_igmp(read_proc_net(host_ns(host), "igmp"));
    auto it = all.find(impl_->ifname(host));
    return it == all.end() ? GroupUsers{} : it->second;
}

GroupUsers EthernetBed::igmp6(int host) {
    auto all = parse_proc_igmp6(read_proc_net(host_ns(host), "igmp6"));
    auto it = all.find(impl_->ifname(host));
    return it == all.end() ? GroupUsers{} : it->second;
}

std::optional<int> EthernetBed::users(int host, const IpGroup &group) {
    const GroupUsers t = group.is_v6() ? igmp6(host) : igmp(host);
    auto it = t.find(group);
    return it == t.end() ? std::nullopt : std::optional<int>(it->second);
}

std::optional<std::chrono::steady_clock::duration>
EthernetBed::time_until_gone(int host, const IpGroup &group, std::chrono::steady_clock::time_point since,
                             std::chrono::milliseconds limit) {
    while (Clock::now() - since < limit) {
        if (!users(host, group))
            return Clock::now() - since;
        std::this_thread::sleep_for(1ms);
    }
    return std::nullopt;
}

std::string EthernetBed::mdb_text() {
    std::string s;
    for (const auto &e : mdb())
        s += " " + e.port + ":" + e.group.text();
    return s.empty() ? " (empty)" : s;
}

FrameCounter EthernetBed::counter(int host) { return FrameCounter(host_ns(host), impl_->ifname(host)); }

DatagramSender EthernetBed::sender(int host) {
    return DatagramSender(host_ns(host), impl_->ifname(host), impl_->ipv4(host));
}

bool EthernetBed::sync_path(DatagramSender &from, int to, FrameCounter &at_to, std::chrono::milliseconds timeout) {
    const std::size_t before = at_to.count(mac(to));
    from.send_to(ipv4(to), "marker");
    return at_to.wait_for(mac(to), before + 1, timeout);
}

std::chrono::milliseconds EthernetBed::wait_until_snooping(std::chrono::milliseconds timeout) {
    const auto start = Clock::now();
    if (hosts() < 2)
        return 0ms;
    FrameCounter at_first = counter(1);
    DatagramSender from_last = sender(hosts());
    std::vector<IpGroup> probes{kProbeV4};
    std::vector<std::string> markers{ipv4(1)};
    if (ipv6()) {
        probes.push_back(kProbeV6);
        markers.push_back(ipv6(1));
    }
    std::map<IpGroup, std::size_t> seen; // probe frames counted at the last marker
    int quiet_rounds = 0;
    const bool snooping = sim::poll_until(timeout, [&] {
        const std::size_t marked = at_first.count(mac(1));
        for (const auto &g : probes)
            from_last.send(g, "probe");
        for (const auto &m : markers)
            from_last.send_to(m, "marker");
        // The markers travel behind the probes on one path: once they are in, a probe the
        // bridge flooded would be in too. A probe held up anyway shows in the next round.
        if (!at_first.wait_for(mac(1), marked + markers.size(), kMarkerTimeout)) {
            quiet_rounds = 0;
            return false;
        }
        bool quiet = true;
        for (const auto &g : probes) {
            const std::size_t n = at_first.count(g);
            quiet = quiet && n == seen[g];
            seen[g] = n;
        }
        quiet_rounds = quiet ? quiet_rounds + 1 : 0;
        return quiet_rounds >= 2;
    });
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (!snooping) {
        std::string mdb_text;
        for (const auto &e : mdb())
            mdb_text += " " + e.port + ":" + e.group.text();
        throw std::runtime_error("EthernetBed::wait_until_snooping: the bridge still delivers the probe group " +
                                 kProbeV4.text() + " (nobody joined it) from host " + std::to_string(hosts()) +
                                 " to host 1 after " + std::to_string(took.count()) +
                                 " ms; host 1 counted: " + at_first.summary() + "; mdb:" + mdb_text);
    }
    return took;
}

FakeRdmaDevice EthernetBed::rdma_device(int host) const {
    impl_->check_host(host);
    std::optional<Gid> v6;
    if (ipv6())
        v6 = parse_gid(impl_->ipv6(host));
    return roce_device("rxe" + std::to_string(host), impl_->ifname(host), impl_->mac(host), ipv4_bytes(host), v6);
}

fs::path EthernetBed::write_sysfs(int host) const {
    const fs::path root = impl_->scratch / ("sysfs-h" + std::to_string(host));
    rdma_device(host).write(root);
    return root;
}

} // namespace mcastd::eth
