// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-create-flood: one client that asks rdma-mcastd to create as many groups as it can,
// the attack of issue 15 (before the access policy, one uid took all 1,023 MLIDs of the
// simulated fabric in 0.1 s and every later create on the fabric failed with no resources).
// It speaks the protocol as raw JSON (RawClient), not through librdmamcast:
//
//   mcastd-create-flood SOCKET DEVICE PORT N [WINDOW]
//
// says hello, pipelines N {"op":"join","device":D,"port":P,"create":true} with up to WINDOW
// (default 64) in flight, then prints one JSON line
//
//   {"ok":a,"limit":b,"denied":c,"other":d,"first_refusal":"<message>","seconds":t,
//    "refused_by":{"rule":"<name>","quota":"<name>","limit":n},
//    "codes":{"<code>":n,...},"mgids":["<created MGID>",...]}
//
// (first_refusal is "" when nothing was refused; seconds from the first request sent to the
// last answer) and holds its memberships until stdin closes. Exit 1 when the daemon did not
// answer everything within 60 s, 2 on bad usage.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/daemon_harness.hpp"

using json = nlohmann::json;
using mcastd::sim::RawClient;

int main(int argc, char **argv) {
    if (argc < 5 || argc > 6) {
        std::fprintf(stderr, "usage: %s SOCKET DEVICE PORT N [WINDOW]\n", argv[0]);
        return 2;
    }
    const std::string socket = argv[1], device = argv[2];
    const int port = std::atoi(argv[3]);
    const long n = std::atol(argv[4]);
    const long window = argc == 6 ? std::atol(argv[5]) : 64;
    if (port <= 0 || n < 0 || window <= 0) {
        std::fprintf(stderr, "usage: %s SOCKET DEVICE PORT N [WINDOW]\n", argv[0]);
        return 2;
    }

    RawClient c(socket);
    c.hello();

    long sent = 0, answered = 0, ok = 0, limit = 0, denied = 0, other = 0;
    std::string first_refusal;
    json refused_by = json::object(); // the first refusal's rule, or quota and limit
    std::map<std::string, long> codes;
    json mgids = json::array();
    auto send_next = [&] {
        ++sent;
        c.send(json{{"id", sent}, {"op", "join"}, {"device", device}, {"port", port}, {"create", true}}.dump());
    };
    const auto start = std::chrono::steady_clock::now();
    while (sent < n && sent < window)
        send_next();
    while (answered < n) {
        auto m = c.receive(std::chrono::seconds(60));
        if (!m) {
            std::fprintf(stderr, "mcastd-create-flood: %ld of %ld requests unanswered after 60 s\n", n - answered, n);
            return 1;
        }
        const json j = json::parse(*m);
        if (!j.contains("id"))
            continue; // an event
        ++answered;
        if (j.value("ok", false)) {
            ++ok;
            mgids.push_back(j.at("result").at("record").at("mgid"));
        } else {
            const json &e = j.at("error");
            const std::string code = e.value("code", "");
            ++codes[code];
            (code == "limit" ? limit : code == "denied" ? denied : other)++;
            if (first_refusal.empty()) {
                first_refusal = e.value("message", "");
                refused_by = {{"rule", e.value("rule", "")}, {"quota", e.value("quota", "")},
                              {"limit", e.value("limit", 0)}};
            }
        }
        if (sent < n)
            send_next();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    json out = {{"ok", ok},         {"limit", limit},         {"denied", denied}, {"other", other},
                {"first_refusal", first_refusal}, {"refused_by", refused_by}, {"seconds", seconds}, {"codes", codes},
                {"mgids", mgids}};
    std::cout << out.dump() << std::endl;

    char ch;
    while (::read(STDIN_FILENO, &ch, 1) > 0) {
    }
    return 0;
}
