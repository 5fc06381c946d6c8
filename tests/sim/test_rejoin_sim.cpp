// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Staying joined (issue 4): the real daemon on simulated nodes through an SM restart, an SM
// failover, a port unlink/relink, a LID change and a re-join under packet loss. The judge is
// the SA, never the daemon's word: its complete picture (OpenSM's opensm-sa.dump, rewritten
// after each 1 s sweep) for "exactly what the clients hold", and per-port Gets
// (mcastd-sim-join get) where timing matters. Clients are raw protocol connections that keep
// every event.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "sim/daemon_harness.hpp"
#include "sim/tool_output.hpp"

namespace mcastd::sim {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

// Fast polls so the whole file fits the CI budget; the bound below follows from them.
constexpr const char *kConfig =
    R"({"monitor":{"portinfo_interval_ms":200,"sminfo_interval_ms":500,"audit_per_second":2},)"
    R"("rejoin":{"jitter_ms":100}})";
constexpr milliseconds kSmInfoInterval{500};
// Interval of the polls of the SA dump, which has no readiness signal.
constexpr milliseconds kDumpPoll{50};

std::uint8_t bit_of(const std::string &join_state) {
    return join_state == "full" ? 0x1 : join_state == "sendonly-full" ? 0x8 : 0;
}

// A raw client that holds memberships and keeps every event it is sent, in order.
class Holder {
public:
    struct Held {
        std::string mgid;
        std::string join_state;
        std::uint16_t mlid = 0; // from the join's reply
    };

    Holder(Daemon &d, std::string node) : node_(std::move(node)), c_(d.socket()) { c_.hello(); }

    const std::string &node() const { return node_; }

    // Sends the joins in bursts below the daemon's per-connection limit of joins waiting for
    // the SA (64), collecting each burst's replies: memberships in request order.
    std::vector<std::uint64_t> join(const std::vector<std::string> &mgids,
                                    const std::string &join_state = "full") {
        std::vector<std::uint64_t> out;
        for (std::size_t i = 0; i < mgids.size(); i += kBurst) {
            auto part = burst(std::vector<std::string>(
                mgids.begin() + static_cast<std::ptrdiff_t>(i),
                mgids.begin() + static_cast<std::ptrdiff_t>(std::min(i + kBurst, mgids.size()))),
                join_state);
            out.insert(out.end(), part.begin(), part.end());
        }
        return out;
    }

    void leave(std::uint64_t membership) {
        const long long id = next_id_++;
        c_.send(json{{"id", id}, {"op", "leave"}, {"membership", membership}}.dump());
        const json r = reply(id, 30s);
        if (r.value("ok", false) != true)
            throw std::runtime_error("leave " + std::to_string(membership) + " failed: " + r.dump());
        held.erase(membership);
    }

    json status() {
        const long long id = next_id_++;
        c_.send(json{{"id", id}, {"op", "status"}}.dump());
        return reply(id, 10s);
    }

    // Receives events until `done` holds; false when `timeout` passes first.
    bool wait(const std::function<bool()> &done, milliseconds timeout) {
        const auto end = Clock::now() + timeout;
        while (!done()) {
            const auto left = duration_cast<milliseconds>(end - Clock::now());
            if (left.count() <= 0)
                return false;
            if (auto m = c_.receive(left))
                keep(json::parse(*m));
        }
        return true;
    }

    // The last event named `name` of each membership that got one.
    std::map<std::uint64_t, json> last(const std::string &name) const {
        std::map<std::uint64_t, json> out;
        for (const auto &e : events)
            if (e["event"] == name)
                out[e["membership"].get<std::uint64_t>()] = e;
        return out;
    }
    // Whether every membership held now got `name` after event number `since`.
    bool all_got(const std::string &name, std::size_t since = 0) const {
        std::set<std::uint64_t> got;
        for (std::size_t i = since; i < events.size(); ++i)
            if (events[i]["event"] == name)
                got.insert(events[i]["membership"].get<std::uint64_t>());
        for (const auto &[id, h] : held)
            if (!got.contains(id))
                return false;
        return true;
    }

    std::map<std::uint64_t, Held> held;
    std::vector<json> events;

private:
    static constexpr std::size_t kBurst = 50;

