// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Descriptors a client passes with a request (SCM_RIGHTS, proto/PROTOCOL.md). One request may
// carry one: the UDP socket of a join on a RoCE port, made in the client's network namespace,
// on which the daemon holds the group's kernel membership (doc/architecture.md §6.1). The join
// takes it (JoinRequest::roce); any other request's is closed, and a message that carried
// more than one is refused and all of them closed.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "proto/protocol.hpp"

namespace mcastd::server {

class PassedFds {
public:
    // Room for this many in a message's control data: enough to tell "more than one" apart,
    // while the kernel closes any past it (MSG_CTRUNC).
    static constexpr std::size_t kRoom = 4;
    static constexpr std::size_t kControlBytes = CMSG_SPACE(sizeof(int) * kRoom);

    // The descriptors of a message recvmsg() received (with MSG_CMSG_CLOEXEC) into `mh`.
    static PassedFds from(const msghdr &mh);

    PassedFds() = default;
    PassedFds(PassedFds &&o) noexcept;
    PassedFds &operator=(PassedFds &&) = delete;
    PassedFds(const PassedFds &) = delete;
    ~PassedFds(); // closes those not taken

    std::size_t count() const { return fds_.size(); }
    bool truncated() const { return truncated_; } // more came than there was room for

    // Gives `request` the descriptor it uses (a join's socket) and closes the rest; the
    // failure to answer instead when the message carried more than one.
    std::optional<proto::Failure> hand_to(proto::Request &request);

private:
    std::vector<int> fds_;
    bool truncated_ = false;
};

} // namespace mcastd::server
