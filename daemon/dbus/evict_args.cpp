// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "dbus/evict_args.hpp"

#include <nlohmann/json.hpp>

#include "common/json_check.hpp"
#include "dbus/call_bound.hpp"

namespace mcastd::dbus {

std::variant<proto::Evict, Error> decode_evict_args(const Options &options) {
    auto invalid = [](std::string message) { return Error{Errc::invalid_argument, std::move(message), std::nullopt}; };
    // The request as the socket protocol would carry it; its decoder does the rest.
    nlohmann::json req = nlohmann::json::object();
    for (const auto &[key, value] : options) {
        // The envelope's keys are the socket's, not options; no key is that long, and the
        // decoder, which quotes a key whole, never sees one.
        if (key == "id" || key == "op" || key.size() > kQuotedKeyBytes)
            return invalid(quoted_key(key) + ": unknown key");
        if (req.contains(key))
            return invalid(quoted_key(key) + ": given twice");
        std::visit([&req, &key = key](const auto &v) { req[key] = v; }, value);
    }
    req["id"] = 0;
    req["op"] = "evict";
    auto decoded = proto::decode_request(req.dump());
    if (auto *bad = std::get_if<proto::BadRequest>(&decoded))
        return invalid(bad->failure.error.message);
    return std::get<proto::Evict>(std::get<proto::RequestEnvelope>(decoded).request);
}

} // namespace mcastd::dbus
