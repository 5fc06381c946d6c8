// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// org.freedesktop.LogControl1 at /org/freedesktop/LogControl1, so that
// `systemctl service-log-level rdma-mcastd debug` and `service-log-target` work. The daemon
// passes in how its logging is read and changed (LogHooks); this file only speaks the
// interface.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <systemd/sd-bus.h>

namespace mcastd::dbus {

// Levels and targets by their systemd names (emerg..debug; console, journal, auto). A setter
// returns why the value cannot be used, nullopt when it now is.
struct LogHooks {
    std::function<std::string()> get_level;
    std::function<std::optional<std::string>(std::string_view)> set_level;
    std::function<std::string()> get_target;
    std::function<std::optional<std::string>(std::string_view)> set_target;
    std::string syslog_identifier;
};

// The daemon's logging (daemon/logging).
LogHooks default_log_hooks();

inline constexpr const char *kLogControlPath = "/org/freedesktop/LogControl1";

// Registers the interface on `bus`; the returned slot (owned by the caller) unregisters it.
// `hooks` must outlive the slot.
int add_log_control(sd_bus *bus, sd_bus_slot **slot, LogHooks *hooks);

} // namespace mcastd::dbus
