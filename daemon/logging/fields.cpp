// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "logging/fields.hpp"

#include <spdlog/fmt/fmt.h>

#include "logging/message_ids.hpp"

namespace mcastd::logging {

namespace {
thread_local const Fields *current = nullptr;
} // namespace

FieldScope::FieldScope(const Fields &fields) : outer_(current) { current = &fields; }
FieldScope::~FieldScope() { current = outer_; }
const Fields *scope_fields() { return current; }

void add_client_fields(Fields &f, const ClientInfo &who) {
    f.push_back({"CLIENT_PID", std::to_string(who.pid)});
    f.push_back({"CLIENT_UID", std::to_string(who.uid)});
    if (who.account_uid() != who.uid)
        f.push_back({"CLIENT_ACCOUNT_UID", std::to_string(who.account_uid())});
    f.push_back({"CLIENT_COMM", who.comm});
}

Fields note_fields(const EngineNote &n, const std::optional<PortName> &port) {
    Fields f{{"MESSAGE_ID", std::string(message_id(n.kind).id)}};
    if (port) {
        f.push_back({"RDMA_DEVICE", port->device});
        f.push_back({"RDMA_PORT", std::to_string(port->port)});
    }
    if (!is_zero(n.mgid))
        f.push_back({"MCAST_MGID", format_gid(n.mgid)});
    if (n.mlid)
        f.push_back({"MCAST_MLID", fmt::format("{:#06x}", n.mlid)});
    if (n.join_state)
        f.push_back({"MCAST_JOIN_STATE", fmt::format("{:#x}", n.join_state)});
    if (n.client_info)
        add_client_fields(f, *n.client_info);
    if (n.sa_status)
        f.push_back({"SA_STATUS", fmt::format("{:#06x}", *n.sa_status)});
    if (n.roce) { // a RoCE group: where it is sent from
        f.push_back({"RDMA_NETDEV", n.roce->netdev});
        f.push_back({"RDMA_GID_TYPE", std::string(gid_type_name(n.roce->gid_type))});
        f.push_back({"RDMA_SGID_INDEX", std::to_string(n.roce->sgid_index)});
    }
    return f;
}

} // namespace mcastd::logging
