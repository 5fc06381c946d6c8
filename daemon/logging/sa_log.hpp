// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The journal's view of the SA's load: a warning when SA MADs per transaction stay above
// kAmplificationWarning (views.hpp) for an interval, and a note when they come back.
#pragma once

#include <cstdint>

namespace mcastd::logging {

struct SaLoad {
    bool amplified = false; // true: the episode starts; false: it ended
    double ratio = 0;       // MADs sent per transaction ended, over the interval
    std::uint64_t sent = 0, ended = 0, retransmits = 0, late = 0;
    unsigned interval_s = 0;
};

// MESSAGE_ID sa-amplified, with SA_AMPLIFICATION, SA_MADS_SENT, SA_TRANSACTIONS,
// SA_RETRANSMITS and SA_LATE.
void log_sa_load(const SaLoad &load);

} // namespace mcastd::logging
