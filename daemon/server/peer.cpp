// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "server/peer.hpp"

#include "frontend/process_start.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <system_error>

namespace mcastd::server {

frontend::Credentials read_peer(int fd) {
    frontend::Credentials c;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        throw std::system_error(errno, std::generic_category(), "SO_PEERCRED");
    c.who.pid = cred.pid;
    c.who.uid = cred.uid;
    c.who.unix_gid = cred.gid;

    // SO_PEERGROUPS says how much room it needs with ERANGE.
    std::vector<gid_t> groups(16);
    for (int attempt = 0; attempt < 4; ++attempt) {
        len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) {
            groups.resize(len / sizeof(gid_t));
            c.supplementary_groups = std::move(groups);
            break;
        }
        if (errno != ERANGE)
            break;
        groups.resize(len / sizeof(gid_t) + 1);
    }

    c.cgroup = frontend::process_cgroup(c.who.pid);
    c.who.comm = frontend::process_comm(c.who.pid);
    return c;
}

} // namespace mcastd::server
