// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "logging/membership_log.hpp"

#include <spdlog/spdlog.h>

#include "logging/fields.hpp"
#include "logging/message_ids.hpp"
#include "service/service.hpp"

namespace mcastd::logging {

EngineObserver membership_log(const Service &service, RoutineLimiter &limiter) {
    return [&service, &limiter](const EngineNote &n) {
        const bool warn = n.kind == EngineNote::Kind::warning || n.kind == EngineNote::Kind::lost;
        const auto level = warn ? spdlog::level::warn : spdlog::level::info;
        if (!spdlog::should_log(level))
            return; // the sentence is only built for a log that keeps it
        // A note about a client is routine: its uid's bucket decides. The rest never is.
        if (n.client_info && !limiter.admit(n.client_info->uid, n.kind))
            return;
        std::optional<PortName> port;
        if (const port::RegisteredPort *p = service.ports().get(n.port))
            port = PortName{p->device(), p->number()};
        const Fields fields = note_fields(n, port);
        const FieldScope scope(fields);
        const std::string where = port_name(service, n.port);
        spdlog::log(level, "{}: {}{}", where, n.kind == EngineNote::Kind::join_failed ? "join failed: " : "",
                    describe(n, where));
    };
}

void log_folded(const FoldSummary &s, const std::string &user) {
    if (!spdlog::should_log(spdlog::level::warn))
        return;
    const Fields f{{"MESSAGE_ID", std::string(kRoutineFolded.id)},
                   {"CLIENT_UID", std::to_string(s.uid)},
                   {"FOLDED_LINES", std::to_string(s.folded)}};
    const FieldScope scope(f);
    spdlog::warn("{}", describe(s, user));
}

} // namespace mcastd::logging
