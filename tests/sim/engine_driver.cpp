// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-engine-driver: the real engine, SA client, transactions and libibumad transport
// (daemon/service/service.hpp over daemon/host/host_ports.hpp) behind a line protocol on stdin, for the sim
// tier. It runs attached to
// one simulated node; each answer is one JSON line on stdout carrying the command's tag.
//
//   join  TAG mgid=M|0 state=full|nonmember|sendonly-nonmember|sendonly-full [client=N]
//         [qkey=Q] [pkey=P] [sl=S] [tclass=T] [flow=F] [hop=H] [mtu=SEL:V] [rate=SEL:V]
//         [scope=S] [device=D] [port=N]
//   leave TAG id=N [client=N]
//   bulk  TAG count=N prefix=MGIDPREFIX [state=...]   N joins of distinct groups at once
//                                                      (prefix=0: N MGID-0 joins, N new groups)
//   bulk-leave TAG                                     leaves what the last bulk joined
//   drop  TAG client=N                                 the client goes away (releases all)
//   idle  TAG                                          answers once no SA work is pending
//   stats TAG
//
// Startup prints {"ready":true,...}; EOF on stdin ends the driver.
#include <getopt.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/sa_status.hpp"
#include "logging/logging.hpp"
#include "logging/membership_log.hpp"
#include "host/host_ports.hpp"
#include "service/service.hpp"

using json = nlohmann::json;
using namespace mcastd;

namespace {

void emit(const json &j) {
    std::cout << j.dump() << std::endl;
}

std::optional<std::uint64_t> number(const std::string &s) {
    std::uint64_t v = 0;
    const bool hex = s.rfind("0x", 0) == 0;
    const char *b = s.data() + (hex ? 2 : 0), *e = s.data() + s.size();
    auto [p, ec] = std::from_chars(b, e, v, hex ? 16 : 10);
    if (ec != std::errc() || p != e || b == e)
        return std::nullopt;
    return v;
}

std::optional<std::uint8_t> join_state(const std::string &s) {
    if (s == "full") return join::full;
    if (s == "nonmember") return join::non_member;
    if (s == "sendonly-nonmember") return join::send_only_non_member;
    if (s == "sendonly-full") return join::send_only_full;
    auto n = number(s);
    if (n && *n <= 0xf) return static_cast<std::uint8_t>(*n);
    return std::nullopt;
}

json record_json(const McRecord &r) {
    return json{{"mgid", format_gid(r.mgid)}, {"mlid", r.mlid},           {"qkey", r.qkey},
                {"pkey", r.pkey},             {"sl", r.sl},               {"mtu", r.mtu},
                {"rate", r.rate},             {"tclass", r.tclass},       {"flow_label", r.flow_label},
                {"hop_limit", r.hop_limit},   {"scope", r.scope},         {"join_state", r.join_state}};
}

json error_json(const Error &e) {
    json j{{"ok", false}, {"error", std::string(errc_name(e.code))}, {"message", e.message}};
    if (e.sa_status) {
        j["sa_status"] = *e.sa_status;
        j["sa_status_name"] = sa_status_name(*e.sa_status);
    }
    return j;
}

class Driver {
public:
    Driver(Service &svc, HostPorts &host) : svc_(svc), host_(host) {}

