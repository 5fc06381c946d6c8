// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Who is on the other end of a Unix socket, as the kernel says (never as the client says).
#pragma once

#include <string>

#include "frontend/access.hpp"

namespace mcastd::server {

// The kernel's credentials of the peer as they were at connect(): SO_PEERCRED (pid, effective
// uid and gid) and SO_PEERGROUPS. Throws std::system_error only when SO_PEERCRED fails; groups
// the kernel does not give are left empty.
frontend::Credentials peer_credentials(int fd);

// How the peer's process is found: SO_PEERPIDFD where the kernel has it, or always pidfd_open(2)
// of the SO_PEERCRED pid (the fallback, chosen by tests).
enum class PeerPidfd { when_available, never };

struct Peer {
    frontend::Credentials who; // the kernel's credentials, and what its process attests
    std::string unidentified;  // why the client cannot be identified ("" when it can): refuse it
};

// The peer: peer_credentials(), and its process attested (frontend/process_identity.hpp) for its
// cgroup, name and start time. The process is the one that connected where the kernel gives its
// pidfd (SO_PEERPIDFD, Linux 6.5); before that it is whichever process has the SO_PEERCRED pid
// when the daemon accepts, whose effective uid must still be the peer's. A peer whose process is
// gone, or runs as another uid, is unidentified. A peer in another PID namespace (its pid reads
// as 0) has no process the daemon can read: its uid and groups stand, its cgroup is
// unattested.
Peer identify_peer(int fd, PeerPidfd how = PeerPidfd::when_available);

} // namespace mcastd::server
