// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "core/rejoin_progress.hpp"

#include <algorithm>

namespace mcastd {

void RejoinProgress::start(TimePoint now, std::string why) {
    if (!running_) {
        ++count_;
        running_ = pending_ > 0;
        started_ = now;
        groups_ = pending_;
        if (!running_)
            finished_ = now; // nothing to redo: done as it starts
    } else {
        groups_ = std::max(groups_, pending_);
    }
    reason_ = std::move(why);
}

std::optional<Duration> RejoinProgress::finish(TimePoint now, bool starting) {
    if (!running_ || starting || pending_)
        return std::nullopt;
    running_ = false;
    finished_ = now;
    return std::chrono::duration_cast<Duration>(now - *started_);
}

} // namespace mcastd
