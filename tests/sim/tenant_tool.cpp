// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-sim-tenant: one tenant of a shared host, hostile or not, for the tenant-isolation tests
// (test_tenant_sim, mcastd-bench-tenant). A test runs it as an ordinary user (setpriv), so the
// daemon judges it by its real credentials. It speaks the protocol as raw JSON:
//
//   mcastd-sim-tenant SOCKET DEVICE PORT MODE ARGS...
//
// Every mode prints "ready ..." once it is doing what it does (a flood: once it started), then
// goes on until stdin closes, and prints one JSON line of what happened. Modes:
//
//   idle N              N connections that never say hello; reports how many the daemon
//                       refused at once, closed later (the hello deadline) or keeps open
//   monitors N          N connections that say hello and `monitor` and never read again
//   churn MGID          join and leave MGID as fast as the daemon answers (a monitor's feed)
//   creates N           N creates with SA-assigned MGIDs (spends the create quota)
//   probes PREFIX N     rounds of N joins of absent MGIDs PREFIX1..PREFIXn (hex), pipelined 64
//                       at a time, until stdin closes
//   loop MGID           joins and leaves of MGID, one after the other, until stdin closes
//   refused MGID N      rounds of N joins the policy refuses (an MGID outside the uid's rule),
//                       pipelined, until stdin closes
//   hold PREFIX G N     N memberships over G groups PREFIX1..PREFIXg (hex), then holds them
//   badname MGID        its process name made invalid UTF-8 (PR_SET_NAME "\xff\xfe<>"), then
//                       holds one membership of MGID
//   victim HELD LOOP MS holds HELD; joins and leaves LOOP every MS ms, timing each join;
//                       "peek" prints {"joins": n} since the last report, "report" prints
//                       {"joins","failed","p50_ms","p99_ms","max_ms","errors"} of those joins
//
// Exit 0 after its report, 1 when the daemon could not be reached, 2 on bad usage.
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sim/daemon_harness.hpp"

using json = nlohmann::json;
using mcastd::sim::RawClient;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

std::string socket_path, device;
int port = 1;

json join_req(long long id, const std::string &mgid) {
    return {{"id", id}, {"op", "join"}, {"device", device}, {"port", port}, {"mgid", mgid}, {"join_state", "full"}};
}

// A reply to `id`, events skipped; null on timeout or a closed connection.
json call(RawClient &c, const json &req, std::chrono::milliseconds timeout = 30s) {
    const long long id = req.at("id");
    c.send(req.dump());
    const auto end = Clock::now() + timeout;
    while (Clock::now() < end) {
        auto m = c.receive(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()));
        if (!m)
            return nullptr;
        json j = json::parse(*m, nullptr, false);
        if (j.is_object() && j.contains("id") && j["id"] == id)
            return j;
    }
    return nullptr;
}

bool hello(RawClient &c) {
    const json r = call(c, {{"id", 1}, {"op", "hello"}, {"versions", {2}}, {"client", "tenant"}});
    return r.is_object() && r.value("ok", false);
}

std::string code_of(const json &r) {
    if (!r.is_object())
        return "no-answer";
    if (r.value("ok", false))
        return "ok";
    return r["error"].value("code", "?");
}

// Holds until stdin closes; a line is handed to `on_line` (the victim's "peek" and "report").
void hold(const std::function<void(const std::string &)> &on_line = {}) {
    for (std::string line; std::getline(std::cin, line);)
        if (on_line)
            on_line(line);
}

// Runs `round` on a thread of its own until stdin closes; "ready" is said first.
void flood(const std::function<void(const std::atomic<bool> &stop)> &round) {
    std::atomic<bool> stop{false};
    std::cout << "ready" << std::endl;
    std::thread t([&] {
        while (!stop)
            round(stop);
    });
    hold();
    stop = true;
    t.join();
}

void add_codes(json &into, const json &codes) {
    for (const auto &[code, n] : codes.items())
        into[code] = into.value(code, 0) + n.get<int>();
}

int fd_connect() {
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket_path.c_str(), sizeof a.sun_path - 1);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0)
        return fd;
    if (fd >= 0)
        ::close(fd);
    return -1;
}

// ---- modes ----

int idle(int n) {
    std::vector<int> fds;
    int failed = 0;
    for (int i = 0; i < n; ++i) {
        const int fd = fd_connect();
        fd < 0 ? ++failed : (fds.push_back(fd), 0);
    }
    std::cout << "ready " << fds.size() << std::endl;
    hold();
    // Each one now: refused at once (its `limit`, then the close), closed later (no hello in
    // time), or still open.
    int refused = 0, closed = 0, open = 0;
    for (int fd : fds) {
        char buf[4096];
        const ssize_t r = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r > 0 && std::string(buf, static_cast<std::size_t>(r)).find("\"limit\"") != std::string::npos)
            ++refused;
        else if (r == 0)
            ++closed;
        else
            ++open;
        ::close(fd);
    }
    std::cout << json{{"opened", fds.size()}, {"connect_failed", failed}, {"refused", refused}, {"closed", closed},
                      {"open", open}}
                     .dump()
              << std::endl;
    return 0;
}

