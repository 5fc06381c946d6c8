// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The seam between the verbs helpers and libibverbs: the two calls that need hardware go
// through this table, so unit tests can count and script them without a device.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace rdmamcast::detail {

struct VerbsOps {
    int (*attach_mcast)(ibv_qp *qp, const ibv_gid *gid, std::uint16_t lid);
    int (*detach_mcast)(ibv_qp *qp, const ibv_gid *gid, std::uint16_t lid);
};

// The table in use (libibverbs by default). Not exported from the shared library: tests link
// the static build of the same objects.
VerbsOps &verbs_ops();

} // namespace rdmamcast::detail