    // Sends every join at once, then collects the replies.
    std::vector<std::uint64_t> burst(const std::vector<std::string> &mgids,
                                     const std::string &join_state) {
        std::vector<long long> ids;
        for (const auto &m : mgids) {
            ids.push_back(next_id_++);
            c_.send(json{{"id", ids.back()}, {"op", "join"}, {"device", "ibsim0"}, {"port", 1},
                         {"mgid", m}, {"join_state", join_state}}
                        .dump());
        }
        std::vector<std::uint64_t> out;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            const json r = reply(ids[i], 30s);
            if (r.value("ok", false) != true)
                throw std::runtime_error("join " + mgids[i] + " failed: " + r.dump());
            const auto id = r["result"]["membership"].get<std::uint64_t>();
            held[id] = Held{mgids[i], join_state, r["result"]["record"]["mlid"].get<std::uint16_t>()};
            out.push_back(id);
        }
        return out;
    }

    void keep(json m) {
        if (m.contains("event"))
            events.push_back(std::move(m));
        else
            replies_.push_back(std::move(m));
    }
    json reply(long long id, milliseconds timeout) {
        json found;
        auto take = [&] {
            for (auto it = replies_.begin(); it != replies_.end(); ++it)
                if ((*it)["id"] == id) {
                    found = std::move(*it);
                    replies_.erase(it);
                    return true;
                }
            return false;
        };
        if (!wait(take, timeout))
            throw std::runtime_error("no reply with id " + std::to_string(id));
        return found;
    }

    std::string node_;
    RawClient c_;
    long long next_id_ = 1;
    std::vector<json> replies_;
};

// (MGID, PortGID) -> JoinState; a group without members maps (MGID, ::) -> 0.
using Picture = std::map<std::pair<Gid, Gid>, std::uint8_t>;

std::string describe(const Picture &p) {
    std::string s;
    for (const auto &[k, v] : p)
        s += "  " + format_gid(k.first) + " " + format_gid(k.second) + " 0x" +
             std::to_string(v) + "\n";
    return s;
}

// What `want` and `got` disagree on, one line each; "" when they are equal.
std::string diff(const Picture &want, const Picture &got) {
    Picture missing, wrong_or_extra;
    for (const auto &[k, v] : want)
        if (auto it = got.find(k); it == got.end() || it->second != v)
            missing[k] = v;
    for (const auto &[k, v] : got)
        if (auto it = want.find(k); it == want.end() || it->second != v)
            wrong_or_extra[k] = v;
    if (missing.empty() && wrong_or_extra.empty())
        return {};
    return "clients hold, the SA does not:\n" + describe(missing) +
           "the SA holds, the clients do not (orphan, duplicate or wrong bits):\n" +
           describe(wrong_or_extra);
}

class RejoinSim : public ::testing::Test {
protected:
    // H1 runs OpenSM, H2..H4 the daemons, H5 the SM after a failover; SA queries go from H6.
    // -s 1: a sweep a second, so the dump follows the SA within about a second and a moved
    // LID is reset quickly.
    Fabric fabric{Fabric::Options{.hcas = 6, .opensm_args = {"-s", "1"}, .sa_db_dump = true}};
    std::map<std::string, Gid> gids;

    // The daemons' nodes' GIDs, asked before any daemon runs: the tool's SMP answers and the
    // daemon's own PortInfo polls on one node are better kept apart in the simulator.
    RejoinSim() {
        for (const char *node : {"H2", "H3", "H4"})
            gid(node);
    }

    // A daemon with the fast config, kept by the fixture so that a failed test shows its log.
    Daemon &daemon(const std::string &node, const std::string &config = kConfig) {
        daemons_.push_back(std::make_unique<Daemon>(fabric, node, config));
        return *daemons_.back();
    }
    void TearDown() override {
        if (HasFailure())
            for (auto &d : daemons_)
                std::printf("--- rdma-mcastd log ---\n%s\n--- its threads now ---\n%s", d->process().stderr_text().c_str(),
                            thread_states(d->process().pid()).c_str());
        daemons_.clear(); // before the fabric
    }
    std::vector<std::unique_ptr<Daemon>> daemons_;

    // How the daemons learnt that the SA may have lost their memberships (their log), for
    // the record.
    void print_rejoin_causes() {
        for (auto &d : daemons_) {
            std::istringstream log(d->process().stderr_text());
            for (std::string line; std::getline(log, line);)
                if (line.find("the SA may have lost") != std::string::npos)
                    std::printf("[ log ] %s\n", line.c_str());
        }
    }

    Gid gid(const std::string &node) {
        if (!gids.contains(node))
            gids[node] = fabric.port_gid(node);
        return gids[node];
    }

