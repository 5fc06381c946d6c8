// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/log_control.hpp"

#include <spdlog/spdlog.h>

#include "logging/logging.hpp"

namespace mcastd::dbus {

namespace {

LogHooks &hooks_of(void *userdata) { return *static_cast<LogHooks *>(userdata); }

int get_string(sd_bus *, const char *, const char *, const char *property, sd_bus_message *reply,
               void *userdata, sd_bus_error *) {
    LogHooks &h = hooks_of(userdata);
    const std::string_view p = property;
    std::string value = p == "LogLevel"    ? h.get_level()
                        : p == "LogTarget" ? h.get_target()
                                           : h.syslog_identifier;
    return sd_bus_message_append_basic(reply, 's', value.c_str());
}

int set_level(sd_bus *, const char *, const char *, const char *, sd_bus_message *value, void *userdata,
              sd_bus_error *error) {
    const char *name = nullptr;
    if (int r = sd_bus_message_read_basic(value, 's', &name); r < 0)
        return r;
    if (auto why = hooks_of(userdata).set_level(name))
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s", why->c_str());
    spdlog::info("log level set to {} over D-Bus", name);
    return 1;
}

int set_target(sd_bus *, const char *, const char *, const char *, sd_bus_message *value, void *userdata,
               sd_bus_error *error) {
    const char *target = nullptr;
    if (int r = sd_bus_message_read_basic(value, 's', &target); r < 0)
        return r;
    if (auto why = hooks_of(userdata).set_target(target))
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s", why->c_str());
    spdlog::info("log target set to {} over D-Bus", target);
    return 1;
}

// Writable properties without SD_BUS_VTABLE_UNPRIVILEGED: only root may set them.
const sd_bus_vtable kVtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_WRITABLE_PROPERTY("LogLevel", "s", get_string, set_level, 0, 0),
    SD_BUS_WRITABLE_PROPERTY("LogTarget", "s", get_string, set_target, 0, 0),
    SD_BUS_PROPERTY("SyslogIdentifier", "s", get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_VTABLE_END,
};

} // namespace

LogHooks default_log_hooks() {
    return LogHooks{
        .get_level = [] { return logging::log_level(); },
        .set_level = [](std::string_view name) { return logging::set_log_level(name); },
        .get_target = [] { return logging::log_target(); },
        .set_target = [](std::string_view target) { return logging::set_log_target(target); },
        .syslog_identifier = logging::kSyslogIdentifier,
    };
}

int add_log_control(sd_bus *bus, sd_bus_slot **slot, LogHooks *hooks) {
    return sd_bus_add_object_vtable(bus, slot, kLogControlPath, "org.freedesktop.LogControl1", kVtable, hooks);
}

} // namespace mcastd::dbus
