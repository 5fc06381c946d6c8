// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/sessions.hpp"

#include <pwd.h>

#include <spdlog/spdlog.h>
#include <fmt/format.h>

#include <vector>

#include "common/port_name.hpp"
#include "logging/policy_log.hpp"

namespace mcastd::frontend {

namespace {

const char *note_kind(EngineNote::Kind k) {
    switch (k) {
    case EngineNote::Kind::joined: return "joined";
    case EngineNote::Kind::left: return "left";
    case EngineNote::Kind::join_failed: return "join-failed";
    case EngineNote::Kind::sa_left: return "deleted";
    case EngineNote::Kind::lost: return "lost";
    case EngineNote::Kind::restored: return "restored";
    case EngineNote::Kind::warning: return "warning";
    }
    return "warning";
}

} // namespace

Sessions::Sessions(Service &service, std::string daemon_name, Limits limits, policy::Policy policy)
    : service_(service), daemon_name_(std::move(daemon_name)), limits_(limits), policy_(std::move(policy)),
      started_(std::chrono::steady_clock::now()) {
    service_.add_observer([this, alive = std::weak_ptr<bool>(alive_)](const EngineNote &n) {
        if (alive.lock())
            on_note(n);
    });
}

Sessions::~Sessions() {
    *alive_ = false;
    change_hook_ = nullptr;
    detached_.clear(); // while the sets their destructors update still exist
}

std::variant<std::unique_ptr<ClientSession>, proto::Failure> Sessions::open(Door door, Credentials who,
                                                                            SessionOutlet &outlet) {
    if (door != Door::daemon && clients_ >= limits_.max_clients)
        return proto::Failure::of(Errc::limit, "the daemon serves " + std::to_string(clients_) +
                                                    " clients, its limit (config: limits.max_clients)");
    // A socket client hears this in its hello's answer; a D-Bus caller in its first call's.
    if (door == Door::dbus && !policy_.admits(who.caller()))
        return proto::Failure::of(Errc::denied, "uid " + std::to_string(who.who.uid) +
                                                     " is not allowed to use rdma-mcastd (config access.allow_uids, "
                                                     "access.allow_gids)");
    return std::make_unique<ClientSession>(*this, door, std::move(who), outlet);
}

void Sessions::opened(ClientSession &s) {
    if (s.door() != Door::daemon)
        ++clients_;
    all_.insert(&s);
    by_client_[s.client()] = &s;
    changed();
}

void Sessions::closed(ClientSession &s) {
    if (s.door() != Door::daemon)
        --clients_;
    all_.erase(&s);
    reclient(s, s.client(), 0);
    changed();
}

void Sessions::reclient(ClientSession &s, ClientId before, ClientId now) {
    if (auto it = by_client_.find(before); it != by_client_.end() && it->second == &s)
        by_client_.erase(it);
    if (now)
        by_client_[now] = &s;
}

void Sessions::monitor(ClientSession &s, bool on) {
    if (on)
        monitors_.insert(&s);
    else
        monitors_.erase(&s);
    changed();
}

namespace {

// Events of a session nobody is connected to are dropped: a client that resumes lists what it
// holds (the resumed hello answers with its memberships).
struct NoOutlet final : SessionOutlet {
    void membership_event(MembershipId, const MembershipEvent &) override {}
};
NoOutlet no_outlet;

// Compares without stopping at the first difference: a token's prefix is not a hint.
bool same_secret(const std::string &a, const std::string &b) {
    if (a.size() != b.size())
        return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

} // namespace

ClientSession &Sessions::restore(const RestoredSession &saved) {
    auto s = std::make_unique<ClientSession>(*this, saved, no_outlet);
    ClientSession &ref = *s;
    detached_[saved.id] = std::move(s);
    return ref;
}

std::unique_ptr<ClientSession> Sessions::take_detached(std::uint64_t id) {
    auto node = detached_.extract(id);
    return node ? std::move(node.mapped()) : nullptr;
}

void Sessions::restore_detached(std::unique_ptr<ClientSession> s) {
    s->attach(no_outlet);
    const std::uint64_t id = s->id();
    detached_[id] = std::move(s);
}

std::unique_ptr<ClientSession> Sessions::take_resumable(const proto::SessionTicket &ticket, uid_t uid) {
    auto it = detached_.find(ticket.id);
    if (it == detached_.end() || it->second->door() != Door::socket || it->second->who().who.uid != uid ||
        !same_secret(it->second->token(), ticket.token))
        return nullptr;
    return take_detached(ticket.id);
}

std::size_t Sessions::release_detached(const std::function<bool(const ClientSession &)> &drop) {
    for (auto it = detached_.begin(); it != detached_.end();)
        it = drop(*it->second) ? detached_.erase(it) : std::next(it);
    return detached_.size();
}

void Sessions::on_note(const EngineNote &n) {
    if (monitors_.empty())
        return;
    proto::MonitorEvent ev;
    ev.kind = note_kind(n.kind);
    const auto &ports = service_.ports();
    if (n.port < ports.size()) {
        ev.device = ports[n.port].device;
        ev.port = ports[n.port].port_num;
    }
    ev.mgid = n.mgid;
    ev.mlid = n.mlid;
    ev.join_state = n.join_state;
    if (n.client_info) { // the client may be gone already ("left" after its disconnect)
        ev.pid = n.client_info->pid;
        ev.uid = n.client_info->uid;
        ev.comm = n.client_info->comm;
    }
    ev.message = describe(n, port_name(ev.device, ev.port));
    ev.sa_status = n.sa_status;
    // A copy: delivering may make a transport drop a session.
    const std::vector<ClientSession *> to(monitors_.begin(), monitors_.end());
    for (ClientSession *s : to)
        if (monitors_.count(s))
            s->outlet_->monitor_event(ev);
}

// ---- the access policy ----

namespace {

proto::Failure over_quota(std::string what, const char *quota, std::size_t limit) {
    // A rule may set the per-uid quotas, not the host's groups_per_port.
    const bool per_uid = std::string_view(quota) != "groups_per_port";
    proto::Failure f = proto::Failure::of(Errc::limit, std::move(what) + ", its quota (config access.quotas." + quota +
                                                           (per_uid ? " or the admitting rule's)" : ")"));
    f.error.policy = PolicyRef{{}, quota, limit};
    return f;
}

std::string user_name(uid_t uid) {
    passwd pw{}, *found = nullptr;
    char buf[1024];
    return ::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found ? found->pw_name : "";
}

} // namespace

std::variant<policy::Admission, proto::Failure> Sessions::admit(const ClientSession &s, const JoinRequest &req) const {
    const uid_t uid = s.who().who.uid;
    policy::JoinAsk ask{req.mgid, req.join_state, req.params.pkey, req.params.qkey, service_.create_qkey()};
    auto verdict = policy::admit(policy_, s.who().caller(), ask);
    if (auto *no = std::get_if<policy::Refusal>(&verdict))
        return proto::Failure{std::move(no->error), std::move(no->field), {}};
    auto &a = std::get<policy::Admission>(verdict);
    if (a.memberships_quota) {
        const auto it = usage_.find(uid);
        const std::size_t held = it == usage_.end() ? 0 : it->second.memberships;
        if (held >= a.memberships_quota)
            return over_quota("uid " + std::to_string(uid) + " holds or waits for " + std::to_string(held) +
                                  " memberships",
                              "memberships_per_uid", a.memberships_quota);
    }
    // The host's share of the fabric's MLIDs: root's joins count too.
    if (const std::size_t cap = policy_.quotas.groups_per_port) {
        if (const auto port = service_.find_port(req.device, req.port);
            port && service_.adds_group(*port, req.mgid) && service_.group_count(*port) >= cap)
            return over_quota(port_name(req.device, req.port) + " has " + std::to_string(service_.group_count(*port)) +
                                  " groups",
                              "groups_per_port", cap);
    }
    return std::move(a);
}

std::variant<JoinRequest, proto::Failure> Sessions::resolve_name(const JoinRequest &req) const {
    if (!names_.enabled)
        return proto::Failure::of(Errc::invalid_argument,
                                  "this daemon does not map names to groups (config groups.names.enabled)", "/name");
    auto hex4 = [](unsigned v) { return fmt::format("{:#06x}", v); };
    if (req.params.pkey && *req.params.pkey != names_.pkey)
        return proto::Failure::of(Errc::invalid_argument,
                                  "named groups have P_Key " + hex4(names_.pkey) + " (config groups.names.pkey), not " +
                                      hex4(*req.params.pkey),
                                  "/pkey");
    JoinRequest out = req;
    out.mgid = named_mgid(names_.prefix, req.name);
    out.params.pkey = names_.pkey;
    // A collision of the truncated hash is astronomically unlikely; where it happens under this
    // daemon's eyes, it is refused rather than merging two jobs' traffic silently.
    for (const ClientSession *s : all_)
        if (const std::string *hit = s->other_name_on(out.mgid, req.name))
            return proto::Failure::of(Errc::conflict,
                                      "the group names \"" + req.name + "\" and \"" + *hit + "\" both map to " +
                                          format_gid(out.mgid) + ", which this host holds for \"" + *hit +
                                          "\" (a hash collision: rename one of them)",
                                      "/name");
    return out;
}

void Sessions::charge(uid_t uid, const Grant &g) {
    Usage &u = usage_[uid];
    ++u.memberships;
    u.creates += g.created;
}

void Sessions::uncharge(uid_t uid, const Grant &g) {
    auto it = usage_.find(uid);
    if (it == usage_.end())
        return;
    --it->second.memberships;
    it->second.creates -= g.created;
    if (!it->second.memberships)
        usage_.erase(it);
}

std::optional<Error> Sessions::take_create(uid_t uid, std::size_t quota) {
    Usage &u = usage_[uid];
    if (quota && u.creates >= quota)
        return over_quota("uid " + std::to_string(uid) + " created " + std::to_string(u.creates) +
                              " groups it still holds",
                          "creates_per_uid", quota)
            .error;
    ++u.creates;
    return std::nullopt;
}

void Sessions::refused(const ClientSession &s, const JoinRequest &req, const Error &why) const {
    logging::log_refused(s.who().who, req, why);
}

void Sessions::set_policy(policy::Policy policy) {
    policy_ = std::move(policy);
    const std::size_t flagged = review();
    if (flagged)
        spdlog::warn("access policy reloaded: {} membership(s) held are kept but would be refused now (rdma-mcastctl "
                     "list shows them flagged; rdma-mcastctl evict releases them)",
                     flagged);
}

std::size_t Sessions::review() {
    // Each held membership's group record and join state.
    std::unordered_map<MembershipId, std::pair<const GroupView *, std::uint8_t>> where;
    const std::vector<GroupView> groups = service_.group_views();
    for (const GroupView &g : groups)
        for (const MemberView &m : g.members)
            where.emplace(m.id, std::pair{&g, m.join_state});
    std::size_t flagged = 0;
    for (ClientSession *s : all_) {
        if (s->door() == Door::daemon)
            continue;
        for (auto &[id, grant] : s->grants_) {
            const auto it = where.find(id);
            if (it == where.end() || !it->second.first->have_record)
                continue;
            const GroupView &g = *it->second.first;
            McRecord rec = g.record;
            rec.mgid = g.mgid;
            std::string why =
                policy::review(policy_, s->who().caller(), it->second.second, rec, grant.sa_assigned).value_or("");
            if (why != grant.flagged) {
                const auto &port = service_.ports().at(g.port);
                logging::log_flagged(s->who().who, id, logging::PortName{port.device, port.port_num}, g.mgid,
                                     grant.rule, why);
                grant.flagged = std::move(why);
            }
            flagged += !grant.flagged.empty();
        }
    }
    return flagged;
}

std::variant<proto::EvictResult, proto::Failure> Sessions::evict(const proto::Evict &e, const ClientSession &by) {
    if (by.who().who.uid != 0)
        return proto::Failure::of(Errc::denied, "evict is for root; uid " + std::to_string(by.who().who.uid) +
                                                     " may only leave its own memberships");
    const std::string why = "evicted by an administrator (" + by.who().who.comm + ", pid " +
                            std::to_string(by.who().who.pid) + "); it will not be restored";
    const std::string what = e.uid ? "every membership of uid " + std::to_string(*e.uid)
                                   : "membership " + std::to_string(*e.membership);
    proto::EvictResult out;
    // A copy: releasing may close sessions (a D-Bus caller left with nothing).
    const std::vector<ClientSession *> sessions(all_.begin(), all_.end());
    for (ClientSession *s : sessions) {
        if (!all_.count(s) || s->door() == Door::daemon)
            continue;
        if (const std::size_t n = s->evict_matching(e, why)) {
            out.released += n;
            logging::log_evicted(by.who().who, s->who().who, n, what);
        }
    }
    if (e.membership && !out.released)
        return proto::Failure::of(Errc::not_found, "no membership " + std::to_string(*e.membership), "/membership");
    return out;
}

void Sessions::annotate(const MemberView &m, proto::MemberInfo &out) const {
    const auto s = by_client_.find(m.client);
    if (s == by_client_.end())
        return;
    const auto &grants = s->second->grants_;
    if (const auto g = grants.find(m.id); g != grants.end()) {
        out.rule = g->second.rule;
        out.created = g->second.created;
        out.flagged = g->second.flagged;
        out.name = g->second.name;
    }
}

void Sessions::annotate(proto::StatusResult &out) const {
    for (auto &p : out.ports)
        p.max_groups = policy_.quotas.groups_per_port;
    std::map<uid_t, proto::UserUsage> users;
    for (const ClientSession *s : all_) {
        const uid_t uid = s->who().who.uid;
        const auto it = usage_.find(uid);
        if (s->door() == Door::daemon || it == usage_.end())
            continue;
        auto [u, fresh] = users.try_emplace(uid);
        if (fresh) {
            const policy::Quotas q = policy_.quotas_for(s->who().caller());
            u->second = proto::UserUsage{uid, user_name(uid), it->second.memberships, q.memberships_per_uid,
                                         it->second.creates, q.creates_per_uid, 0};
        }
        for (const auto &[id, g] : s->grants_)
            u->second.flagged += !g.flagged.empty();
    }
    for (auto &[uid, u] : users)
        out.users.push_back(std::move(u));
}

} // namespace mcastd::frontend
