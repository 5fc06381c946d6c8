// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-restart: what a restart and a crash of the daemon cost, on a simulated fabric
// with 1,000 memberships over 100 client connections (10 groups each, 1,000 groups).
//
// Figures:
//  - planned restart (SIGUSR2), with the fd store as systemd keeps it (sim::FdStore: every
//    connection stays): from the signal until the new instance answers a join one client sent
//    on its connection in the gap, when no instance ran (target: under 50 ms); the
//    MCMemberRecord MADs the new instance sent by then (target: 0 Sets, 0 Deletes, 0 Gets);
//    the connections that still answer afterwards (target: all); then each phase: the old
//    instance's drain, state write, hand-over and taking apart (from its last log lines) and
//    the rest until its process is gone, the new instance's process start (spawn, exec,
//    libraries, config, the simulator's attach), ports, state read, take-back (from its READY
//    line) and the rest of its start, and the answer to the request that waited in its socket;
//  - crash (kill -9), without an fd store: the clients lose their connections and resume their
//    sessions by token; from the new instance's READY until every client has resumed;
//  - orphan sweep: kill -9 of the daemon with every client gone, then from the new
//    instance's start until the SA holds none of the 1,000 groups.
#include <nlohmann/json.hpp>

#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "bench_args.hpp"
#include "sim/daemon_harness.hpp"
#include "sim/fabric.hpp"

using namespace mcastd;
using namespace mcastd::sim;
using namespace std::chrono_literals;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kClients = 100;
constexpr int kGroupsEach = 10;

struct Client {
    std::unique_ptr<RawClient> conn;
    std::uint64_t session = 0;
    std::string token;
};

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The figure the daemon logged after `label` ("drained in 0.2 ms": label "drained in "), or -1.
double logged(const std::string &log, const std::string &label) {
    const auto at = log.find(label);
    return at == std::string::npos ? -1 : std::strtod(log.c_str() + at + label.size(), nullptr);
}

json hello(Client &c, const std::filesystem::path &socket, bool resume) {
    c.conn = std::make_unique<RawClient>(socket);
    json req{{"id", 1}, {"op", "hello"}, {"versions", {2}}};
    if (resume)
        req["resume"] = {{"session", c.session}, {"token", c.token}};
    json r = json::parse(c.conn->call(req.dump(), 1))["result"];
    c.session = r["session"]["session"];
    c.token = r["session"]["token"];
    return r;
}

json status(Daemon &d) {
    RawClient c(d.socket());
    c.hello();
    return json::parse(c.call(R"({"id":2,"op":"status"})", 2))["result"];
}

std::vector<Client> connect_and_join(Daemon &d) {
    std::vector<Client> clients(kClients);
    for (int i = 0; i < kClients; ++i) {
        hello(clients[i], d.socket(), false);
        for (int g = 0; g < kGroupsEach; ++g) {
            char mgid[64];
            std::snprintf(mgid, sizeof mgid, "ff15:b::%x:%x", i + 1, g + 1);
            const long long id = 10 + g;
            clients[i].conn->call(
                json{{"id", id}, {"op", "join"}, {"device", "ibsim0"}, {"port", 1}, {"mgid", mgid}}.dump(), id);
        }
    }
    return clients;
}

// Waits until the restart state on disk holds `n` memberships; a bench that went on without
// them would measure a restart of something else.
void saved(const std::filesystem::path &dir, std::size_t n) {
    if (!wait_saved_memberships(dir, n, 60s)) {
        std::fprintf(stderr, "mcastd-bench-restart: the restart state never held %zu memberships\n", n);
        std::exit(1);
    }
}

// sa.max_rate 0: the orphan sweep's Deletes at the daemon's own speed, as a small fabric may run it.
// log_level info: the restart's and the start's lines with their phases.
std::unique_ptr<Daemon> start(Fabric &fabric, const std::filesystem::path &dir, FdStore *store = nullptr) {
    return std::make_unique<Daemon>(fabric, "H2",
                                    R"({"restart":{"grace_ms":3000},"log_level":"info","sa":{"max_rate":0}})",
                                    std::vector<std::string>{"--state-dir", dir.string()},
                                    std::map<std::string, std::string>{}, store);
}

} // namespace