    // What the clients hold: a port holds 0x1 when any of its members is full, else 0x8.
    Picture expected(const std::vector<Holder *> &holders) {
        std::map<std::pair<Gid, Gid>, std::uint8_t> bits;
        for (Holder *h : holders)
            for (const auto &[id, m] : h->held)
                bits[{*parse_gid(m.mgid), gid(h->node())}] |= bit_of(m.join_state);
        Picture p;
        for (const auto &[k, b] : bits)
            p[k] = (b & 0x1) ? 0x1 : 0x8;
        return p;
    }

    // The SA's picture from its dump, OpenSM's own groups left out; nullopt before the first
    // dump. `mlids` gets each group's MLID.
    std::optional<Picture> sa_picture(std::map<Gid, std::uint16_t> *mlids = nullptr) {
        const std::string text = read_text_file(fabric.sa_dump_path());
        if (text.empty())
            return std::nullopt;
        Picture p;
        for (const SaDumpGroup &g : parse_sa_dump(text)) {
            if (g.well_known)
                continue;
            if (mlids)
                (*mlids)[g.mgid] = g.mlid;
            if (g.members.empty())
                p[{g.mgid, Gid{}}] = 0;
            for (const auto &[port, state] : g.members)
                p[{g.mgid, port}] = state;
        }
        return p;
    }

    // Polls the dump until it shows `want`; on timeout `why` holds the last difference.
    bool wait_sa_picture(const Picture &want, milliseconds timeout, std::string &why,
                         std::map<Gid, std::uint16_t> *mlids = nullptr) {
        const auto end = Clock::now() + timeout;
        for (;;) {
            std::map<Gid, std::uint16_t> m;
            const auto got = sa_picture(&m);
            why = got ? diff(want, *got) : "no opensm-sa.dump yet";
            if (got && why.empty()) {
                if (mlids)
                    *mlids = std::move(m);
                return true;
            }
            if (Clock::now() >= end)
                return false;
            std::this_thread::sleep_for(kDumpPoll);
        }
    }

    // The SA's answers to per-port Gets (mcastd-sim-join get, from H6) for the memberships of
    // `want`: what it holds of them, exactly, but nothing about others.
    Picture sa_gets(const Picture &want) {
        std::vector<std::string> argv{MCASTD_SIM_JOIN, "get"};
        for (const auto &[k, v] : want)
            argv.insert(argv.end(), {format_gid(k.first), format_gid(k.second)});
        const RunResult r = fabric.run_on("H6", argv);
        Picture got;
        std::istringstream out(r.out);
        for (std::string m, g, state; out >> m >> g >> state;) {
            if (state.starts_with("join_state="))
                got[{*parse_gid(m), *parse_gid(g)}] =
                    static_cast<std::uint8_t>(*parse_number(state.substr(11), 0xf));
            out.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
        }
        return got;
    }

    void expect_sa_holds(const std::vector<Holder *> &holders, milliseconds timeout) {
        std::string why;
        EXPECT_TRUE(wait_sa_picture(expected(holders), timeout, why)) << why;
    }

    // A stopped OpenSM's dump is stale: drop it, so only the next OpenSM's counts.
    void forget_sa_dump() { std::filesystem::remove(fabric.sa_dump_path()); }
};

std::vector<std::string> mgids(const std::string &prefix, int from, int to) {
    std::vector<std::string> out;
    for (int i = from; i <= to; ++i)
        out.push_back(prefix + std::to_string(i));
    return out;
}

