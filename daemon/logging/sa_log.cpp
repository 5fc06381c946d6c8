// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "logging/sa_log.hpp"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "logging/fields.hpp"
#include "logging/message_ids.hpp"

namespace mcastd::logging {

void log_sa_load(const SaLoad &l) {
    const Fields f{{"MESSAGE_ID", std::string(kSaAmplified.id)},
                   {"SA_AMPLIFICATION", fmt::format("{:.2f}", l.ratio)},
                   {"SA_MADS_SENT", std::to_string(l.sent)},
                   {"SA_TRANSACTIONS", std::to_string(l.ended)},
                   {"SA_RETRANSMITS", std::to_string(l.retransmits)},
                   {"SA_LATE", std::to_string(l.late)}};
    const FieldScope scope(f);
    if (l.amplified)
        spdlog::warn("the SA is doing our work more than once: {:.2f} MADs per transaction in the last "
                     "{} s ({} sent for {} transactions, {} retransmits, {} late answers); the SA "
                     "answers slower than the tries' timeouts",
                     l.ratio, l.interval_s, l.sent, l.ended, l.retransmits, l.late);
    else
        spdlog::info("SA MADs per transaction back to {:.2f} in the last {} s", l.ratio, l.interval_s);
}

} // namespace mcastd::logging
