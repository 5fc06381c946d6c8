// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The journal's view of a RoCE port's GID table: one entry per source address that went, came,
// moved to another index, or whose netdev changed (gone from the daemon's network namespace, back,
// made anew, another MTU). The memberships sent from it are told `lost` or `restored` on their
// own lines; this says why.
#pragma once

#include <string>

#include "port/gid_table.hpp"

namespace mcastd::logging {

// MESSAGE_ID roce-source, with RDMA_DEVICE, RDMA_PORT, ROCE_CHANGE (removed, added, moved,
// netdev), ROCE_GID, ROCE_GID_TYPE, ROCE_SGID_INDEX and ROCE_NETDEV. A removed entry, or one
// whose netdev is gone, is a warning; the others are info.
void log_gid_change(const std::string &device, unsigned port, const port::GidTableChange &change);

} // namespace mcastd::logging