    void line(const std::string &text) {
        std::istringstream in(text);
        std::string cmd, tag;
        in >> cmd >> tag;
        std::map<std::string, std::string> kv;
        for (std::string w; in >> w;) {
            auto eq = w.find('=');
            kv[w.substr(0, eq)] = eq == std::string::npos ? "" : w.substr(eq + 1);
        }
        try {
            if (cmd.empty()) return;
            if (cmd == "join") return join(tag, kv);
            if (cmd == "leave") return leave(tag, kv);
            if (cmd == "bulk") return bulk(tag, kv);
            if (cmd == "bulk-leave") return bulk_leave(tag);
            if (cmd == "drop") return drop(tag, kv);
            if (cmd == "idle") return when_idle(tag);
            if (cmd == "stats") return stats(tag);
            if (cmd == "ports") return ports(tag);
            emit({{"tag", tag}, {"ok", false}, {"error", "unknown command " + cmd}});
        } catch (const std::exception &e) {
            emit({{"tag", tag}, {"ok", false}, {"error", e.what()}});
        }
    }

private:
    ClientId client(const std::map<std::string, std::string> &kv) {
        const std::string n = kv.count("client") ? kv.at("client") : "0";
        auto [it, fresh] = clients_.try_emplace(n, 0);
        if (fresh)
            it->second = svc_.add_client(ClientInfo{getpid(), getuid(), getgid(), "driver-" + n}, nullptr);
        return it->second;
    }

    JoinRequest request(const std::map<std::string, std::string> &kv) {
        const port::PortAttributes &p0 = svc_.ports().at(0).attributes;
        JoinRequest r;
        r.device = kv.count("device") ? kv.at("device") : p0.device;
        r.port = static_cast<std::uint8_t>(kv.count("port") ? *number(kv.at("port")) : p0.port_num);
        const std::string m = kv.count("mgid") ? kv.at("mgid") : "0";
        if (m != "0") {
            auto g = parse_gid(m);
            if (!g) throw std::invalid_argument("bad mgid " + m);
            r.mgid = *g;
        }
        auto js = join_state(kv.count("state") ? kv.at("state") : "full");
        if (!js) throw std::invalid_argument("bad state");
        r.join_state = *js;
        auto num = [&](const char *k) { return number(kv.at(k)).value(); };
        auto sel = [&](const char *k) {
            const std::string v = kv.at(k);
            const auto c = v.find(':');
            return Selected{static_cast<Selector>(*number(v.substr(0, c))),
                            static_cast<std::uint8_t>(*number(v.substr(c + 1)))};
        };
        if (kv.count("qkey")) r.params.qkey = static_cast<std::uint32_t>(num("qkey"));
        if (kv.count("pkey")) r.params.pkey = static_cast<std::uint16_t>(num("pkey"));
        if (kv.count("sl")) r.params.sl = static_cast<std::uint8_t>(num("sl"));
        if (kv.count("tclass")) r.params.tclass = static_cast<std::uint8_t>(num("tclass"));
        if (kv.count("flow")) r.params.flow_label = static_cast<std::uint32_t>(num("flow"));
        if (kv.count("hop")) r.params.hop_limit = static_cast<std::uint8_t>(num("hop"));
        if (kv.count("mtu")) r.params.mtu = sel("mtu");
        if (kv.count("rate")) r.params.rate = sel("rate");
        if (kv.count("scope")) r.scope = static_cast<std::uint8_t>(num("scope"));
        return r;
    }

    void join(const std::string &tag, const std::map<std::string, std::string> &kv) {
        const ClientId c = client(kv);
        const auto t0 = std::chrono::steady_clock::now();
        svc_.join(c, request(kv), [tag, t0](const JoinResult &res) {
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            json j = res.error ? error_json(*res.error) : json{{"ok", true}, {"record", record_json(res.record)}};
            j["tag"] = tag;
            j["id"] = res.id;
            j["ms"] = ms;
            emit(j);
        });
    }

    void leave(const std::string &tag, const std::map<std::string, std::string> &kv) {
        auto err = svc_.leave(client(kv), number(kv.at("id")).value());
        json j = err ? error_json(*err) : json{{"ok", true}};
        j["tag"] = tag;
        emit(j);
    }

    void drop(const std::string &tag, const std::map<std::string, std::string> &kv) {
        const std::string n = kv.count("client") ? kv.at("client") : "0";
        if (auto it = clients_.find(n); it != clients_.end()) {
            svc_.remove_client(it->second);
            clients_.erase(it);
        }
        emit({{"tag", tag}, {"ok", true}});
    }

