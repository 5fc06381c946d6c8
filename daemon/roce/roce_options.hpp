// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the configuration decides for RoCE ports (config "groups": roce_ipv6, create.qkey). A
// header of its own so that the config reader fills it without linking the RoCE backend.
#pragma once

#include <cstdint>

#include "common/roce_address.hpp"

namespace mcastd::roce {

struct RoceOptions {
    // The Q_Key of a group whose first join asserts none: rdma_cm's (RDMA_UDP_QKEY), or
    // groups.create.qkey.
    std::uint32_t default_qkey = kRoceDefaultQkey;
    // groups.roce_ipv6: IPv6 groups on RoCE v2 GIDs need an MLD membership, which rdma_cm
    // refuses to make (rdma_cm_refuses): refused here too unless this is set.
    bool ipv6_on_roce_v2 = false;
    bool operator==(const RoceOptions &) const = default;
};

// The config key that allows IPv6 groups on RoCE v2, as errors name it.
inline constexpr const char *kRoceIpv6Key = "groups.roce_ipv6";

} // namespace mcastd::roce
