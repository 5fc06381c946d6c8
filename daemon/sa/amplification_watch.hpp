// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// AmplificationWatch: whether the SA is doing our work more than once. Fed the transaction
// counters at a fixed interval, it judges the interval's SA MADs sent per transaction ended
// (answered or timed out): above the threshold, retransmits reach an SA that will serve every
// copy. It reports the moment that starts and the moment it ends, once each, so the journal
// gets one warning per episode and not one per interval.
#pragma once

#include <cstdint>
#include <optional>

#include "sa/transactions.hpp"

namespace mcastd::sa {

class AmplificationWatch {
public:
    // `threshold`: MADs per transaction above which an interval counts as amplified.
    // `min_transactions`: an interval with fewer ends says nothing (a lone retransmit of an idle
    // port is not a storm).
    AmplificationWatch(double threshold, std::uint64_t min_transactions)
        : threshold_(threshold), min_transactions_(min_transactions) {}

    struct Change {
        bool amplified = false; // true: it started; false: it is over
        double ratio = 0;       // the interval's MADs per transaction
        std::uint64_t sent = 0, ended = 0, retransmits = 0, late = 0; // in the interval
    };
    // The counters now; a Change when the interval starts or ends an episode.
    std::optional<Change> sample(const TxnStats &now);

    bool amplified() const { return amplified_; }

private:
    double threshold_;
    std::uint64_t min_transactions_;
    TxnStats last_{};
    bool amplified_ = false;
};

} // namespace mcastd::sa