    // N joins of distinct groups submitted at once: what the engine, the transaction window
    // and the SA sustain together.
    void bulk(const std::string &tag, const std::map<std::string, std::string> &kv) {
        const auto count = number(kv.at("count")).value();
        const std::string prefix = kv.at("prefix");
        auto st = std::make_shared<BulkState>();
        st->tag = tag;
        st->left = count;
        st->t0 = std::chrono::steady_clock::now();
        bulk_ids_.clear();
        auto kv2 = kv;
        for (std::uint64_t i = 1; i <= count; ++i) {
            std::ostringstream m;
            if (prefix == "0")
                m << "0";
            else
                m << prefix << std::hex << i;
            kv2["mgid"] = m.str();
            const MembershipId id = svc_.join(client(kv2), request(kv2), [st](const JoinResult &res) {
                (res.error ? st->failed : st->ok)++;
                if (res.error && st->first_error.empty())
                    st->first_error = res.error->message;
                if (--st->left == 0) {
                    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - st->t0).count();
                    emit({{"tag", st->tag}, {"ok", st->failed == 0}, {"joined", st->ok},
                          {"failed", st->failed}, {"seconds", s}, {"per_second", double(st->ok) / s},
                          {"first_error", st->first_error}});
                }
            });
            bulk_ids_.push_back({client(kv2), id});
        }
    }

    void bulk_leave(const std::string &tag) {
        for (auto [c, id] : bulk_ids_)
            svc_.leave(c, id);
        bulk_ids_.clear();
        emit({{"tag", tag}, {"ok", true}});
    }

    void when_idle(const std::string &tag) {
        svc_.when_idle([tag] { emit({{"tag", tag}, {"ok", true}}); });
    }

    void stats(const std::string &tag) {
        const auto &s = svc_.stats();
        const auto t = host_.transactions().total_stats();
        emit({{"tag", tag},
              {"ok", true},
              {"engine", {{"joins", s.joins}, {"joins_local", s.joins_local}, {"joins_failed", s.joins_failed},
                          {"leaves", s.leaves}, {"sa_sets", s.sa_sets}, {"sa_deletes", s.sa_deletes},
                          {"sa_gets", s.sa_gets}}},
              {"sa", {{"sent", t.sent}, {"retransmits", t.retransmits}, {"timeouts", t.timeouts},
                      {"bounces", t.bounces}, {"responses", t.responses}, {"late", t.late}}}});
    }

    // Refreshes every port from its PortInfo first, so the answer is the live state.
    void ports(const std::string &tag) {
        auto left = std::make_shared<std::size_t>(svc_.ports().size());
        for (PortIndex i = 0; i < svc_.ports().size(); ++i)
            host_.refresh_port(i, [this, tag, left] {
                if (--*left == 0)
                    print_ports(tag);
            });
    }

    void print_ports(const std::string &tag) {
        json out = json::array();
        for (const port::RegisteredPort &r : svc_.ports()) {
            const port::PortAttributes &p = r.attributes;
            out.push_back({{"device", p.device}, {"port", p.port_num}, {"lid", p.lid}, {"sm_lid", p.sm_lid},
                           {"sm_sl", p.sm_sl}, {"state", p.state}, {"mtu", mtu_bytes(p.mtu)},
                           {"rate_gbps", p.rate_gbps}, {"link_layer", p.link_layer},
                           {"port_gid", format_gid(p.port_gid())}, {"pkeys", p.pkeys.size()}});
        }
        emit({{"tag", tag}, {"ok", true}, {"ports", out}});
    }

    struct BulkState {
        std::string tag;
        std::uint64_t left = 0, ok = 0, failed = 0;
        std::string first_error;
        std::chrono::steady_clock::time_point t0;
    };

    Service &svc_;
    HostPorts &host_;
    std::map<std::string, ClientId> clients_;
    std::vector<std::pair<ClientId, MembershipId>> bulk_ids_;
};

