// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sa/amplification_watch.hpp"

namespace mcastd::sa {

std::optional<AmplificationWatch::Change> AmplificationWatch::sample(const TxnStats &now) {
    Change c;
    c.sent = now.sent - last_.sent;
    c.ended = (now.responses + now.timeouts) - (last_.responses + last_.timeouts);
    c.retransmits = now.retransmits - last_.retransmits;
    c.late = now.late - last_.late;
    last_ = now;
    if (c.ended < min_transactions_)
        return std::nullopt; // too little to judge: the episode, if any, goes on
    c.ratio = static_cast<double>(c.sent) / static_cast<double>(c.ended);
    const bool amplified = c.ratio > threshold_;
    if (amplified == amplified_)
        return std::nullopt;
    amplified_ = amplified;
    c.amplified = amplified;
    return c;
}

} // namespace mcastd::sa
