// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/join_args.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <array>
#include <string_view>

#include <nlohmann/json.hpp>

#include "dbus/call_bound.hpp"
#include "proto/join_decoder.hpp"
#include "runtime/fd_closer.hpp"

namespace mcastd::dbus {

namespace {

using nlohmann::json;

Error invalid(std::string message) { return Error{Errc::invalid_argument, std::move(message), std::nullopt}; }

// Keys that are Join's own arguments, not options.
constexpr std::array<std::string_view, 5> kArgumentKeys{"device", "port", "mgid", "create", "join_state"};

} // namespace

std::variant<JoinRequest, Error> decode_join_args(const JoinArgs &a) {
    // The request as the socket protocol would carry it; the decoder does the rest.
    json req = json::object();
    req["device"] = a.device;
    req["port"] = a.port;
    // mgid "" creates a group, unless the option "name" names one (the daemon maps it).
    // An IP group (RoCE) names its group too.
    const bool named = std::any_of(a.options.begin(), a.options.end(),
                                   [](const auto &o) { return o.first == "name" || o.first == "ip"; });
    if (!a.mgid.empty())
        req["mgid"] = a.mgid;
    else if (!named)
        req["create"] = true;
    if (!a.join_state.empty())
        req["join_state"] = a.join_state;
    for (const auto &[key, value] : a.options) {
        // No key is that long: the decoder, which quotes a key whole, never sees one.
        if (key.size() > kQuotedKeyBytes)
            return invalid(quoted_key(key) + ": unknown key");
        for (auto k : kArgumentKeys)
            if (key == k)
                return invalid(quoted_key(key) + ": is an argument of Join, not an option");
        if (key == kSocketOption) // read_options took a Unix fd; anything else is no socket
            return invalid(quoted_key(key) + ": expected a Unix fd (D-Bus type 'h')");
        if (req.contains(key))
            return invalid(quoted_key(key) + ": given twice");
        std::visit([&req, &key = key](const auto &v) { req[key] = v; }, value);
    }
    JoinRequest out;
    try {
        // Through text: the decoder reads only what a parse gives.
        const json_check::Parsed parsed = json_check::parse(req.dump());
        out = proto::decode_join_with_ip(json_check::ObjectReader(parsed.value(), "")).request;
    } catch (const json_check::FieldError &e) {
        return invalid(e.describe());
    }
    if (a.socket >= 0) {
        // As on the socket (runtime/fd_closer.hpp): its linger off, so that no close of it
        // waits; anything but a socket is no use to a join.
        if (!runtime::defuse_passed(a.socket))
            return invalid("/socket: the UDP socket the join holds its group on; this Unix fd is not a socket");
        const int fd = ::fcntl(a.socket, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
            return Error{Errc::internal, std::string("cannot keep the join's socket: fcntl(F_DUPFD_CLOEXEC): ") +
                                             std::strerror(errno),
                         std::nullopt};
        give_socket(out, fd);
    }
    return out;
}

} // namespace mcastd::dbus
