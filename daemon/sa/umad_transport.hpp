// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// MadTransport over libibumad (doc/architecture.md §4).
//
// Per port: one umad fd with two agents on it, SubnAdm (class 0x03, version 2) for SA MADs and
// directed-route SMI (class 0x81, version 1) for the Get(PortInfo)-to-self probe, and one
// receive thread that blocks in umad_recv() with a short timeout and hands the MADs to the
// event loop (a port inbox, one EventLoop::post() per batch). The Receiver therefore runs on the
// loop thread. Sends go out directly from the loop thread.
//
// Why a thread and not an io watch: under libumad2sim the umad fd is fake (>= 1024): epoll
// rejects it and poll() ignores every other fd beside it (doc/testbed.md §5, quirk 3). A
// blocking reader is simple on hardware too.
//
// Why rmpp_version 0 on the SA agent: the daemon sends Get, Set and Delete, whose responses
// are single MADs. Only GetTable/GetMulti responses use RMPP; with rmpp_version 1 the kernel
// would reassemble them (and expect us to size buffers for it). If a table query is ever
// added, register it with rmpp_version 1 (see doc/sa-multicast.md §1). Under umad2sim there
// is no RMPP at all: tables are cut to the first MAD (doc/testbed.md §5, quirk 16).
//
// Both agents are registered exactly once per fd: umad2sim keeps one agent per management
// class per process (the last registration wins), and a MAD that arrives for a class with no
// registered agent crashes the process inside umad2sim (doc/testbed.md §5, quirks 9 and 10).
//
// Stopping a receive thread: the thread is flagged, then woken by a MAD it is sure to receive,
// a directed-route Get(PortInfo) to its own port (hop count 0: the port's own agent answers it,
// never the fabric nor the SA). It ends once every request sent on the port has been answered
// (or bounced, or is past its send timeout), the wake-up included: under umad2sim an answer
// that arrives after the port is closed crashes the process (doc/testbed.md §5, quirk 10).
// Without the wake-up a close waited out the thread's umad_recv timeout, a quarter of a second
// on every restart. A thread still waiting one receive timeout after the stop ends anyway.
//
// Threading: every member function belongs to the loop thread (the receive threads only touch
// their own port's atomics and EventLoop::post). The transport must be destroyed before the
// EventLoop it posts to.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/timers.hpp"
#include "runtime/event_loop.hpp"
#include "sa/mad_transport.hpp"

namespace mcastd::sa {

class UmadTransport final : public MadTransport {
public:
    struct Options {
        // How long a receive thread blocks in umad_recv before it refreshes its heartbeat. A
        // close wakes the threads itself (above); this bounds how long it waits for answers
        // (close_all waits at most about twice this long, for all threads together).
        std::chrono::milliseconds recv_timeout{250};
    };

    // Calls umad_init(). Throws std::system_error if libibumad cannot find the ib_umad ABI
    // (no ib_umad module, or no simulator preload).
    explicit UmadTransport(runtime::EventLoop &loop);
    UmadTransport(runtime::EventLoop &loop, Options opts);
    ~UmadTransport() override; // close_all()
    UmadTransport(const UmadTransport &) = delete;
    UmadTransport &operator=(const UmadTransport &) = delete;

    // Opens `device` port `port` as `index` (the caller's PortIndex), registers the SA and SMI
    // agents and starts the port's receive thread. Throws std::system_error whose code is the
    // errno and whose what() names the device and port, e.g.
    //   "umad port mlx5_0:2 (index 1): no such port (the device has ports 1..1): No such device"
    // Errors: ENODEV (no such device or port), EEXIST (index already open), others from
    // umad_open_port/umad_register (EACCES without root on /dev/infiniband/umadN, ...).
    void open_port(PortIndex index, const std::string &device, int port);
    // Stops the port's receive thread (woken at once, see above), unregisters its agents and
    // closes its fd. MADs already handed to the loop but not yet delivered are dropped. No-op
    // for an unknown index.
    void close_port(PortIndex index);
    // close_port for every port, stopping all receive threads in parallel.
    void close_all();

    // 0 or a negative errno: -ENODEV unknown port, -EINVAL not exactly 256 bytes,
    // -EPROTONOSUPPORT a management class with no agent here (only 0x03 and 0x81 are),
    // else umad_send's errno (-ENOTCONN once ibsim is gone; never a crash).
    int send(PortIndex port, std::span<const std::uint8_t> mad, const MadAddress &addr,
             unsigned timeout_ms) override;
    void set_receiver(Receiver r) override;

    // The last time the port's receive thread came back from umad_recv (at least every
    // recv_timeout while it is healthy); nullopt for an unknown port. The daemon can send
    // WATCHDOG=trigger when a thread wedges.
    std::optional<TimePoint> last_heartbeat(PortIndex index) const;
    // Ports whose receive thread has not come back from umad_recv for longer than `limit`
    // (pick a limit well above Options::recv_timeout).
    std::vector<PortIndex> stalled_ports(Duration limit) const;

    // Counters of one port, for logs and tests.
    struct Stats {
        std::uint64_t received = 0;    // MADs handed to the loop, bounces included
        std::uint64_t bounced = 0;     // of those, with a non-zero umad status
        std::uint64_t recv_errors = 0; // umad_recv failures other than its timeout
    };
    std::optional<Stats> stats(PortIndex index) const;

private:
    struct Port;
    struct Delivery; // the loop-side target of posted MADs
    struct Inbox;    // a port's MADs between its receive thread and the loop
    class RecvThread;

    void stop_threads(const std::vector<Port *> &ports);
    int send_wake(Port &p);
    void release(Port &p);

    runtime::EventLoop &loop_;
    Options opts_;
    std::shared_ptr<Delivery> delivery_;
    std::map<PortIndex, std::unique_ptr<Port>> ports_;
};

} // namespace mcastd::sa