int main(int argc, char **argv) {
    mcastd::bench::CommandLine(argc, argv, "mcastd-bench-restart", "\nA planned restart, a crash and the orphan sweep with 1,000 memberships.\n").none();
    Fabric fabric;
    const auto dir = fabric.scratch() / "state";
    std::filesystem::create_directories(dir);

    // ---- planned restart ----
    auto store = std::make_unique<FdStore>();
    auto d = start(fabric, dir, store.get());
    auto clients = connect_and_join(*d);
    saved(dir, kClients * kGroupsEach);
    auto t0 = Clock::now();
    d->process().signal(SIGUSR2);
    d->process().wait(30s);
    const double exited = ms_since(t0);
    Process &old_process = d->process(); // the Fabric's: its log is read once the new one answered
    // In the gap: the connection is in the store, the request waits in its socket.
    clients[0].conn->send(R"({"id":50,"op":"join","device":"ibsim0","port":1,"mgid":"ff15:b::1:1"})");
    d.reset();
    d = start(fabric, dir, store.get());
    const double ready = ms_since(t0);
    std::optional<std::string> reply;
    while ((reply = clients[0].conn->receive()) && json::parse(*reply).value("id", 0) != 50) {
    }
    const double answered = ms_since(t0);
    const bool gap_answered = reply && json::parse(*reply).contains("result");
    // Both logs are drained by a thread: a line may come a moment after the event it follows.
    old_process.wait_for_stderr("taken apart in", 10s);
    const std::string old_log = old_process.stderr_text();
    d->process().wait_for_stderr("started in", 10s);
    const std::string new_log = d->process().stderr_text();
    // By the answer: the paced audit's Gets (one every 5 s, from the start) are not the hand-over's.
    json st = status(*d);
    int kept = 0; // connections that answer, each with its 10 groups
    for (auto &c : clients) {
        const json r = json::parse(c.conn->call(R"({"id":51,"op":"list","own":true})", 51))["result"];
        kept += r.contains("ports") && r["ports"].size() == 1 && r["ports"][0]["groups"].size() == kGroupsEach;
    }
    std::printf("[ bench ] planned restart, %d memberships over %d connections: SIGUSR2 to the new instance's answer "
                "to a join sent in the gap %.1f ms (target: under 50 ms; answered: %s); new instance's SA Sets %llu, "
                "Deletes %llu, Gets %llu (target: 0 each); connections kept %d/%d (target: all)\n",
                kClients * kGroupsEach, kClients, answered, gap_answered ? "yes" : "NO",
                st["counters"]["sa_sets"].get<unsigned long long>(),
                st["counters"]["sa_deletes"].get<unsigned long long>(),
                st["counters"]["sa_gets"].get<unsigned long long>(), kept, kClients);
    const double drain = logged(old_log, "drained in "), write = logged(old_log, "state written in "),
                 hand_over = logged(old_log, "handed over in "), apart = logged(old_log, "taken apart in ");
    std::printf("[ bench ]   old instance: drain %.1f ms, state write %.1f ms, hand-over %.1f ms, taking apart %.1f "
                "ms, then its process ends: gone %.1f ms after SIGUSR2\n",
                drain, write, hand_over, apart, exited);
    const double started = logged(new_log, "started in "), ports = logged(new_log, "(ports "),
                 read = logged(new_log, "restart state read in "), took = logged(new_log, "taken back in ");
    std::printf("[ bench ]   new instance: process start (spawn, exec, libraries, config, the simulator's attach) "
                "%.1f ms, ports %.1f ms, state "
                "read %.1f ms, take-back %.1f ms, the rest of its start %.1f ms: READY %.1f ms after SIGUSR2; "
                "the join that waited %.1f ms\n",
                ready - exited - started, ports, read, took, started - ports - read - took, ready, answered - ready);
    // And the join sent in the gap: a second one of ff15:b::1:1, held from here on.
    const int held = kClients * kGroupsEach + 1;
    saved(dir, held);

    // ---- crash ----
    d->process().signal(SIGKILL);
    d->process().wait(10s);
    d.reset();
    store.reset(); // no fd store from here: the connections end with the process
    t0 = Clock::now();
    d = start(fabric, dir);
    const double up = ms_since(t0);
    int resumed = 0;
    for (auto &c : clients)
        resumed += hello(c, d->socket(), true)["resumed"] == true;
    const double all_back = ms_since(t0);
    st = status(*d);
    std::printf("[ bench ] crash (kill -9), %d memberships: new instance READY %.0f ms after start, %d/%d clients "
                "resumed by %.0f ms; SA Sets %llu, Deletes %llu\n",
                held, up, resumed, kClients, all_back,
                st["counters"]["sa_sets"].get<unsigned long long>(),
                st["counters"]["sa_deletes"].get<unsigned long long>());

    // ---- orphan sweep: the daemon and every client gone at once ----
    d->process().signal(SIGKILL);
    d->process().wait(10s);
    d.reset();
    clients.clear();
    t0 = Clock::now();
    d = start(fabric, dir);
    for (;;) { // the daemon's own count, then the SA's view of a sample
        if (status(*d)["ports"][0]["groups"] == 0)
            break;
        std::this_thread::sleep_for(5ms);
    }
    const double swept = ms_since(t0);
    const bool gone = !fabric.sa_join_state(*parse_gid("ff15:b::64:a"), fabric.port_gid("H2")) &&
                      !fabric.sa_join_state(*parse_gid("ff15:b::1:1"), fabric.port_gid("H2"));
    std::printf("[ bench ] orphan sweep, %d groups whose holders died with the daemon: all deleted %.0f ms after "
                "the new instance started (its clients were this process, which lives on, so only the end of "
                "the 3 s grace released them); the SA agrees: %s\n",
                kClients * kGroupsEach, swept, gone ? "yes" : "NO");
    return 0;
}
