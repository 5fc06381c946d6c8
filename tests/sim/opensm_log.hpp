// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What OpenSM's SA processed, read from its debug log (opensm -D 0x0b, best with
// "force_log_flush TRUE" in its config so the log is on disk as it handles each request): the
// SA's own record of every MCMemberRecord Set, Delete and Get, whoever sent it. The tests that
// bound what reached the SA count here, not in the daemon's counters.
#pragma once

#include <string>
#include <vector>

#include "common/gid.hpp"

namespace mcastd::sim {

// One MCMemberRecord request OpenSM logged.
struct SaRequest {
    std::string method; // "Set" (join), "Delete" (leave) or "Get" (query)
    Gid mgid{};
    Gid port_gid{};
};

// OpenSM logs "[TID] ... mcmr_rcv_join_mgrp: Dump of incoming record" (Set),
// "mcmr_rcv_leave_mgrp: Dump of record" (Delete) or "mcmr_query_mgrp: Dump of record" (Get),
// then, from the same thread, the record as one message: "MCMember Record dump:" followed by
// tab-indented "MGID....X" and "PortGid....Y" lines. SA threads interleave, hence the thread id.
std::vector<SaRequest> sa_requests(const std::string &log);

} // namespace mcastd::sim