TEST_F(RejoinSim, SmRestartEveryMembershipIsBackWithinTheBoundAndEveryMemberRestored) {
    std::vector<std::unique_ptr<Holder>> holders;
    std::vector<Holder *> all;
    for (const char *node : {"H2", "H3", "H4"}) {
        holders.push_back(std::make_unique<Holder>(daemon(node), node));
        all.push_back(holders.back().get());
    }
    // 100 groups x 3 hosts.
    for (auto &h : holders)
        h->join(mgids("ff15:7e::", 1, 100));
    expect_sa_holds(all, 10s);

    // OpenSM gives a re-created group the MLID its Set asks for when that is free, so the
    // daemons would get every MLID back. The new SM runs with two more IPoIB partitions: their
    // broadcast groups take the first MLIDs at its start, and some groups must move.
    const auto partitions = fabric.scratch() / "partitions.conf";
    std::ofstream(partitions) << "Default=0x7fff, ipoib : ALL=full ;\n"
                                 "P1=0x0a01, ipoib : ALL=full ;\n"
                                 "P2=0x0a02, ipoib : ALL=full ;\n";
    fabric.stop_opensm();
    forget_sa_dump();
    // Timed from OpenSM's start, not from start_opensm() seeing the SA answer: that check's
    // own saquery can wait a second for an SA still in its first sweep. So the figure
    // includes the first sweep, and the bound is stricter than the issue's.
    const auto sm_started = Clock::now();
    fabric.start_opensm({}, {"-P", partitions.string()});
    const double sa_ready = std::chrono::duration<double>(Clock::now() - sm_started).count();

    // Timed with per-port Gets of all 300 memberships (the dump lags by up to a sweep).
    const Picture want = expected(all);
    std::string why;
    const auto deadline = Clock::now() + 20s;
    bool back = false;
    while (!back && Clock::now() < deadline) {
        const auto got = sa_gets(want);
        why = diff(want, got);
        back = why.empty();
    }
    const double took = std::chrono::duration<double>(Clock::now() - sm_started).count();
    ASSERT_TRUE(back) << "the SA did not get every membership back:\n" << why;
    const double bound = std::chrono::duration<double>(kSmInfoInterval).count() + 2.0;
    std::printf("[ figures ] SM restart: 300 memberships back at the SA %.2f s after OpenSM "
                "started (start_opensm saw the SA answer after %.2f s); bound %.2f s\n",
                took, sa_ready, bound);
    EXPECT_LE(took, bound);
    // The complete picture: nothing more (no orphan group or membership) and each MLID.
    std::map<Gid, std::uint16_t> mlids;
    ASSERT_TRUE(wait_sa_picture(want, 10s, why, &mlids)) << why;

    // Replaying each client's events in order: whenever a `restored` brings another MLID than
    // the client last knew, `changed` starts with "mlid"; the MLID it ends with is the SA's.
    std::size_t moved = 0;
    for (Holder *h : all) {
        ASSERT_TRUE(h->wait([&] { return h->all_got("restored"); }, 10s))
            << h->node() << ": not every member got `restored`";
        std::map<std::uint64_t, std::uint16_t> known;
        for (const auto &[id, m] : h->held)
            known[id] = m.mlid;
        for (const json &e : h->events) {
            if (e["event"] != "restored")
                continue;
            std::uint16_t &mlid = known.at(e["membership"].get<std::uint64_t>());
            if (e["record"]["mlid"] != mlid) {
                ++moved;
                ASSERT_FALSE(e["changed"].empty()) << e.dump();
                EXPECT_EQ(e["changed"][0], "mlid") << "a new MLID comes first: " << e.dump();
                mlid = e["record"]["mlid"].get<std::uint16_t>();
            }
        }
        for (const auto &[id, m] : h->held)
            EXPECT_EQ(known[id], mlids.at(*parse_gid(m.mgid))) << h->node() << " " << m.mgid;
    }
    std::printf("[ figures ] SM restart: %zu of 300 memberships came back with another MLID\n", moved);
    EXPECT_GT(moved, 0u) << "the partitions' broadcast groups took some of the old MLIDs";
    print_rejoin_causes();
}

// Two SM restarts in a row, the second as soon as the first re-join is done: each is re-joined.
// The daemons have three ways to see the second: the audit that the first SMInfoRecord answer
// after failed polls asks for, the new SM's ActCount falling below the baseline they took after
// the first re-join, and the periodic audit. Any one of them is enough (checked by disabling
// the first two), so this holds the outcome, not the path.
TEST_F(RejoinSim, SmRestartTwiceInARowIsReJoinedTwice) {
    Daemon &d2 = daemon("H2"), &d3 = daemon("H3");
    Holder a(d2, "H2"), b(d3, "H3");
    a.join(mgids("ff15:f1::", 1, 20));
    b.join(mgids("ff15:f1::", 11, 30));
    expect_sa_holds({&a, &b}, 10s);
    for (int restart = 1; restart <= 2; ++restart) {
        const std::size_t since_a = a.events.size(), since_b = b.events.size();
        fabric.stop_opensm();
        forget_sa_dump();
        const auto sm_started = Clock::now();
        fabric.start_opensm();
        for (auto [h, since] : {std::pair{&a, since_a}, std::pair{&b, since_b}})
            ASSERT_TRUE(h->wait([&] { return h->all_got("restored", since); }, 20s))
                << h->node() << ": not every member got `restored` after restart " << restart;
        std::printf("[ figures ] SM restart %d: every member restored %.2f s after OpenSM started\n", restart,
                    std::chrono::duration<double>(Clock::now() - sm_started).count());
        const Picture want = expected({&a, &b});
        const std::string why = diff(want, sa_gets(want));
        EXPECT_TRUE(why.empty()) << "after restart " << restart << ":\n" << why;
    }
    expect_sa_holds({&a, &b}, 10s);
    print_rejoin_causes();
}

