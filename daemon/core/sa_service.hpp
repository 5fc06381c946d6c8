// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the core asks of the subnet administrator, and how it is told the answer.
//
// daemon/sa implements this over libibumad (TIDs, retransmits, windows); the unit tests
// implement it with a scripted fake SA. The core never sees a MAD.
#pragma once

#include <cstdint>
#include <functional>

#include "common/record.hpp"

namespace mcastd {

// Ports are numbered by the daemon when it discovers them; the core and the SA client use
// the same index.
using PortIndex = std::uint32_t;

enum class SaMethod : std::uint8_t { get, set, del };

// Which of the port's SA slots a transaction may use, and in what order it gets one. The core
// picks the lane of its own transactions; the port poller's polls take `poll`.
enum class SaLane : std::uint8_t {
    // The port's window (fixed, or learned with congestion control): a client waits for it (a
    // join, a leave, a probe for one).
    window,
    // The same window, but only when no `window` transaction waits for a slot or a pacing
    // token: a re-join after the SA may have lost the port, which every host of the fabric
    // sends at once and nobody waits for in particular, goes behind a client's transaction.
    background,
    // A periodic poll that simply runs again (SMInfoRecord): a slot of its own, one per port,
    // beside the window, so a poll of a silent SA never keeps a join waiting and never takes
    // more than one slot.
    poll,
    // The same for the engine's audits, in a slot of their own so a poll never waits behind an
    // audit's tries, and audits never hold more than one of the SA's slots.
    audit,
};

struct SaRequest {
    PortIndex port = 0;
    SaMethod method = SaMethod::get;
    McRecord record;
    std::uint64_t comp_mask = 0; // field:: bits
    SaLane lane = SaLane::window;
    // Who caused it: the uid of the client whose join it serves, or whose change made it due
    // (Engine::set_debt_meter), plus one; 0 for the daemon's own work (re-joins, audits, what
    // nobody's change made due). Waiting at the port's SA, tenants take turns, so one user's
    // burst does not go ahead of everyone else's next join.
    std::uint32_t tenant = 0;
};

struct SaResult {
    enum class Kind : std::uint8_t {
        response, // the SA answered; `status` and `record` are valid (errors echo the request)
        timeout,  // every try went unanswered or bounced
    };
    Kind kind = Kind::timeout;
    std::uint16_t status = 0;
    McRecord record;
    unsigned tries = 0;   // tries sent, including the one answered
    bool bounced = false; // for a timeout: the last try came back undelivered (no route to the SA)

    bool ok() const { return kind == Kind::response && status == 0; }
};

class SaService {
public:
    using TxnId = std::uint64_t;
    using Callback = std::function<void(const SaResult &)>;

    virtual ~SaService() = default;
    // Queues one transaction. `done` runs exactly once, later, from the event loop, unless
    // the transaction is cancelled first. Never called from inside submit().
    virtual TxnId submit(const SaRequest &req, Callback done) = 0;
    // Forgets a transaction; its callback will not run. A no-op for finished ids.
    virtual void cancel(TxnId id) = 0;
    // A client now waits for a transaction submitted as SaLane::background: from here on it
    // is the client's. A no-op for finished ids and other urgencies.
    virtual void hasten(TxnId id) = 0;
};

} // namespace mcastd
