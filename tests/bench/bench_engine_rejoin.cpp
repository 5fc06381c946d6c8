// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-engine-rejoin [GROUPS...]: the engine's own cost of re-joining a port, with the
// SA and the clock taken out. One port holds GROUPS groups (one member each, default 10,000 and
// 100,000) against an SA that answers at once; the SA then forgets everything, the port is
// invalidated, and the bench times the engine from the invalidation until every group is
// re-set and every member told `restored`. Time per group must stay flat as the port grows:
// anything that scans the port's groups for each group it finishes shows up here as a ratio
// well above 1. The SA answers once in the order it was asked and once in reverse (a real SA
// that retransmits answers out of order), since a scan may be cheap in one order only.
//
// Wall-clock figures of one process on whatever else the machine runs: compare runs with each
// other. Prints figures, never fails on them.
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <vector>

#include "bench_args.hpp"
#include "common/sa_status.hpp"
#include "core/engine.hpp"
#include "fakes/fake_timers.hpp"
#include "port/port_registry.hpp"

using namespace mcastd;

namespace {

// An SA for one port that answers every request in order when run() is called: groups are
// created on their first Set, and one JoinState per group is kept for the port. The bench's
// MGIDs are ff15:1::<n>, so the SA keeps its groups in a vector indexed by n and costs next to
// nothing beside the engine.
class InstantSa final : public SaService {
public:
    InstantSa(std::size_t groups, bool reverse) : groups_(groups + 1), reverse_(reverse) {}

    TxnId submit(const SaRequest &req, Callback done) override {
        queue_.push_back({++next_, req, std::move(done)});
        return next_;
    }
    void cancel(TxnId) override {}
    void hasten(TxnId) override {}

    // Answers until nothing is pending (answers may submit more).
    void run() {
        while (!queue_.empty()) {
            Pending p = std::move(reverse_ ? queue_.back() : queue_.front());
            reverse_ ? queue_.pop_back() : queue_.pop_front();
            p.done(answer(p.req));
        }
    }
    bool pending() const { return !queue_.empty(); }
    void forget() { // an SM restart
        for (Group &g : groups_)
            g = Group{};
    }
    std::size_t members() const {
        std::size_t n = 0;
        for (const Group &g : groups_)
            n += g.bits != 0;
        return n;
    }

private:
    struct Group {
        bool exists = false;
        McRecord rec;
        std::uint8_t bits = 0;
    };
    struct Pending {
        TxnId id;
        SaRequest req;
        Callback done;
    };

    SaResult answer(const SaRequest &r) {
        SaResult out;
        out.kind = SaResult::Kind::response;
        out.tries = 1;
        out.record = r.record;
        std::uint64_t n = 0;
        for (int i = 8; i < 16; ++i)
            n = n << 8 | r.record.mgid[static_cast<std::size_t>(i)];
        Group &g = groups_.at(n);
        switch (r.method) {
        case SaMethod::get:
            if (!g.exists || ((r.comp_mask & field::port_gid) && !g.bits) ||
                ((r.comp_mask & field::join_state) && g.bits != r.record.join_state))
                out.status = sa_status::no_records;
            else
                out.record = g.rec;
            return out;
        case SaMethod::set:
            if (!g.exists) {
                g.exists = true;
                g.rec = r.record;
                g.rec.mlid = static_cast<std::uint16_t>(0xc001 + n % 0x3ffe);
            }
            g.bits = static_cast<std::uint8_t>(g.bits | r.record.join_state);
            out.record = g.rec;
            out.record.join_state = g.bits;
            return out;
        case SaMethod::del:
            g.bits = static_cast<std::uint8_t>(g.bits & ~r.record.join_state);
            out.record.join_state = g.bits;
            return out;
        }
        return out;
    }

