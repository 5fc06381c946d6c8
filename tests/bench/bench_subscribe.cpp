// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-subscribe: an application subscribing to 1,000 new groups through librdmamcast's
// asynchronous join (rdmamcast_join_start, completions on the event fd), beside 1,000 raw
// pipelined SA Sets (mcastd-raw-sa, the daemon's SA stack without its logic) with the same
// window as the daemon's SA (sa.window, 16), measured in the same run. Target (issue 16): the
// library's rate at least 80 % of the raw rate.
//
//  1. Raw Sets on H2 (created, then deleted again: the MLID pool holds 1,023).
//  2. rdma-mcastd on H2; one client starts 1,000 joins of new groups (explicit MGIDs) at once
//     and collects the completions. The daemon's status counters (sa_sets, sa_gets, version 2)
//     before and after give the SA MADs each join cost: 2, the probe Get and the Set
//     (doc/architecture.md §5 says why the Get stays outside an owned prefix).
//  3. The client closes (the daemon leaves those groups); another starts 1,000 joins of new
//     named groups (issue 29). Their MGIDs are in the named groups' prefix, which the daemon
//     owns by default (config groups.owned_prefixes): one Set each, no probe Get.
//  4. Another starts 1,000 creates of groups with SA-assigned MGIDs, which cost one Set each:
//     the same MADs as the raw Sets, so the rates compare the daemon and the library themselves.
//  5. The daemon stops (leaving every group) and the raw Sets run again.
//
// It prints figures; it does not pass or fail on them.
//
//   mcastd-bench-subscribe [GROUPS]   (default 1000)
#include <arpa/inet.h>
#include <poll.h>
#include <rdmamcast/client.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "bench/tool_line.hpp"
#include "sim/daemon_harness.hpp"

using namespace mcastd::sim;
using mcastd::bench::field;
using Clock = std::chrono::steady_clock;

namespace {

constexpr unsigned kWindow = 16; // the daemon's sa.window, for the raw Sets
constexpr const char *kRawBase = "ff15:7c::";

double raw_sets_ms(Fabric &f, unsigned groups, const char *when) {
    const RunResult r = f.run_on("H2", {MCASTD_RAW_SA, "sets", std::to_string(groups), kRawBase,
                                        std::to_string(kWindow)},
                                 std::chrono::seconds(120));
    if (r.exit_code != 0)
        throw std::runtime_error(std::string("raw Sets ") + when + " exited " +
                                 std::to_string(r.exit_code) + ": " + r.out + r.err);
    return std::stod(field(r.out.substr(0, r.out.find('\n')), "ms"));
}

struct SaCounters {
    unsigned long long sets = 0, gets = 0;
};

// The daemon's MCMemberRecord transaction counters, from a version 2 `status`.
SaCounters sa_counters(RawClient &raw) {
    static long long id = 100;
    ++id;
    const auto reply = nlohmann::json::parse(
        raw.call(R"({"id":)" + std::to_string(id) + R"(,"op":"status"})", id));
    const auto &c = reply.at("result").at("counters");
    return {c.value("sa_sets", 0ull), c.value("sa_gets", 0ull)};
}

std::string mgid_text(unsigned i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "ff15:7d::%x", i);
    return buf;
}

std::uint64_t port_groups(RawClient &raw) {
    static long long id = 10000;
    ++id;
    const auto reply = nlohmann::json::parse(
        raw.call(R"({"id":)" + std::to_string(id) + R"(,"op":"status"})", id));
    return reply.at("result").at("ports").at(0).at("groups").get<std::uint64_t>();
}

struct Subscribed {
    double ms = 0, start_ms = 0;
    unsigned failed = 0, twice = 0;
    std::string first_error;
    double sets = 0, gets = 0; // per join
};

// One client starts every join of `params` at once and collects the completions; the client
// is closed again, and this waits until the daemon holds no group on the port.
Subscribed subscribe(const std::string &socket, RawClient &raw,
                     std::vector<rdmamcast_join_params> &params) {
    rdmamcast_client *c = nullptr;
    if (int rc = rdmamcast_connect(socket.c_str(), &c); rc < 0)
        throw std::runtime_error(std::string("connect: ") + rdmamcast_last_error(nullptr)->message);
    const auto groups = static_cast<unsigned>(params.size());
    std::vector<int> completed(groups, 0);
    const SaCounters before = sa_counters(raw);
    Subscribed out;

    const auto t0 = Clock::now();
    for (unsigned i = 0; i < groups; ++i)
        if (int rc = rdmamcast_join_start(c, &params[i], &completed[i], nullptr); rc < 0)
            throw std::runtime_error(std::string("join_start: ") + rdmamcast_last_error(c)->message);
    const auto started = Clock::now();
    unsigned done = 0;
    while (done < groups) {
        pollfd p{rdmamcast_event_fd(c), POLLIN, 0};
        if (::poll(&p, 1, 30000) != 1)
            throw std::runtime_error("no completion within 30 s (" + std::to_string(done) + " of " +
                                     std::to_string(groups) + ")");
        rdmamcast_event ev;
        while (rdmamcast_next_event(c, &ev) == 0) {
            if (ev.type == RDMAMCAST_EVENT_JOINED) {
                ++*static_cast<int *>(ev.joined.context);
            } else if (ev.type == RDMAMCAST_EVENT_JOIN_ERROR) {
                ++*static_cast<int *>(ev.join_error.context);
                if (!out.failed++)
                    out.first_error = ev.join_error.error.message;
            } else {
                continue;
            }
            ++done;
        }
    }
    const auto t1 = Clock::now();
    const SaCounters after = sa_counters(raw);
    for (int n : completed)
        out.twice += n != 1;
    out.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    out.start_ms = std::chrono::duration<double, std::milli>(started - t0).count();
    out.sets = double(after.sets - before.sets) / groups;
    out.gets = double(after.gets - before.gets) / groups;

    rdmamcast_close(c);
    // The MLID pool (1,023) and groups_per_port (1,024) need these groups gone before more.
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (port_groups(raw) != 0) {
        if (Clock::now() > deadline)
            throw std::runtime_error("the daemon still holds groups 30 s after the client left");
        ::poll(nullptr, 0, 5);
    }
    return out;
}