void usage() {
    std::puts("usage: mcastd-engine-driver [--port DEV[/N]] [--sa-timeout-ms MS] [--sa-max-timeout-ms MS]\n"
              "                            [--sa-tries N] [--sa-window N] [--allow-ipoib] [--allow-rdma-cm]\n"
              "                            [--no-audit] [--log-level LEVEL]\n"
              "Commands on stdin, one JSON answer per line on stdout (see the source header).");
}

} // namespace

int main(int argc, char **argv) {
    HostPortsConfig cfg;
    cfg.sa.pacing_rate = 0; // sa.max_rate 0: the tests measure the engine's own cost against the SA

    EngineConfig engine;
    static const option opts[] = {{"port", required_argument, nullptr, 'p'},
                                  {"sa-timeout-ms", required_argument, nullptr, 't'},
                                  {"sa-max-timeout-ms", required_argument, nullptr, 'm'},
                                  {"sa-tries", required_argument, nullptr, 'n'},
                                  {"sa-window", required_argument, nullptr, 'w'},
                                  {"allow-ipoib", no_argument, nullptr, 'I'},
                                  {"allow-rdma-cm", no_argument, nullptr, 'R'},
                                  {"log-level", required_argument, nullptr, 'l'},
                                  {"no-audit", no_argument, nullptr, 'A'},
                                  {"help", no_argument, nullptr, 'h'},
                                  {nullptr, 0, nullptr, 0}};
    // stdout carries the line protocol: every log line goes to stderr, as the daemon's do.
    logging::setup(spdlog::level::warn, "console");
    for (int c; (c = getopt_long(argc, argv, "", opts, nullptr)) != -1;) {
        switch (c) {
        case 'p': cfg.ports.push_back(optarg); break;
        case 't': cfg.sa.first_timeout = std::chrono::milliseconds(std::stoul(optarg)); break;
        case 'm': cfg.sa.max_timeout = std::chrono::milliseconds(std::stoul(optarg)); break;
        case 'n': cfg.sa.max_tries = static_cast<unsigned>(std::stoul(optarg)); break;
        case 'w': cfg.sa.window = static_cast<unsigned>(std::stoul(optarg)); break;
        case 'I': engine.allow_ipoib_mgids = true; break;
        case 'R': engine.allow_rdma_cm_mgids = true; break;
        case 'l': spdlog::set_level(spdlog::level::from_str(optarg)); break;
        case 'A': cfg.monitor.audit_per_second = 0; break; // a test that counts every Get
        case 'h': usage(); return 0;
        default: usage(); return 2;
        }
    }
    try {
        runtime::EventLoop loop;
        HostPorts host(loop, cfg);
        // As the daemon's: routine lines under the default per-uid rate limit.
        logging::RoutineLimiter routine(loop.timers(), {}, [](const logging::FoldSummary &s) {
            logging::log_folded(s, {});
        });
        Service svc(engine, host.sa(), loop.timers());
        host.open(svc);
        svc.add_observer(logging::membership_log(svc, routine));
        Driver driver(svc, host);
        std::string buffer;
        auto in = loop.watch_io(STDIN_FILENO, EPOLLIN, [&](std::uint32_t) {
            char chunk[4096];
            const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
            if (n <= 0) {
                loop.exit(0);
                return;
            }
            buffer.append(chunk, static_cast<std::size_t>(n));
            for (std::size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
                const std::string l = buffer.substr(0, nl);
                buffer.erase(0, nl + 1);
                driver.line(l);
            }
        });
        json ports = json::array();
        for (const port::RegisteredPort &r : svc.ports())
            ports.push_back({{"device", r.device()}, {"port", r.number()}, {"lid", r.attributes.lid},
                             {"sm_lid", r.attributes.sm_lid}, {"port_gid", format_gid(r.gid())}});
        emit({{"ready", true}, {"ports", ports},
              {"sa_timeout_bound_ms", sa::timeout_bound(cfg.sa).count()}});
        const int rc = loop.run();
        host.quiesce(); // before the engine goes: no MAD is admitted after the loop
        return rc;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mcastd-engine-driver: %s\n", e.what());
        return 1;
    }
}
