// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/accounts.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace mcastd::frontend {

proto::Failure Accounts::over(std::string_view what, std::string_view kind, std::string_view section,
                              std::string_view name, std::size_t value, bool rule_may_set) {
    proto::Failure f = proto::Failure::of(
        Errc::limit, fmt::format("{}, its {} (config {}.{}{}: {})", what, kind, section, name,
                                 rule_may_set ? " or the admitting rule's" : "", value));
    f.error.policy = PolicyRef{{}, std::string(name), value};
    return f;
}

namespace {

std::string uid_text(uid_t uid) { return "uid " + std::to_string(uid); }

} // namespace

std::string counted(std::size_t n, std::string_view noun) {
    return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

std::size_t Usage::groups_on(PortIndex port) const {
    const auto it = groups.find(port);
    if (it == groups.end())
        return 0;
    const auto unnamed = it->second.find(kZeroGid);
    if (unnamed == it->second.end())
        return it->second.size();
    return it->second.size() - 1 + unnamed->second;
}

std::size_t Usage::memberships_in(PortIndex port, const Gid &mgid) const {
    const auto on_port = groups.find(port);
    if (on_port == groups.end())
        return 0;
    const auto it = on_port->second.find(mgid);
    return it == on_port->second.end() ? 0 : it->second;
}

// ---- clients ----

std::optional<proto::Failure> Accounts::may_connect(uid_t uid) const {
    const std::size_t slots = limits_.max_clients;
    const std::size_t open = uid == 0 ? slots : slots - std::min(slots, limits_.root_reserved_clients);
    if (clients_ >= open)
        return uid == 0 ? over("the daemon serves " + counted(clients_, "client"), "bound", "limits",
                               "max_clients", slots)
                        : over(fmt::format("the daemon serves {} and the rest of its {} slots are root's",
                                           counted(clients_, "client"), slots),
                               "reserve", "limits", "root_reserved_clients", limits_.root_reserved_clients);
    if (uid == 0)
        return std::nullopt;
    const auto it = usage_.find(uid);
    const std::size_t mine = it == usage_.end() ? 0 : it->second.clients;
    if (mine >= limits_.max_clients_per_uid)
        return over(fmt::format("{} has {}", uid_text(uid), counted(mine, "client")), "share", "limits", "max_clients_per_uid",
                    limits_.max_clients_per_uid);
    return std::nullopt;
}

void Accounts::connected(uid_t uid) {
    ++clients_;
    ++of(uid).clients;
}

void Accounts::disconnected(uid_t uid) {
    --clients_;
    --of(uid).clients;
    prune(uid);
}

// ---- monitors ----

std::optional<proto::Failure> Accounts::may_monitor(uid_t uid) const {
    if (uid == 0)
        return std::nullopt;
    const auto it = usage_.find(uid);
    const std::size_t mine = it == usage_.end() ? 0 : it->second.monitors;
    if (mine >= limits_.max_monitors_per_uid)
        return over(fmt::format("{} monitors on {}", uid_text(uid), counted(mine, "connection")), "share", "limits",
                    "max_monitors_per_uid", limits_.max_monitors_per_uid);
    return std::nullopt;
}

void Accounts::monitoring(uid_t uid, bool on) {
    Usage &u = of(uid);
    on ? ++u.monitors : --u.monitors;
    prune(uid);
}

// ---- queued bytes ----

std::optional<std::string> Accounts::may_queue(uid_t uid, std::size_t bytes) const {
    if (queued_total_ + bytes > limits_.max_queued_bytes_total)
        return fmt::format("the daemon holds {} bytes for its clients, its bound (config limits.max_queued_bytes_total: "
                           "{})",
                           queued_total_, limits_.max_queued_bytes_total);
    if (uid == 0)
        return std::nullopt;
    const auto it = usage_.find(uid);
    const std::size_t mine = it == usage_.end() ? 0 : it->second.queued_bytes;
    if (mine + bytes > limits_.max_queued_bytes_per_uid)
        return fmt::format("the daemon holds {} bytes for {}'s connections, its share (config "
                           "limits.max_queued_bytes_per_uid: {})",
                           mine, uid_text(uid), limits_.max_queued_bytes_per_uid);
    return std::nullopt;
}

void Accounts::queued(uid_t uid, std::size_t bytes) {
    queued_total_ += bytes;
    of(uid).queued_bytes += bytes;
}

void Accounts::sent(uid_t uid, std::size_t bytes) {
    queued_total_ -= bytes;
    of(uid).queued_bytes -= bytes;
    prune(uid);
}

// ---- memberships ----

std::optional<proto::Failure> Accounts::may_join(uid_t uid, std::size_t memberships_quota, PortIndex port,
                                                 const Gid &mgid, const std::string &port_name) const {
    if (uid == 0)
        return std::nullopt;
    if (memberships_ >= limits_.max_memberships)
        return over("the daemon holds or waits for " + counted(memberships_, "membership"), "bound", "limits",
                    "max_memberships", limits_.max_memberships);
    const auto it = usage_.find(uid);
    const Usage empty;
    const Usage &u = it == usage_.end() ? empty : it->second;
    if (memberships_quota && u.memberships >= memberships_quota) {
        return over(fmt::format("{} holds or waits for {}", uid_text(uid), counted(u.memberships, "membership")), "quota",
                    "access.quotas", "memberships_per_uid", memberships_quota, true);
    }
    if (const std::size_t share = policy_.quotas.groups_per_port_per_uid) {
        const auto groups = u.groups.find(port);
        const bool new_group = is_zero(mgid) || groups == u.groups.end() || !groups->second.count(mgid);
        if (new_group && u.groups_on(port) >= share)
            return over(fmt::format("{}'s memberships on {} are in {}", uid_text(uid), port_name,
                                    counted(u.groups_on(port), "group")),
                        "share", "access.quotas", "groups_per_port_per_uid", share);
    }
    return std::nullopt;
}

void Accounts::charge(uid_t uid, PortIndex port, const Gid &mgid, bool created) {
    ++memberships_;
    Usage &u = of(uid);
    ++u.memberships;
    u.creates += created;
    ++u.groups[port][mgid];
}

void Accounts::uncharge(uid_t uid, PortIndex port, const Gid &mgid, bool created) {
    --memberships_;
    Usage &u = of(uid);
    --u.memberships;
    if (created && u.creates) {
        --u.creates;
    } else if (created) {
        // A create given back that was never charged: wrapping would refuse every later create
        // of the uid (and keep it from being forgotten) until a restart.
        spdlog::error("bug: uid {} gives back a create of group {} it was never charged; its creates stay 0", uid,
                      format_gid(mgid));
    }
    auto &on_port = u.groups[port];
    if (auto it = on_port.find(mgid); it != on_port.end() && --it->second == 0)
        on_port.erase(it);
    if (on_port.empty())
        u.groups.erase(port);
    prune(uid);
}

void Accounts::assigned(uid_t uid, PortIndex port, const Gid &mgid) {
    auto &on_port = of(uid).groups[port];
    if (auto it = on_port.find(kZeroGid); it != on_port.end() && --it->second == 0)
        on_port.erase(it);
    ++on_port[mgid];
}

std::optional<Error> Accounts::may_create(uid_t uid, std::size_t quota) const {
    const auto it = usage_.find(uid);
    const std::size_t created = it == usage_.end() ? 0 : it->second.creates;
    if (quota && created >= quota) {
        return over(fmt::format("{} created {} it still holds", uid_text(uid), counted(created, "group")), "quota",
                    "access.quotas", "creates_per_uid", quota, true)
            .error;
    }
    return std::nullopt;
}

std::optional<Error> Accounts::take_create(uid_t uid, std::size_t quota) {
    if (auto no = may_create(uid, quota))
        return no;
    ++of(uid).creates;
    return std::nullopt;
}

// ---- SA MADs ----

TokenBucket &Accounts::sa_bucket(Usage &u) {
    if (!u.sa)
        u.sa.emplace(timers_.now(), static_cast<double>(policy_.quotas.sa_mads_burst));
    return *u.sa;
}

std::optional<Error> Accounts::take_sa(uid_t uid, SaMethod method) {
    const policy::Quotas &q = policy_.quotas;
    if (uid == 0 || !q.sa_mads_per_second)
        return std::nullopt;
    Usage &u = of(uid);
    const auto rate = static_cast<double>(q.sa_mads_per_second), burst = static_cast<double>(q.sa_mads_burst);
    TokenBucket &b = sa_bucket(u);
    if (b.take(timers_.now(), rate, burst))
        return std::nullopt;
    const char *what = method == SaMethod::get ? "probe" : method == SaMethod::set ? "Set" : "Delete";
    return over(fmt::format("{} has spent its SA MADs (burst {}): this join's {} could go in {} ms", uid_text(uid),
                            q.sa_mads_burst, what, b.wait(timers_.now(), rate, burst).count()),
                "share", "access.quotas", "sa_mads_per_second", q.sa_mads_per_second)
        .error;
}

void Accounts::charge_sa(uid_t uid) {
    const policy::Quotas &q = policy_.quotas;
    if (uid == 0 || !q.sa_mads_per_second)
        return;
    sa_bucket(of(uid)).charge(timers_.now(), static_cast<double>(q.sa_mads_per_second),
                              static_cast<double>(q.sa_mads_burst));
}

double Accounts::sa_tokens(uid_t uid) {
    const policy::Quotas &q = policy_.quotas;
    const auto it = usage_.find(uid);
    if (it == usage_.end() || !it->second.sa)
        return static_cast<double>(q.sa_mads_burst);
    return it->second.sa->level(timers_.now(), static_cast<double>(q.sa_mads_per_second),
                                static_cast<double>(q.sa_mads_burst));
}

// ---- views ----

const Usage *Accounts::usage(uid_t uid) const {
    const auto it = usage_.find(uid);
    return it == usage_.end() ? nullptr : &it->second;
}

void Accounts::prune(uid_t uid) {
    const auto it = usage_.find(uid);
    if (it == usage_.end())
        return;
    Usage &u = it->second;
    if (u.clients || u.monitors || u.queued_bytes || u.memberships || u.creates)
        return;
    // A budget still refilling must be kept: forgetting it would hand a uid that drops
    // everything a full burst again.
    if (u.sa && u.sa->level(timers_.now(), static_cast<double>(policy_.quotas.sa_mads_per_second),
                            static_cast<double>(policy_.quotas.sa_mads_burst)) <
                    static_cast<double>(policy_.quotas.sa_mads_burst))
        return;
    usage_.erase(it);
}

} // namespace mcastd::frontend
