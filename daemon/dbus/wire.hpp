// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// sd-bus glue for the pure conversions: Values and records onto a message, a{sv} options off
// one. Every function returns sd-bus style: >= 0 or -errno.
#pragma once

#include <string>

#include <systemd/sd-bus.h>

#include "common/record.hpp"
#include "dbus/join_args.hpp"
#include "dbus/record_dict.hpp"

namespace mcastd::dbus {

int append_value(sd_bus_message *m, const Value &v);
// The record as a{sv} (record_entries()).
int append_record(sd_bus_message *m, const McRecord &record);
// "as": the JoinState bit names in `bits` ("full", "sendonly-full", ...).
int append_join_state_names(sd_bus_message *m, std::uint8_t bits);

// Reads an a{sv} of options. A value of a type no option takes (only integers, booleans and
// strings do) sets `bad` to a sentence naming the key and returns 0 without reading further.
int read_options(sd_bus_message *m, Options &out, std::string &bad);

} // namespace mcastd::dbus
