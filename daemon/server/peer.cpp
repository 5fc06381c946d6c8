// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "server/peer.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "frontend/process_identity.hpp"

namespace mcastd::server {

frontend::Credentials peer_credentials(int fd) {
    frontend::Credentials c;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        throw std::system_error(errno, std::generic_category(), "SO_PEERCRED");
    c.who.pid = cred.pid;
    c.who.uid = cred.uid;
    c.who.unix_gid = cred.gid;
    c.who.comm = "?";

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
    return c;
}

Peer identify_peer(int fd, PeerPidfd how) {
    Peer out{peer_credentials(fd), {}};
    frontend::Credentials &c = out.who;
    if (c.who.pid == 0) {
        c.cgroup_unattested = "the client runs in another PID namespace than the daemon, so its process cannot be read";
        return out;
    }
    std::variant<frontend::Pidfd, int> pidfd = ENOPROTOOPT;
    if (how == PeerPidfd::when_available)
        pidfd = frontend::Pidfd::of_peer(fd);
    if (const int *err = std::get_if<int>(&pidfd); err && *err == ENOPROTOOPT)
        pidfd = frontend::Pidfd::open(c.who.pid); // the kernel has no SO_PEERPIDFD
    if (const int *err = std::get_if<int>(&pidfd)) {
        out.unidentified = *err == ESRCH || *err == EINVAL
                               ? "process " + std::to_string(c.who.pid) + " that connected has exited"
                               : "no pidfd for process " + std::to_string(c.who.pid) + ": " + std::strerror(*err);
        return out;
    }
    auto id = frontend::read_identity(c.who.pid, std::get<frontend::Pidfd>(pidfd), frontend::Expected{c.who.uid, {}});
    if (auto *why = std::get_if<std::string>(&id)) {
        out.unidentified = std::move(*why);
        return out;
    }
    frontend::take_process(c, std::get<frontend::ProcessIdentity>(std::move(id)));
    return out;
}

} // namespace mcastd::server
