// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sa/sa_client.hpp"

#include <optional>
#include <string>

namespace mcastd::sa {

namespace {

// A timeout "bounced" when its last try never reached the SA (see sa_client.hpp).
bool unreachable(TryFailure f) {
    return f == TryFailure::bounced || f == TryFailure::send_failed || f == TryFailure::no_address;
}

// Validators: refuse what the codec cannot decode, so that it never completes a transaction.
MadTransactions::Validator mcmember_validator(SaMethod method) {
    return [method](std::span<const std::uint8_t> mad) -> std::optional<std::string> {
        const auto d = decode_mcmember_response(mad, method);
        if (d)
            return std::nullopt;
        return "not an MCMemberRecord response: " + d.error().message();
    };
}

std::optional<std::string> sminfo_validator(std::span<const std::uint8_t> mad) {
    const auto d = decode_sminfo_response(mad);
    if (d)
        return std::nullopt;
    return "not an SMInfoRecord response: " + d.error().message();
}

} // namespace

SmInfoQuery SmInfoQuery::by_lid(std::uint16_t lid) {
    SmInfoQuery q;
    q.match.lid = lid;
    q.comp_mask = sminfo_field::lid;
    return q;
}

SmInfoQuery SmInfoQuery::master() {
    SmInfoQuery q;
    q.match.sm_state = sm_state::master;
    q.comp_mask = sminfo_field::sm_state;
    return q;
}

SaService::TxnId SaClient::submit(const SaRequest &req, Callback done) {
    const MadBuf mad = encode_mcmember_request(req.method, req.record, req.comp_mask, 0);
    const SaMethod method = req.method;
    auto on_done = [method, done = std::move(done)](const TxnOutcome &out) {
        SaResult r;
        r.tries = out.tries;
        if (out.kind == TxnOutcome::Kind::timeout) {
            r.kind = SaResult::Kind::timeout;
            r.bounced = unreachable(out.last_failure);
        } else {
            // The validator has already accepted these bytes, so this decode succeeds.
            const auto d = decode_mcmember_response(out.response, method);
            r.kind = SaResult::Kind::response;
            r.status = d->status;
            r.record = d->record;
        }
        if (done)
            done(r);
    };
    return txns_.submit(req.port, mad, Route::sa, std::move(on_done), mcmember_validator(method), std::nullopt,
                        req.lane, req.tenant);
}

void SaClient::cancel(TxnId id) { txns_.cancel(id); }

void SaClient::hasten(TxnId id) { txns_.hasten(id); }

SaService::TxnId SaClient::get_sm_info(PortIndex port, const SmInfoQuery &query,
                                       SmInfoCallback done) {
    return submit_sm_info(port, query, std::nullopt, std::move(done));
}

SaService::TxnId SaClient::get_sm_info(PortIndex port, const SmInfoQuery &query,
                                       const TryPolicy &policy, SmInfoCallback done) {
    return submit_sm_info(port, query, policy, std::move(done));
}

SaService::TxnId SaClient::submit_sm_info(PortIndex port, const SmInfoQuery &query,
                                          const std::optional<TryPolicy> &policy,
                                          SmInfoCallback done) {
    const MadBuf mad = encode_sminfo_get(query.match, query.comp_mask, 0);
    auto on_done = [done = std::move(done)](const TxnOutcome &out) {
        SmInfoResult r;
        r.tries = out.tries;
        if (out.kind == TxnOutcome::Kind::timeout) {
            r.kind = SmInfoResult::Kind::timeout;
            r.bounced = unreachable(out.last_failure);
        } else {
            const auto d = decode_sminfo_response(out.response);
            r.kind = SmInfoResult::Kind::response;
            r.status = d->status;
            if (d->status == 0)
                r.record = d->record;
        }
        if (done)
            done(r);
    };
    return txns_.submit(port, mad, Route::sa, std::move(on_done), sminfo_validator, policy, SaLane::poll);
}

} // namespace mcastd::sa
