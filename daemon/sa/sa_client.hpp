// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SaClient: mcastd::SaService over MadTransactions and the MAD codec. It turns an SaRequest
// into an MCMemberRecord MAD, and the answer back into an SaResult. It also polls the
// SMInfoRecord, which the daemon uses to notice an SM restart or failover.
//
// A response that matches a transaction (TID, class, method) but does not decode as the
// expected record (wrong attribute, length, version, ...) is treated as no answer to that try:
// the transaction keeps waiting and retransmits at the try's deadline, and if every try ends
// that way the result is a timeout (bounced = false). The core is never handed a record the
// codec could not read, a single corrupt answer does not fail a join, and an SA that only ever
// answers garbage is, for the daemon, an SA that does not answer. MadTransactions counts such
// answers in TxnStats::rejected and reports each through its drop log.
//
// SaResult::bounced is set for a timeout whose last try could not reach the SA: it came back
// undelivered, send() failed, or the port had no SA address. It is clear when the last try was
// simply not answered (or only answered with garbage).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "core/sa_service.hpp"
#include "sa/mad_codec.hpp"
#include "sa/transactions.hpp"

namespace mcastd::sa {

// Which SMInfoRecord to Get. A mask-0 Get matches every SM OpenSM knows (the master and each
// standby) and so fails with 0x0400 when there are standbys: select one.
struct SmInfoQuery {
    SmInfoRecord match;
    std::uint64_t comp_mask = 0; // sminfo_field:: bits

    // The SM whose port has this LID (the port's PortInfo.MasterSMLID).
    static SmInfoQuery by_lid(std::uint16_t lid);
    // Whichever SM is in state MASTER.
    static SmInfoQuery master();
};

struct SmInfoResult {
    enum class Kind : std::uint8_t { response, timeout };
    Kind kind = Kind::timeout;
    std::uint16_t status = 0; // for a response
    SmInfoRecord record;      // for a response with status 0
    unsigned tries = 0;
    bool bounced = false; // as SaResult::bounced

    bool ok() const { return kind == Kind::response && status == 0; }
};

class SaClient final : public SaService {
public:
    using SmInfoCallback = std::function<void(const SmInfoResult &)>;

    // `txns` must outlive the client; its config sets the retry, window and pacing policy.
    explicit SaClient(MadTransactions &txns) : txns_(txns) {}

    // SaService. Ids are MadTransactions ids; the callback runs from the loop, never from
    // inside submit(), exactly once unless cancelled.
    TxnId submit(const SaRequest &req, Callback done) override;
    void cancel(TxnId id) override;
    void hasten(TxnId id) override;

    // Get(SMInfoRecord) through the port's SA address; cancel() cancels it too.
    TxnId get_sm_info(PortIndex port, const SmInfoQuery &query, SmInfoCallback done);
    // The same with its own timeouts and tries instead of the config's: a periodic poll uses
    // one short try (port_poller.hpp). Throws std::invalid_argument for an invalid policy.
    TxnId get_sm_info(PortIndex port, const SmInfoQuery &query, const TryPolicy &policy,
                      SmInfoCallback done);

private:
    TxnId submit_sm_info(PortIndex port, const SmInfoQuery &query,
                         const std::optional<TryPolicy> &policy, SmInfoCallback done);

    MadTransactions &txns_;
};

} // namespace mcastd::sa