int monitors(int n) {
    std::vector<std::unique_ptr<RawClient>> conns;
    std::map<std::string, int> codes;
    for (int i = 0; i < n; ++i) {
        std::unique_ptr<RawClient> c;
        try {
            c = std::make_unique<RawClient>(socket_path);
        } catch (const std::exception &) {
            ++codes["connect-failed"];
            continue;
        }
        if (!hello(*c)) {
            ++codes["no-hello"];
            continue;
        }
        const std::string r = code_of(call(*c, {{"id", 2}, {"op", "monitor"}, {"enable", true}}));
        ++codes[r];
        if (r == "ok")
            conns.push_back(std::move(c)); // and never read from it again
    }
    std::cout << "ready " << conns.size() << std::endl;
    hold();
    std::cout << json{{"monitoring", conns.size()}, {"codes", codes}}.dump() << std::endl;
    return 0;
}

int churn(const std::string &mgid) {
    RawClient c(socket_path);
    if (!hello(c))
        return 1;
    std::atomic<bool> stop{false};
    std::map<std::string, int> codes;
    std::thread t([&] {
        for (long long id = 10; !stop; id += 2) {
            const json r = call(c, join_req(id, mgid));
            ++codes[code_of(r)];
            if (code_of(r) == "ok")
                call(c, {{"id", id + 1}, {"op", "leave"}, {"membership", r["result"]["membership"]}});
            else
                std::this_thread::sleep_for(10ms);
        }
    });
    std::cout << "ready" << std::endl;
    hold();
    stop = true;
    t.join();
    std::cout << json{{"codes", codes}}.dump() << std::endl;
    return 0;
}

// Sends `reqs` keeping up to 64 in flight; returns the reply of each, by id.
std::map<long long, json> pipelined(RawClient &c, const std::vector<json> &reqs) {
    std::map<long long, json> out;
    std::size_t next = 0, inflight = 0;
    const auto end = Clock::now() + 120s;
    while ((next < reqs.size() || inflight) && Clock::now() < end) {
        while (next < reqs.size() && inflight < 64) {
            c.send(reqs[next++].dump());
            ++inflight;
        }
        auto m = c.receive(5s);
        if (!m)
            break;
        json j = json::parse(*m, nullptr, false);
        if (j.is_object() && j.contains("id") && !j["id"].is_null()) {
            out[j["id"].get<long long>()] = j;
            --inflight;
        }
    }
    return out;
}

json tally(const std::map<long long, json> &replies, std::size_t asked) {
    std::map<std::string, int> codes;
    std::string first_limit;
    for (const auto &[id, r] : replies) {
        const std::string code = code_of(r);
        ++codes[code];
        if (code == "limit" && first_limit.empty())
            first_limit = r["error"].value("message", "");
    }
    codes["no-answer"] += static_cast<int>(asked - replies.size());
    return {{"codes", codes}, {"first_limit", first_limit}};
}

int creates(int n) {
    RawClient c(socket_path);
    if (!hello(c))
        return 1;
    std::vector<json> reqs;
    for (int i = 0; i < n; ++i)
        reqs.push_back({{"id", 100 + i}, {"op", "join"}, {"device", device}, {"port", port}, {"create", true}});
    const json r = tally(pipelined(c, reqs), reqs.size());
    std::cout << "ready" << std::endl;
    hold();
    std::cout << r.dump() << std::endl;
    return 0;
}

int probes(const std::string &prefix, int n) {
    RawClient c(socket_path);
    if (!hello(c))
        return 1;
    json codes = json::object();
    std::string first_limit;
    long long id = 100;
    flood([&](const std::atomic<bool> &) {
        std::vector<json> reqs;
        for (int i = 1; i <= n; ++i) {
            char mgid[64];
            std::snprintf(mgid, sizeof mgid, "%s%x", prefix.c_str(), i);
            reqs.push_back(join_req(id++, mgid));
        }
        const json r = tally(pipelined(c, reqs), reqs.size());
        add_codes(codes, r["codes"]);
        if (first_limit.empty())
            first_limit = r["first_limit"];
    });
    std::cout << json{{"codes", codes}, {"first_limit", first_limit}}.dump() << std::endl;
    return 0;
}

int loop(const std::string &mgid) {
    RawClient c(socket_path);
    if (!hello(c))
        return 1;
    std::map<std::string, int> codes;
    long long id = 10;
    flood([&](const std::atomic<bool> &) {
        const json r = call(c, join_req(id++, mgid));
        ++codes[code_of(r)];
        if (code_of(r) == "ok")
            call(c, {{"id", id++}, {"op", "leave"}, {"membership", r["result"]["membership"]}});
    });
    std::cout << json{{"codes", codes}}.dump() << std::endl;
    return 0;
}

int refused(const std::string &mgid, int n) {
    RawClient c(socket_path);
    if (!hello(c))
        return 1;
    json codes = json::object();
    long long id = 100;
    flood([&](const std::atomic<bool> &) {
        std::vector<json> reqs;
        for (int i = 0; i < n; ++i)
            reqs.push_back(join_req(id++, mgid));
        add_codes(codes, tally(pipelined(c, reqs), reqs.size())["codes"]);
    });
    std::cout << json{{"codes", codes}}.dump() << std::endl;
    return 0;
}

