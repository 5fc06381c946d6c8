// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The D-Bus names of the domain errors (core/error.hpp), mapped once for this transport:
// org.rdmamcast1.Error.<Name> for every Errc, each with an errno so that sd-bus clients that
// register error_map() get sd_bus_error_get_errno() on both ends.
#pragma once

#include <string>

#include <systemd/sd-bus.h>

#include "common/error.hpp"

namespace mcastd::dbus {

inline constexpr const char *kErrorPrefix = "org.rdmamcast1.Error.";

// "org.rdmamcast1.Error.InvalidArgument" for Errc::invalid_argument (the socket protocol's
// kebab-case code in CamelCase).
const char *error_name(Errc code);
int error_errno(Errc code);
// Every name above with its errno, ending in SD_BUS_ERROR_MAP_END, for sd_bus_error_add_map().
const sd_bus_error_map *error_map();

// The error reply to `call`, not sent: the error's D-Bus name and the same sentence the socket
// sends, made valid UTF-8 (a sentence may quote a process name, which is any bytes).
int error_reply(sd_bus_message *call, const Error &error, sd_bus_message **reply);
// Replies to `call` with error_reply().
int reply_error(sd_bus_message *call, const Error &error);

} // namespace mcastd::dbus
