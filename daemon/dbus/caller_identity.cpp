// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/caller_identity.hpp"

#include <cstring>

#include "policy/policy.hpp"

namespace mcastd::dbus {

namespace {

// One uint32 value of the variant the message is in; sd-bus style.
int read_u32(sd_bus_message *m, std::uint32_t &v) { return sd_bus_message_read(m, "v", "u", &v); }

} // namespace

int read_bus_credentials(sd_bus_message *reply, BusCredentials &out) {
    int r = sd_bus_message_enter_container(reply, 'a', "{sv}");
    while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
        const char *key = nullptr;
        if ((r = sd_bus_message_read(reply, "s", &key)) < 0)
            return r;
        std::uint32_t v = 0;
        if (std::strcmp(key, "UnixUserID") == 0) {
            if ((r = read_u32(reply, v)) < 0)
                return r;
            out.uid = static_cast<uid_t>(v);
        } else if (std::strcmp(key, "ProcessID") == 0) {
            if ((r = read_u32(reply, v)) < 0)
                return r;
            out.pid = static_cast<pid_t>(v);
        } else if (std::strcmp(key, "UnixGroupIDs") == 0) {
            std::vector<gid_t> gids;
            if ((r = sd_bus_message_enter_container(reply, 'v', "au")) < 0 ||
                (r = sd_bus_message_enter_container(reply, 'a', "u")) < 0)
                return r;
            while ((r = sd_bus_message_read(reply, "u", &v)) > 0)
                gids.push_back(static_cast<gid_t>(v));
            if (r < 0 || (r = sd_bus_message_exit_container(reply)) < 0 ||
                (r = sd_bus_message_exit_container(reply)) < 0)
                return r;
            out.gids = std::move(gids);
        } else if ((r = sd_bus_message_skip(reply, "v")) < 0) {
            return r;
        }
        if ((r = sd_bus_message_exit_container(reply)) < 0)
            return r;
    }
    if (r < 0)
        return r;
    return sd_bus_message_exit_container(reply);
}

std::string query_bus_credentials(sd_bus *bus, const char *name, BusCredentials &out) {
    sd_bus_message *call = nullptr, *reply = nullptr;
    sd_bus_error error = SD_BUS_ERROR_NULL;
    int r = sd_bus_message_new_method_call(bus, &call, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                           "org.freedesktop.DBus", "GetConnectionCredentials");
    if (r >= 0)
        r = sd_bus_message_append(call, "s", name);
    if (r >= 0)
        r = sd_bus_call(bus, call,
                        static_cast<std::uint64_t>(
                            std::chrono::duration_cast<std::chrono::microseconds>(kCredentialsTimeout).count()),
                        &error, &reply);
    if (r >= 0)
        r = read_bus_credentials(reply, out);
    std::string why;
    if (r < 0)
        why = std::string("org.freedesktop.DBus.GetConnectionCredentials(") + name +
              "): " + (error.message ? error.message : std::strerror(-r));
    sd_bus_error_free(&error);
    sd_bus_message_unref(reply);
    sd_bus_message_unref(call);
    return why;
}

std::variant<frontend::Credentials, Error> attest_caller(std::string_view sender, const BusCredentials &bus,
                                                         std::optional<std::chrono::nanoseconds> appeared,
                                                         const ProcessReader &read) {
    auto missing = [&](const char *field, const char *key) {
        return Error{Errc::denied,
                     policy::unidentified("the bus gives no " + std::string(field) + " for " + std::string(sender) +
                                          " (org.freedesktop.DBus.GetConnectionCredentials has no " + key + ")"),
                     std::nullopt};
    };
    if (!bus.uid)
        return missing("uid", "UnixUserID");
    if (!bus.gids)
        return missing("supplementary groups", "UnixGroupIDs");
    if (!bus.pid || *bus.pid <= 0)
        return missing("pid", "ProcessID");

    frontend::Credentials c;
    c.who.uid = *bus.uid;
    c.who.unix_gid = kUnknownGid; // the bus gives groups, not which one is primary
    c.who.pid = *bus.pid;
    c.who.comm = "?";
    c.supplementary_groups = *bus.gids;
    if (!appeared) {
        c.cgroup_unattested = std::string(kConnectionTooOld);
        return c;
    }
    auto id = read(*bus.pid, frontend::Expected{*bus.uid, *appeared});
    if (auto *why = std::get_if<std::string>(&id)) {
        c.cgroup_unattested = "bus connection " + std::string(sender) + ": " + *why;
        return c;
    }
    frontend::take_process(c, std::get<frontend::ProcessIdentity>(std::move(id)));
    return c;
}

} // namespace mcastd::dbus
