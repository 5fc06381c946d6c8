// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/error.hpp"

#include "common/sa_status.hpp"

namespace mcastd {

namespace {
constexpr std::string_view kNames[] = {
    "invalid-argument", "no-such-device", "no-such-port",        "port-not-active",
    "conflict",         "sa-error",       "sa-timeout",          "denied",
    "too-large",        "unsupported-version", "not-found",      "cancelled",
    "limit",            "internal",
};
static_assert(std::size(kNames) == static_cast<std::size_t>(Errc::internal) + 1);
} // namespace

std::string_view errc_name(Errc c) { return kNames[static_cast<std::size_t>(c)]; }

std::optional<Errc> errc_from_name(std::string_view name) {
    for (std::size_t i = 0; i < std::size(kNames); ++i)
        if (kNames[i] == name)
            return static_cast<Errc>(i);
    return std::nullopt;
}

Error Error::sa(std::uint16_t status, std::string context) {
    std::string msg = std::move(context);
    if (!msg.empty())
        msg += ": ";
    msg += sa_status_describe(status);
    return Error{Errc::sa_error, std::move(msg), status};
}

} // namespace mcastd
