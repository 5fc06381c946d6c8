// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-raw-sa: raw, pipelined SA MCMemberRecord traffic from the node it runs on, for
// mcastd-bench-rejoin. It goes through the daemon's own SA stack (sa::UmadTransport,
// sa::MadTransactions and the MCMemberRecord codec) but none of its logic: no engine, no
// probes, no pacing beyond the window. That makes it the baseline the daemon's re-join is
// compared with. Run it attached to a node (LD_PRELOAD=libumad2sim.so, SIM_HOST=Hx).
//
// Group i (1..COUNT) has the MGID MGID_BASE with i added to its last 32 bits.
//
//   mcastd-raw-sa sets COUNT MGID_BASE [WINDOW]
//       Sends COUNT Sets that create the groups (FullMember, the create mask with the
//       daemon's create defaults), at most WINDOW (default 16, the daemon's sa.window) in
//       flight, and prints the wall time until the last answer:
//           sets n=1000 ok=1000 failed=0 window=16 ms=31.2 first_error=
//       then deletes them the same way and prints "deletes n=... ok=... ms=...".
//       Exit 0 when every Set and Delete got status 0.
//
//   mcastd-raw-sa watch COUNT MGID_BASE PORT_GID [WINDOW]
//       Waits until the SA answers at all (one Get every 5 ms: while OpenSM is down they
//       bounce, during its first sweep they vanish) and prints
//           sa-answers t_ns=<CLOCK_MONOTONIC>
//       Then, once a line (or EOF) arrives on stdin, Gets PORT_GID's membership of every
//       group, WINDOW (default 16) in flight, and again for those still missing, until all
//       are there:
//           all-present t_ns=... rounds=... gets=...
//       The driver sends the line when its client has every `restored` event: one round then
//       verifies at the SA what the daemon reported, without loading the SA during the
//       re-join it measures. t_ns is CLOCK_MONOTONIC in ns, comparable across processes.
//
// Exit 2 on bad usage or a local failure, 3 when the SA stops answering (deadline 60 s).
#include <infiniband/umad.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "common/gid.hpp"
#include "runtime/event_loop.hpp"
#include "sa/mad_codec.hpp"
#include "sa/transactions.hpp"
#include "sa/umad_transport.hpp"

namespace {

using namespace mcastd;
using Clock = std::chrono::steady_clock;

constexpr PortIndex kPort = 0;
constexpr auto kDeadline = std::chrono::seconds(60);

long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

Gid group_mgid(const Gid &base, unsigned i) {
    Gid g = base;
    std::uint32_t low = static_cast<std::uint32_t>(g[12] << 24 | g[13] << 16 | g[14] << 8 | g[15]) + i;
    for (int b = 0; b < 4; ++b)
        g[static_cast<std::size_t>(15 - b)] = static_cast<std::uint8_t>(low >> (8 * b));
    return g;
}

struct Node {
    std::string ca;
    int port = 0;
    Gid gid{};
    std::uint16_t sm_lid = 0;
};

Node local_node() {
    umad_port_t p{};
    // The simulated node has one CA with one port; NULL/0 picks it.
    if (int rc = umad_get_port(nullptr, 0, &p); rc < 0)
        throw std::system_error(-rc, std::generic_category(), "umad_get_port");
    Node n{p.ca_name, p.portnum, {}, static_cast<std::uint16_t>(p.sm_lid)};
    std::memcpy(n.gid.data(), &p.gid_prefix, 8); // both already big-endian
    std::memcpy(n.gid.data() + 8, &p.port_guid, 8);
    umad_release_port(&p);
    return n;
}

// The loop, the transport and the transactions, as the daemon wires them for one port.
struct Stack {
    runtime::EventLoop loop;
    sa::UmadTransport transport{loop};
    sa::MadTransactions txns;
    Node node;