    TxnId next_ = 0;
    std::deque<Pending> queue_;
    std::vector<Group> groups_;
    bool reverse_;
};

struct Counter final : MembershipEventSink {
    std::size_t restored = 0;
    void membership_event(ClientId, MembershipId, const MembershipEvent &ev) override {
        restored += ev.kind == MembershipEvent::Kind::restored;
    }
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Runs the SA and the fake clock until the engine has nothing left to do.
void settle(Engine &engine, InstantSa &sa, test::FakeTimers &timers) {
    for (;;) {
        sa.run();
        if (engine.idle() && !sa.pending())
            return;
        if (!sa.pending() && !timers.step())
            return;
    }
}

// The timed part, a function of its own so that a profiler can be pointed at it
// (valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*rejoin_port*').
[[gnu::noinline]] void rejoin_port(Engine &engine, InstantSa &sa, test::FakeTimers &timers, PortIndex port) {
    sa.forget();
    engine.invalidate_port(port, "bench: the SA forgot everything");
    settle(engine, sa, timers);
}

// Bytes the heap has handed out and not taken back.
std::size_t heap_in_use() { return mallinfo2().uordblks; }

struct Figures {
    double join_s = 0, rejoin_s = 0;
    double bytes_per_group = 0; // engine and SA together, after the joins
    bool ok = false;
};

Figures run(std::size_t groups, bool reverse) {
    test::FakeTimers timers;
    InstantSa sa(groups, reverse);
    Counter events;
    port::PortRegistry ports;
    Engine engine(EngineConfig{}, ports, sa, timers);
    engine.set_event_sink(&events);
    port::PortAttributes a;
    a.device = "mlx5_0";
    a.port_num = 1;
    a.gid_prefix = 0xfe80000000000000ULL;
    a.port_guid = 0x100003;
    const PortIndex port = ports.add(a, true);
    engine.add_port(port);
    const ClientId client = engine.add_client(ClientInfo{1, 0, 0, "bench"});
    Figures f;
    std::size_t joined = 0;
    const std::size_t heap0 = heap_in_use();
    auto t0 = Clock::now();
    for (std::size_t i = 0; i < groups; ++i) {
        JoinRequest r;
        r.device = "mlx5_0";
        r.port = 1;
        r.mgid = make_gid(0xff15000100000000ULL, i + 1);
        r.join_state = join::full;
        engine.join(client, r, [&joined](const JoinResult &res) { joined += !res.error; });
        sa.run();
    }
    settle(engine, sa, timers);
    f.join_s = seconds_since(t0);
    f.bytes_per_group = static_cast<double>(heap_in_use() - heap0) / static_cast<double>(groups);

    t0 = Clock::now();
    rejoin_port(engine, sa, timers, port);
    f.rejoin_s = seconds_since(t0);
    f.ok = joined == groups && events.restored == groups && sa.members() == groups &&
           !engine.ports().at(port).rejoining;
    return f;
}

// Best of three runs of one size, in a child process: each size starts from a fresh heap, so a
// larger size does not inherit the fragments a smaller one left.
bool measure(std::size_t n, bool reverse, Figures &best) {
    int fds[2];
    if (::pipe(fds) != 0)
        return false;
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(fds[0]);
        Figures b;
        for (int round = 0; round < 3; ++round) {
            const Figures f = run(n, reverse);
            if (!f.ok)
                _exit(1);
            if (round == 0 || f.rejoin_s < b.rejoin_s)
                b = f;
        }
        const bool written = ::write(fds[1], &b, sizeof b) == static_cast<ssize_t>(sizeof b);
        _exit(written ? 0 : 1);
    }
    ::close(fds[1]);
    const bool read_all = pid > 0 && ::read(fds[0], &best, sizeof best) == static_cast<ssize_t>(sizeof best);
    ::close(fds[0]);
    int status = 0;
    if (pid > 0)
        ::waitpid(pid, &status, 0);
    return read_all && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

} // namespace

int main(int argc, char **argv) {
    const mcastd::bench::CommandLine cl(argc, argv, "mcastd-bench-engine-rejoin",
                                        "[GROUPS (1-10000000)...] (default 10000 100000)\n"
                                        "The engine's time per group to re-join a port, at each size.\n");
    std::vector<std::size_t> sizes;
    for (const std::string &a : cl.args)
        sizes.push_back(cl.count(a, 1, 10000000));
    if (sizes.empty())
        sizes = {10000, 100000};
    std::printf("engine re-join of one port against an SA that answers at once (best of 3 per size)\n");
    for (const bool reverse : {false, true}) {
        std::printf("  SA answers %s:\n", reverse ? "in reverse order" : "in the order asked");
        double first_per_group = 0;
        for (std::size_t n : sizes) {
            Figures best;
            if (!measure(n, reverse, best)) {
                std::printf("  %zu groups: the re-join did not restore every membership\n", n);
                return 1;
            }
            const double per_group_us = best.rejoin_s / static_cast<double>(n) * 1e6;
            if (first_per_group == 0)
                first_per_group = per_group_us;
            std::printf("  %7zu groups: re-join %8.1f ms = %.2f us/group (%.2fx the first size); joins %.1f ms; "
                        "%.0f heap bytes/group\n",
                        n, best.rejoin_s * 1e3, per_group_us, per_group_us / first_per_group, best.join_s * 1e3,
                        best.bytes_per_group);
        }
    }
    std::printf("  target: time per group within 1.5x from the smallest to the largest size\n");
    return 0;
}
