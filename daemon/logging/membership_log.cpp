// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "logging/membership_log.hpp"

#include <spdlog/spdlog.h>

#include "logging/fields.hpp"
#include "service.hpp"

namespace mcastd::logging {

EngineObserver membership_log(const Service &service) {
    return [&service](const EngineNote &n) {
        const bool warn = n.kind == EngineNote::Kind::warning || n.kind == EngineNote::Kind::lost;
        const auto level = warn ? spdlog::level::warn : spdlog::level::info;
        if (!spdlog::should_log(level))
            return; // the sentence is only built for a log that keeps it
        std::optional<PortName> port;
        if (n.port < service.ports().size())
            port = PortName{service.ports()[n.port].device, service.ports()[n.port].port_num};
        const Fields fields = note_fields(n, port);
        const FieldScope scope(fields);
        const std::string where = port_name(service, n.port);
        spdlog::log(level, "{}: {}{}", where, n.kind == EngineNote::Kind::join_failed ? "join failed: " : "",
                    describe(n, where));
    };
}

} // namespace mcastd::logging
