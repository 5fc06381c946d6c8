// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sa/umad_transport.hpp"

#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_sm.h>
#include <infiniband/umad_types.h>

#include <endian.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "runtime/signals.hpp"

namespace mcastd::sa {

namespace {

constexpr int kSmiDrClassVersion = 1; // directed-route SMPs (doc/sa-multicast.md §17)

// Never let an RMPP-sized answer grow the receive buffer without bound.
constexpr std::size_t kMaxRecvMad = 64 * 1024;

// The low 32 TID bits of the wake-up SMP (the kernel, and umad2sim, own the high 32).
constexpr std::uint32_t kWakeTid = 0x57414b45; // "WAKE"

std::uint32_t low_tid(const std::uint8_t *mad) {
    return static_cast<std::uint32_t>(mad[12]) << 24 | static_cast<std::uint32_t>(mad[13]) << 16 |
           static_cast<std::uint32_t>(mad[14]) << 8 | mad[15];
}

bool is_response(const std::uint8_t *mad) { return (mad[3] & 0x80) != 0; }

std::int64_t clock_ticks() { return Clock::now().time_since_epoch().count(); }

[[noreturn]] void throw_port_error(int err, const std::string &port, const std::string &what) {
    throw std::system_error(err, std::generic_category(), "umad port " + port + ": " + what);
}

} // namespace

// The loop-side target of posted MADs. Posted closures share it, so a MAD still queued in the
// loop when the transport is destroyed finds an empty receiver instead of a dangling `this`.
struct UmadTransport::Delivery {
    Receiver receiver; // loop thread only
};

// A port's MADs on their way from its receive thread to the loop. The thread appends and posts
// one closure when the inbox was empty; the closure delivers everything queued by then. So the
// loop takes MADs in batches when they come faster than it runs, and a MAD costs no allocation
// (both vectors keep their capacity), where a closure per MAD cost two.
struct UmadTransport::Inbox {
    struct Mad {
        std::array<std::uint8_t, kMadSize> bytes;
        int status;
    };
    // false once the port is closed; read and written on the loop thread only. A closed (or
    // closed and reopened) port delivers nothing stale.
    bool open = true;
    std::mutex mu;
    std::vector<Mad> queued; // guarded by mu
    std::vector<Mad> taking; // loop thread only: the batch being delivered

    // Receive thread. True if the inbox was empty, so the caller posts a delivery.
    bool put(const std::uint8_t *mad, std::size_t n, int status) {
        std::lock_guard lock(mu);
        Mad &m = queued.emplace_back();
        // Every MAD is 256 bytes on the wire, and that is what the layers above get. The
        // simulator delivers answers cut after their last record (a GetResp of one
        // MCMemberRecord is 112 bytes): the rest is zero, as it would be on a real fabric.
        std::copy_n(mad, n, m.bytes.begin());
        std::fill(m.bytes.begin() + static_cast<std::ptrdiff_t>(n), m.bytes.end(), std::uint8_t{0});
        m.status = status;
        return queued.size() == 1;
    }

    // Loop thread. What is left of the batch when the port closes, the loop is asked to exit
    // or the receiver throws (which fails the loop) is dropped, as posted work is that never
    // runs.
    void deliver(PortIndex index, const Delivery &to, const runtime::EventLoop &loop) {
        {
            std::lock_guard lock(mu);
            queued.swap(taking);
        }
        struct Clear {
            std::vector<Mad> &v;
            ~Clear() { v.clear(); }
        } clear{taking};
        for (const Mad &m : taking) {
            if (!open || !to.receiver || loop.exit_requested())
                return;
            to.receiver(index, m.bytes, m.status);
        }
    }
};

struct UmadTransport::Port {
    PortIndex index = 0;
    std::string name; // "ibsim0:1 (index 0)", for messages
    int number = 0;   // the port number on its device, for the wake-up SMP
    int fd = -1;
    int sa_agent = -1;
    int smi_agent = -1;
    std::vector<std::uint8_t> send_buf; // umad header + one MAD; loop thread only

    std::shared_ptr<Inbox> inbox = std::make_shared<Inbox>();

    std::atomic<bool> stop{false};
    std::atomic<std::int64_t> stop_since{0}; // Clock ticks when `stop` was set

