#include "server/peer.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <system_error>

namespace mcastd::server {

Peer read_peer(int fd) {
    Peer p;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        throw std::system_error(errno, std::generic_category(), "SO_PEERCRED");
    p.pid = cred.pid;
    p.uid = cred.uid;
    p.gid = cred.gid;

    // SO_PEERGROUPS says how much room it needs with ERANGE.
    std::vector<gid_t> groups(16);
    for (int attempt = 0; attempt < 4; ++attempt) {
        len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) {
            groups.resize(len / sizeof(gid_t));
            p.groups = std::move(groups);
            break;
        }
        if (errno != ERANGE)
            break;
        groups.resize(len / sizeof(gid_t) + 1);
    }

    std::ifstream comm("/proc/" + std::to_string(p.pid) + "/comm");
    if (!comm || !std::getline(comm, p.comm) || p.comm.empty())
        p.comm = "?";
    return p;
}

bool AccessPolicy::allows(const Peer &p) const {
    if (p.uid == 0 || (allow_uids.empty() && allow_gids.empty()))
        return true;
    if (std::find(allow_uids.begin(), allow_uids.end(), p.uid) != allow_uids.end())
        return true;
    auto in = [&](gid_t g) { return std::find(allow_gids.begin(), allow_gids.end(), g) != allow_gids.end(); };
    return in(p.gid) || std::any_of(p.groups.begin(), p.groups.end(), in);
}

} // namespace mcastd::server
