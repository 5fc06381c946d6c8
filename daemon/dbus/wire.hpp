// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// sd-bus glue for the pure conversions: Values and records onto a message, a{sv} options off
// one. Every function returns sd-bus style: >= 0 or -errno.
//
// sd-bus refuses a string that is not valid UTF-8 (-EINVAL), and one such string fails the
// whole message: one client whose process name is not UTF-8 would break ListGroups for everyone.
// So every string that came from a client, /proc or an error message goes on through
// append_text(), which replaces what is not UTF-8 with U+FFFD (common/utf8.hpp).
#pragma once

#include <string>

#include <systemd/sd-bus.h>

#include "common/record.hpp"
#include "proto/protocol.hpp"
#include "dbus/join_args.hpp"
#include "dbus/record_dict.hpp"

namespace mcastd::dbus {

// `s` as a D-Bus string ('s'), bytes that are not UTF-8 as U+FFFD.
int append_text(sd_bus_message *m, std::string_view s);
int append_value(sd_bus_message *m, const Value &v);
// The record as a{sv} (record_entries()).
int append_record(sd_bus_message *m, const McRecord &record);
// "as": the JoinState bit names in `bits` ("full", "sendonly-full", ...).
int append_join_state_names(sd_bus_message *m, std::uint8_t bits);

// ListGroups' answer, a(sqsquasasa(tssuus)): per group device, port, MGID, MLID, Q_Key, held
// and foreign bits, and its members (membership, join state, state, pid, uid, comm).
int append_groups(sd_bus_message *m, const proto::ListResult &list);

// Reads an a{sv} of options. A value of a type no option takes (only integers, booleans and
// strings do) sets `bad` to a sentence naming the key and returns 0 without reading further.
int read_options(sd_bus_message *m, Options &out, std::string &bad);

} // namespace mcastd::dbus
