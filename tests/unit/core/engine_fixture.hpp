// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Shared setup for the engine tests: one engine over a port registry, a fake SA and a fake
// clock.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/engine.hpp"
#include "fakes/fake_sa.hpp"
#include "port/port_registry.hpp"
#include "fakes/fake_timers.hpp"

namespace mcastd::test {

inline Gid gid(const char *text) {
    auto g = parse_gid(text);
    if (!g)
        throw std::invalid_argument(text);
    return *g;
}

// A usable port as discovery would report it: `dev`/`num` with the port GID `prefix`:`guid`.
inline port::PortAttributes port_attributes(const char *dev, std::uint8_t num, std::uint64_t prefix,
                                            std::uint64_t guid, const char *link_layer = "InfiniBand") {
    port::PortAttributes a;
    a.device = dev;
    a.port_num = num;
    a.gid_prefix = prefix;
    a.port_guid = guid;
    a.link_layer = link_layer;
    return a;
}

// The port goes into the registry and the engine serves it, as Service::add_port does.
inline PortIndex serve_port(port::PortRegistry &ports, Engine &engine, const port::PortAttributes &a,
                            bool usable = true) {
    const PortIndex p = ports.add(a, usable);
    engine.add_port(p);
    return p;
}

// The port's usable flag changes in the registry and the engine hears of it, as
// Service::port_usable does.
inline void set_usable(port::PortRegistry &ports, Engine &engine, PortIndex p, bool usable,
                       const std::string &why = {}) {
    if (ports.set_usable(p, usable))
        engine.port_usable_changed(p, why);
}

// Records what the engine tells clients outside of join answers.
struct RecordingSink : MembershipEventSink {
    struct Event {
        ClientId client;
        MembershipId id;
        MembershipEvent ev;
    };
    std::vector<Event> events;
    void membership_event(ClientId c, MembershipId id, const MembershipEvent &ev) override {
        events.push_back({c, id, ev});
    }
};

// A request as the SA-cost tests write it: "get 0x1", "set 0x130c7", "del 0x10003".
inline std::string sa_line(SaMethod method, std::uint64_t mask) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%s 0x%llx",
                  method == SaMethod::get   ? "get"
                  : method == SaMethod::set ? "set"
                                            : "del",
                  static_cast<unsigned long long>(mask));
    return buf;
}

struct JoinOutcome {
    int calls = 0;
    JoinResult result;
    bool ok() const { return calls == 1 && !result.error; }
    Errc code() const { return result.error ? result.error->code : Errc::internal; }
    std::string message() const { return result.error ? result.error->message : std::string(); }
};

class EngineFixture : public ::testing::Test {
protected:
    static constexpr std::uint64_t kPrefix = 0xfe80000000000000ULL;

    explicit EngineFixture(EngineConfig cfg = {}) : engine(cfg, ports, sa, timers) {
        engine.set_event_sink(&sink);
        port = add_port("mlx5_0", 1, 0x100003);
        client = engine.add_client(ClientInfo{100, 1000, 1000, "app"});
        other = engine.add_client(ClientInfo{200, 1001, 1001, "other"});
    }

    PortIndex add_port(const char *dev, std::uint8_t num, std::uint64_t guid) {
        const PortIndex p = serve_port(ports, engine, port_attributes(dev, num, kPrefix, guid));
        sa.port_gids[p] = ports.gid(p);
        return p;
    }

    void set_usable(PortIndex p, bool usable, const std::string &why = {}) {
        test::set_usable(ports, engine, p, usable, why);
    }

    Gid port_gid(PortIndex p = 0) const { return sa.port_gids.at(p); }

    static JoinRequest request(const Gid &mgid, std::uint8_t bits, const char *dev = "mlx5_0",
                               std::uint8_t port = 1) {
        JoinRequest r;
        r.device = dev;
        r.port = port;
        r.mgid = mgid;
        r.join_state = bits;
        return r;
    }

    std::shared_ptr<JoinOutcome> join(ClientId c, const JoinRequest &r, MembershipId *id = nullptr,
                                      JoinGates gates = {}) {
        auto out = std::make_shared<JoinOutcome>();
        MembershipId m = engine.join(
            c, r,
            [out](const JoinResult &res) {
                ++out->calls;
                out->result = res;
            },
            std::move(gates));
        if (id)
            *id = m;
        return out;
    }

    // Runs the SA and the clock until the engine has nothing left to do.
    void settle(int max_rounds = 10000) {
        for (int i = 0; i < max_rounds; ++i) {
            sa.run();
            if (engine.idle() && sa.pending() == 0)
                return;
            if (sa.pending() == 0 && !timers.step())
                return;
        }
        FAIL() << "engine did not settle";
    }

    std::optional<std::uint8_t> sa_bits(const Gid &mgid, PortIndex p = 0) const {
        return sa.state.join_state(mgid, port_gid(p));
    }

    std::size_t requests() const { return sa.log.size(); }

    // The requests sent since `from`, as sa_line() writes them.
    std::vector<std::string> sent(std::size_t from = 0) const {
        std::vector<std::string> out;
        for (std::size_t i = from; i < sa.log.size(); ++i)
            out.push_back(sa_line(sa.log[i].method, sa.log[i].comp_mask));
        return out;
    }

    FakeTimers timers;
    FakeSa sa;
    port::PortRegistry ports;
    Engine engine;
    RecordingSink sink;
    PortIndex port = 0;
    ClientId client = 0, other = 0;
};

} // namespace mcastd::test
