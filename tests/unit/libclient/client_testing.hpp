// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Helpers for the librdmamcast tests: handles that close themselves, and waiting on a
// descriptor (bounded, so that a broken library fails the test instead of hanging it).
#pragma once

#include <poll.h>

#include <cstring>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <rdmamcast/client.h>

#include "fake_daemon.hpp"

namespace fake {

struct CloseClient {
    void operator()(rdmamcast_client *c) const { rdmamcast_close(c); }
};
using ClientPtr = std::unique_ptr<rdmamcast_client, CloseClient>;

inline ClientPtr connect_to(const FakeDaemon &d) {
    rdmamcast_client *c = nullptr;
    int rc = rdmamcast_connect(d.path().c_str(), &c);
    EXPECT_EQ(rc, 0) << rdmamcast_last_error(nullptr)->message;
    return ClientPtr(c);
}

// Is `fd` readable within `ms` milliseconds?
inline bool readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

inline mcastd::Gid gid(const char *text) { return *mcastd::parse_gid(text); }

// Join parameters for ff15::1:2 on mlx5_0 port 1.
inline rdmamcast_join_params join_params() {
    rdmamcast_join_params p = RDMAMCAST_JOIN_PARAMS_INIT;
    p.device = "mlx5_0";
    p.port = 1;
    std::memcpy(p.mgid, gid("ff15::1:2").data(), 16);
    return p;
}

} // namespace fake
