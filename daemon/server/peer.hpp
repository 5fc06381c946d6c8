// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Who is on the other end of a Unix socket, as the kernel says (never as the client says).
#pragma once

#include "frontend/access.hpp"

namespace mcastd::server {

// Reads SO_PEERCRED, SO_PEERGROUPS and the process name (frontend::process_comm(): cleaned,
// "?" if unreadable). Throws std::system_error only when SO_PEERCRED itself fails; the rest is best
// effort.
frontend::Credentials read_peer(int fd);

} // namespace mcastd::server
