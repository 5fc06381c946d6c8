// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// CongestionWindow: how many SA transactions one port may have in flight, and how long a try
// waits for its answer, learned from the SA's own round trips. Pure (no clock of its own, no
// I/O); MadTransactions keeps one per port and feeds it every answer and every timeout.
//
// Why. After an SM restart every host re-joins at once. With a fixed window of 16 per port,
// 2,000 hosts put 32,000 MADs in front of one SA that serves a few thousand a second: the
// answers take seconds, far longer than a per-try timeout of 300 ms to 2 s, so every Set is sent
// again up to five times and the SA serves every copy (OpenSM answers each Set it receives, in
// order). A window that starts at one MAD, grows only while the SA answers promptly and
// shrinks when it does not keeps the SA's queue short, whatever the number of hosts.
//
// The rules:
//  - restart() (the port's first SA address, or a new SM): w = 1, in slow start, the round-trip
//    estimate forgotten.
//  - An answer whose round trip is at most `rtt_target` grows w: by 1 in slow start (w doubles
//    per round trip), by 1/w after it (one MAD per round trip); below w = 1, where one answer
//    comes per srtt / w, it doubles w (up to 1).
//  - An answer slower than `rtt_target`, or a try that timed out, halves w (not below
//    `min_window`) and ends slow start; at most once per smoothed round trip, so one episode
//    of delay halves it once.
//  - w >= 1 allows floor(w) in flight, capped by the hard `max_window` (sa.window). Below 1,
//    one MAD is in flight at a time and the next waits rtt * (1/w - 1) after the answer: one
//    MAD per rtt / w, where rtt is srtt or the latest round trip, whichever is shorter. srtt
//    alone lags a queue that has drained: with one sample per gap, a host at w = 1/64 whose
//    srtt still says 1.5 s would wait 95 s for its next MAD while the SA idles (in
//    tests/sim/fabric_des, 2,000 hosts x 50 at 2,000 Sets/s took 102 s of an ideal 50 s; 53 s
//    with the latest sample). A queue that grows shows in both.
//  - A try's timeout is RTO * 2^try, clamped to the try policy's [first, max] timeouts, with
//    RTO = max(2 srtt, srtt + 4 rttvar) (RFC 6298's estimator). Every try has its own TID, so
//    every sample belongs to one known try and needs no Karn's rule. Before the first sample
//    the try policy's own timeouts apply.
#pragma once

#include <chrono>
#include <optional>

#include "core/timers.hpp"

namespace mcastd::sa {

struct CongestionConfig {
    bool enabled = false;                        // off: the fixed window of TransactionConfig
    std::chrono::milliseconds rtt_target{50};    // slower answers mean the SA is queueing
    double min_window = 1.0 / 64;                // the floor of w: one MAD per 64 round trips
    bool operator==(const CongestionConfig &) const = default;
};

class CongestionWindow {
public:
    CongestionWindow(const CongestionConfig &cfg, unsigned max_window);

    // The port started, or its SM changed: start again from one MAD, in slow start.
    void restart();

    // The try sent at `sent` was answered at `now`.
    void on_answer(TimePoint sent, TimePoint now);
    // A try's deadline passed with no answer.
    void on_timeout(TimePoint now);

    // How many may be in flight now (>= 1; 1 when w < 1).
    unsigned allowed() const;
    // When the next MAD may go if nothing is in flight: `now` or later (only below w = 1).
    TimePoint earliest_send(TimePoint now) const;

    // The timeout of try `index` (0-based) of a transaction whose try policy allows
    // [first, max]: RTO * 2^index clamped to it; `fallback` before any sample.
    Duration try_timeout(unsigned index, Duration first, Duration max, Duration fallback) const;

    double window() const { return w_; }
    bool slow_start() const { return slow_start_; }
    std::optional<Duration> srtt() const { return srtt_; }
    // max(2 srtt, srtt + 4 rttvar); nullopt before the first sample.
    std::optional<Duration> rto() const;

private:
    void decrease(TimePoint now);

    CongestionConfig cfg_;
    double max_window_;
    double w_ = 1;
    bool slow_start_ = true;
    std::optional<Duration> srtt_;
    Duration rttvar_{};
    std::optional<TimePoint> last_decrease_;
    std::optional<TimePoint> last_answer_;
    Duration last_rtt_{}; // of that answer
};

} // namespace mcastd::sa
