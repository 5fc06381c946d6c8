// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-umad-probe: drives daemon/sa's UmadTransport on a simulated node, for
// test_umad_transport.cpp. Run it attached to a node (LD_PRELOAD=libumad2sim.so, SIM_HOST=Hx).
//
// At start it prints one "open-error ..." line for each deliberately bad port it tried to open
// (a missing port on the real device, a missing device), then opens the real port and prints
//   ready device=ibsim0 port=1 lid=0x0003 sm_lid=0x0001
// Then it reads commands from stdin (a pipe, FIFO or tty: epoll cannot watch a regular file),
// one per line, and answers on stdout:
//   sa-get <tid>        SA Get(MCMemberRecord) of the IPoIB broadcast group to the SM LID
//   smp-portinfo <tid>  directed-route SMP Get(PortInfo) to its own port
//   burst <n>           n SA Gets back to back (TIDs 0x10000..), while the receive thread
//                       reads the answers concurrently; prints one "burst-done ..." summary
//   heartbeat           age of the receive thread's last return from umad_recv
//   stats               the transport's per-port counters
//   close               closes the port (its receive thread stopped and joined), then "closed"
//   quit                (or EOF, SIGTERM, SIGINT) clean shutdown, exit 0
// Every MAD that comes back is printed as one "recv ..." line with key=value fields.
// Arguments: [device [port [recv_timeout_ms]]], default ibsim0 1 and the transport's default.
//
// The MADs are built by hand from rdma-core's structs: this tool tests the transport, not the
// daemon's codec.
#include <endian.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_sa_mcm.h>
#include <infiniband/umad_sm.h>
#include <infiniband/umad_types.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <sstream>
#include <string>
#include <system_error>

#include "runtime/event_loop.hpp"
#include "runtime/signals.hpp"
#include "sa/umad_transport.hpp"

namespace {

using mcastd::PortIndex;
using mcastd::sa::kMadSize;
using mcastd::sa::MadAddress;
using mcastd::sa::MadBuf;

static_assert(sizeof(umad_sa_packet) == kMadSize);
static_assert(sizeof(umad_smp) == kMadSize);

// ff12:401b:ffff::ffff:ffff, the IPoIB broadcast group of the default partition, which OpenSM
// creates at start with MLID 0xC000.
constexpr std::uint8_t kBroadcastMgid[16] = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0,
                                             0,    0,    0,    0,    0xff, 0xff, 0xff, 0xff};

MadBuf sa_get_broadcast(std::uint32_t tid) {
    umad_sa_packet pkt{};
    pkt.mad_hdr.base_version = UMAD_BASE_VERSION;
    pkt.mad_hdr.mgmt_class = UMAD_CLASS_SUBN_ADM;
    pkt.mad_hdr.class_version = UMAD_SA_CLASS_VERSION;
    pkt.mad_hdr.method = UMAD_METHOD_GET;
    pkt.mad_hdr.tid = htobe64(tid);
    pkt.mad_hdr.attr_id = htobe16(UMAD_SA_ATTR_MCMEMBER_REC);
    // SM_Key stays 0 (untrusted): a wrong non-zero key is dropped silently.
    pkt.comp_mask = htobe64(UMAD_SA_MCM_COMP_MASK_MGID);
    umad_sa_mcmember_record rec{};
    std::memcpy(rec.mgid, kBroadcastMgid, sizeof rec.mgid);
    std::memcpy(pkt.data, &rec, sizeof rec);
    MadBuf out{};
    std::memcpy(out.data(), &pkt, sizeof pkt);
    return out;
}

// doc/sa-multicast.md §17: hop count 0, DrSLID = DrDLID = permissive, AttributeModifier = port.
MadBuf smp_get_portinfo(std::uint32_t tid, int port) {
    umad_smp smp{};
    smp.base_version = UMAD_BASE_VERSION;
    smp.mgmt_class = UMAD_CLASS_SUBN_DIRECTED_ROUTE;
    smp.class_version = 1;
    smp.method = UMAD_METHOD_GET;
    smp.tid = htobe64(tid);
    smp.attr_id = htobe16(UMAD_SM_ATTR_PORT_INFO);
    smp.attr_mod = htobe32(static_cast<std::uint32_t>(port));
    smp.dr_slid = htobe16(0xffff);
    smp.dr_dlid = htobe16(0xffff);
    MadBuf out{};
    std::memcpy(out.data(), &smp, sizeof smp);
    return out;
}

