// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's listening SOCK_SEQPACKET socket.
#pragma once

#include <sys/types.h>

#include <string>

namespace mcastd::server {

// Binds and listens on `path` (non-blocking, close-on-exec) with `mode`, owned by root and by
// `group` ((gid_t)-1: root's). A socket file nobody answers on is a leftover of a crashed daemon
// and is replaced; one that answers belongs to a running daemon and is an error. Throws
// std::system_error naming the path.
int listen_seqpacket(const std::string &path, mode_t mode = 0660, gid_t group = static_cast<gid_t>(-1));

} // namespace mcastd::server
