// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Who a client is. The transports learn the credentials (SO_PEERCRED and SO_PEERGROUPS on the
// socket, the bus's credentials on D-Bus, the cgroup from /proc); the access policy
// (policy/policy.hpp) judges them.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/request.hpp"
#include "policy/policy.hpp"

namespace mcastd::frontend {

struct Credentials {
    ClientInfo who;                          // pid, uid, Unix gid, process name
    std::vector<gid_t> supplementary_groups; // Unix group ids
    std::string cgroup{};                    // process_cgroup(who.pid) when it connected

    policy::Caller caller() const { return {who.uid, who.unix_gid, supplementary_groups, cgroup}; }
};

} // namespace mcastd::frontend
