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

// Who waits for a transaction, which decides its place at the port's SA.
enum class SaUrgency : std::uint8_t {
    client, // a client waits for it (a join, a leave, a probe for one)
    // A re-join after the SA may have lost the port: every host of the fabric sends its own at
    // once, and nobody waits for one in particular, so a client's transaction goes ahead.
    background,
    // A periodic check that nobody waits for: one at a time per port, beside the joins' window,
    // so that audits never hold more than one of the SA's slots nor keep a join waiting.
    audit,
};

struct SaRequest {
    PortIndex port = 0;
    SaMethod method = SaMethod::get;
    McRecord record;
    std::uint64_t comp_mask = 0; // field:: bits
    SaUrgency urgency = SaUrgency::client;
    // Who caused it: the uid of the client whose join it serves, plus one; 0 for the daemon's
    // own work (re-joins, repairs, Deletes, audits). Waiting at the port's SA, tenants take
    // turns, so one user's burst does not go ahead of everyone else's next join.
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
    // A client now waits for a transaction submitted as SaUrgency::background: from here on it
    // is the client's. A no-op for finished ids and other urgencies.
    virtual void hasten(TxnId id) = 0;
};

} // namespace mcastd
