// Who is on the other end of a Unix socket, as the kernel says (never as the client says).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace mcastd::server {

struct Peer {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups; // supplementary groups (SO_PEERGROUPS)
    std::string comm;          // /proc/<pid>/comm at connect time; "?" if unreadable
};

// Reads SO_PEERCRED, SO_PEERGROUPS and the process name. Throws std::system_error only when
// SO_PEERCRED itself fails; the rest is best effort.
Peer read_peer(int fd);

// Access policy: empty lists let in anyone who can open the socket; root always gets in.
struct AccessPolicy {
    std::vector<uid_t> allow_uids;
    std::vector<gid_t> allow_gids;
    bool allows(const Peer &p) const;
    bool operator==(const AccessPolicy &) const = default;
};

} // namespace mcastd::server
