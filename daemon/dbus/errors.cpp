// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/errors.hpp"

#include <cerrno>
#include <cstddef>

#include "common/utf8.hpp"

namespace mcastd::dbus {

namespace {

struct Entry {
    const char *name;
    int errnum;
};
// In Errc order.
constexpr Entry kErrors[] = {
    {"org.rdmamcast1.Error.InvalidArgument", EINVAL},
    {"org.rdmamcast1.Error.NoSuchDevice", ENODEV},
    {"org.rdmamcast1.Error.NoSuchPort", ENXIO},
    {"org.rdmamcast1.Error.PortNotActive", ENETDOWN},
    {"org.rdmamcast1.Error.Conflict", EEXIST},
    {"org.rdmamcast1.Error.SaError", EREMOTEIO},
    {"org.rdmamcast1.Error.SaTimeout", ETIMEDOUT},
    {"org.rdmamcast1.Error.Denied", EACCES},
    {"org.rdmamcast1.Error.TooLarge", EMSGSIZE},
    {"org.rdmamcast1.Error.UnsupportedVersion", EPROTONOSUPPORT},
    {"org.rdmamcast1.Error.NotFound", ENOENT},
    {"org.rdmamcast1.Error.Cancelled", ECANCELED},
    {"org.rdmamcast1.Error.Limit", EDQUOT},
    {"org.rdmamcast1.Error.Internal", EIO},
};
constexpr std::size_t kCount = std::size(kErrors);
static_assert(kCount == static_cast<std::size_t>(Errc::internal) + 1, "one D-Bus name per Errc");

const sd_bus_error_map *build_map() {
    static sd_bus_error_map map[kCount + 1];
    for (std::size_t i = 0; i < kCount; ++i)
        map[i] = SD_BUS_ERROR_MAP(kErrors[i].name, kErrors[i].errnum);
    map[kCount] = SD_BUS_ERROR_MAP_END;
    return map;
}

} // namespace

const char *error_name(Errc code) { return kErrors[static_cast<std::size_t>(code)].name; }

int error_errno(Errc code) { return kErrors[static_cast<std::size_t>(code)].errnum; }

const sd_bus_error_map *error_map() {
    static const sd_bus_error_map *map = build_map();
    return map;
}

int error_reply(sd_bus_message *call, const Error &error, sd_bus_message **reply) {
    return sd_bus_message_new_method_errorf(call, reply, error_name(error.code), "%s",
                                            valid_utf8(error.message).c_str());
}

int reply_error(sd_bus_message *call, const Error &error) {
    sd_bus_message *reply = nullptr;
    int r = error_reply(call, error, &reply);
    if (r >= 0)
        r = sd_bus_send(nullptr, reply, nullptr);
    sd_bus_message_unref(reply);
    return r;
}

} // namespace mcastd::dbus
