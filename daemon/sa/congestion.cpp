// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sa/congestion.hpp"

#include <algorithm>
#include <cmath>

namespace mcastd::sa {

CongestionWindow::CongestionWindow(const CongestionConfig &cfg, unsigned max_window)
    : cfg_(cfg), max_window_(std::max(1u, max_window)) {}

void CongestionWindow::restart() {
    w_ = 1;
    slow_start_ = true;
    srtt_.reset();
    rttvar_ = {};
    last_decrease_.reset();
    last_answer_.reset();
}

void CongestionWindow::on_answer(TimePoint sent, TimePoint now) {
    const Duration rtt = std::max(Duration::zero(), std::chrono::duration_cast<Duration>(now - sent));
    if (!srtt_) {
        srtt_ = rtt;
        rttvar_ = rtt / 2;
    } else {
        const Duration diff = *srtt_ > rtt ? *srtt_ - rtt : rtt - *srtt_;
        rttvar_ = (3 * rttvar_ + diff) / 4;
        srtt_ = (7 * *srtt_ + rtt) / 8;
    }
    last_answer_ = now;
    last_rtt_ = rtt;
    if (rtt > cfg_.rtt_target) {
        decrease(now);
        return;
    }
    if (w_ < 1)
        w_ = std::min(1.0, 2 * w_); // one MAD per srtt / w: its rate doubles, up to one per srtt
    else
        w_ = std::min(max_window_, slow_start_ ? w_ + 1 : w_ + 1 / w_);
}

void CongestionWindow::on_timeout(TimePoint now) { decrease(now); }

void CongestionWindow::decrease(TimePoint now) {
    slow_start_ = false;
    // Once per round trip: the answers of MADs sent before the first decrease still carry the
    // old queue's delay.
    const Duration rtt = srtt_.value_or(cfg_.rtt_target);
    if (last_decrease_ && now - *last_decrease_ < rtt)
        return;
    last_decrease_ = now;
    w_ = std::max(cfg_.min_window, w_ / 2);
}

unsigned CongestionWindow::allowed() const {
    return static_cast<unsigned>(std::clamp(std::floor(w_), 1.0, max_window_));
}

TimePoint CongestionWindow::earliest_send(TimePoint now) const {
    if (w_ >= 1 || !last_answer_ || !srtt_)
        return now;
    const auto gap = std::chrono::duration_cast<Duration>(
        std::chrono::duration<double, Duration::period>(static_cast<double>(std::min(*srtt_, last_rtt_).count()) * (1 / w_ - 1)));
    return std::max(now, *last_answer_ + gap);
}

std::optional<Duration> CongestionWindow::rto() const {
    if (!srtt_)
        return std::nullopt;
    return std::max(2 * *srtt_, *srtt_ + 4 * rttvar_);
}

Duration CongestionWindow::try_timeout(unsigned index, Duration first, Duration max, Duration fallback) const {
    const auto base = rto();
    if (!base)
        return fallback;
    Duration t = *base;
    for (unsigned k = 0; k < index && t < max; ++k)
        t *= 2;
    return std::clamp(t, first, max);
}

} // namespace mcastd::sa
