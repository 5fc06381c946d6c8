// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The engine's configuration: the MGIDs it refuses, the values a create uses, and the pacing
// of background work. Filled from the config file's "groups", "retry" and "rejoin" sections.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "common/named_group.hpp"
#include "core/timers.hpp"

namespace mcastd {

struct EngineConfig {
    // The kernel shares IPoIB (401b/601b) and rdma_cm (4001/6001) groups per port; a Delete
    // from the daemon would cut its members off, so those signatures are refused by default.
    bool allow_ipoib_mgids = false;
    bool allow_rdma_cm_mgids = false;

    // MGID prefixes in which no other agent on the host's ports holds bits (groups.owned_prefixes,
    // and groups.names.prefix while names are enabled): a new group there costs its Set alone,
    // with no probe Get before it (doc/architecture.md §5, "Owned prefixes").
    std::vector<NamePrefix> owned_prefixes;
    bool owns(const Gid &mgid) const {
        return std::any_of(owned_prefixes.begin(), owned_prefixes.end(),
                           [&](const NamePrefix &p) { return p.contains(mgid); });
    }

    // Values used when a join creates a group and the member did not assert them.
    struct CreateDefaults {
        std::uint32_t qkey = 0x01234567; // RDMA_UDP_QKEY, what rdma_cm UD users expect
        std::uint16_t pkey = 0xffff;
        std::uint8_t sl = 0;
        std::uint8_t tclass = 0;
        std::uint32_t flow_label = 0;
        // Site-local, not the SA's link-local default: OpenSM refuses to re-create an
        // SA-assigned link-local MGID explicitly, so only these survive an SM restart.
        std::uint8_t scope = 0x5;
        bool operator==(const CreateDefaults &) const = default;
    } create;

    // Background SA work that failed (a Delete, a re-sync probe, a re-join) is retried with
    // capped exponential backoff.
    Duration retry_min = std::chrono::seconds(1);
    Duration retry_max = std::chrono::seconds(16);

    // A port's re-join starts after a random pause of up to this long, so that thousands of
    // hosts told of the same SM restart do not all send their Sets in the same millisecond.
    Duration rejoin_jitter = std::chrono::milliseconds(500);
    std::uint64_t seed = 1; // for that jitter; the daemon seeds it randomly
    bool operator==(const EngineConfig &) const = default;
};

} // namespace mcastd