    // The requests sent whose answer (or bounce) may still come: low TID -> Clock ticks after
    // which it no longer will (the send's timeout). A stopping thread reads until none is left,
    // for under umad2sim an answer that arrives once the port is closed crashes the process
    // (doc/testbed.md §5, quirk 10).
    // A few dozen in normal operation (the SA window): a vector searched linearly, where a hash
    // node per send cost an allocation per MAD.
    std::mutex awaited_mu;
    std::vector<std::pair<std::uint32_t, std::int64_t>> awaited;

    void await(std::uint32_t tid, std::int64_t until) {
        std::lock_guard lock(awaited_mu);
        if (awaited.size() >= 4096) // lost requests: forget those past their timeout
            std::erase_if(awaited, [now = clock_ticks()](const auto &a) { return a.second < now; });
        const auto it = find(tid);
        if (it != awaited.end())
            it->second = until;
        else
            awaited.emplace_back(tid, until);
    }
    void answered(std::uint32_t tid) {
        std::lock_guard lock(awaited_mu);
        if (const auto it = find(tid); it != awaited.end()) {
            *it = awaited.back();
            awaited.pop_back();
        }
    }
    // awaited_mu held.
    std::vector<std::pair<std::uint32_t, std::int64_t>>::iterator find(std::uint32_t tid) {
        return std::find_if(awaited.begin(), awaited.end(), [tid](const auto &a) { return a.first == tid; });
    }
    bool awaiting() {
        std::lock_guard lock(awaited_mu);
        const std::int64_t now = clock_ticks();
        return std::any_of(awaited.begin(), awaited.end(), [now](const auto &a) { return a.second >= now; });
    }
    std::atomic<std::int64_t> heartbeat{0}; // Clock ticks of the last return from umad_recv
    std::atomic<std::uint64_t> received{0};
    std::atomic<std::uint64_t> bounced{0};
    std::atomic<std::uint64_t> recv_errors{0};
    std::thread thread;
};

namespace {

// The receive thread only hands MADs to the loop, which does the work. Woken by an arriving MAD
// (the kernel's, or umad2sim's reader thread), a normal thread preempts whatever runs on that
// CPU, often the loop itself or the reader, to hand over that one MAD: two context switches per
// MAD on a busy CPU. SCHED_BATCH never preempts on wakeup; the thread runs at the next switch and
// takes every MAD queued by then in one inbox delivery. An idle CPU still runs it at once.
// (Measured: a tenth less host CPU per SA MAD on one busy CPU.) Failing that (a seccomp filter
// without sched_setscheduler), the thread works as before. Done by the thread that starts it, so
// that both are in place when open_port returns.
void name_and_yield(std::thread &thread, const std::string &port) {
    ::pthread_setname_np(thread.native_handle(), "umad-recv");
    const sched_param none{};
    if (const int err = ::pthread_setschedparam(thread.native_handle(), SCHED_BATCH, &none); err != 0)
        std::fprintf(stderr,
                     "rdma-mcastd: umad receive thread for %s: cannot set SCHED_BATCH: %s; "
                     "it may preempt the loop on a busy CPU\n",
                     port.c_str(), std::strerror(err));
}

} // namespace

// One receive thread per port. Blocks in umad_recv (never poll/epoll: the umad fd is fake
// under umad2sim) and posts every MAD to the loop.
class UmadTransport::RecvThread {
public:
    RecvThread(Port &p, runtime::EventLoop &loop, std::shared_ptr<Delivery> d, int timeout_ms)
        : p_(p), loop_(loop), delivery_(std::move(d)), timeout_ms_(timeout_ms) {}

