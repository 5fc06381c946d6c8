// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// An PortEventSink that records every call as one line, so tests compare whole sequences:
//   "usable 0 false port down", "invalidated 0 port-up ...", "sa_moved 0 1 0", ...
// `why` texts are kept, so a test can also check that a cause names the real values.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "port/port_events.hpp"
#include "port/portinfo_smp.hpp"

namespace mcastd::port::test {

constexpr std::uint8_t kDown = 1, kInit = 2, kArmed = 3, kActive = 4;

// A PortInfo as the port would report it: LID, master SM LID and state; MTU 2048.
inline PortInfo port_info(std::uint16_t lid = 3, std::uint16_t sm_lid = 1, std::uint8_t state = kActive) {
    PortInfo p;
    p.gid_prefix = 0xfe80000000000000ULL;
    p.lid = lid;
    p.master_sm_lid = sm_lid;
    p.port_state = state;
    p.phys_state = state == kDown ? 2 : 5;
    p.neighbor_mtu = 4;
    p.master_sm_sl = 0;
    return p;
}

class RecordingSink final : public PortEventSink {
public:
    void port_usable(PortIndex port, bool usable, const std::string &why) override {
        add("usable " + std::to_string(port) + (usable ? " true " : " false ") + why);
    }
    void port_invalidated(PortIndex port, Trigger trigger, const std::string &why) override {
        add("invalidated " + std::to_string(port) + " " + trigger_name(trigger) + " " + why);
        if (on_invalidated)
            on_invalidated(port);
    }
    void sa_moved(PortIndex port, std::uint16_t sm_lid, std::uint8_t sm_sl) override {
        add("sa_moved " + std::to_string(port) + " " + std::to_string(sm_lid) + " " +
            std::to_string(sm_sl));
        if (on_sa_moved)
            on_sa_moved(port, sm_lid, sm_sl);
    }
    void sm_seen(PortIndex port, std::uint16_t lid, std::uint64_t guid,
                 std::uint32_t act_count) override {
        add("sm_seen " + std::to_string(port) + " " + std::to_string(lid) + " " +
            std::to_string(guid) + " " + std::to_string(act_count));
    }
    void port_info(PortIndex port, std::uint16_t lid, std::uint8_t state, std::uint8_t mtu) override {
        add("port_info " + std::to_string(port) + " " + std::to_string(lid) + " " +
            std::to_string(state) + " " + std::to_string(mtu));
    }
    void audit_due(PortIndex port) override { add("audit " + std::to_string(port)); }
    void pkey_table(PortIndex port, const std::vector<std::uint16_t> &pkeys) override {
        std::string line = "pkeys " + std::to_string(port);
        for (std::uint16_t k : pkeys) {
            char hex[8];
            std::snprintf(hex, sizeof hex, " %04x", k);
            line += hex;
        }
        add(line);
    }

    // Everything recorded since the last take(), and forgets it.
    std::vector<std::string> take() { return std::exchange(lines, {}); }
    // Only the lines starting with `prefix` ("invalidated"), in order, and forgets everything.
    std::vector<std::string> take(const std::string &prefix) {
        std::vector<std::string> out;
        for (auto &l : take())
            if (l.rfind(prefix, 0) == 0)
                out.push_back(std::move(l));
        return out;
    }

    std::vector<std::string> lines;
    // Runs after each call is recorded: lets a test act from inside a callback.
    std::function<void(const std::string &line)> on_call;
    // What Service does with sa_moved: point the SA transactions at the new SM.
    std::function<void(PortIndex, std::uint16_t, std::uint8_t)> on_sa_moved;
    // What the daemon does with port_invalidated: the engine re-joins the port, and its one
    // "memberships gone" path comes back to the port rules (on_memberships_gone).
    std::function<void(PortIndex)> on_invalidated;

private:
    void add(std::string line) {
        lines.push_back(line);
        if (on_call)
            on_call(line);
    }
};

} // namespace mcastd::port::test
