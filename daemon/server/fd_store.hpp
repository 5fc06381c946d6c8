// The service manager's file descriptor store (sd_notify(3): FDSTORE=1, FDNAME=,
// FDSTOREREMOVE=1; the unit's FileDescriptorStoreMax=). The daemon hands it every client
// connection as it accepts it, so a restart or a crash of the daemon does not close the
// connection: the next instance gets it back from sd_listen_fds_with_names(3), under the same
// name. Removing it before closing it is what makes a close reach the client.
#pragma once

#include <memory>
#include <string>

namespace mcastd::server {

class FdStore {
public:
    virtual ~FdStore() = default;
    // Keeps a duplicate of `fd` under `name` (at most 255 ASCII characters, no ':').
    virtual void store(int fd, const std::string &name) = 0;
    // Closes every stored fd of that name.
    virtual void remove(const std::string &name) = 0;
};

// The store of the service manager the daemon runs under ($NOTIFY_SOCKET), or nullptr when
// there is none. A unit without FileDescriptorStoreMax= refuses the fds (it logs why); the
// daemon works as before, and its clients then reconnect and resume after a restart.
std::unique_ptr<FdStore> service_manager_fd_store();

// The name a client connection is stored under: "c-" and its session id.
std::string connection_fd_name(std::uint64_t session_id);
// The session id of a stored connection's name, or 0 when it is not one.
std::uint64_t session_of_fd_name(const std::string &name);

} // namespace mcastd::server
