// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The service manager's file descriptor store (sd_notify(3): FDSTORE=1, FDNAME=,
// FDSTOREREMOVE=1; the unit's FileDescriptorStoreMax=). The daemon hands it every client
// connection as it accepts it, and every socket a RoCE port's kernel memberships are held on
// as it keeps it, so a restart or a crash of the daemon does not close them: the next instance
// gets them back from sd_listen_fds_with_names(3), under the same name. Removing one before
// closing it is what makes a close reach the client, or the leave the switch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace mcastd::server {

class FdStore {
public:
    virtual ~FdStore() = default;
    // Keeps a duplicate of `fd` under `name` (at most 255 ASCII characters, no ':').
    virtual void store(int fd, const std::string &name) = 0;
    // Closes every stored fd of that name (one this store stored or adopted).
    virtual void remove(const std::string &name) = 0;
    // `name` is in the store already: the previous instance stored it.
    virtual void adopted(const std::string &name) = 0;
};

// The store of the service manager the daemon runs under ($NOTIFY_SOCKET), when $FDSTORE says
// how many fds it keeps (systemd 254 sets it from FileDescriptorStoreMax=; the shipped unit
// sets it too, for 252); nullptr otherwise. Without one the daemon works as before, and its
// clients reconnect and resume after a restart. Connections beyond the store's size are not
// stored (the daemon warns once).
std::unique_ptr<FdStore> service_manager_fd_store();

// Closes a connection the service manager passed back that no session takes (shutdown, so its
// client sees the close; out of the store; close).
void discard_stored_connection(int fd, std::uint64_t session);
// Takes an fd the service manager passed back under `name` out of the store, and closes it.
void discard_stored(int fd, const std::string &name);

// The name a client connection is stored under: "c-" and its session id.
std::string connection_fd_name(std::uint64_t session_id);
// The session id of a stored connection's name, or 0 when it is not one.
std::uint64_t session_of_fd_name(const std::string &name);
// The name a RoCE port's membership socket is stored under: "roce-membership-" and its id
// (roce/kernel_memberships.hpp), and back (0: not one).
std::string membership_socket_fd_name(std::uint64_t socket_id);
std::uint64_t membership_socket_of_fd_name(const std::string &name);

} // namespace mcastd::server