    void operator()() noexcept {
        try {
            run();
        } catch (const std::exception &e) {
            // Typically std::bad_alloc. The heartbeat stops, so stalled_ports() reports it.
            std::fprintf(stderr, "rdma-mcastd: umad receive thread for %s stopped: %s\n", p_.name.c_str(),
                         e.what());
        }
    }

private:
    void run() {
        const std::size_t hdr = umad_size();
        std::vector<std::uint8_t> buf(hdr + kMadSize);
        int last_error = 0;
        for (;;) {
            if (p_.stop.load() && done_stopping())
                return;
            int len = static_cast<int>(buf.size() - hdr);
            const int r = umad_recv(p_.fd, buf.data(), &len, timeout_ms_);
            p_.heartbeat.store(clock_ticks(), std::memory_order_relaxed);
            if (p_.stop.load()) {
                // Nothing is delivered now (the port is closed to the loop): the thread only
                // reads until what it still awaits has come, the wake-up's answer included.
                if (r >= 0)
                    p_.answered(low_tid(static_cast<const std::uint8_t *>(umad_get_mad(buf.data()))));
                continue;
            }
            if (r >= 0) {
                if (last_error != 0) {
                    std::fprintf(stderr, "rdma-mcastd: umad_recv on %s works again\n", p_.name.c_str());
                    last_error = 0;
                }
                deliver(buf, hdr, len);
                continue;
            }
            // -ETIMEDOUT: nothing within timeout_ms. -EAGAIN/-EWOULDBLOCK: woken with an empty
            // queue (umad2sim returns it from read() itself). -EINTR: cannot happen with every
            // signal blocked, harmless anyway.
            if (r == -ETIMEDOUT || r == -EAGAIN || r == -EINTR)
                continue;
            if (r == -ENOSPC && len > 0 && static_cast<std::size_t>(len) > buf.size() - hdr &&
                static_cast<std::size_t>(len) <= kMaxRecvMad) {
                // A multi-MAD (RMPP) answer: the kernel keeps it queued and tells us its size.
                // Not expected with rmpp_version 0 agents; make room and read it next time.
                buf.resize(hdr + static_cast<std::size_t>(len));
                continue;
            }
            p_.recv_errors.fetch_add(1, std::memory_order_relaxed);
            if (-r != last_error) { // log each new error once, not every turn
                last_error = -r;
                std::fprintf(stderr, "rdma-mcastd: umad_recv on %s failed: %s; retrying\n", p_.name.c_str(),
                             std::strerror(-r));
            }
            // A persistent error must not spin; the stop flag is still seen promptly.
            std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms_, 100)));
        }
    }

    // A stopping thread ends once nothing it awaits can still come, or one receive timeout
    // after the stop (an answer that late is not waited for).
    bool done_stopping() {
        const auto bound = std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds(timeout_ms_));
        return !p_.awaiting() || clock_ticks() - p_.stop_since.load() >= bound.count();
    }

    void deliver(const std::vector<std::uint8_t> &buf, std::size_t hdr, int len) {
        const int status = umad_status(const_cast<std::uint8_t *>(buf.data()));
        const auto *mad = static_cast<const std::uint8_t *>(umad_get_mad(const_cast<std::uint8_t *>(buf.data())));
        if (status != 0 || is_response(mad))
            p_.answered(low_tid(mad));
        const std::size_t n = std::min(static_cast<std::size_t>(std::max(len, 0)), buf.size() - hdr);
        p_.received.fetch_add(1, std::memory_order_relaxed);
        if (status != 0)
            p_.bounced.fetch_add(1, std::memory_order_relaxed);
        if (p_.inbox->put(mad, std::min(n, kMadSize), status))
            loop_.post([delivery = delivery_, inbox = p_.inbox, index = p_.index, loop = &loop_] {
                inbox->deliver(index, *delivery, *loop);
            });
    }

    Port &p_;
    runtime::EventLoop &loop_;
    std::shared_ptr<Delivery> delivery_;
    int timeout_ms_;
};

UmadTransport::UmadTransport(runtime::EventLoop &loop) : UmadTransport(loop, Options{}) {}

UmadTransport::UmadTransport(runtime::EventLoop &loop, Options opts)
    : loop_(loop), opts_(opts), delivery_(std::make_shared<Delivery>()) {
    if (opts_.recv_timeout <= std::chrono::milliseconds::zero())
        throw std::invalid_argument("UmadTransport: recv_timeout must be positive (0 would make umad_recv non-blocking)");
    // Under umad2sim the first sysfs access starts the shim's own receiver thread; make sure
    // it is born with every signal blocked, like our threads (signals.hpp).
    runtime::BlockAllSignals quiet;
    errno = 0;
    if (umad_init() < 0)
        throw std::system_error(errno ? errno : ENODEV, std::generic_category(),
                                "umad_init: cannot read the ib_umad ABI version (is the ib_umad module loaded?)");
}

UmadTransport::~UmadTransport() {
    close_all();
    delivery_->receiver = nullptr;
}

