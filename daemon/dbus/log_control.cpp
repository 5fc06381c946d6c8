#include "dbus/log_control.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <utility>

namespace mcastd::dbus {

namespace {

using spdlog::level::level_enum;

constexpr std::array<std::pair<std::string_view, level_enum>, 8> kLevels{{
    {"emerg", level_enum::critical},
    {"alert", level_enum::critical},
    {"crit", level_enum::critical},
    {"err", level_enum::err},
    {"warning", level_enum::warn},
    {"notice", level_enum::info},
    {"info", level_enum::info},
    {"debug", level_enum::debug},
}};

LogHooks &hooks_of(void *userdata) { return *static_cast<LogHooks *>(userdata); }

int get_string(sd_bus *, const char *, const char *, const char *property, sd_bus_message *reply,
               void *userdata, sd_bus_error *) {
    LogHooks &h = hooks_of(userdata);
    const std::string_view p = property;
    std::string value = p == "LogLevel"    ? std::string(level_name(h.get_level()))
                        : p == "LogTarget" ? h.get_target()
                                           : h.syslog_identifier;
    return sd_bus_message_append_basic(reply, 's', value.c_str());
}

int set_level(sd_bus *, const char *, const char *, const char *, sd_bus_message *value, void *userdata,
              sd_bus_error *error) {
    const char *name = nullptr;
    if (int r = sd_bus_message_read_basic(value, 's', &name); r < 0)
        return r;
    auto level = level_from_name(name);
    if (!level)
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                 "'%s' is not a log level (emerg, alert, crit, err, warning, notice, info or debug)",
                                 name);
    hooks_of(userdata).set_level(*level);
    spdlog::info("log level set to {} over D-Bus", name);
    return 1;
}

int set_target(sd_bus *, const char *, const char *, const char *, sd_bus_message *value, void *userdata,
               sd_bus_error *error) {
    const char *target = nullptr;
    if (int r = sd_bus_message_read_basic(value, 's', &target); r < 0)
        return r;
    const std::string why = hooks_of(userdata).set_target(target);
    if (!why.empty())
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s", why.c_str());
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
    LogHooks h;
    h.get_level = [] { return spdlog::get_level(); };
    h.set_level = [](level_enum l) { spdlog::set_level(l); };
    h.get_target = [] { return std::string("console"); };
    h.set_target = [](const std::string &t) {
        return t == "console" ? std::string() : "log target '" + t + "' is not available: this daemon logs to the console (stderr) only";
    };
    return h;
}

std::optional<level_enum> level_from_name(std::string_view name) {
    for (const auto &[n, l] : kLevels)
        if (n == name)
            return l;
    return std::nullopt;
}

std::string_view level_name(level_enum level) {
    switch (level) {
    case level_enum::trace:
    case level_enum::debug: return "debug";
    case level_enum::info: return "info";
    case level_enum::warn: return "warning";
    case level_enum::err: return "err";
    case level_enum::critical: return "crit";
    case level_enum::off:
    case level_enum::n_levels: break;
    }
    return "emerg";
}

int add_log_control(sd_bus *bus, sd_bus_slot **slot, LogHooks *hooks) {
    return sd_bus_add_object_vtable(bus, slot, kLogControlPath, "org.freedesktop.LogControl1", kVtable, hooks);
}

} // namespace mcastd::dbus
