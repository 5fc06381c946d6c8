// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "logging/policy_log.hpp"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "common/port_name.hpp"
#include "logging/message_ids.hpp"

namespace mcastd::logging {

namespace {

void add_policy(Fields &f, const std::optional<PolicyRef> &p) {
    if (!p)
        return;
    if (!p->rule.empty())
        f.push_back({"POLICY_RULE", p->rule});
    if (!p->quota.empty()) {
        f.push_back({"POLICY_QUOTA", p->quota});
        f.push_back({"POLICY_LIMIT", std::to_string(p->limit)});
    }
}

std::string who_text(const ClientInfo &c) { return fmt::format("pid {} uid {} ({})", c.pid, c.uid, c.comm); }

} // namespace

void log_refused(const ClientInfo &who, const JoinRequest &req, const Error &why) {
    if (!spdlog::should_log(spdlog::level::warn))
        return;
    Fields f{{"MESSAGE_ID", std::string(kPolicyRefused.id)},
             {"RDMA_DEVICE", req.device},
             {"RDMA_PORT", std::to_string(req.port)},
             {"MCAST_JOIN_STATE", fmt::format("{:#x}", req.join_state)}};
    if (!is_zero(req.mgid))
        f.push_back({"MCAST_MGID", format_gid(req.mgid)});
    add_client_fields(f, who);
    add_policy(f, why.policy);
    const FieldScope scope(f);
    spdlog::warn("{}: join of {} by {} refused: {}", port_name(req.device, req.port),
                 is_zero(req.mgid) ? std::string("a new group") : "group " + format_gid(req.mgid), who_text(who),
                 why.message);
}

void log_flagged(const ClientInfo &who, std::uint64_t id, const PortName &port, const Gid &mgid,
                 const std::string &rule, const std::string &why) {
    Fields f{{"MESSAGE_ID", std::string(kPolicyFlagged.id)},
             {"RDMA_DEVICE", port.device},
             {"RDMA_PORT", std::to_string(port.port)},
             {"MCAST_MGID", format_gid(mgid)}};
    add_client_fields(f, who);
    f.push_back({"POLICY_RULE", rule});
    const FieldScope scope(f);
    const std::string where = port_name(port.device, port.port);
    if (why.empty())
        spdlog::info("{}: membership {} of {} in group {} is admitted by the access policy again", where, id,
                     who_text(who), format_gid(mgid));
    else
        spdlog::warn("{}: membership {} of {} in group {} is kept, but the access policy in force would refuse it: "
                     "{} (rdma-mcastctl evict releases it)",
                     where, id, who_text(who), format_gid(mgid), why);
}

void log_evicted(const ClientInfo &by, const ClientInfo &whose, std::size_t count, const std::string &what) {
    Fields f{{"MESSAGE_ID", std::string(kEvicted.id)}};
    add_client_fields(f, whose);
    const FieldScope scope(f);
    spdlog::warn("{} evicted {} membership(s) of {}: {}", who_text(by), count, who_text(whose), what);
}

void log_refused_client(const ClientInfo &who, const std::string &why) {
    Fields f{{"MESSAGE_ID", std::string(kClientRefused.id)}};
    add_client_fields(f, who);
    const FieldScope scope(f);
    spdlog::warn("client {} refused: {}", who_text(who), why);
}

void log_disconnected(const ClientInfo &by, const ClientInfo &whose, std::uint64_t session) {
    Fields f{{"MESSAGE_ID", std::string(kDisconnected.id)}};
    add_client_fields(f, whose);
    const FieldScope scope(f);
    spdlog::warn("{} disconnected session {} of {}", who_text(by), session, who_text(whose));
}

} // namespace mcastd::logging
