// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the port event sources (PortInfo and SMInfoRecord polls, verbs async events, the
// membership audit's clock) tell the rest of the daemon. Service implements it and drives the
// engine; unit tests implement it with a recorder.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sa_service.hpp" // PortIndex

namespace mcastd::port {

// Why a port's memberships may be gone at the SA (doc/architecture.md §6).
enum class Trigger : std::uint8_t {
    client_reregister, // the SM asked for it (IBV_EVENT_CLIENT_REREGISTER)
    lid_change,        // the port's LID changed
    pkey_change,       // the P_Key table changed and moved the index the SA MADs use
    sm_change,         // the master SM's LID changed (failover, or the SM moved)
    sm_restart,        // the SM's GUID changed or its ActCount went backwards
    port_up,           // the port came back (ACTIVE after DOWN): the SA dropped everything
};
const char *trigger_name(Trigger t);

class PortEventSink {
public:
    virtual ~PortEventSink() = default;

    // The port is usable (ACTIVE with an SM) or not. `why` names the cause for the log and for
    // the `lost` event members get ("port down", "no subnet manager").
    virtual void port_usable(PortIndex port, bool usable, const std::string &why) = 0;
    // The SA may have lost every membership of this port: re-join them all.
    virtual void port_invalidated(PortIndex port, Trigger trigger, const std::string &why) = 0;
    // SA MADs must go to a new address (the master SM's LID or SL changed).
    virtual void sa_moved(PortIndex port, std::uint16_t sm_lid, std::uint8_t sm_sl) = 0;
    // The SM as last seen (for status): LID, port GUID, ActCount.
    virtual void sm_seen(PortIndex port, std::uint16_t lid, std::uint64_t guid, std::uint32_t act_count) = 0;
    // Live port attributes from PortInfo (LID, state, MTU), for status and SA addressing.
    virtual void port_info(PortIndex port, std::uint16_t lid, std::uint8_t state, std::uint8_t mtu) = 0;
    // The port's P_Key table, re-read after PKEY_CHANGE (the SA MADs' P_Key index comes from
    // it). Before the rules decide whether the change invalidates.
    virtual void pkey_table(PortIndex port, const std::vector<std::uint16_t> &pkeys) = 0;
    // Time to audit one more group of this port (the audit's own pacing lives in the engine).
    virtual void audit_due(PortIndex port) = 0;
};

} // namespace mcastd::port
