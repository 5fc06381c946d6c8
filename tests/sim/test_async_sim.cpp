// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// librdmamcast's asynchronous join (rdmamcast_join_start / rdmamcast_join_cancel) against the
// real daemon on a simulated node, with the SA as the judge: 500 new groups from one
// connection, and 100 of 500 cancelled mid-flight. The test process links the library and talks
// to the daemon's socket; only the daemon is attached to the fabric.
#include <gtest/gtest.h>
#include <poll.h>

#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <rdmamcast/client.h>

#include "sim/daemon_harness.hpp"

namespace mcastd::sim {
namespace {

Gid G(const std::string &s) { return *parse_gid(s); }

// ff15:a5::<i>: a new group per join, explicit MGIDs.
Gid mgid_of(unsigned i) {
    std::ostringstream s;
    s << "ff15:a5::" << std::hex << (i + 1);
    return G(s.str());
}

struct Ctx {
    unsigned index = 0;
    std::uint64_t join_id = 0;
    int completions = 0;
    rdmamcast_event_type type{};
    rdmamcast_errc code{};
    std::uint64_t membership = 0;
    Gid record_mgid{};
    std::string message;
};

class AsyncSim : public ::testing::Test {
protected:
    // OpenSM sweeps every second and dumps its SA (the complete picture; saquery's GetTable is
    // cut to one MAD on this simulator).
    Fabric fabric{{.opensm_args = {"-s", "1"}, .sa_db_dump = true}};
    Gid h2() { return fabric.port_gid("H2"); }

    rdmamcast_client *connect(Daemon &d) {
        rdmamcast_client *c = nullptr;
        EXPECT_EQ(rdmamcast_connect(d.socket().c_str(), &c), 0) << rdmamcast_last_error(nullptr)->message;
        return c;
    }

    static int start(rdmamcast_client *c, Ctx &k) {
        rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
        p.device = "ibsim0";
        p.port = 1;
        const Gid m = mgid_of(k.index);
        std::memcpy(p.mgid, m.data(), 16);
        return rdmamcast_join_start(c, &p, &k, &k.join_id);
    }

    // Starts 500 joins of new groups, each with its own context.
    static void start_all(rdmamcast_client *c, std::vector<Ctx> &ctx, std::vector<Gid> &all) {
        ctx.resize(500);
        for (unsigned i = 0; i < ctx.size(); ++i) {
            ctx[i].index = i;
            all.push_back(mgid_of(i));
            EXPECT_EQ(start(c, ctx[i]), 0) << rdmamcast_last_error(c)->message;
        }
    }

    // Takes events until `n` completions have arrived (bounded by `timeout`).
    static std::size_t collect(rdmamcast_client *c, std::size_t n, std::chrono::seconds timeout) {
        std::size_t got = 0;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (got < n && std::chrono::steady_clock::now() < deadline) {
            pollfd p{rdmamcast_event_fd(c), POLLIN, 0};
            if (::poll(&p, 1, 1000) != 1)
                continue;
            rdmamcast_event ev;
            int rc;
            while ((rc = rdmamcast_next_event(c, &ev)) == 0) {
                if (ev.type != RDMAMCAST_EVENT_JOINED && ev.type != RDMAMCAST_EVENT_JOIN_ERROR)
                    continue;
                ++got;
                auto *k = static_cast<Ctx *>(ev.type == RDMAMCAST_EVENT_JOINED ? ev.joined.context
                                                                               : ev.join_error.context);
                ++k->completions;
                k->type = ev.type;
                if (ev.type == RDMAMCAST_EVENT_JOINED) {
                    EXPECT_EQ(ev.joined.join_id, k->join_id);
                    k->membership = ev.membership;
                    std::memcpy(k->record_mgid.data(), ev.joined.record.mgid, 16);
                } else {
                    EXPECT_EQ(ev.join_error.join_id, k->join_id);
                    k->code = ev.join_error.error.code;
                    k->message = ev.join_error.error.message;
                }
            }
            EXPECT_EQ(rc, -EAGAIN) << rdmamcast_last_error(c)->message;
        }
        return got;
    }

    // The SA's exact per-port answer for a sample of groups (trusted Gets from H3, each about
    // 70 ms on this simulator, so not for all of them): MGID -> H2's port is a member.
    std::map<Gid, bool> sa_members(const std::vector<Gid> &mgids) {
        std::vector<std::string> argv{MCASTD_SIM_JOIN, "get"};
        for (const Gid &m : mgids)
            argv.insert(argv.end(), {format_gid(m), format_gid(h2())});
        const RunResult r = fabric.run_on("H3", argv);
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
        std::map<Gid, bool> out;
        std::istringstream in(r.out);
        for (std::string mgid, gid, rest; in >> mgid >> gid && std::getline(in, rest);)
            out[G(mgid)] = rest.find("join_state=") != std::string::npos;
        return out;
    }

    // Which of `all` the SA holds for H2's port, by OpenSM's SA dump (the complete picture,
    // rewritten after every sweep): polled until it is exactly `want`, or `timeout`.
    bool wait_sa_holds(const std::set<Gid> &all, const std::set<Gid> &want,
                       std::chrono::seconds timeout, std::set<Gid> &last) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            last.clear();
            for (const Gid &g : fabric.sa_dump_groups_of(h2(), {}, 0ms))
                if (all.count(g))
                    last.insert(g);
            if (last == want)
                return true;
            if (std::chrono::steady_clock::now() >= deadline)
                return false;
            std::this_thread::sleep_for(200ms);
        }
    }
    // Every fifth of `all` asked one by one: held exactly when in `want`.
    void check_sample(const std::vector<Gid> &all, const std::set<Gid> &want) {
        std::vector<Gid> sample;
        for (std::size_t i = 0; i < all.size(); i += 25)
            sample.insert(sample.end(), {all[i], all[i + 1]});
        for (const auto &[m, held] : sa_members(sample))
            EXPECT_EQ(held, want.count(m) == 1) << format_gid(m);
    }
};

