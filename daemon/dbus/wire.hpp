// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// sd-bus glue for the pure conversions: Values and records onto a message, a{sv} options off
// one. Every function returns sd-bus style: >= 0 or -errno.
//
// sd-bus refuses a string that is not valid UTF-8 (-EINVAL), and one such string fails the
// whole message: one client whose process name is not UTF-8 would break ListGroups for everyone.
// So every string that came from a client, /proc or an error message goes on through
// append_text(), which replaces what is not UTF-8 with U+FFFD (common/utf8.hpp).
#pragma once

#include <optional>
#include <string>

#include <systemd/sd-bus.h>

#include "common/record.hpp"
#include "proto/protocol.hpp"
#include "dbus/call_bound.hpp"
#include "dbus/join_args.hpp"
#include "dbus/record_dict.hpp"

namespace mcastd::dbus {

// `s` as a D-Bus string ('s'), bytes that are not UTF-8 as U+FFFD.
int append_text(sd_bus_message *m, std::string_view s);
int append_value(sd_bus_message *m, const Value &v);
// One a{sv} entry, `key` and a variant of D-Bus type `sig` whose contents `value()` appends.
template <class F> int append_entry(sd_bus_message *m, const char *key, const char *sig, F value) {
    int r = sd_bus_message_open_container(m, 'e', "sv");
    if (r >= 0) r = sd_bus_message_append_basic(m, 's', key);
    if (r >= 0) r = sd_bus_message_open_container(m, 'v', sig);
    if (r >= 0) r = value();
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_message_close_container(m);
    return r;
}
// The record as a{sv} (record_entries()).
int append_record(sd_bus_message *m, const McRecord &record);
// "as": the JoinState bit names in `bits` ("full", "sendonly-full", ...).
int append_join_state_names(sd_bus_message *m, std::uint8_t bits);
// StateChanged's arguments (sa{sv}ass): the state, the record, the names of the `changed`
// fields (field:: bits, "mlid" first) and the reason, made valid UTF-8 (it may quote a process
// name, which is any bytes).
int append_state_changed(sd_bus_message *m, const std::string &state, const McRecord &record, std::uint64_t changed,
                         std::string_view reason);

// Reads an a{sv} of options, counting each into `bound` (kOptionBytes, its key, a string value)
// before it is copied. A value of a type no option takes (only integers, booleans and strings
// do) sets `refused` to InvalidArgument naming the key, a call over `bound` sets it to
// bound.too_large(); either returns 0 without reading further. With `socket`, the option
// "socket" may be a Unix fd ('h'), borrowed from the message into it.
int read_options(sd_bus_message *m, Options &out, std::optional<Error> &refused, ArgumentBound &bound,
                 int *socket = nullptr);

} // namespace mcastd::dbus
