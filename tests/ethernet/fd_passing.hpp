// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// One file descriptor over a connected Unix socket (SCM_RIGHTS, with one byte of data): how a
// socket made in one network namespace reaches a process in another (doc/ethernet-bed.md §4).
#pragma once

namespace mcastd::eth {

// Sends `fd`; 0, or -errno. Never raises SIGPIPE.
int send_fd(int conn, int fd);

// Receives one descriptor sent by send_fd, close-on-exec; the descriptor, or -errno
// (-EBADMSG when a message came without one, -ECONNRESET when the peer closed first).
int receive_fd(int conn);

} // namespace mcastd::eth