std::uint16_t be16_at(std::span<const std::uint8_t> m, std::size_t off) {
    return static_cast<std::uint16_t>(m[off] << 8 | m[off + 1]);
}

std::uint32_t be32_at(std::span<const std::uint8_t> m, std::size_t off) {
    return static_cast<std::uint32_t>(be16_at(m, off)) << 16 | be16_at(m, off + 2);
}

void print_mad(PortIndex port, std::span<const std::uint8_t> m, int status) {
    if (m.size() < 24) {
        std::printf("recv port=%u umad_status=%d short=%zu\n", port, status, m.size());
        return;
    }
    std::printf("recv port=%u umad_status=%d class=0x%02x method=0x%02x status=0x%04x tid=0x%08" PRIx32
                " attr=0x%04x",
                port, status, m[1], m[3], be16_at(m, 4), be32_at(m, 12), be16_at(m, 16));
    if (m[1] == UMAD_CLASS_SUBN_ADM && m.size() >= 56 + 40) {
        // MCMemberRecord at 56: MGID, PortGID, Q_Key at 32, MLID at 36.
        std::printf(" qkey=0x%08" PRIx32 " mlid=0x%04x", be32_at(m, 56 + 32), be16_at(m, 56 + 36));
    } else if (m[1] == UMAD_CLASS_SUBN_DIRECTED_ROUTE && m.size() >= 64 + 33) {
        // PortInfo at 64: LID at 16, MasterSMLID at 18, PortState in the low nibble of 32.
        std::printf(" lid=0x%04x sm_lid=0x%04x state=%d", be16_at(m, 64 + 16), be16_at(m, 64 + 18),
                    m[64 + 32] & 0x0f);
    }
    std::printf("\n");
}

class Probe {
public:
    Probe(mcastd::runtime::EventLoop &loop, mcastd::sa::UmadTransport &t, int port, std::uint16_t sm_lid)
        : loop_(loop), t_(t), port_(port), sm_lid_(sm_lid) {}

    void on_mad(PortIndex port, std::span<const std::uint8_t> m, int status) {
        const std::uint32_t tid = m.size() >= 16 ? be32_at(m, 12) : 0;
        if (burst_n_ == 0 || tid < kBurstTid || tid >= kBurstTid + burst_n_) {
            print_mad(port, m, status);
            return;
        }
        ++burst_seen_;
        if (status == 0 && m[3] == 0x81 && be16_at(m, 4) == 0 && be16_at(m, 56 + 36) == 0xc000)
            ++burst_ok_;
        if (burst_seen_ == burst_n_) {
            std::printf("burst-done n=%u ok=%u\n", burst_n_, burst_ok_);
            burst_n_ = 0;
        }
    }

    void on_stdin(std::uint32_t) {
        char buf[1024];
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n <= 0) {
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
            loop_.exit(0); // EOF: the test closed our stdin
            return;
        }
        pending_.append(buf, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = pending_.find('\n')) != std::string::npos;) {
            const std::string line = pending_.substr(0, nl);
            pending_.erase(0, nl + 1);
            command(line);
        }
    }

