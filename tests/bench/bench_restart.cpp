// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-restart: what a restart and a crash of the daemon cost, on a simulated fabric
// with 1,000 memberships over 100 client connections (10 groups each, 1,000 groups).
//
// There is no service manager here, so no fd store: the clients lose their connections and
// resume their sessions by token (under systemd the connections stay; tests/system/lab shows
// that path). Figures:
//  - planned restart (SIGUSR2): from the signal until the new instance answers a join, and
//    the MCMemberRecord MADs the new instance sent by then (target: 0 Sets, 0 Deletes);
//  - crash (kill -9): from the new instance's READY until every client has resumed;
//  - orphan sweep: kill -9 of the daemon with every client gone, then from the new
//    instance's start until the SA holds none of the 1,000 groups.
#include <nlohmann/json.hpp>

#include <csignal>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
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

// sa.max_rate 0: the orphan sweep's Deletes at the daemon's own speed, as a small fabric may run it.
std::unique_ptr<Daemon> start(Fabric &fabric, const std::filesystem::path &dir) {
    return std::make_unique<Daemon>(fabric, "H2",
                                    R"({"restart":{"grace_ms":3000},"log_level":"warning","sa":{"max_rate":0}})",
                                    std::vector<std::string>{"--state-dir", dir.string()});
}

} // namespace

int main(int argc, char **argv) {
    mcastd::bench::CommandLine(argc, argv, "mcastd-bench-restart", "\nA planned restart, a crash and the orphan sweep with 1,000 memberships.\n").none();
    Fabric fabric;
    const auto dir = fabric.scratch() / "state";
    std::filesystem::create_directories(dir);

    // ---- planned restart ----
    auto d = start(fabric, dir);
    auto clients = connect_and_join(*d);
    wait_saved_memberships(dir, kClients * kGroupsEach, 60s);
    auto t0 = Clock::now();
    d->process().signal(SIGUSR2);
    d->process().wait(30s);
    const double exited = ms_since(t0);
    d.reset();
    d = start(fabric, dir);
    const double ready = ms_since(t0);
    hello(clients[0], d->socket(), true);
    clients[0].conn->call(
        R"({"id":50,"op":"join","device":"ibsim0","port":1,"mgid":"ff15:b::1:1"})", 50);
    const double answered = ms_since(t0);
    json st = status(*d);
    std::printf("[ bench ] planned restart, %d memberships over %d connections: old instance gone %.0f ms after "
                "SIGUSR2, new one READY at %.0f ms, first join answered at %.0f ms; new instance's SA Sets %llu, "
                "Deletes %llu, Gets %llu (target: 0 Sets, 0 Deletes)\n",
                kClients * kGroupsEach, kClients, exited, ready, answered,
                st["counters"]["sa_sets"].get<unsigned long long>(),
                st["counters"]["sa_deletes"].get<unsigned long long>(),
                st["counters"]["sa_gets"].get<unsigned long long>());
    for (int i = 1; i < kClients; ++i)
        hello(clients[i], d->socket(), true);
    wait_saved_memberships(dir, kClients * kGroupsEach, 60s);

    // ---- crash ----
    d->process().signal(SIGKILL);
    d->process().wait(10s);
    d.reset();
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
                kClients * kGroupsEach, up, resumed, kClients, all_back,
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