// Failover: the master SM dies and an SM on another node takes over. (A live handover, a
// second OpenSM with a higher priority started next to the first, does not work on ibsim
// while clients send SMPs, as the daemons' PortInfo polls do: the new OpenSM's SMInfo Get to
// the old master is answered by "no one to handle pkt: class 0x81, attr 0x20", the MAD
// vanishes, and that OpenSM never finishes discovery. So the new SM starts once the old one
// is gone, as a standby would take over.)
TEST_F(RejoinSim, FailoverTheDaemonsFollowTheNewSmAndRejoin) {
    const std::uint16_t old_sm = fabric.lid("H1"), new_sm = fabric.lid("H5");
    Daemon &d2 = daemon("H2"), &d3 = daemon("H3");
    Holder a(d2, "H2"), b(d3, "H3");
    a.join(mgids("ff15:f0::", 1, 10));
    b.join(mgids("ff15:f0::", 6, 15), "sendonly-full");
    expect_sa_holds({&a, &b}, 10s);
    ASSERT_EQ(a.status()["result"]["ports"][0]["sm_lid"], old_sm);

    fabric.stop_opensm();
    fabric.start_opensm("H5");
    const auto start = Clock::now();
    for (Holder *h : {&a, &b}) {
        const auto end = start + 10s;
        json st;
        while (Clock::now() < end && (st = h->status())["result"]["ports"][0]["sm_lid"] != new_sm)
            h->wait([] { return false; }, kDumpPoll);
        EXPECT_EQ(st["result"]["ports"][0]["sm_lid"], new_sm) << h->node() << ": " << st.dump();
    }
    for (Holder *h : {&a, &b})
        EXPECT_TRUE(h->wait([&] { return h->all_got("restored"); }, 10s)) << h->node();
    std::printf("[ figures ] failover: both daemons on the new SM LID %u and every member "
                "restored %.2f s after the new SA answered\n",
                new_sm, std::chrono::duration<double>(Clock::now() - start).count());
    // Asked of the new SA from a node that runs no SM, each membership with its bits.
    for (const auto &[id, m] : a.held)
        EXPECT_TRUE(fabric.wait_sa_join_state(*parse_gid(m.mgid), gid("H2"), 0x1, 10s)) << m.mgid;
    for (const auto &[id, m] : b.held)
        EXPECT_TRUE(fabric.wait_sa_join_state(*parse_gid(m.mgid), gid("H3"), 0x8, 10s)) << m.mgid;
    expect_sa_holds({&a, &b}, 10s);
    print_rejoin_causes();
}

TEST_F(RejoinSim, UnlinkedPortMembersGetLostThenRestored) {
    Daemon &d = daemon("H2");
    Holder a(d, "H2");
    a.join(mgids("ff15:1a::", 1, 5));
    expect_sa_holds({&a}, 10s);

    fabric.console("Unlink \"H2\"[1]");
    ASSERT_TRUE(a.wait([&] { return a.all_got("lost"); }, 10s)) << "no `lost` for every member";
    for (const auto &[id, e] : a.last("lost"))
        EXPECT_NE(e.dump().find("down"), std::string::npos) << "lost names the cause: " << e.dump();
    // OpenSM dropped the port's memberships with the link.
    for (const auto &[id, m] : a.held)
        EXPECT_TRUE(fabric.wait_sa_join_state(*parse_gid(m.mgid), gid("H2"), std::nullopt, 10s)) << m.mgid;

    const std::size_t before = a.events.size();
    const auto relinked = Clock::now();
    fabric.console("ReLink \"H2\"[1]");
    ASSERT_TRUE(a.wait([&] { return a.all_got("restored", before); }, 10s)) << "no `restored` for every member";
    std::printf("[ figures ] relink: every member restored %.2f s after ReLink\n",
                std::chrono::duration<double>(Clock::now() - relinked).count());
    for (const auto &[id, m] : a.held)
        EXPECT_EQ(fabric.sa_join_state(*parse_gid(m.mgid), gid("H2")), 0x1) << m.mgid;
    expect_sa_holds({&a}, 10s);
}

