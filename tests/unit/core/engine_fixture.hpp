// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Shared setup for the engine tests: one engine over a fake SA and a fake clock.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/engine.hpp"
#include "fakes/fake_sa.hpp"
#include "fakes/fake_timers.hpp"

namespace mcastd::test {

inline Gid gid(const char *text) {
    auto g = parse_gid(text);
    if (!g)
        throw std::invalid_argument(text);
    return *g;
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

    explicit EngineFixture(EngineConfig cfg = {}) : engine(cfg, sa, timers) {
        engine.set_event_sink(&sink);
        port = add_port("mlx5_0", 1, 0x100003);
        client = engine.add_client(ClientInfo{100, 1000, 1000, "app"});
        other = engine.add_client(ClientInfo{200, 1001, 1001, "other"});
    }

    PortIndex add_port(const char *dev, std::uint8_t num, std::uint64_t guid) {
        const Gid g = make_gid(kPrefix, guid);
        const PortIndex p = engine.add_port(dev, num, g, true);
        sa.port_gids[p] = g;
        return p;
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

    FakeTimers timers;
    FakeSa sa;
    Engine engine;
    RecordingSink sink;
    PortIndex port = 0;
    ClientId client = 0, other = 0;
};

} // namespace mcastd::test