    Stack(const Node &n, unsigned window)
        : txns(transport, loop.timers(), config(window)), node(n) {
        transport.open_port(kPort, n.ca, n.port);
        sa::MadAddress to;
        to.dlid = n.sm_lid;
        txns.set_sa_route([to](PortIndex) { return std::optional(to); });
    }
    ~Stack() { transport.close_all(); } // before umad2sim's atexit teardown

    static sa::TransactionConfig config(unsigned window) {
        sa::TransactionConfig c;
        c.window = window;
        return c;
    }

    using Done = std::function<void(const sa::Decoded<sa::McMemberMad> *)>; // nullptr: timeout
    void submit(SaMethod method, const McRecord &r, std::uint64_t mask, Done done,
                const std::optional<sa::TryPolicy> &policy = std::nullopt) {
        txns.submit(
            kPort, sa::encode_mcmember_request(method, r, mask, 0), sa::Route::sa,
            [method, done = std::move(done)](const sa::TxnOutcome &o) {
                if (o.kind != sa::TxnOutcome::Kind::response)
                    return done(nullptr);
                const auto d = sa::decode_mcmember_response(o.response, method);
                done(&d);
            },
            {}, policy);
    }
};

// ---- sets ----------------------------------------------------------------------------------

struct Batch {
    unsigned ok = 0, failed = 0, done = 0;
    std::string first_error;
    double ms = 0;
};

Batch run_batch(Stack &s, SaMethod method, const Gid &base, unsigned count) {
    Batch b;
    const auto t0 = Clock::now();
    for (unsigned i = 1; i <= count; ++i) {
        McRecord r;
        r.mgid = group_mgid(base, i);
        r.port_gid = s.node.gid;
        r.join_state = join::full;
        std::uint64_t mask = field::join_mask;
        if (method == SaMethod::set) {
            // The daemon's create defaults (EngineConfig::CreateDefaults).
            r.qkey = 0x01234567;
            r.pkey = 0xffff;
            mask = field::create_mask;
        }
        s.submit(method, r, mask, [&b, &s, count, t0](const sa::Decoded<sa::McMemberMad> *d) {
            const bool ok = d && d->ok() && d->value().status == 0;
            ok ? ++b.ok : ++b.failed;
            if (!ok && b.first_error.empty()) {
                char what[64];
                if (!d)
                    std::snprintf(what, sizeof what, "timeout");
                else if (!d->ok())
                    std::snprintf(what, sizeof what, "undecodable");
                else
                    std::snprintf(what, sizeof what, "0x%04x", d->value().status);
                b.first_error = what;
            }
            if (++b.done == count) {
                b.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
                s.loop.exit(0);
            }
        });
    }
    s.loop.run();
    return b;
}

int sets(const Node &n, unsigned count, const Gid &base, unsigned window) {
    // An sd_event runs only once: one stack per batch.
    const Batch set = [&] { Stack s(n, window); return run_batch(s, SaMethod::set, base, count); }();
    std::printf("sets n=%u ok=%u failed=%u window=%u ms=%.1f first_error=%s\n", count, set.ok, set.failed,
                window, set.ms, set.first_error.c_str());
    const Batch del = [&] { Stack s(n, window); return run_batch(s, SaMethod::del, base, count); }();
    std::printf("deletes n=%u ok=%u failed=%u window=%u ms=%.1f first_error=%s\n", count, del.ok, del.failed,
                window, del.ms, del.first_error.c_str());
    return set.failed || del.failed ? 1 : 0;
}

// ---- watch ---------------------------------------------------------------------------------

class Watch {
public:
    Watch(Stack &s, unsigned count, const Gid &base, const Gid &member)
        : s_(s), base_(base), member_(member), start_(Clock::now()) {
        for (unsigned i = 1; i <= count; ++i)
            missing_.push_back(i);
    }

    int run() {
        stdin_ = s_.loop.watch_io(STDIN_FILENO, EPOLLIN, [this](std::uint32_t) { on_stdin(); }, "stdin");
        probe_sa();
        return s_.loop.run();
    }

private:
    McRecord record(unsigned i) const {
        McRecord r;
        r.mgid = group_mgid(base_, i);
        r.port_gid = member_;
        return r;
    }