void report(const char *what, unsigned groups, const Subscribed &r, double raw_rate) {
    const double rate = groups / r.ms * 1000;
    std::printf("[ bench ] librdmamcast: %u asynchronous %s on one connection (library window %u, "
                "daemon sa.window %u): %.1f ms = %.0f joins/s (starting them took %.2f ms); %u "
                "failed%s%s; %u completed other than once\n",
                groups, what, RDMAMCAST_JOIN_WINDOW, kWindow, r.ms, rate, r.start_ms, r.failed,
                r.failed ? ", first: " : "", r.first_error.c_str(), r.twice);
    std::printf("[ bench ]   SA MADs per join (daemon counters): %.2f Sets + %.2f Gets = %.2f\n",
                r.sets, r.gets, r.sets + r.gets);
    // Counted per MAD, against the raw Sets' one MAD per group: how much of the gap is the
    // MADs a join costs rather than the daemon or the library.
    if (r.sets + r.gets > 0)
        std::printf("[ bench ]   per SA MAD: %.0f MADs/s through the daemon vs %.0f raw: %.0f %%\n",
                    rate * (r.sets + r.gets), raw_rate, 100 * rate * (r.sets + r.gets) / raw_rate);
    std::printf("[ bench ]   rate / raw rate: %.0f %% (target >= 80 %%): %s\n", 100 * rate / raw_rate,
                rate >= 0.8 * raw_rate ? "met" : "NOT met");
}

} // namespace

int main(int argc, char **argv) {
    const mcastd::bench::CommandLine cl(argc, argv, "mcastd-bench-subscribe",
                                        "[GROUPS (1-1000, default 1000)]\n"
                                        "Asynchronous joins of new groups through librdmamcast beside raw SA Sets.\n");
    if (cl.args.size() > 1)
        cl.bad(cl.args[1]);
    // The raw Sets' groups and the daemon's share the SA's pool of 1,023 MLIDs.
    const unsigned groups = cl.args.empty() ? 1000 : static_cast<unsigned>(cl.count(cl.args[0], 1, 1000));
    try {
        Fabric fabric;
        const double raw_before = raw_sets_ms(fabric, groups, "before the daemon");

        // sa.max_rate 0: the daemon's own cost beside the raw Sets, as a small fabric may run it.
        Daemon daemon(fabric, "H2", R"({"log_level": "warning", "sa": {"max_rate": 0}})");
        RawClient raw(daemon.socket());
        raw.call(R"({"id":1,"op":"hello","versions":[2]})", 1);

        std::vector<rdmamcast_join_params> by_mgid(groups), named(groups), created(groups);
        std::vector<std::string> names(groups);
        for (unsigned i = 0; i < groups; ++i) {
            by_mgid[i] = RDMAMCAST_JOIN_PARAMS_INIT;
            by_mgid[i].device = "ibsim0";
            by_mgid[i].port = 1;
            inet_pton(AF_INET6, mgid_text(i + 1).c_str(), by_mgid[i].mgid);
            created[i] = by_mgid[i];
            std::memset(created[i].mgid, 0, sizeof created[i].mgid);
            created[i].flags = RDMAMCAST_JOIN_CREATE;
            names[i] = "bench-subscribe-" + std::to_string(i + 1);
            named[i] = created[i];
            named[i].flags = 0;
            named[i].name = names[i].c_str();
        }
        const Subscribed explicit_mgids = subscribe(daemon.socket(), raw, by_mgid);
        const Subscribed by_name = subscribe(daemon.socket(), raw, named);
        const Subscribed sa_assigned = subscribe(daemon.socket(), raw, created);

        daemon.stop(); // leaves every group: the raw Sets below need the MLIDs back
        const double raw_after = raw_sets_ms(fabric, groups, "after the daemon");
        const double raw_ms = (raw_before + raw_after) / 2;
        const double raw_rate = groups / raw_ms * 1000;
        std::printf("[ bench ] raw %u pipelined SA Sets (window %u): %.1f ms before the daemon, %.1f ms "
                    "after; mean %.1f ms = %.0f Sets/s\n",
                    groups, kWindow, raw_before, raw_after, raw_ms, raw_rate);
        report("joins of new groups by MGID", groups, explicit_mgids, raw_rate);
        report("joins of new named groups (owned prefix)", groups, by_name, raw_rate);
        report("creates (SA-assigned MGIDs)", groups, sa_assigned, raw_rate);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mcastd-bench-subscribe: %s\n", e.what());
        return 1;
    }
}
