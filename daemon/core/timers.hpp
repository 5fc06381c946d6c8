// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Time as the core and the SA client see it. The daemon implements this on sd-event; tests
// use a fake clock that only moves when told to. Nothing in core/ or sa/ reads a clock directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace mcastd {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = std::chrono::microseconds;

// A duration in milliseconds with its fraction, for log lines and views.
inline double in_ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

class Timers {
public:
    using Id = std::uint64_t; // 0 is never a valid id

    virtual ~Timers() = default;
    virtual TimePoint now() const = 0;
    // Runs fn once, `delay` from now, from the event loop (never from inside start()).
    virtual Id start(Duration delay, std::function<void()> fn) = 0;
    // Stops a timer that has not fired yet; a no-op for fired, cancelled or 0 ids.
    virtual void cancel(Id id) = 0;
};

} // namespace mcastd