    bool past_deadline() {
        if (Clock::now() - start_ < kDeadline)
            return false;
        std::printf("gave-up missing=%zu\n", missing_.size());
        s_.loop.exit(3);
        return true;
    }

    // One short try at a time: a bounced try still waits for its deadline, so this asks
    // about every 5 ms, and the first answer is at most that late.
    void probe_sa() {
        s_.submit(
            SaMethod::get, record(1), field::mgid | field::port_gid,
            [this](const sa::Decoded<sa::McMemberMad> *d) {
                if (d && d->ok()) {
                    std::printf("sa-answers t_ns=%lld\n", now_ns());
                    sa_answers_ = true;
                    if (go_)
                        round();
                } else if (!past_deadline()) {
                    probe_sa();
                }
            },
            sa::TryPolicy::single(std::chrono::milliseconds(5)));
    }

    void on_stdin() {
        char buf[256];
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        stdin_ = {}; // one line starts the rounds; EOF (the driver gave up) too
        go_ = true;
        if (sa_answers_)
            round();
    }

    void round() {
        ++rounds_;
        pending_ = missing_.size();
        auto shared_still = std::make_shared<std::vector<unsigned>>();
        for (unsigned i : missing_) {
            ++gets_;
            s_.submit(SaMethod::get, record(i), field::mgid | field::port_gid,
                      [this, i, shared_still](const sa::Decoded<sa::McMemberMad> *d) {
                          // Status 0 with the port's record: a member. 0x0300 (no records):
                          // not (yet). A timeout counts as not yet.
                          if (!d || !d->ok() || d->value().status != 0)
                              shared_still->push_back(i);
                          if (--pending_ == 0)
                              end_round(*shared_still);
                      });
        }
    }

    void end_round(std::vector<unsigned> still) {
        missing_ = std::move(still);
        if (missing_.empty()) {
            std::printf("all-present t_ns=%lld rounds=%u gets=%llu\n", now_ns(), rounds_, gets_);
            s_.loop.exit(0);
        } else if (!past_deadline()) {
            round();
        }
    }

    Stack &s_;
    Gid base_, member_;
    Clock::time_point start_;
    std::vector<unsigned> missing_;
    std::size_t pending_ = 0;
    unsigned rounds_ = 0;
    bool sa_answers_ = false, go_ = false;
    runtime::EventSource stdin_;
    unsigned long long gets_ = 0;
};

int usage() {
    std::fprintf(stderr, "usage: mcastd-raw-sa sets COUNT MGID_BASE [WINDOW]\n"
                         "       mcastd-raw-sa watch COUNT MGID_BASE PORT_GID [WINDOW]\n");
    return 2;
}

unsigned number(const char *s, unsigned lo, unsigned hi) {
    char *end = nullptr;
    const unsigned long v = std::strtoul(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        throw std::invalid_argument(std::string("not a number in ") + std::to_string(lo) + ".." +
                                    std::to_string(hi) + ": " + s);
    return static_cast<unsigned>(v);
}

Gid gid_arg(const char *s) {
    auto g = parse_gid(s);
    if (!g)
        throw std::invalid_argument(std::string("not a GID: ") + s);
    return *g;
}

} // namespace

int main(int argc, char **argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // the driver reads us line by line
    if (argc < 4)
        return usage();
    const std::string op = argv[1];
    try {
        const unsigned count = number(argv[2], 1, 100000);
        const Gid base = gid_arg(argv[3]);
        const Node node = local_node();
        if (op == "sets" && argc <= 5)
            return sets(node, count, base, argc == 5 ? number(argv[4], 1, 512) : 16);
        if (op == "watch" && (argc == 5 || argc == 6)) {
            Stack s(node, argc == 6 ? number(argv[5], 1, 512) : 16);
            Watch w(s, count, base, gid_arg(argv[4]));
            return w.run();
        }
        return usage();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mcastd-raw-sa: %s\n", e.what());
        return 2;
    }
}
