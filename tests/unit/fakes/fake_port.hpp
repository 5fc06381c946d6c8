// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// One active InfiniBand port as discovery would report it, for tests that add ports to a
// Service by hand (the fake SA knows it by the same PortGID).
#pragma once

#include "common/request.hpp"
#include "port/port_attributes.hpp"

namespace mcastd::test {

inline port::PortAttributes test_port() {
    port::PortAttributes a;
    a.device = "mlx5_0";
    a.port_num = 1;
    a.gid_prefix = 0xfe80000000000000ULL;
    a.port_guid = 0x100003;
    a.state = static_cast<std::uint8_t>(port::PortState::active);
    a.sm_lid = 1;
    a.link_layer = "InfiniBand";
    return a;
}

// A full-member join of `mgid` on that port.
inline JoinRequest join_request(const char *mgid) {
    JoinRequest r;
    r.device = "mlx5_0";
    r.port = 1;
    r.mgid = *parse_gid(mgid);
    r.join_state = join::full;
    return r;
}

} // namespace mcastd::test