void UmadTransport::open_port(PortIndex index, const std::string &device, int port) {
    const std::string name = device + ":" + std::to_string(port) + " (index " + std::to_string(index) + ")";
    if (ports_.count(index) != 0)
        throw_port_error(EEXIST, name, "this index is already open");

    runtime::BlockAllSignals quiet; // for umad2sim's thread (see the constructor) and ours

    // umad_open_port reports a missing device or port only as EINVAL; look first, so the
    // error says which of the two is wrong.
    umad_ca_t ca{};
    if (int r = umad_get_ca(device.c_str(), &ca); r < 0)
        throw_port_error(ENODEV, name, std::string("no such device (umad_get_ca: ") + std::strerror(-r) + ")");
    const int numports = ca.numports;
    const bool has_port = port >= 0 && port < UMAD_CA_MAX_PORTS && port <= numports && ca.ports[port] != nullptr;
    umad_release_ca(&ca);
    if (!has_port)
        throw_port_error(ENODEV, name, "no such port (the device has ports 1.." + std::to_string(numports) + ")");

    auto p = std::make_unique<Port>();
    p->index = index;
    p->name = name;
    p->number = port;
    p->fd = umad_open_port(device.c_str(), port);
    if (p->fd < 0)
        throw_port_error(-p->fd, name, "umad_open_port");

    // umad_register returns a bare -EPERM for every failure; the cause is in errno.
    auto register_agent = [&](int mgmt_class, int version, const char *what) {
        errno = 0;
        const int agent = umad_register(p->fd, mgmt_class, version, 0, nullptr);
        if (agent < 0) {
            const int err = errno ? errno : -agent;
            release(*p);
            throw_port_error(err, name, what);
        }
        return agent;
    };
    p->sa_agent = register_agent(UMAD_CLASS_SUBN_ADM, UMAD_SA_CLASS_VERSION, "umad_register(SubnAdm 0x03 v2)");
    p->smi_agent = register_agent(UMAD_CLASS_SUBN_DIRECTED_ROUTE, kSmiDrClassVersion,
                                  "umad_register(directed-route SMI 0x81 v1)");

    p->send_buf.resize(umad_size() + kMadSize);
    p->heartbeat.store(clock_ticks());
    const int timeout_ms = static_cast<int>(std::min<std::chrono::milliseconds::rep>(opts_.recv_timeout.count(), INT_MAX));
    try {
        p->thread = std::thread(RecvThread(*p, loop_, delivery_, timeout_ms));
    } catch (const std::system_error &e) {
        release(*p);
        throw_port_error(e.code().value(), name, "starting the receive thread");
    }
    name_and_yield(p->thread, p->name);
    ports_.emplace(index, std::move(p));
}

void UmadTransport::close_port(PortIndex index) {
    const auto it = ports_.find(index);
    if (it == ports_.end())
        return;
    stop_threads({it->second.get()});
    release(*it->second);
    ports_.erase(it);
}

void UmadTransport::close_all() {
    std::vector<Port *> all;
    for (auto &[index, p] : ports_)
        all.push_back(p.get());
    stop_threads(all);
    for (Port *p : all)
        release(*p);
    ports_.clear();
}

void UmadTransport::stop_threads(const std::vector<Port *> &ports) {
    // Flag and wake all first, then join: the threads end together.
    for (Port *p : ports) {
        p->inbox->open = false;
        p->stop_since.store(clock_ticks());
        p->stop.store(true);
        if (p->thread.joinable())
            send_wake(*p); // if it cannot go, the thread ends at its next return from umad_recv
    }
    for (Port *p : ports)
        if (p->thread.joinable())
            p->thread.join();
}

int UmadTransport::send_wake(Port &p) {
    umad_smp smp{};
    smp.base_version = UMAD_BASE_VERSION;
    smp.mgmt_class = UMAD_CLASS_SUBN_DIRECTED_ROUTE;
    smp.class_version = kSmiDrClassVersion;
    smp.method = UMAD_METHOD_GET;
    smp.tid = htobe64(kWakeTid);
    smp.attr_id = htobe16(UMAD_SM_ATTR_PORT_INFO);
    smp.attr_mod = htobe32(static_cast<std::uint32_t>(p.number));
    smp.dr_slid = htobe16(0xffff); // hop count 0: the port itself
    smp.dr_dlid = htobe16(0xffff);
    static_assert(sizeof smp == kMadSize);
    MadAddress to;
    to.dlid = 0xffff; // the permissive LID, QP0
    to.dqp = 0;
    to.qkey = 0;
    const auto wait =
        static_cast<unsigned>(std::min<std::chrono::milliseconds::rep>(opts_.recv_timeout.count(), INT_MAX));
    return send(p.index, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t *>(&smp), sizeof smp),
                to, wait);
}

