// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The RoCE ports' membership sockets in the service manager's fd store (server/fd_store.hpp),
// under "roce-membership-<id>", beside the client connections: the store the daemon shares
// between both, seen as the roce::SocketStore KernelMemberships keeps its sockets in.
#pragma once

#include <memory>

#include "roce/kernel_memberships.hpp"
#include "server/fd_store.hpp"

namespace mcastd {

class MembershipFdStore final : public roce::SocketStore {
public:
    explicit MembershipFdStore(std::shared_ptr<server::FdStore> store) : store_(std::move(store)) {}
    void store(std::uint64_t socket, int fd) override {
        store_->store(fd, server::membership_socket_fd_name(socket));
    }
    void adopted(std::uint64_t socket) override { store_->adopted(server::membership_socket_fd_name(socket)); }
    void remove(std::uint64_t socket) override { store_->remove(server::membership_socket_fd_name(socket)); }

private:
    std::shared_ptr<server::FdStore> store_;
};

} // namespace mcastd
