// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Where the client socket comes from: the service manager (rdma-mcastd.socket, passed with
// sd_listen_fds_with_names) or, when the daemon was started without one, its own bind() of the
// configured path. One binary runs both ways.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mcastd::server {

// FileDescriptorName= of the socket unit's client listener.
inline constexpr const char *kClientFdName = "client";

// A client connection the service manager kept in its fd store for this service (fd_store.hpp).
struct StoredConnection {
    int fd = -1;
    std::uint64_t session = 0; // from its name, "c-<session>"
};

struct ListenSocket {
    int fd = -1;
    std::string path;       // the address clients connect to
    bool activated = false; // passed by the service manager: its file is never ours to remove
    std::vector<StoredConnection> stored;
    // The RoCE ports' membership sockets the fd store kept ("roce-membership-<id>"), by id.
    std::map<std::uint64_t, int> membership_sockets;
};

// Takes the listener named "client" from LISTEN_FDS (or the only one, when the service manager
// gave no names), the stored client connections ("c-<session>") and membership sockets
// ("roce-membership-<id>"), and closes any other passed fd with a warning. Without LISTEN_FDS it binds
// `configured_path` with listen_seqpacket(). The LISTEN_* variables are unset either way, so
// children do not inherit them. Throws std::system_error naming the fd or path and the cause,
// e.g. a passed fd that is not a listening SOCK_SEQPACKET socket.
ListenSocket open_client_socket(const std::string &configured_path, mode_t mode = 0660,
                                gid_t group = static_cast<gid_t>(-1));

} // namespace mcastd::server