int hold_many(const std::string &prefix, int groups, int n) {
    RawClient c(socket_path);
    if (!hello(c))
        return 1;
    std::vector<json> reqs;
    for (int i = 0; i < n; ++i) {
        char mgid[64];
        std::snprintf(mgid, sizeof mgid, "%s%x", prefix.c_str(), 1 + i % groups);
        reqs.push_back(join_req(100 + i, mgid));
    }
    const json r = tally(pipelined(c, reqs), reqs.size());
    std::cout << "ready" << std::endl;
    hold();
    std::cout << r.dump() << std::endl;
    return 0;
}

int badname(const std::string &mgid) {
    ::prctl(PR_SET_NAME, "\xff\xfe<>", 0, 0, 0);
    RawClient c(socket_path);
    if (!hello(c))
        return 1;
    const std::string code = code_of(call(c, join_req(10, mgid)));
    std::cout << "ready " << code << std::endl;
    hold();
    std::cout << json{{"join", code}}.dump() << std::endl;
    return 0;
}

int victim(const std::string &held, const std::string &looped, int every_ms) {
    RawClient c(socket_path);
    if (!hello(c))
        return 1;
    const json h = call(c, join_req(2, held));
    if (code_of(h) != "ok") {
        std::cerr << "victim: cannot hold " << held << ": " << h.dump() << std::endl;
        return 1;
    }
    std::mutex mu;
    std::vector<double> ms;
    std::vector<std::string> errors;
    int failed = 0;
    std::atomic<bool> stop{false};
    std::thread t([&] {
        for (long long id = 10; !stop; id += 2) {
            const auto t0 = Clock::now();
            const json r = call(c, join_req(id, looped));
            const double took = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            {
                std::lock_guard<std::mutex> lock(mu);
                if (code_of(r) == "ok") {
                    ms.push_back(took);
                } else {
                    ++failed;
                    if (errors.size() < 5)
                        errors.push_back(r.is_object() ? r.dump() : "no answer");
                }
            }
            if (code_of(r) == "ok")
                call(c, {{"id", id + 1}, {"op", "leave"}, {"membership", r["result"]["membership"]}});
            std::this_thread::sleep_for(std::chrono::milliseconds(every_ms));
        }
    });
    auto report = [&] {
        std::lock_guard<std::mutex> lock(mu);
        std::vector<double> s = ms;
        std::sort(s.begin(), s.end());
        auto pct = [&](double p) {
            return s.empty() ? 0.0 : s[std::min(s.size() - 1, static_cast<std::size_t>(p * static_cast<double>(s.size())))];
        };
        std::cout << json{{"joins", s.size()},
                          {"failed", failed},
                          {"p50_ms", pct(0.5)},
                          {"p99_ms", pct(0.99)},
                          {"max_ms", s.empty() ? 0.0 : s.back()},
                          {"slowest_ms", std::vector<double>(s.end() - std::min<std::size_t>(s.size(), 5), s.end())},
                          {"errors", errors}}
                         .dump()
                  << std::endl;
        ms.clear();
        errors.clear();
        failed = 0;
    };
    std::cout << "ready" << std::endl;
    hold([&](const std::string &line) {
        if (line == "report") {
            report();
        } else if (line == "peek") {
            std::lock_guard<std::mutex> lock(mu);
            std::cout << json{{"joins", ms.size()}}.dump() << std::endl;
        }
    });
    stop = true;
    t.join();
    report();
    return 0;
}

void usage() {
    std::fprintf(stderr, "usage: mcastd-sim-tenant SOCKET DEVICE PORT MODE ARGS... (see the source's head)\n");
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 5) {
        usage();
        return 2;
    }
    socket_path = argv[1];
    device = argv[2];
    port = std::atoi(argv[3]);
    const std::string mode = argv[4];
    const std::vector<std::string> a(argv + 5, argv + argc);
    auto need = [&](std::size_t n) {
        if (a.size() != n) {
            usage();
            std::exit(2);
        }
    };
    try {
        if (mode == "idle") return need(1), idle(std::stoi(a[0]));
        if (mode == "monitors") return need(1), monitors(std::stoi(a[0]));
        if (mode == "churn") return need(1), churn(a[0]);
        if (mode == "creates") return need(1), creates(std::stoi(a[0]));
        if (mode == "probes") return need(2), probes(a[0], std::stoi(a[1]));
        if (mode == "loop") return need(1), loop(a[0]);
        if (mode == "refused") return need(2), refused(a[0], std::stoi(a[1]));
        if (mode == "hold") return need(3), hold_many(a[0], std::stoi(a[1]), std::stoi(a[2]));
        if (mode == "badname") return need(1), badname(a[0]);
        if (mode == "victim") return need(3), victim(a[0], a[1], std::stoi(a[2]));
    } catch (const std::exception &e) {
        std::cerr << "mcastd-sim-tenant: " << e.what() << std::endl;
        return 1;
    }
    usage();
    return 2;
}
