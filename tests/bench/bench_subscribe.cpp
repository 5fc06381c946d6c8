// mcastd-bench-subscribe: an application subscribing to 1,000 new groups through librdmamcast's
// asynchronous join (rdmamcast_join_start, completions on the event fd), beside 1,000 raw
// pipelined SA Sets (mcastd-raw-sa, the daemon's SA stack without its logic) with the same
// window as the daemon's SA (sa.window, 16), measured in the same run. Target (issue 16): the
// library's rate at least 80 % of the raw rate.
//
//  1. Raw Sets on H2 (created, then deleted again: the MLID pool holds 1,023).
//  2. rdma-mcastd on H2; one client starts 1,000 joins of new groups (explicit MGIDs) at once
//     and collects the completions. The daemon's status counters (sa_sets, sa_gets, version 2)
//     before and after give the SA MADs each join cost.
//  3. The daemon stops (leaving every group) and the raw Sets run again.
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

} // namespace

int main(int argc, char **argv) {
    const unsigned groups = argc > 1 ? static_cast<unsigned>(std::stoul(argv[1])) : 1000;
    try {
        Fabric fabric;
        const double raw_before = raw_sets_ms(fabric, groups, "before the daemon");

        Daemon daemon(fabric, "H2", R"({"log_level": "warning"})");
        RawClient raw(daemon.socket());
        raw.call(R"({"id":1,"op":"hello","versions":[2]})", 1);
        rdmamcast_client *c = nullptr;
        if (int rc = rdmamcast_connect(daemon.socket().c_str(), &c); rc < 0)
            throw std::runtime_error(std::string("connect: ") + rdmamcast_last_error(nullptr)->message);

        std::vector<rdmamcast_join_params> params(groups);
        for (unsigned i = 0; i < groups; ++i) {
            params[i] = RDMAMCAST_JOIN_PARAMS_INIT;
            params[i].device = "ibsim0";
            params[i].port = 1;
            inet_pton(AF_INET6, mgid_text(i + 1).c_str(), params[i].mgid);
        }
        std::vector<int> completed(groups, 0);
        const SaCounters before = sa_counters(raw);

        const auto t0 = Clock::now();
        for (unsigned i = 0; i < groups; ++i)
            if (int rc = rdmamcast_join_start(c, &params[i], &completed[i], nullptr); rc < 0)
                throw std::runtime_error(std::string("join_start: ") + rdmamcast_last_error(c)->message);
        const auto started = Clock::now();
        unsigned done = 0, failed = 0;
        std::string first_error;
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
                    if (!failed++)
                        first_error = ev.join_error.error.message;
                } else {
                    continue;
                }
                ++done;
            }
        }
        const auto t1 = Clock::now();
        const SaCounters after = sa_counters(raw);
        unsigned twice = 0;
        for (int n : completed)
            twice += n != 1;

        rdmamcast_close(c);
        daemon.stop(); // leaves every group: the raw Sets below need the MLIDs back
        const double raw_after = raw_sets_ms(fabric, groups, "after the daemon");

        const double lib_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
        const double start_ms = std::chrono::duration<double, std::milli>(started - t0).count();
        const double raw_ms = (raw_before + raw_after) / 2;
        const double lib_rate = groups / lib_ms * 1000, raw_rate = groups / raw_ms * 1000;
        const double sets = double(after.sets - before.sets) / groups;
        const double gets = double(after.gets - before.gets) / groups;
        std::printf("[ bench ] raw %u pipelined SA Sets (window %u): %.1f ms before the daemon, %.1f ms "
                    "after; mean %.1f ms = %.0f Sets/s\n",
                    groups, kWindow, raw_before, raw_after, raw_ms, raw_rate);
        std::printf("[ bench ] librdmamcast: %u asynchronous joins of new groups on one connection "
                    "(library window %u, daemon sa.window %u): %.1f ms = %.0f joins/s (starting them "
                    "took %.2f ms); %u failed%s%s; %u completed other than once\n",
                    groups, RDMAMCAST_JOIN_WINDOW, kWindow, lib_ms, lib_rate, start_ms, failed,
                    failed ? ", first: " : "", first_error.c_str(), twice);
        std::printf("[ bench ] SA MADs per join (daemon counters): %.2f Sets + %.2f Gets = %.2f\n", sets,
                    gets, sets + gets);
        // The daemon's SA traffic counted per MAD, against the raw Sets' one MAD per group: how
        // much of the gap is the MADs a join costs rather than the daemon or the library.
        if (sets + gets > 0)
            std::printf("[ bench ] per SA MAD: %.0f MADs/s through the daemon vs %.0f raw: %.0f %%\n",
                        lib_rate * (sets + gets), raw_rate, 100 * lib_rate * (sets + gets) / raw_rate);
        std::printf("[ bench ] library rate / raw rate: %.0f %% (target >= 80 %%): %s\n",
                    100 * lib_rate / raw_rate, lib_rate >= 0.8 * raw_rate ? "met" : "NOT met");
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mcastd-bench-subscribe: %s\n", e.what());
        return 1;
    }
}
