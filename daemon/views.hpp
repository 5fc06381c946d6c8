// The daemon's state as the protocol shows it (`list`, `status`), built once for every
// transport: the socket server encodes these, the D-Bus service converts them.
#pragma once

#include <chrono>
#include <cstdint>

#include "proto/protocol.hpp"
#include "service.hpp"

namespace mcastd {

proto::ListResult list_view(const Service &service);

struct StatusExtras {
    std::string daemon; // "rdma-mcastd 0.1.0"
    std::chrono::steady_clock::time_point started;
    std::uint64_t clients = 0;
};
proto::StatusResult status_view(const Service &service, const StatusExtras &extras);

} // namespace mcastd
