// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The fabric budget (config/README.md, `fabric`): the operator says how many ports on the
// subnet run the daemon (N) and how many MADs per second the SA may take from all of them
// together (B). Each port then keeps to its share, and a re-join after an SM restart spreads
// its start so that the shares add up to B from the first MAD on. Header-only: the config
// reader applies it and links nothing of the SA layer.
#pragma once

#include <algorithm>
#include <chrono>

#include "core/timers.hpp"
#include "sa/transactions.hpp"

namespace mcastd::sa {

struct FabricBudget {
    unsigned hosts = 0;  // N, ports of the subnet that run the daemon; 0: no budget
    unsigned budget = 0; // B, SA MADs per second from all of them
    bool operator==(const FabricBudget &) const = default;
};

// A port's share, B / N MADs per second: N ports at that rate send B per second together.
inline double port_rate(const FabricBudget &f) {
    return f.hosts ? static_cast<double>(f.budget) / f.hosts : 0;
}

// The pause a re-join starts after is drawn from [0, N / B seconds], one share's interval.
// Every port re-joins at once after an SM restart; drawn over that interval, their first MADs
// reach the SA at B per second, and every later MAD of a port follows its own first one
// interval apart, so the SA sees B per second throughout instead of N MADs in one burst
// every interval.
inline Duration rejoin_spread(const FabricBudget &f) {
    return f.budget ? std::chrono::duration_cast<Duration>(std::chrono::duration<double>(
                          static_cast<double>(f.hosts) / f.budget))
                    : Duration::zero();
}

// Applies the budget to a port's SA transactions and re-join pause: the lower of sa.max_rate
// and the share, the longer of rejoin.jitter_ms and the share's interval.
inline void apply(const FabricBudget &f, TransactionConfig &txn, Duration &rejoin_jitter) {
    if (!f.hosts || !f.budget)
        return;
    const double share = port_rate(f);
    txn.pacing_rate = txn.pacing_rate > 0 ? std::min(txn.pacing_rate, share) : share;
    rejoin_jitter = std::max(rejoin_jitter, rejoin_spread(f));
}

} // namespace mcastd::sa
