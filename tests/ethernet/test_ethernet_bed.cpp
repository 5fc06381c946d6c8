// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The Ethernet bed against the kernel (doc/ethernet-bed.md): it comes up as described and leaves
// nothing behind; each judge sees what a plain socket's join does (the host's IGMP/MLD table at
// once, the bridge's mdb within seconds, the traffic only at members once the bridge snoops),
// and the leave undoes it; a socket made in a host's namespace joins there whoever holds it; the
// fake RDMA device describes the host's real interface. mcastd-eth-member is the member
// throughout: the bed's positive control, independent of the daemon.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "ethernet/ethernet_bed.hpp"
#include "ethernet/fd_passing.hpp"
#include "ethernet/netns.hpp"

namespace mcastd::eth {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

const IpGroup kGroup4 = IpGroup::of("239.1.2.3");
const IpGroup kGroup6 = IpGroup::of("ff0e::1:2");

// Waits with reasons. A member's join is in its host's table before setsockopt returns; these
// are for the moments the kernel does not signal.
// The mdb learns a group within about a second of the report and forgets it 1-3 s after the
// leave (last-member queries); the margin is for two busy cores.
constexpr auto kMdbTimeout = 20s;
// Frames cross two veths and a bridge in well under a millisecond.
constexpr auto kTrafficTimeout = 5s;
// mcastd-eth-member starts and joins in milliseconds.
constexpr auto kToolTimeout = 15s;
constexpr std::size_t kFrames = 20;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// mcastd-eth-member on `host`, joined to `groups` once it says "holding".
Process &start_member(EthernetBed &bed, int host, const std::vector<IpGroup> &groups) {
    std::vector<std::string> argv{MCASTD_ETH_MEMBER, bed.ifname(host)};
    for (const auto &g : groups)
        argv.push_back(g.text());
    Process &p = bed.spawn_on(host, argv, true);
    if (!p.wait_for_line("holding", kToolTimeout))
        throw std::runtime_error("mcastd-eth-member on host " + std::to_string(host) +
                                 " did not join: " + p.stderr_text());
    return p;
}

// Closes the member's stdin and waits for it: once it is reaped, its sockets are closed.
void end_member(Process &p) {
    p.close_stdin();
    EXPECT_EQ(p.wait(kToolTimeout), 0) << p.stderr_text();
}

json run_json(EthernetBed &bed, int host, std::vector<std::string> argv) {
    const RunResult r = host > 0 ? bed.run_on(host, argv) : bed.run_on_switch(argv);
    if (r.exit_code != 0)
        throw std::runtime_error(argv.front() + " exited " + std::to_string(r.exit_code) + ": " + r.err);
    return json::parse(r.out);
}

// The network namespace inode a /proc link ("net:[4026532285]") names, or 0.
ino_t net_inode(const fs::path &link) {
    std::error_code ec;
    const std::string target = fs::read_symlink(link, ec).string();
    unsigned long long ino = 0;
    if (ec || std::sscanf(target.c_str(), "net:[%llu]", &ino) != 1)
        return 0;
    return static_cast<ino_t>(ino);
}

// Every handle on a network namespace in the system, by the namespace's inode: the processes in
// it, open fds of it, bind mounts of it. A namespace with none is gone, with its interfaces.
std::multimap<ino_t, std::string> net_namespace_holders() {
    std::multimap<ino_t, std::string> held;
    std::error_code ec;
    for (const auto &proc : fs::directory_iterator("/proc", ec)) {
        const std::string pid = proc.path().filename();
        if (pid.find_first_not_of("0123456789") != std::string::npos)
            continue;
        if (ino_t i = net_inode(proc.path() / "ns/net"))
            held.emplace(i, proc.path() / "ns/net");
        std::error_code fd_ec;
        for (const auto &fd : fs::directory_iterator(proc.path() / "fd", fd_ec))
            if (ino_t i = net_inode(fd.path()))
                held.emplace(i, fd.path());
    }
    std::ifstream mounts("/proc/self/mountinfo");
    for (std::string line; std::getline(mounts, line);) {
        // "... 4026532285 ... /run/netns/NAME ... - nsfs nsfs rw": field 5 is the mount point.
        std::istringstream f(line);
        std::string id, parent, dev, root, point;
        f >> id >> parent >> dev >> root >> point;
        unsigned long long ino = 0;
        if (line.find(" - nsfs ") != std::string::npos && std::sscanf(root.c_str(), "net:[%llu]", &ino) == 1)
            held.emplace(static_cast<ino_t>(ino), point);
    }
    return held;
}

// The netns cookie of the namespace a handle leads to; nullopt when it has gone meanwhile.
std::optional<std::uint64_t> cookie_at(const std::string &handle) {
    try {
        std::uint64_t cookie = 0;
        in_netns_at(handle, [&] {
            UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
            cookie = netns_cookie(s.get());
        });
        return cookie;
    } catch (const std::exception &) {
        return std::nullopt;
    }
}

// Runs argv in the test's own namespace, to completion (argv[0] found in PATH or the sbin dirs).
RunResult run_here(std::vector<std::string> argv) {
    if (auto path = sim::find_tool(argv.at(0)))
        argv[0] = path->string();
    Process p(Process::Options{.argv = std::move(argv)});
    return sim::finish(p, kToolTimeout);
}

std::set<std::string> link_names(const json &links) {
    std::set<std::string> names;
    for (const auto &l : links)
        names.insert(l.at("ifname").get<std::string>());
    return names;
}

TEST(EthernetBed, ComesUpAsDescribedAndLeavesNothing) {
    if (auto why = EthernetBed::unavailable())
        GTEST_SKIP() << *why;
    const auto test_links_before = link_names(json::parse(run_here({"ip", "-j", "link", "show"}).out));
    const std::string test_dad_before = run_here({"sysctl", "-n", "net.ipv6.conf.default.accept_dad"}).out;
    std::vector<std::string> names;
    std::map<ino_t, std::uint64_t> namespaces; // inode -> cookie, while they exist
    fs::path scratch;
    pid_t member_pid = 0;
    {
        EthernetBed bed(EthernetBed::Options{.hosts = 3});
        std::printf("[ figure ] 3-host bed built in %.3f s\n", seconds(bed.setup_time()));
        scratch = bed.scratch();
        EXPECT_TRUE(fs::is_directory(scratch));
        names.push_back(bed.switch_ns());
        for (int i = 1; i <= 3; ++i)
            names.push_back(bed.host_ns(i));
        for (const auto &n : names) {
            EXPECT_NE(n.find(std::to_string(::getpid())), std::string::npos) << n;
            struct stat st {};
            ASSERT_EQ(::stat(("/run/netns/" + n).c_str(), &st), 0) << n;
            const auto cookie = cookie_at("/run/netns/" + n);
            ASSERT_TRUE(cookie) << n;
            namespaces[st.st_ino] = *cookie;
        }
        EXPECT_EQ(namespaces.size(), 4u);

        // The switch: br0 snooping with a querier, the three ports on it.
        const json br = run_json(bed, 0, {"ip", "-j", "-d", "link", "show", "br0"}).at(0);
        const json &info = br.at("linkinfo").at("info_data");
        EXPECT_EQ(info.at("mcast_snooping"), 1);
        EXPECT_EQ(info.at("mcast_querier"), 1);
        EXPECT_EQ(link_names(run_json(bed, 0, {"ip", "-j", "link", "show", "master", "br0"})),
                  (std::set<std::string>{"p1", "p2", "p3"}));

        // Each host: lo and its veth, up, with its MAC, address and multicast route.
        for (int i = 1; i <= 3; ++i) {
            const json links = run_json(bed, i, {"ip", "-j", "addr", "show"});
            EXPECT_EQ(link_names(links), (std::set<std::string>{"lo", bed.ifname(i)})) << "host " << i;
            for (const auto &l : links) {
                if (l.at("ifname") != bed.ifname(i))
                    continue;
                EXPECT_EQ(l.at("address"), format_mac(bed.mac(i)));
                EXPECT_EQ(l.at("operstate"), "UP");
                EXPECT_EQ(l.at("ifindex"), bed.ifindex(i));
                bool has_v4 = false;
                for (const auto &a : l.at("addr_info"))
                    has_v4 = has_v4 || (a.at("local") == bed.ipv4(i) && a.at("prefixlen") == 24);
                EXPECT_TRUE(has_v4) << l.dump();
            }
            // No duplicate address detection in the bed's namespaces (doc §2), only there.
            const RunResult dad = bed.run_on(i, {"sysctl", "-n", "net.ipv6.conf." + bed.ifname(i) + ".accept_dad"});
            EXPECT_EQ(dad.out, "0\n") << dad.err;
            const json routes = run_json(bed, i, {"ip", "-j", "route", "show", "224.0.0.0/4"});
            ASSERT_EQ(routes.size(), 1u) << routes.dump();
            EXPECT_EQ(routes.at(0).at("dev"), bed.ifname(i));
        }
        member_pid = start_member(bed, 1, {kGroup4}).pid();
        EXPECT_THROW(bed.ifname(4), std::invalid_argument);
        EXPECT_THROW(bed.ipv6(1), std::logic_error); // built without Options::ipv6
    }
    // Gone: the names, the namespaces themselves (and so their veths and the bridge), the
    // member, the scratch directory; the test's own namespace has the links it had.
    for (const auto &n : names)
        EXPECT_FALSE(fs::exists("/run/netns/" + n)) << n;
    // A freed inode may already serve a namespace another test made: the cookie tells them apart.
    for (const auto &[inode, handle] : net_namespace_holders()) {
        if (auto it = namespaces.find(inode); it != namespaces.end()) {
            EXPECT_NE(cookie_at(handle), it->second) << "a bed namespace is still held by " << handle;
        }
    }
    EXPECT_FALSE(fs::exists("/proc/" + std::to_string(member_pid))) << "member pid " << member_pid;
    EXPECT_FALSE(fs::exists(scratch));
    EXPECT_EQ(link_names(json::parse(run_here({"ip", "-j", "link", "show"}).out)), test_links_before);
    EXPECT_EQ(run_here({"sysctl", "-n", "net.ipv6.conf.default.accept_dad"}).out, test_dad_before);
}

// A test killed before its teardown leaves its namespaces and scratch directory behind (its
// processes die with it); the next bed removes them, and nothing of a live process.
TEST(EthernetBed, RemovesWhatDeadTestsLeft) {
    if (auto why = EthernetBed::unavailable())
        GTEST_SKIP() << *why;
    // A pid that is certainly gone: a child that exited and was reaped.
    Process gone(Process::Options{.argv = {"true"}});
    ASSERT_EQ(gone.wait(kToolTimeout), 0);
    const std::string dead = "mcastd-eth-" + std::to_string(gone.pid()) + "-0-dead";
    const std::string alive = "mcastd-eth-" + std::to_string(::getppid()) + "-0-alive";
    for (const auto &n : {dead, alive})
        ASSERT_EQ(run_here({"ip", "netns", "add", n}).exit_code, 0) << n;
    const fs::path dead_dir = fs::temp_directory_path() / (dead + "-XXXXXX");
    fs::create_directories(dead_dir);
    {
        EthernetBed bed(EthernetBed::Options{.hosts = 1});
        EXPECT_FALSE(fs::exists("/run/netns/" + dead));
        EXPECT_FALSE(fs::exists(dead_dir));
        EXPECT_TRUE(fs::exists("/run/netns/" + alive)) << "the parent of this test lives";
    }
    EXPECT_EQ(run_here({"ip", "netns", "del", alive}).exit_code, 0);
}

// The whole life of a membership, judged three ways: two members on host 1 join, host 1's table
// counts them, the mdb learns host 1's port, traffic from host 3 reaches host 1 and not host 2;
// the members leave, the table drops the group at once, the mdb within seconds, and the traffic
// stops reaching host 1.
void membership_lifecycle(EthernetBed &bed, const IpGroup &group) {
    FrameCounter at1 = bed.counter(1), at2 = bed.counter(2);
    DatagramSender from3 = bed.sender(3);

    const auto joined = Clock::now();
    Process &first = start_member(bed, 1, {group});
    EXPECT_EQ(bed.users(1, group), 1) << "the join is in the table when setsockopt returns";
    Process &second = start_member(bed, 1, {group});
    EXPECT_EQ(bed.users(1, group), 2);
    EXPECT_EQ(bed.users(2, group), std::nullopt);
    EXPECT_EQ(bed.users(3, group), std::nullopt);

    ASSERT_TRUE(sim::poll_until(kMdbTimeout, [&] { return bed.mdb_hosts(group) == std::set<int>{1}; }))
        << "mdb:" << bed.mdb_text();
    const double learned = seconds(Clock::now() - joined);
    const auto snooping = bed.wait_until_snooping();

    for (std::size_t i = 0; i < kFrames; ++i)
        from3.send(group);
    ASSERT_TRUE(at1.wait_for(group, kFrames, kTrafficTimeout)) << "host 1 counted " << at1.summary();
    ASSERT_TRUE(bed.sync_path(from3, 2, at2)) << "host 2 counted " << at2.summary();
    EXPECT_EQ(at2.count(group), 0u) << "a non-member received the group; host 2 counted " << at2.summary();

    // Host 2 joins too: now it counts the group's frames (the counter's positive control).
    Process &on2 = start_member(bed, 2, {group});
    ASSERT_TRUE(sim::poll_until(kMdbTimeout, [&] { return bed.mdb_hosts(group) == std::set<int>{1, 2}; }))
        << "mdb:" << bed.mdb_text();
    for (std::size_t i = 0; i < kFrames; ++i)
        from3.send(group);
    EXPECT_TRUE(at2.wait_for(group, kFrames, kTrafficTimeout)) << "host 2 counted " << at2.summary();
    EXPECT_TRUE(at1.wait_for(group, 2 * kFrames, kTrafficTimeout)) << "host 1 counted " << at1.summary();

    end_member(second);
    EXPECT_EQ(bed.users(1, group), 1);
    EXPECT_EQ(bed.mdb_hosts(group), (std::set<int>{1, 2})) << "a member is left on each";
    end_member(first);
    end_member(on2);
    const auto left = Clock::now();
    EXPECT_EQ(bed.users(1, group), std::nullopt) << "the last socket closed: the group leaves at once";
    EXPECT_EQ(bed.users(2, group), std::nullopt);
    ASSERT_TRUE(sim::poll_until(kMdbTimeout, [&] { return bed.mdb_hosts(group).empty(); }))
        << "mdb:" << bed.mdb_text();
    const double forgotten = seconds(Clock::now() - left);

    // Nobody is a member any more: the group reaches neither host.
    for (std::size_t i = 0; i < kFrames; ++i)
        from3.send(group);
    ASSERT_TRUE(bed.sync_path(from3, 1, at1));
    ASSERT_TRUE(bed.sync_path(from3, 2, at2));
    EXPECT_EQ(at1.count(group), 2 * kFrames) << "host 1 left, yet counted " << at1.summary();
    EXPECT_EQ(at2.count(group), kFrames) << "host 2 left, yet counted " << at2.summary();
    std::printf("[ figure ] %s: bed built in %.3f s, mdb learned the group %.3f s after the join, "
                "snooping proved in %.3f s, mdb forgot it %.3f s after the leave\n",
                group.text().c_str(), seconds(bed.setup_time()), learned, seconds(snooping), forgotten);
}

TEST(EthernetBed, Ipv4MembershipIsSeenByIgmpMdbAndTraffic) {
    if (auto why = EthernetBed::unavailable())
        GTEST_SKIP() << *why;
    EthernetBed bed(EthernetBed::Options{.hosts = 3});
    membership_lifecycle(bed, kGroup4);
}

TEST(EthernetBed, Ipv6MembershipIsSeenByMldMdbAndTraffic) {
    if (auto why = EthernetBed::unavailable())
        GTEST_SKIP() << *why;
    EthernetBed bed(EthernetBed::Options{.hosts = 3, .ipv6 = true});
    membership_lifecycle(bed, kGroup6);
}

// The trap of §6, and the bed's way round it: a fresh bridge floods even a group nobody joined
// to every port, until wait_until_snooping() has proved it stopped. A 4 s window (1 s by
// default) keeps the flood from ending before the test can see it, even on a loaded machine.
TEST(EthernetBed, FreshBridgeFloodsUntilSnoopingIsProved) {
    if (auto why = EthernetBed::unavailable())
        GTEST_SKIP() << *why;
    constexpr auto kWindow = 4s;
    EthernetBed bed(EthernetBed::Options{.hosts = 3, .query_response_interval = kWindow});
    FrameCounter at2 = bed.counter(2);
    DatagramSender from3 = bed.sender(3);
    const IpGroup unjoined = IpGroup::of("239.9.9.9");
    for (std::size_t i = 0; i < kFrames; ++i)
        from3.send(unjoined);
    EXPECT_TRUE(at2.wait_for(unjoined, kFrames, kTrafficTimeout))
        << "no flood seen " << seconds(bed.setup_time()) << " s after the bridge was made; host 2 counted "
        << at2.summary();

    const auto waited = bed.wait_until_snooping();
    // The window starts when the querier is switched on, during the setup.
    EXPECT_GE(bed.setup_time() + waited, kWindow - 100ms) << "snooping proved before the window ended";
    std::printf("[ figure ] with a %.1f s window: built in %.3f s, snooping proved %.3f s later\n",
                seconds(kWindow), seconds(bed.setup_time()), seconds(waited));
    const std::size_t flooded = at2.count(unjoined);
    for (std::size_t i = 0; i < kFrames; ++i)
        from3.send(unjoined);
    ASSERT_TRUE(bed.sync_path(from3, 2, at2));
    EXPECT_EQ(at2.count(unjoined), flooded) << "the bridge still floods; host 2 counted " << at2.summary();
}

// The mechanism the daemon will use to join in a host's namespace from its own: a socket made
// in host 1's namespace (by mcastd-eth-sockpass, run there) and handed to this process by
// SCM_RIGHTS joins in host 1's namespace, not in the one of the process that holds it.
TEST(EthernetBed, SocketPassedByScmRightsJoinsWhereItWasMade) {
    if (auto why = EthernetBed::unavailable())
        GTEST_SKIP() << *why;
    EthernetBed bed(EthernetBed::Options{.hosts = 2});
    const fs::path path = bed.scratch() / "pass.sock";
    UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un at{};
    at.sun_family = AF_UNIX;
    ASSERT_LT(path.string().size(), sizeof at.sun_path);
    std::strcpy(at.sun_path, path.c_str());
    ASSERT_EQ(::bind(listener.get(), reinterpret_cast<const sockaddr *>(&at), sizeof at), 0) << std::strerror(errno);
    ASSERT_EQ(::listen(listener.get(), 1), 0);

    // The tool connects, sends and exits; the connection waits in the backlog meanwhile.
    const RunResult r = bed.run_on(1, {MCASTD_ETH_SOCKPASS, path.string(), "4"}, kToolTimeout);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    UniqueFd conn(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_TRUE(conn) << std::strerror(errno);
    const int passed_fd = receive_fd(conn.get());
    ASSERT_GE(passed_fd, 0) << std::strerror(-passed_fd);
    UniqueFd passed(passed_fd);

    // SO_NETNS_COOKIE: host 1's namespace, not this process's.
    const UniqueFd here(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    const UniqueFd in_host1 = socket_in(bed.host_ns(1), AF_INET, SOCK_DGRAM, 0);
    EXPECT_EQ(netns_cookie(passed.get()), netns_cookie(in_host1.get()));
    EXPECT_NE(netns_cookie(passed.get()), netns_cookie(here.get()));

    // Joined from here, with host 1's interface index: host 1 reports it, this namespace does not.
    ip_mreqn mreq{};
    std::memcpy(&mreq.imr_multiaddr, kGroup4.bytes().data(), 4);
    mreq.imr_ifindex = static_cast<int>(bed.ifindex(1));
    ASSERT_EQ(::setsockopt(passed.get(), IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq), 0)
        << std::strerror(errno);
    EXPECT_EQ(bed.users(1, kGroup4), 1);
    for (const auto &[dev, groups] : parse_proc_igmp(sim::read_text_file("/proc/self/net/igmp")))
        EXPECT_EQ(groups.count(kGroup4), 0u) << "joined in the test's namespace on " << dev;
    ASSERT_TRUE(sim::poll_until(kMdbTimeout, [&] { return bed.mdb_hosts(kGroup4) == std::set<int>{1}; }))
        << "mdb:" << bed.mdb_text();
    passed = UniqueFd();
    EXPECT_EQ(bed.users(1, kGroup4), std::nullopt) << "closing the passed socket leaves";
}

// Host 2's fake device against what the kernel shows of host 2's interface.
TEST(EthernetBed, FakeRdmaDeviceDescribesTheHostsInterface) {
    if (auto why = EthernetBed::unavailable())
        GTEST_SKIP() << *why;
    EthernetBed bed(EthernetBed::Options{.hosts = 2, .ipv6 = true});
    const fs::path root = bed.write_sysfs(2);
    EXPECT_EQ(root.parent_path(), bed.scratch());
    const fs::path dev = root / "class/infiniband/rxe2";
    const fs::path port = dev / "ports/1";
    const auto line = [](const fs::path &p) {
        std::string s = sim::read_text_file(p);
        EXPECT_TRUE(!s.empty() && s.back() == '\n') << p;
        return s.empty() ? s : s.substr(0, s.size() - 1);
    };

    const json link = run_json(bed, 2, {"ip", "-j", "addr", "show", "dev", "veth2"}).at(0);
    const auto mac = parse_mac(link.at("address").get<std::string>());
    ASSERT_TRUE(mac);
    EXPECT_EQ(*mac, bed.mac(2));
    std::map<std::string, std::string> addresses; // scope -> address the kernel holds
    for (const auto &a : link.at("addr_info"))
        addresses[a.at("family").get<std::string>() + "/" + a.at("scope").get<std::string>()] =
            a.at("local").get<std::string>();

    EXPECT_EQ(line(dev / "node_type"), "1: CA");
    EXPECT_EQ(line(dev / "node_guid"), sysfs_guid_text(eui64_from_mac(*mac)));
    EXPECT_EQ(line(port / "link_layer"), "Ethernet");
    EXPECT_EQ(line(port / "state"), "4: ACTIVE");
    // Index 0: the link-local address the kernel made from the MAC, RoCE v1.
    EXPECT_EQ(line(port / "gids/0"), sysfs_gid_text(*parse_gid(addresses.at("inet6/link"))));
    EXPECT_EQ(line(port / "gid_attrs/types/0"), "IB/RoCE v1");
    // Index 1: the IPv4 address, RoCE v2.
    EXPECT_EQ(addresses.at("inet/global"), bed.ipv4(2));
    EXPECT_EQ(line(port / "gids/1"), sysfs_gid_text(*parse_gid("::ffff:" + addresses.at("inet/global"))));
    EXPECT_EQ(line(port / "gid_attrs/types/1"), "RoCE v2");
    // Index 2 unused; index 3 the ULA, RoCE v2.
    EXPECT_EQ(line(port / "gids/2"), sysfs_gid_text(Gid{}));
    EXPECT_FALSE(fs::exists(port / "gid_attrs/types/2"));
    EXPECT_EQ(line(port / "gids/3"), sysfs_gid_text(*parse_gid(addresses.at("inet6/global"))));
    // The netdev each entry names is the host's.
    for (int i : {0, 1, 3}) {
        const std::string ndev = line(port / "gid_attrs/ndevs" / std::to_string(i));
        EXPECT_EQ(bed.run_on(2, {"ip", "link", "show", "dev", ndev}).exit_code, 0) << ndev;
    }
}

// Two beds side by side (as under ctest -j): their own names, and a membership in one never
// shows in the other.
TEST(EthernetBed, BedsAreIsolated) {
    if (auto why = EthernetBed::unavailable())
        GTEST_SKIP() << *why;
    EthernetBed a(EthernetBed::Options{.hosts = 2}), b(EthernetBed::Options{.hosts = 2});
    EXPECT_NE(a.switch_ns(), b.switch_ns());
    EXPECT_NE(a.host_ns(1), b.host_ns(1));
    EXPECT_NE(a.scratch(), b.scratch());
    start_member(a, 1, {kGroup4});
    ASSERT_TRUE(sim::poll_until(kMdbTimeout, [&] { return a.mdb_hosts(kGroup4) == std::set<int>{1}; }))
        << "mdb:" << a.mdb_text();
    EXPECT_TRUE(b.mdb_hosts(kGroup4).empty()) << "mdb:" << b.mdb_text();
    EXPECT_EQ(b.users(1, kGroup4), std::nullopt);
}

} // namespace
} // namespace mcastd::eth
