// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "runtime/notifier.hpp"

#include <systemd/sd-daemon.h>

#include <spdlog/spdlog.h>

#include <cstring>
#include <ctime>

namespace mcastd::runtime {

Notifier::Notifier(Timers &timers, StatusFn status, Duration min_interval)
    : timers_(timers), status_(std::move(status)), min_interval_(min_interval) {}

Notifier::~Notifier() { timers_.cancel(pending_); }

void Notifier::send(const std::string &message) {
    const int r = sd_notify(0, message.c_str());
    // A service manager that cannot be told is worth one line, not one per status change.
    if (r < 0 && !warned_) {
        warned_ = true;
        spdlog::warn("sd_notify to $NOTIFY_SOCKET failed: {}", std::strerror(-r));
    }
}

void Notifier::ready() {
    last_status_ = status_();
    last_built_ = timers_.now();
    send("READY=1\nSTATUS=" + last_status_);
}

void Notifier::reloading() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const long long usec = static_cast<long long>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
    // MONOTONIC_USEC is what systemd 253+ (Type=notify-reload) requires; 252 ignores it.
    send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec) + "\nSTATUS=reloading the configuration");
}

void Notifier::stopping(const std::string &why) {
    stopping_ = true;
    timers_.cancel(pending_);
    pending_ = 0;
    send("STOPPING=1\nSTATUS=" + why);
}

void Notifier::changed() {
    if (stopping_ || pending_)
        return;
    Duration wait{0};
    if (last_built_) {
        const auto since = std::chrono::duration_cast<Duration>(timers_.now() - *last_built_);
        if (since < min_interval_)
            wait = min_interval_ - since;
    }
    pending_ = timers_.start(wait, [this] { flush(); });
}

void Notifier::flush() {
    pending_ = 0;
    std::string text = status_();
    last_built_ = timers_.now();
    if (text == last_status_)
        return;
    last_status_ = std::move(text);
    send("STATUS=" + last_status_);
}

} // namespace mcastd::runtime
