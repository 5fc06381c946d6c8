// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Manager.Evict's options -> a proto::Evict, validated by the socket protocol's own `evict`
// decoder, so a D-Bus caller gets the same checks and the same sentence for the same mistake
// ("/membership: uid and membership exclude each other").
#pragma once

#include <variant>

#include "common/error.hpp"
#include "dbus/join_args.hpp"
#include "proto/protocol.hpp"

namespace mcastd::dbus {

// `uid`, `membership`, `disconnect` as PROTOCOL.md's `evict` takes them; Errc::invalid_argument
// naming the key on any bad value, unknown or repeated option.
std::variant<proto::Evict, Error> decode_evict_args(const Options &options);

} // namespace mcastd::dbus
