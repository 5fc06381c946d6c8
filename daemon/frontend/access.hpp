// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Who a client is. The transports learn the credentials (SO_PEERCRED and SO_PEERGROUPS on the
// socket, the bus's credentials on D-Bus) and attest the client's process through a pidfd
// (process_identity.hpp) for its cgroup; the access policy (policy/policy.hpp) judges them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/request.hpp"
#include "policy/policy.hpp"

namespace mcastd::frontend {

struct Credentials {
    ClientInfo who;                          // pid, uid, Unix gid, process name; unknown ids are kUnknown*
    std::vector<gid_t> supplementary_groups; // Unix group ids
    std::string cgroup{};                    // the attested process's cgroup when it connected
    // Why the process could not be attested ("" when it was): its cgroup is then unknown, and
    // a join whose rule depends on it is refused with this reason (policy::Caller).
    std::string cgroup_unattested{};
    std::uint64_t start_time = 0; // the attested process's start (/proc/PID/stat); 0 unknown

    policy::Caller caller() const {
        return {who.uid, who.unix_gid, supplementary_groups, cgroup, cgroup_unattested};
    }
};

} // namespace mcastd::frontend
