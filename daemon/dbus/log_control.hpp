// org.freedesktop.LogControl1 at /org/freedesktop/LogControl1, so that
// `systemctl service-log-level rdma-mcastd debug` and `service-log-target` work. The daemon
// passes in how its logging is read and changed (LogHooks); this file only speaks the
// interface and maps systemd's level names onto spdlog's.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/common.h>
#include <systemd/sd-bus.h>

namespace mcastd::dbus {

struct LogHooks {
    std::function<spdlog::level::level_enum()> get_level;
    std::function<void(spdlog::level::level_enum)> set_level;
    std::function<std::string()> get_target;
    // Returns why `target` cannot be used ("" when it now is).
    std::function<std::string(const std::string &target)> set_target;
    std::string syslog_identifier = "rdma-mcastd";
};

// The spdlog default logger's level; the one target "console" (stderr).
LogHooks default_log_hooks();

// systemd's names (emerg, alert, crit, err, warning, notice, info, debug) -> spdlog. spdlog has
// no emerg, alert or notice: the first two are critical, notice is info.
std::optional<spdlog::level::level_enum> level_from_name(std::string_view name);
// spdlog -> systemd's name: trace reads as debug, off as emerg (nothing below it is logged).
std::string_view level_name(spdlog::level::level_enum level);

inline constexpr const char *kLogControlPath = "/org/freedesktop/LogControl1";

// Registers the interface on `bus`; the returned slot (owned by the caller) unregisters it.
// `hooks` must outlive the slot.
int add_log_control(sd_bus *bus, sd_bus_slot **slot, LogHooks *hooks);

} // namespace mcastd::dbus
