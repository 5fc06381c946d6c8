// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// RAII handle for one sd-event source (an io watch, a signal watch, the timer source, ...).
//
// The handle owns one reference. Dropping it disables the source first and then unrefs it, so
// a source never fires after its handle is gone, even when the handle is dropped from inside
// that very source's callback: sd-event defers the free until the dispatch returns, and the
// C++ callback state is released by the source's destroy callback at that point, not before.
#pragma once

#include <utility>

#include <systemd/sd-event.h>

namespace mcastd::runtime {

class EventSource {
public:
    EventSource() noexcept = default;
    // Adopts the caller's reference.
    explicit EventSource(sd_event_source *s) noexcept : s_(s) {}
    ~EventSource() { reset(); }

    EventSource(EventSource &&o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    EventSource &operator=(EventSource &&o) noexcept {
        if (this != &o) {
            reset();
            s_ = std::exchange(o.s_, nullptr);
        }
        return *this;
    }
    EventSource(const EventSource &) = delete;
    EventSource &operator=(const EventSource &) = delete;

    void reset() noexcept { s_ = sd_event_source_disable_unref(s_); }
    sd_event_source *get() const noexcept { return s_; }
    explicit operator bool() const noexcept { return s_ != nullptr; }

private:
    sd_event_source *s_ = nullptr;
};

} // namespace mcastd::runtime