private:
    void command(const std::string &line) {
        std::istringstream in(line);
        std::string cmd;
        std::string tid_text;
        in >> cmd >> tid_text;
        const auto tid = static_cast<std::uint32_t>(std::strtoul(tid_text.c_str(), nullptr, 16));
        if (cmd == "sa-get") {
            MadAddress to; // QP1, QP1 Q_Key, P_Key index 0
            to.dlid = sm_lid_;
            send(cmd, tid, sa_get_broadcast(tid), to);
        } else if (cmd == "smp-portinfo") {
            MadAddress to;
            to.dlid = 0xffff; // permissive LID, QP0
            to.dqp = 0;
            to.qkey = 0;
            send(cmd, tid, smp_get_portinfo(tid, port_), to);
        } else if (cmd == "burst") {
            burst_n_ = static_cast<unsigned>(std::strtoul(tid_text.c_str(), nullptr, 10));
            burst_seen_ = burst_ok_ = 0;
            MadAddress to;
            to.dlid = sm_lid_;
            unsigned sent = 0;
            for (unsigned i = 0; i < burst_n_; ++i) {
                const int r = t_.send(0, sa_get_broadcast(kBurstTid + i), to, 1000);
                if (r != 0) {
                    std::printf("send-error burst i=%u errno=%d (%s)\n", i, -r, std::strerror(-r));
                    break;
                }
                ++sent;
            }
            std::printf("burst-sent n=%u\n", sent);
        } else if (cmd == "stats") {
            const auto st = t_.stats(0);
            std::printf("stats received=%" PRIu64 " bounced=%" PRIu64 " recv_errors=%" PRIu64 "\n",
                        st->received, st->bounced, st->recv_errors);
        } else if (cmd == "heartbeat") {
            const auto hb = t_.last_heartbeat(0);
            const auto age = hb ? std::chrono::duration_cast<std::chrono::milliseconds>(mcastd::Clock::now() - *hb)
                                : std::chrono::milliseconds(-1);
            std::printf("heartbeat age_ms=%lld\n", static_cast<long long>(age.count()));
        } else if (cmd == "close") {
            t_.close_port(0);
            std::printf("closed\n");
        } else if (cmd == "quit") {
            loop_.exit(0);
        } else if (!cmd.empty()) {
            std::printf("error unknown-command %s\n", cmd.c_str());
        }
    }

    void send(const std::string &what, std::uint32_t tid, const MadBuf &mad, const MadAddress &to) {
        const int r = t_.send(0, mad, to, 1000);
        if (r == 0)
            std::printf("sent %s tid=0x%08" PRIx32 "\n", what.c_str(), tid);
        else
            std::printf("send-error %s tid=0x%08" PRIx32 " errno=%d (%s)\n", what.c_str(), tid, -r,
                        std::strerror(-r));
    }

    mcastd::runtime::EventLoop &loop_;
    mcastd::sa::UmadTransport &t_;
    static constexpr std::uint32_t kBurstTid = 0x10000;

    int port_;
    std::uint16_t sm_lid_;
    std::string pending_;
    unsigned burst_n_ = 0, burst_seen_ = 0, burst_ok_ = 0;
};

void try_bad_open(mcastd::sa::UmadTransport &t, PortIndex index, const std::string &device, int port) {
    try {
        t.open_port(index, device, port);
        std::printf("open-unexpectedly-ok device=%s port=%d\n", device.c_str(), port);
        t.close_port(index);
    } catch (const std::system_error &e) {
        std::printf("open-error device=%s port=%d errno=%d what=%s\n", device.c_str(), port, e.code().value(),
                    e.what());
    }
}

int run(const std::string &device, int port, mcastd::sa::UmadTransport::Options opts) {
    using namespace mcastd;
    runtime::block_signals(runtime::kDaemonSignals);
    runtime::EventLoop loop;
    auto on_stop = [&loop](const signalfd_siginfo &) { loop.exit(0); };
    auto term = loop.watch_signal(SIGTERM, on_stop);
    auto intr = loop.watch_signal(SIGINT, on_stop);

    sa::UmadTransport transport(loop, opts);
    try_bad_open(transport, 7, device, port + 1);
    try_bad_open(transport, 8, "nosuchdev0", 1);
    transport.open_port(0, device, port);

    umad_port_t up{};
    if (int r = umad_get_port(device.c_str(), port, &up); r < 0)
        throw std::system_error(-r, std::generic_category(), "umad_get_port(" + device + ")");
    const auto lid = static_cast<std::uint16_t>(up.base_lid);
    const auto sm_lid = static_cast<std::uint16_t>(up.sm_lid);
    umad_release_port(&up);

    Probe probe(loop, transport, port, sm_lid);
    transport.set_receiver([&probe](PortIndex p, std::span<const std::uint8_t> m, int status) {
        probe.on_mad(p, m, status);
    });
    auto in = loop.watch_io(STDIN_FILENO, EPOLLIN, [&probe](std::uint32_t ev) { probe.on_stdin(ev); }, "stdin");

    std::printf("ready device=%s port=%d lid=0x%04x sm_lid=0x%04x\n", device.c_str(), port, lid, sm_lid);
    const int code = loop.run();
    transport.close_all(); // before the loop and before umad2sim's atexit teardown
    std::printf("bye\n");
    return code;
}

} // namespace

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // the test reads us line by line through a pipe
    const std::string device = argc > 1 ? argv[1] : "ibsim0";
    const int port = argc > 2 ? std::atoi(argv[2]) : 1;
    mcastd::sa::UmadTransport::Options opts;
    if (argc > 3)
        opts.recv_timeout = std::chrono::milliseconds(std::atol(argv[3]));
    try {
        return run(device, port, opts);
    } catch (const std::exception &e) {
        std::printf("fatal %s\n", e.what());
        std::fprintf(stderr, "mcastd-umad-probe: %s\n", e.what());
        return 1;
    }
}