TEST_F(RejoinSim, LidChangeEndsWithTheSaHoldingExactlyWhatClientsHold) {
    const std::uint16_t lid = fabric.lid("H2");
    Daemon &d = daemon("H2");
    Holder a(d, "H2"), b(d, "H2");
    const auto a_ids = a.join(mgids("ff15:b1::", 1, 10));
    b.join(mgids("ff15:b1::", 6, 12), "sendonly-full");
    expect_sa_holds({&a, &b}, 10s);

    const std::size_t before = a.events.size();
    const auto moved = Clock::now();
    fabric.console("Baselid \"H2\"[1] 40");
    // While the LID is moved (until OpenSM's next sweep puts it back), clients change what
    // they hold: these requests go out from the moved LID and must still end up right.
    a.leave(a_ids[0]);
    a.leave(a_ids[7]);
    b.join(mgids("ff15:b1::", 20, 21), "sendonly-full");
    ASSERT_TRUE(a.wait([&] { return a.all_got("restored", before); }, 20s))
        << "the LID change did not re-join a's groups";
    // OpenSM's sweep put the LID back: H2 answers there, asked from H6 (LID-routed).
    EXPECT_EQ(fabric.run_on("H6", {"smpquery", "portinfo", std::to_string(lid), "1"}).exit_code, 0);
    expect_sa_holds({&a, &b}, 15s);
    std::printf("[ figures ] LID change: every member restored and the SA equal to the clients "
                "%.2f s after Baselid\n",
                std::chrono::duration<double>(Clock::now() - moved).count());
    print_rejoin_causes();
}

// The counters of `status` that show SA MADs went unanswered.
long long sa_losses(Holder &h) {
    const json c = h.status()["result"]["counters"];
    return c["sa_retransmits"].get<long long>() + c["sa_timeouts"].get<long long>();
}

TEST_F(RejoinSim, RejoinUnder30PercentLossEndsWithTheSaHoldingExactlyWhatClientsHold) {
    Daemon &d = daemon("H2");
    Holder a(d, "H2"), b(d, "H2");
    const auto a_ids = a.join(mgids("ff15:e5::", 1, 20));
    b.join(mgids("ff15:e5::", 15, 25), "sendonly-full");
    expect_sa_holds({&a, &b}, 10s);

    // 30 % of what enters H2's port is dropped: SA answers, so Sets and Gets time out.
    fabric.console("Error \"H2\"[1] 30");
    const long long losses_before = sa_losses(a);
    const std::size_t before_a = a.events.size(), before_b = b.events.size();
    const auto start = Clock::now();
    // The SA loses every membership of H2 behind the daemon's back (Deletes sent from H2's
    // own port; their answers may be lost, the Deletes are not), and the groups with them.
    // Only the audit can notice, so the re-join runs under the loss for certain. (An SM
    // restart cannot be used: OpenSM discovering a port under this loss leaves it in INIT
    // for good, "Unknown remote side ... port 2", and before the new SA answers the daemon
    // may have re-joined already.)
    for (const auto &[k, bits] : expected({&a, &b}))
        fabric.run_on("H2", {MCASTD_SIM_JOIN, "leave", format_gid(k.first), std::to_string(bits),
                             "timeout_ms=200"});
    // Meanwhile clients leave: the re-join must not bring back what they left.
    a.leave(a_ids[0]);
    a.leave(a_ids[16]);
    EXPECT_TRUE(a.wait([&] { return a.all_got("restored", before_a); }, 30s));
    EXPECT_TRUE(b.wait([&] { return b.all_got("restored", before_b); }, 30s));
    const double restored = std::chrono::duration<double>(Clock::now() - start).count();
    // A join under the same loss gets through too (the daemon's own retransmits).
    b.join({"ff15:e5::30"});
    std::string why;
    const bool exact = wait_sa_picture(expected({&a, &b}), 30s, why);
    const long long losses = sa_losses(a) - losses_before;
    std::printf("[ figures ] re-join under 30%% loss: every member restored after %.2f s, the SA "
                "equal to the clients after %.2f s; %lld SA retransmits and timeouts\n",
                restored, std::chrono::duration<double>(Clock::now() - start).count(), losses);
    EXPECT_TRUE(exact) << why;
    EXPECT_GT(losses, 0) << "the loss was really injected";
    print_rejoin_causes();
    fabric.console("Error \"H2\"[1] 0"); // the daemon's leaves at its stop need not retry
}

} // namespace
} // namespace mcastd::sim
