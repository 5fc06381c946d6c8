// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-storm-client: many connections to rdma-mcastd doing random joins and leaves, for
// the storm test. It speaks the protocol as raw JSON (not through librdmamcast) and tracks
// what it holds from the daemon's answers and events:
//
//   mcastd-storm-client SOCKET CONNECTIONS OPS SEED DEVICE PORT MGID...
//
// prints "started" once every connection said hello, then does OPS random operations spread
// over its connections, then prints one JSON line {"held": {"<mgid>": <bits>, ...}} (the
// union per group over its connections) and holds everything until stdin closes.
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "sim/daemon_harness.hpp"

using json = nlohmann::json;
using mcastd::sim::RawClient;

namespace {

struct Conn {
    std::unique_ptr<RawClient> c;
    std::map<std::uint64_t, std::pair<std::string, unsigned>> held; // membership -> (mgid, bits)
    long long next_id = 1;
};

// Full-type states only: a NonMember can be lost at any moment when another client's full
// member goes, which would race the report below (the engine's unit tests cover that case).
const char *kStates[] = {"full", "full", "sendonly-full"};
unsigned bits_of(const std::string &s) {
    return s == "full" ? 1 : s == "nonmember" ? 2 : s == "sendonly-nonmember" ? 4 : 8;
}

// Applies an event (lost) to what the connection holds.
void take_event(Conn &k, const json &m) {
    if (m.value("event", "") == "lost")
        k.held.erase(m.at("membership").get<std::uint64_t>());
}

json call(Conn &k, json req) {
    const long long id = k.next_id++;
    req["id"] = id;
    k.c->send(req.dump());
    for (;;) {
        auto m = k.c->receive(std::chrono::seconds(60));
        if (!m)
            throw std::runtime_error("no reply to " + req.dump());
        json j = json::parse(*m);
        if (j.contains("event")) {
            take_event(k, j);
            continue;
        }
        if (j.value("id", -1LL) == id)
            return j;
    }
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 8) {
        std::fprintf(stderr, "usage: %s SOCKET CONNECTIONS OPS SEED DEVICE PORT MGID...\n", argv[0]);
        return 2;
    }
    const std::string socket = argv[1];
    const int connections = std::atoi(argv[2]), ops = std::atoi(argv[3]);
    std::mt19937 rng(static_cast<unsigned>(std::atoi(argv[4])));
    const std::string device = argv[5];
    const int port = std::atoi(argv[6]);
    std::vector<std::string> mgids(argv + 7, argv + argc);

    std::vector<Conn> conns(static_cast<std::size_t>(connections));
    for (auto &k : conns) {
        k.c = std::make_unique<RawClient>(socket);
        k.c->hello();
    }
    std::cout << "started" << std::endl;

    for (int i = 0; i < ops; ++i) {
        Conn &k = conns[std::uniform_int_distribution<std::size_t>(0, conns.size() - 1)(rng)];
        if (!k.held.empty() && std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
            auto it = std::next(k.held.begin(), std::uniform_int_distribution<long>(0, long(k.held.size()) - 1)(rng));
            json r = call(k, {{"op", "leave"}, {"membership", it->first}});
            if (!r.at("ok").get<bool>())
                throw std::runtime_error("leave failed: " + r.dump());
            k.held.erase(it);
            continue;
        }
        const std::string mgid = mgids[std::uniform_int_distribution<std::size_t>(0, mgids.size() - 1)(rng)];
        const std::string state = kStates[std::uniform_int_distribution<int>(0, 2)(rng)];
        json r = call(k, {{"op", "join"}, {"device", device}, {"port", port}, {"mgid", mgid}, {"join_state", state}});
        if (r.at("ok").get<bool>())
            k.held[r.at("result").at("membership").get<std::uint64_t>()] = {mgid, bits_of(state)};
    }
    json held = json::object();
    for (auto &k : conns)
        for (auto &[id, mb] : k.held)
            held[mb.first] = held.value(mb.first, 0u) | mb.second;
    std::cout << json{{"held", held}}.dump() << std::endl;

    char c;
    while (::read(STDIN_FILENO, &c, 1) > 0) {
    }
    return 0;
}
