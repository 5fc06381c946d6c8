// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A simulated Ethernet fabric for RoCE tests, the counterpart of the InfiniBand sim fabric
// (tests/sim/fabric.hpp): one switch, a Linux bridge with IGMP/MLD snooping and a querier in a
// network namespace of its own, and N hosts, each a network namespace cabled to a bridge port by
// a veth pair. There a multicast group is an IP multicast group: a host's sockets join it, the
// kernel reports it (IGMP, MLD), and the switch forwards it only to the ports that reported it.
// doc/ethernet-bed.md tells the whole story; the section numbers below are its.
//
//   switch namespace  <base>-sw   br0 (snooping, querier), ports p1..pN
//   host i namespace  <base>-h<i> veth<i>: 02:00:4d:00:00:<i>, 10.77.0.<i>/24 (fd00:77::<i>/64
//                                 with Options::ipv6), routes 224.0.0.0/4 (ff00::/8) on it
//
// Names are unique per bed (pid and a random number), so beds run side by side, also in one
// process. The destructor stops every process the bed started, then deletes the namespaces
// (the veths and the bridge go with them) and the scratch directory, also when a test fails.
// Declare the bed before the FrameCounters and DatagramSenders it makes: their sockets keep
// a deleted namespace alive until they close.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ethernet/fake_rdma_device.hpp"
#include "ethernet/ip_group.hpp"
#include "ethernet/kernel_tables.hpp"
#include "ethernet/traffic.hpp"
#include "sim/fabric.hpp" // Process, RunResult, poll_until

namespace mcastd::eth {

using namespace std::chrono_literals;
using sim::Process;
using sim::RunResult;

class EthernetBed {
public:
    struct Options {
        int hosts = 3;     // 1..250
        bool ipv6 = false; // a ULA on every host and the ff00::/8 route (link-local IPv6 is always on)
        // The bridge's query response interval (10 ms steps, 0.1-60 s). A fresh bridge floods
        // every group to every port for this long (§6); queries give hosts this long to answer.
        std::chrono::milliseconds query_response_interval{1000};
        // Host i's veth under another name than veth<i> (host -> name). A host whose veth is
        // named as another host's stands for a container on that host (doc/ethernet-bed.md §9):
        // the daemon finds a GID's netdev by name in the client's namespace.
        std::map<int, std::string> ifnames{};
    };

    // Why no bed can be built here (not root, no `ip` or `bridge`, no network namespaces, no
    // bridge or veth in the kernel), or nullopt when it can. Measured once per process.
    // Tests: `if (auto why = EthernetBed::unavailable()) GTEST_SKIP() << *why;`
    static std::optional<std::string> unavailable();

    // Builds the bed (§2). Throws std::runtime_error with the failing command's output, after
    // removing whatever it had built.
    explicit EthernetBed(Options opts);
    EthernetBed();
    ~EthernetBed();
    EthernetBed(const EthernetBed &) = delete;
    EthernetBed &operator=(const EthernetBed &) = delete;

    // ---- What was built. Hosts are numbered 1..hosts(). ----
    int hosts() const;
    bool ipv6() const;
    const std::filesystem::path &scratch() const;
    const std::string &switch_ns() const;
    std::string host_ns(int host) const;
    std::string ifname(int host) const;      // "veth<i>", in the host's namespace
    std::string port(int host) const;        // "p<i>", the host's bridge port
    std::optional<int> host_of_port(const std::string &port) const;
    std::string ipv4(int host) const;        // "10.77.0.<i>"
    std::string ipv6(int host) const;        // "fd00:77::<i>"; throws without Options::ipv6
    Mac mac(int host) const;                 // 02:00:4d:00:00:<i>
    unsigned ifindex(int host) const;        // of the veth, in the host's namespace
    // How long the constructor took.
    std::chrono::milliseconds setup_time() const;

    // ---- Processes (§3): `ip netns exec <host ns> argv...`, with <scratch>/h<i> as cwd. ----
    // Started and kept by the bed, which stops it (before the namespaces go) if the test did not.
    // `pass_fds` are inherited at 3, 4, ... (Process::Options::pass_fds; the caller keeps its own).
    Process &spawn_on(int host, std::vector<std::string> argv, bool stdin_pipe = false,
                      std::map<std::string, std::string> env = {}, std::vector<int> pass_fds = {});
    // Runs to completion (exit_code -1 after the timeout or a signal).
    RunResult run_on(int host, std::vector<std::string> argv, std::chrono::milliseconds timeout = 20s);
    RunResult run_on_switch(std::vector<std::string> argv, std::chrono::milliseconds timeout = 20s);

    // ---- The judges (§4) ----
    // The bridge's multicast database (`bridge -j mdb show dev br0`).
    std::vector<MdbEntry> mdb();
    // The hosts whose ports the mdb lists for `group` (the bridge's own entries left out).
    std::set<int> mdb_hosts(const IpGroup &group);
    // The host's IPv4 / IPv6 groups on its veth, with their Users counts.
    GroupUsers igmp(int host);
    GroupUsers igmp6(int host);
    // The Users count of `group` in the host's IGMP or MLD table (by its family); nullopt when
    // the host is no member.
    std::optional<int> users(int host, const IpGroup &group);
    // Polls users() every millisecond (the kernel gives no signal of a table's change) until
    // the host is no member of `group`: how long since `since` it took, or nullopt at `limit`.
    std::optional<std::chrono::steady_clock::duration> time_until_gone(int host, const IpGroup &group,
                                                                       std::chrono::steady_clock::time_point since,
                                                                       std::chrono::milliseconds limit);
    // The mdb on one line for failure messages: " p1:239.1.2.3 br0:ff02::6a", or " (empty)".
    std::string mdb_text();
    // A counter of the RoCE v2 frames reaching the host's veth, and a sender from it.
    FrameCounter counter(int host);
    DatagramSender sender(int host);
    // Sends a unicast marker datagram from `from` to `to`, and waits until `at_to` (a counter
    // on host `to`) has it. Frames `from` sent to `to`'s port before it have been delivered by
    // then: one sender, one path through the switch. False on timeout.
    bool sync_path(DatagramSender &from, int to, FrameCounter &at_to,
                   std::chrono::milliseconds timeout = 5s);

    // Proves the bridge has stopped flooding multicast (§6: a fresh bridge floods every group to
    // every port until its querier counts as present): a probe group nobody joined, sent from
    // the last host, must stop reaching host 1 in two rounds in a row, each round judged by a
    // unicast marker behind it. Both families with Options::ipv6. Returns how long it took;
    // throws std::runtime_error with what arrived when `timeout` passes first. With one host
    // there is nothing to flood to and it returns at once.
    std::chrono::milliseconds wait_until_snooping(std::chrono::milliseconds timeout = 30s);

    // ---- The fake RDMA device (§5) ----
    // Host i's device: "rxe<i>", port 1 on veth<i>, with the GIDs of roce_device(). BedDaemon
    // (bed_daemon.hpp) publishes it, and the changes a test makes, where its daemon reads it.
    FakeRdmaDevice rdma_device(int host) const;
    // Writes rdma_device(host) under <scratch>/sysfs-h<i> and returns that directory (standing
    // for /sys): the device as a tree, to check it against the host's interface.
    std::filesystem::path write_sysfs(int host) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace mcastd::eth
