// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/sessions.hpp"

#include <spdlog/spdlog.h>
#include <fmt/format.h>

#include <vector>

#include "common/port_name.hpp"
#include "logging/policy_log.hpp"

namespace mcastd::frontend {

namespace {

// Events of a session nobody is connected to are dropped: a client that resumes lists what it
// holds (the resumed hello answers with its memberships). The losses not_held() tells it, the
// session keeps for a D-Bus caller's take-back (ClientSession::take_untold()).
struct NoOutlet final : SessionOutlet {
    void membership_event(MembershipId, const MembershipEvent &) override {}
    void disconnect(const std::string &) override {}
    bool attached() const override { return false; }
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

Sessions::Sessions(Service &service, Timers &timers, std::string daemon_name, Limits limits, policy::Policy policy)
    : service_(service), daemon_name_(std::move(daemon_name)), limits_(limits), policy_(std::move(policy)),
      accounts_(timers, limits_, policy_), user_names_(timers), subordinate_ids_(limits_.subuid_file), monitors_(service), started_(std::chrono::steady_clock::now()) {
    service_.add_observer([this, alive = std::weak_ptr<bool>(alive_)](const EngineNote &n) {
        if (alive.lock())
            monitors_.deliver(n);
    });
    // SA work a uid's change made due (a leave's Delete, ...) is paid from its budget: it
    // cannot be refused.
    service_.set_debt_meter([this, alive = std::weak_ptr<bool>(alive_)](uid_t uid) {
        if (alive.lock())
            accounts_.charge_sa(uid);
    });
}

Sessions::~Sessions() {
    *alive_ = false;
    change_hook_ = nullptr;
    detached_.clear(); // while the parts their destructors update still exist
}

std::variant<std::unique_ptr<ClientSession>, proto::Failure> Sessions::open(Door door, Credentials who,
                                                                            SessionOutlet &outlet) {
    std::optional<proto::Failure> no;
    if (door != Door::daemon) {
        charge_to_account(who.who);
        no = whose_share(who.who, accounts_.may_connect(who.who.account_uid()));
    }
    // A socket client hears this in its hello's answer; a D-Bus caller in its first call's.
    if (!no && door == Door::dbus && !policy_.admits(who.caller())) {
        no = proto::Failure::of(Errc::denied, policy::not_admitted(who.who.uid));
        refusals_.count(refusal::kAllowLists);
    }
    if (no) {
        refusals_.count(no->error); // a share's: its key
        logging::log_refused_client(who.who, no->error.message);
        return std::move(*no);
    }
    return std::make_unique<ClientSession>(*this, door, std::move(who), outlet);
}

void Sessions::charge_to_account(ClientInfo &who) {
    if (const uid_t owner = subordinate_ids_.account_of(who.uid); owner != who.uid)
        who.account = owner;
}

void Sessions::add(ClientSession &s) {
    if (s.door() != Door::daemon)
        accounts_.connected(s.who().who.account_uid());
    all_.insert(&s);
    by_client_[s.client()] = &s;
    changed();
}

void Sessions::remove(ClientSession &s) {
    if (s.door() != Door::daemon)
        accounts_.disconnected(s.who().who.account_uid());
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

// ---- across restarts ----

ClientSession *Sessions::restore(const RestoredSession &saved, std::string &why) {
    // Charged to whom the ranges say now (they are not kept in the state).
    RestoredSession charged = saved;
    charge_to_account(charged.who.who);
    // The previous instance admitted it, but the limits may have changed with the restart.
    if (auto no = whose_share(charged.who.who, accounts_.may_connect(charged.who.who.account_uid()))) {
        refusals_.count(no->error);
        why = no->error.message;
        return nullptr;
    }
    auto s = std::make_unique<ClientSession>(*this, charged, no_outlet);
    ClientSession &ref = *s;
    detached_[saved.id] = std::move(s);
    return &ref;
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

std::vector<std::uint64_t> Sessions::detached_of(Door door) const {
    std::vector<std::uint64_t> out;
    for (const auto &[id, s] : detached_)
        if (s->door() == door)
            out.push_back(id);
    return out;
}

std::size_t Sessions::release_detached(const std::function<bool(const ClientSession &)> &drop) {
    for (auto it = detached_.begin(); it != detached_.end();)
        it = drop(*it->second) ? detached_.erase(it) : std::next(it);
    return detached_.size();
}

// ---- the access policy ----

std::variant<policy::Admission, proto::Failure> Sessions::admit(const ClientSession &s, const JoinRequest &req,
                                                                bool by_name) const {
    const uid_t uid = s.who().who.account_uid();
    const auto port = service_.ports().find(req.device, req.port);
    policy::JoinAsk ask{req.mgid, !by_name && names_.reserved(req.mgid), req.join_state, req.params.pkey,
                        req.params.qkey, service_.create_qkey()};
    // On an Ethernet port the MGID (group_of's) is an IP group's, whichever way the join named it.
    if (port)
        ask.ip = policy::ip_group_on(service_.ports().link_layer(*port), req.mgid);
    ask.by_ip = req.roce && req.roce->group;
    auto verdict = policy::admit(policy_, s.who().caller(), ask);
    if (auto *no = std::get_if<policy::Refusal>(&verdict))
        return proto::Failure{std::move(no->error), std::move(no->field), {}};
    auto &a = std::get<policy::Admission>(verdict);
    if (!port)
        return std::move(a); // the engine names what is wrong with the port
    const std::string where = port_name(req.device, req.port);
    if (auto no = whose_share(s.who().who, accounts_.may_join(uid, a.memberships_quota, *port, req.mgid, where)))
        return std::move(*no);
    // The host's share of the fabric's MLIDs: root's joins count too.
    if (const std::size_t cap = policy_.quotas.groups_per_port) {
        if (service_.adds_group(*port, req.mgid) && service_.group_count(*port) >= cap)
            return Accounts::over(fmt::format("{} has {}", where, counted(service_.group_count(*port), "group")), "quota",
                                  "access.quotas", "groups_per_port", cap);
    }
    return std::move(a);
}

void Sessions::set_policy(policy::Policy policy) {
    policy_ = std::move(policy);
    ++policy_generation_;
    // A caller the allow lists no longer admit keeps what it holds and may leave it; it hears
    // nothing more of the daemon's activity.
    std::size_t stopped = 0;
    for (ClientSession *s : std::vector<ClientSession *>(all_.begin(), all_.end()))
        if (s->monitoring() && s->not_allowed()) {
            s->set_monitor(false);
            ++stopped;
        }
    if (stopped)
        spdlog::warn("access policy reloaded: {} monitor subscription(s) of callers the allow lists no longer admit "
                     "stopped",
                     stopped);
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
        const std::optional<proto::Failure> gone = s->not_allowed();
        for (const auto &[id, grant] : s->grants()) {
            const auto it = where.find(id);
            if (it == where.end() || !it->second.first->have_record)
                continue;
            const GroupView &g = *it->second.first;
            McRecord rec = g.record;
            rec.mgid = g.mgid;
            rec.link_layer = service_.ports().link_layer(g.port); // so review() sees an IP group as one
            std::string why = gone ? gone->error.message
                                   : policy::review(policy_, s->who().caller(), it->second.second, rec,
                                                    grant.sa_assigned, grant.name.empty() && names_.reserved(g.mgid))
                                         .value_or("");
            if (why != grant.flagged) {
                const auto &port = service_.ports().at(g.port);
                logging::log_flagged(s->who().who, id, logging::PortName{port.device(), port.number()}, g.mgid,
                                     grant.rule, why);
            }
            flagged += !why.empty();
            s->flag(id, std::move(why));
        }
    }
    return flagged;
}

bool Sessions::pass_create(uid_t uid, PortIndex port, const Gid &mgid) {
    if (is_zero(mgid)) // an SA-assigned create that never got its MGID: no group to carry on
        return false;
    // Only another membership of the uid in the group can carry it, and the one giving it back
    // is still counted: without a second, no session need be searched (a session with many
    // creates that closes would otherwise search every grant of the uid for each of them).
    if (const Usage *u = accounts_.usage(uid); !u || u->memberships_in(port, mgid) < 2)
        return false;
    for (ClientSession *s : all_)
        if (s->door() != Door::daemon && s->who().who.account_uid() == uid && s->carry_create(port, mgid)) {
            changed(); // the restart state keeps which membership carries the create
            return true;
        }
    return false;
}

// ---- root's requests ----

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
        if (e.disconnect && e.uid && s->who().who.counts_as(*e.uid) && s != &by) { // its answer is owed
            ++out.disconnected;
            logging::log_disconnected(by.who().who, s->who().who, s->id());
            if (detached_.count(s->id()) && detached_.at(s->id()).get() == s)
                detached_.erase(s->id()); // no connection to close: the session goes now
            else
                s->disconnect(why);
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
    const auto &grants = s->second->grants();
    if (const auto g = grants.find(m.id); g != grants.end()) {
        out.rule = g->second.rule;
        out.created = g->second.created;
        out.flagged = g->second.flagged;
        out.name = g->second.name;
    }
}

void Sessions::annotate(proto::StatusResult &out) {
    for (auto &p : out.ports)
        p.max_groups = policy_.quotas.groups_per_port;
    std::map<uid_t, proto::UserUsage> users;
    for (const ClientSession *s : all_) {
        if (s->door() == Door::daemon)
            continue;
        const uid_t uid = s->who().who.account_uid();
        const Usage *use = accounts_.usage(uid);
        if (!use)
            continue;
        auto [u, fresh] = users.try_emplace(uid);
        if (fresh) {
            const policy::Quotas q = policy_.quotas_for(s->who().caller());
            const bool root = uid == 0;
            u->second = proto::UserUsage{uid, user_names_.name(uid), use->memberships, q.memberships_per_uid, use->creates,
                                         q.creates_per_uid, 0};
            u->second.clients = use->clients;
            u->second.clients_quota = root ? 0 : limits_.max_clients_per_uid;
            u->second.monitors = use->monitors;
            u->second.monitors_quota = root ? 0 : limits_.max_monitors_per_uid;
            u->second.queued_bytes = use->queued_bytes;
            u->second.queued_bytes_quota = root ? 0 : limits_.max_queued_bytes_per_uid;
            for (const auto &[port, groups] : use->groups)
                u->second.groups_per_port = std::max<std::uint64_t>(u->second.groups_per_port, use->groups_on(port));
            u->second.groups_per_port_quota = q.groups_per_port_per_uid;
            u->second.sa_tokens = root ? 0 : accounts_.sa_tokens(uid);
            u->second.sa_mads_per_second = q.sa_mads_per_second;
        }
        u->second.flagged += s->flagged();
    }
    for (auto &[uid, u] : users)
        out.users.push_back(std::move(u));
    out.refused = refusals_.snapshot();
}

} // namespace mcastd::frontend