TEST_F(AsyncSim, FiveHundredNewGroupsFromOneConnectionCompleteOnceEachAndTheSaHoldsThemAll) {
    Daemon d(fabric, "H2");
    rdmamcast_client *c = connect(d);
    ASSERT_NE(c, nullptr);
    std::vector<Ctx> ctx;
    std::vector<Gid> all;
    const auto t0 = std::chrono::steady_clock::now();
    start_all(c, ctx, all);
    const auto started = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(started, 1s) << "starting joins does not wait for the SA";
    ASSERT_EQ(collect(c, ctx.size(), 120s), ctx.size());
    const auto done = std::chrono::steady_clock::now() - t0;
    std::printf("500 async joins of new groups: %.1f ms\n",
                std::chrono::duration<double, std::milli>(done).count());
    std::set<std::uint64_t> memberships;
    for (const auto &k : ctx) {
        EXPECT_EQ(k.completions, 1) << k.index;
        EXPECT_EQ(k.type, RDMAMCAST_EVENT_JOINED) << k.index << ": " << k.message;
        EXPECT_EQ(k.record_mgid, mgid_of(k.index)) << "its own record";
        memberships.insert(k.membership);
    }
    EXPECT_EQ(memberships.size(), ctx.size());

    // The SA holds all 500 for H2's port: in its own dump, and asked group by group.
    const std::set<Gid> want(all.begin(), all.end());
    std::set<Gid> last;
    EXPECT_TRUE(wait_sa_holds(want, want, 20s, last)) << last.size() << " of 500 at the SA";
    check_sample(all, want);

    // Nothing leaks: closing the connection leaves every one of them.
    rdmamcast_close(c);
    EXPECT_TRUE(wait_sa_holds(want, {}, 30s, last)) << last.size() << " still at the SA";
    check_sample(all, {});
}

TEST_F(AsyncSim, HundredOfFiveHundredCancelledMidFlightLeaveExactlyTheOtherFourHundred) {
    Daemon d(fabric, "H2");
    rdmamcast_client *c = connect(d);
    ASSERT_NE(c, nullptr);
    std::vector<Ctx> ctx;
    std::vector<Gid> all;
    start_all(c, ctx, all);
    // Every fifth: the first ones are at the daemon (some already at the SA), the later ones
    // still in the library's queue.
    std::set<unsigned> cancelled, lost_race;
    for (unsigned i = 0; i < ctx.size(); i += 5) {
        int rc = rdmamcast_join_cancel(c, ctx[i].join_id);
        if (rc == 0)
            cancelled.insert(i);
        else if (rc == -ENOENT)
            lost_race.insert(i); // it completed first: its completion says JOINED
        else
            ADD_FAILURE() << i << ": " << rc << " " << rdmamcast_last_error(c)->message;
    }
    EXPECT_EQ(cancelled.size() + lost_race.size(), 100u);
    // Usually all 100 are still waiting; on an overloaded machine (ctest -j3 on 2 cores) 24 of
    // them once completed first. More than half keeps the cancel paths the test is about.
    EXPECT_GT(cancelled.size(), 50u) << "most were still waiting";
    ASSERT_EQ(collect(c, ctx.size(), 120s), ctx.size());
    for (const auto &k : ctx) {
        EXPECT_EQ(k.completions, 1) << k.index;
        if (cancelled.count(k.index)) {
            EXPECT_EQ(k.type, RDMAMCAST_EVENT_JOIN_ERROR) << k.index;
            EXPECT_EQ(k.code, RDMAMCAST_E_CANCELLED) << k.index << ": " << k.message;
        } else {
            EXPECT_EQ(k.type, RDMAMCAST_EVENT_JOINED) << k.index << ": " << k.message;
        }
    }
    // A cancel that lost the race leaves its membership the ordinary way.
    for (unsigned i : lost_race)
        EXPECT_EQ(rdmamcast_leave(c, ctx[i].membership), 0) << rdmamcast_last_error(c)->message;
    std::printf("cancelled %zu in flight or queued, %zu completed first\n", cancelled.size(),
                lost_race.size());

    std::set<Gid> want;
    for (unsigned i = 0; i < ctx.size(); ++i)
        if (i % 5)
            want.insert(mgid_of(i));
    ASSERT_EQ(want.size(), 400u);
    const std::set<Gid> everything(all.begin(), all.end());
    std::set<Gid> last;
    EXPECT_TRUE(wait_sa_holds(everything, want, 30s, last)) << last.size() << " at the SA; want 400";
    check_sample(all, want);
    // The daemon agrees: 400 groups, one member each.
    rdmamcast_group_list *l = nullptr;
    ASSERT_EQ(rdmamcast_list(c, &l), 0);
    std::size_t groups = 0, members = 0;
    for (std::size_t p = 0; p < l->num_ports; ++p)
        for (std::size_t g = 0; g < l->ports[p]->num_groups; ++g) {
            ++groups;
            members += l->ports[p]->groups[g]->num_members;
        }
    rdmamcast_list_free(l);
    EXPECT_EQ(groups, 400u);
    EXPECT_EQ(members, 400u);

    rdmamcast_close(c);
    EXPECT_TRUE(wait_sa_holds(everything, {}, 30s, last)) << last.size() << " still at the SA";
}

} // namespace
} // namespace mcastd::sim
