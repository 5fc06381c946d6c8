// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Descriptors a client passes with a request (SCM_RIGHTS, proto/PROTOCOL.md). One request may
// carry one: the UDP socket of a join on a RoCE port, made in the client's network namespace,
// on which the daemon holds the group's kernel membership (doc/architecture.md §6.1). The join
// takes it (JoinRequest::roce); any other request's is closed, and a message that carried
// more than one, or a join that carried anything but a socket, is refused and all of them
// closed. Every one is made safe to close as it arrives (fd_closer.hpp): a client cannot stop
// the loop with a descriptor whose close waits.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "proto/protocol.hpp"
#include "runtime/fd_closer.hpp"

namespace mcastd::server {

class PassedFds {
public:
    // Room for every descriptor one message can carry (the kernel's SCM_MAX_FD): those past
    // the room would be closed by the kernel in the receiving thread (MSG_CTRUNC), where a
    // close that waits would stop the loop.
    static constexpr std::size_t kRoom = 253;
    static constexpr std::size_t kControlBytes = CMSG_SPACE(sizeof(int) * kRoom);

    // The descriptors of a message recvmsg() received (with MSG_CMSG_CLOEXEC) into `mh` from a
    // client charged to `owner`; those that are not sockets go to `closer` under its name.
    static PassedFds from(const msghdr &mh, runtime::FdCloser &closer, uid_t owner);

    PassedFds() = default;
    PassedFds(PassedFds &&o) noexcept;
    PassedFds &operator=(PassedFds &&) = delete;
    PassedFds(const PassedFds &) = delete;
    ~PassedFds(); // closes those not taken

    std::size_t count() const { return sockets_.size() + others_.size(); }
    bool truncated() const { return truncated_; } // more came than there was room for
    std::size_t closed_later() const { return others_.size(); } // by the closer, not sockets

    // Gives `request` the descriptor it uses (a join's socket) and closes the rest; the
    // failure to answer instead when the message carried more than one, or a join carried
    // something other than a socket.
    std::optional<proto::Failure> hand_to(proto::Request &request);

private:
    std::vector<int> sockets_; // their linger off: closed here
    std::vector<int> others_;  // closed in the background
    runtime::FdCloser *closer_ = nullptr;
    uid_t owner_ = 0;
    bool truncated_ = false;
};

} // namespace mcastd::server