void UmadTransport::release(Port &p) {
    // Unregister both agents before closing: umad2sim's close() forgets only one class per
    // fd, and a MAD for a class whose agent points at a closed fd crashes the shim.
    if (p.smi_agent >= 0 && umad_unregister(p.fd, p.smi_agent) < 0)
        std::fprintf(stderr, "rdma-mcastd: umad_unregister(SMI) on %s: %s\n", p.name.c_str(), std::strerror(errno));
    if (p.sa_agent >= 0 && umad_unregister(p.fd, p.sa_agent) < 0)
        std::fprintf(stderr, "rdma-mcastd: umad_unregister(SA) on %s: %s\n", p.name.c_str(), std::strerror(errno));
    p.smi_agent = p.sa_agent = -1;
    if (p.fd >= 0)
        umad_close_port(p.fd);
    p.fd = -1;
}

int UmadTransport::send(PortIndex port, std::span<const std::uint8_t> mad, const MadAddress &addr,
                        unsigned timeout_ms) {
    const auto it = ports_.find(port);
    if (it == ports_.end())
        return -ENODEV;
    if (mad.size() != kMadSize)
        return -EINVAL;
    Port &p = *it->second;
    const int agent = mad[1] == UMAD_CLASS_SUBN_ADM              ? p.sa_agent
                      : mad[1] == UMAD_CLASS_SUBN_DIRECTED_ROUTE ? p.smi_agent
                                                                 : -1;
    if (agent < 0)
        return -EPROTONOSUPPORT;

    void *u = p.send_buf.data();
    std::fill(p.send_buf.begin(), p.send_buf.end(), std::uint8_t{0});
    std::memcpy(umad_get_mad(u), mad.data(), kMadSize);
    // libibumad takes host-order ints and converts them; the Q_Key's top bit set is fine.
    umad_set_addr(u, addr.dlid, static_cast<int>(addr.dqp), addr.sl, static_cast<int>(addr.qkey));
    umad_set_pkey(u, addr.pkey_index);
    // retries 0: retransmits are the transaction layer's, with its own timers (umad2sim
    // ignores both values anyway).
    // Awaited from before it leaves: the answer may be read before umad_send returns.
    const bool request = !is_response(mad.data());
    if (request)
        p.await(low_tid(mad.data()),
                clock_ticks() + std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds(timeout_ms)).count());
    errno = 0;
    const int r = umad_send(p.fd, agent, u, static_cast<int>(kMadSize),
                            static_cast<int>(std::min<unsigned>(timeout_ms, INT_MAX)), 0);
    if (r == 0)
        return 0;
    // umad_send returns -EIO for any short write and leaves the real cause (ENOTCONN when
    // ibsim is gone, ENOSPC, EINVAL for a duplicate in-flight TID, ...) in errno.
    const int err = errno != 0 ? -errno : (r < 0 ? r : -EIO);
    if (request)
        p.answered(low_tid(mad.data())); // it never left
    return err;
}

void UmadTransport::set_receiver(Receiver r) { delivery_->receiver = std::move(r); }

std::optional<TimePoint> UmadTransport::last_heartbeat(PortIndex index) const {
    const auto it = ports_.find(index);
    if (it == ports_.end())
        return std::nullopt;
    return TimePoint(Clock::duration(it->second->heartbeat.load(std::memory_order_relaxed)));
}

std::vector<PortIndex> UmadTransport::stalled_ports(Duration limit) const {
    std::vector<PortIndex> out;
    const TimePoint now = Clock::now();
    for (const auto &[index, p] : ports_)
        if (now - TimePoint(Clock::duration(p->heartbeat.load(std::memory_order_relaxed))) > limit)
            out.push_back(index);
    return out;
}

std::optional<UmadTransport::Stats> UmadTransport::stats(PortIndex index) const {
    const auto it = ports_.find(index);
    if (it == ports_.end())
        return std::nullopt;
    const Port &p = *it->second;
    return Stats{p.received.load(), p.bounced.load(), p.recv_errors.load()};
}

} // namespace mcastd::sa
