// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// A token bucket on a caller's clock: `rate` tokens per second, at most `burst` held, full at
// first. The rate and burst are passed on every call, so that a reload changes them at once.
// take() refuses without a whole token; charge() takes one anyway and may leave the bucket in
// debt (for work that cannot be refused, whose cost the next request pays).
#pragma once

#include <algorithm>
#include <chrono>

namespace mcastd {

class TokenBucket {
public:
    using TimePoint = std::chrono::steady_clock::time_point;

    explicit TokenBucket(TimePoint now, double burst) : tokens_(burst), last_(now) {}

    bool take(TimePoint now, double rate, double burst) {
        refill(now, rate, burst);
        if (tokens_ < 1)
            return false;
        tokens_ -= 1;
        return true;
    }
    void charge(TimePoint now, double rate, double burst) {
        refill(now, rate, burst);
        tokens_ -= 1;
    }
    // Tokens held now (negative: in debt).
    double level(TimePoint now, double rate, double burst) {
        refill(now, rate, burst);
        return tokens_;
    }
    // How long until a whole token is there (zero: now).
    std::chrono::milliseconds wait(TimePoint now, double rate, double burst) {
        refill(now, rate, burst);
        if (tokens_ >= 1 || rate <= 0)
            return std::chrono::milliseconds(0);
        return std::chrono::milliseconds(static_cast<long long>((1 - tokens_) / rate * 1000.0) + 1);
    }

private:
    void refill(TimePoint now, double rate, double burst) {
        if (now > last_) {
            tokens_ = std::min(burst, tokens_ + std::chrono::duration<double>(now - last_).count() * rate);
            last_ = now;
        }
        tokens_ = std::min(tokens_, burst);
    }

    double tokens_;
    TimePoint last_;
};

} // namespace mcastd
