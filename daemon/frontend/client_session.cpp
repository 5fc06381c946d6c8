// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/client_session.hpp"

#include <spdlog/spdlog.h>

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <system_error>
#include <utility>

#include "frontend/process_start.hpp"
#include "frontend/sessions.hpp"
#include "list_cursor.hpp"
#include "views.hpp"

namespace mcastd::frontend {

namespace {

// 128 bits from the kernel's random pool, as 32 lowercase hex digits.
std::string new_token() {
    std::array<unsigned char, proto::kTokenChars / 2> raw{};
    std::size_t got = 0;
    while (got < raw.size()) {
        const ssize_t n = ::getrandom(raw.data() + got, raw.size() - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw std::system_error(errno, std::generic_category(), "getrandom");
        got += static_cast<std::size_t>(n);
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : raw) {
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
    }
    return out;
}

template <class... Fs> struct overloaded : Fs... { using Fs::operator()...; };
template <class... Fs> overloaded(Fs...) -> overloaded<Fs...>;

// Answers with a result or the failure that stood in for it.
template <class T> void respond_with(const Respond &respond, std::variant<T, proto::Failure> out) {
    if (auto *ok = std::get_if<T>(&out))
        respond(proto::Result{std::move(*ok)});
    else
        respond(std::get<proto::Failure>(std::move(out)));
}

} // namespace

// A join between its admission and its answer.
struct ClientSession::PendingJoin {
    MembershipId id = 0;
    JoinRequest request; // as the engine gets it: a name resolved, the rule's P_Key asserted
    policy::Admission admission;
    Grant grant;
    std::string field; // the request field a refusal by the create gate is about
};

ClientSession::ClientSession(Sessions &sessions, Door door, Credentials who, SessionOutlet &outlet)
    : sessions_(sessions), door_(door), who_(std::move(who)), outlet_(&outlet), greeted_(door != Door::socket) {
    client_ = sessions_.service().add_client(who_.who, this);
    id_ = sessions_.next_id_++;
    token_ = new_token();
    start_time_ = process_start_time(who_.who.pid);
    sessions_.opened(*this);
}

ClientSession::ClientSession(Sessions &sessions, const RestoredSession &saved, SessionOutlet &outlet)
    : sessions_(sessions), door_(saved.door), outlet_(&outlet), greeted_(true) {
    who_ = saved.who;
    client_ = sessions_.service().add_client(who_.who, this);
    id_ = saved.id;
    token_ = saved.token;
    version_ = saved.version;
    start_time_ = saved.start_time;
    sessions_.next_id_ = std::max(sessions_.next_id_, id_ + 1);
    sessions_.opened(*this);
    set_monitor(saved.monitor);
}

ClientSession::~ClientSession() {
    *alive_ = false;
    set_monitor(false);
    // The engine drops the pending joins without answering them (remove_client below).
    for (const auto &[request, pj] : pending_)
        uncharge(pj->grant);
    for (const auto &[id, grant] : grants_)
        uncharge(grant);
    sessions_.closed(*this);
    // Releases every membership of this client, exactly as if each had been left.
    if (client_)
        sessions_.service().remove_client(client_);
}

bool ClientSession::adopt_member(MembershipId id, PortIndex port, const Gid &mgid, std::uint8_t bits,
                                 const GroupParams &params, Grant grant) {
    if (!sessions_.service().adopt_member(client_, id, port, mgid, bits, params))
        return false;
    sessions_.charge(who_.who.uid, grant);
    grants_.emplace(id, std::move(grant));
    return true;
}

void ClientSession::take_over(ClientSession &old) {
    sessions_.service().remove_client(client_); // this connection's own, still empty
    const ClientId own = std::exchange(client_, std::exchange(old.client_, 0));
    sessions_.reclient(*this, own, client_);
    sessions_.service().set_client_sink(client_, this);
    // The grants were charged to the old session's uid, which take_resumable() made sure is ours.
    grants_ = std::exchange(old.grants_, {});
    evicted_ = std::exchange(old.evicted_, {});
    id_ = old.id_;
    token_ = old.token_;
    const bool monitor = old.monitor_;
    old.set_monitor(false);
    set_monitor(monitor || monitor_);
    sessions_.changed();
}

void ClientSession::handle(std::uint64_t id, const proto::Request &request, const Respond &respond) {
    if (refused_) {
        respond(proto::Failure::of(Errc::denied, "this client was refused by the access policy"));
        return;
    }
    if (!greeted_ && !std::holds_alternative<proto::Hello>(request)) {
        respond(proto::Failure::of(Errc::invalid_argument, "the first request must be hello", "/op"));
        return;
    }
    std::visit(overloaded{
                   [&](const proto::Hello &r) { respond_with(respond, hello(r)); },
                   [&](const proto::Join &r) {
                       join(id, r.request, [respond](const JoinAnswer &a) {
                           if (a.failure)
                               respond(*a.failure);
                           else
                               respond(proto::Result{proto::JoinResult{a.membership, a.record}});
                       });
                   },
                   [&](const proto::Leave &r) {
                       if (auto f = leave(r))
                           respond(std::move(*f));
                       else
                           respond(proto::Result{proto::Empty{}});
                   },
                   [&](const proto::List &r) { respond_with(respond, list(r)); },
                   [&](const proto::Status &) { respond(proto::Result{status()}); },
                   [&](const proto::Monitor &r) {
                       set_monitor(r.enable);
                       respond(proto::Result{proto::Empty{}});
                   },
                   [&](const proto::Evict &r) { respond_with(respond, evict(r)); },
               },
               request);
}

std::variant<proto::HelloResult, proto::Failure> ClientSession::hello(const proto::Hello &r) {
    if (greeted_)
        return proto::Failure::of(Errc::invalid_argument, "hello was already said on this connection", "/op");
    unsigned best = 0;
    for (unsigned v : r.versions)
        if (std::find(proto::kVersions.begin(), proto::kVersions.end(), v) != proto::kVersions.end())
            best = std::max(best, v);
    if (!best) {
        proto::Failure f = proto::Failure::of(
            Errc::unsupported_version, "none of the requested protocol versions is served; this daemon speaks 1 and 2",
            "/versions");
        f.versions.assign(proto::kVersions.begin(), proto::kVersions.end());
        return f;
    }
    const ClientInfo &c = who_.who;
    if (!sessions_.policy().admits(who_.caller())) {
        spdlog::warn("client pid {} uid {} ({}) denied by the access policy", c.pid, c.uid, c.comm);
        refused_ = true;
        return proto::Failure::of(Errc::denied, "uid " + std::to_string(c.uid) +
                                                    " is not allowed to use rdma-mcastd (config access.allow_uids, "
                                                    "access.allow_gids)");
    }
    greeted_ = true;
    version_ = best;
    spdlog::debug("client pid {} uid {} ({}) connected as '{}'", c.pid, c.uid, c.comm, r.client);
    proto::HelloResult out{best, sessions_.daemon_name()};
    if (best < 2)
        return out;
    if (r.resume) {
        out.resumed = false;
        if (auto old = sessions_.take_resumable(*r.resume, c.uid)) {
            take_over(*old);
            out.resumed = true;
            out.memberships = sessions_.service().memberships_of(client_);
            spdlog::info("client pid {} uid {} ({}) resumed session {} with {} membership(s)", c.pid, c.uid, c.comm,
                         id_, out.memberships.size());
        } else {
            spdlog::info("client pid {} uid {} ({}) asked to resume session {}, which this daemon does not hold for "
                         "it; it is a new session",
                         c.pid, c.uid, c.comm, r.resume->id);
        }
    }
    out.session = proto::SessionTicket{id_, token_};
    return out;
}

std::optional<proto::Failure> ClientSession::check_join(std::uint64_t request_id) const {
    if (pending_.count(request_id))
        return proto::Failure::of(Errc::invalid_argument,
                                  "request id " + std::to_string(request_id) + " is already used by a pending join",
                                  "/id");
    if (door_ == Door::daemon)
        return std::nullopt; // the daemon's own groups are bounded by its config
    const Limits &lim = sessions_.limits();
    if (pending_.size() >= lim.max_requests_in_flight)
        return proto::Failure::of(Errc::limit, "already " + std::to_string(pending_.size()) +
                                                   " joins waiting for the SA on this connection (limit " +
                                                   std::to_string(lim.max_requests_in_flight) + ")");
    if (held() + pending_.size() >= lim.max_memberships_per_client)
        return proto::Failure::of(Errc::limit, "this connection holds " + std::to_string(held()) +
                                                   " memberships (limit " +
                                                   std::to_string(lim.max_memberships_per_client) + ")");
    return std::nullopt;
}

const std::string *ClientSession::other_name_on(const Gid &mgid, const std::string &name) const {
    auto other = [&](const Grant &g) { return !g.name.empty() && g.mgid == mgid && g.name != name; };
    for (const auto &[id, g] : grants_)
        if (other(g))
            return &g.name;
    for (const auto &[request, pj] : pending_)
        if (other(pj->grant))
            return &pj->grant.name;
    return nullptr;
}

CreateGate ClientSession::create_gate(const std::shared_ptr<PendingJoin> &pj) {
    // The engine asks only while the session lives: removing its client drops its joins.
    return [this, pj]() -> std::optional<Error> {
        if (const auto &no = pj->admission.no_create) {
            pj->field = no->field;
            return no->error;
        }
        if (auto over = sessions_.take_create(who_.who.uid, pj->admission.creates_quota))
            return over;
        pj->grant.created = true;
        return std::nullopt;
    };
}

MembershipId ClientSession::join(std::uint64_t request_id, const JoinRequest &req, JoinDone done) {
    if (auto refused = check_join(request_id)) {
        done(JoinAnswer{0, std::move(refused), {}});
        return 0;
    }
    auto pj = std::make_shared<PendingJoin>();
    if (!req.name.empty()) { // from here on the join of the name's MGID, its P_Key asserted
        auto resolved = sessions_.resolve_name(req);
        if (auto *no = std::get_if<proto::Failure>(&resolved)) {
            done(JoinAnswer{0, std::move(*no), {}});
            return 0;
        }
        pj->request = std::get<JoinRequest>(std::move(resolved));
        pj->grant.name = req.name;
        pj->grant.mgid = pj->request.mgid;
    } else {
        pj->request = req;
    }
    JoinRequest &ask = pj->request;
    pj->grant.sa_assigned = is_zero(ask.mgid);
    CreateGate gate;
    if (door_ == Door::daemon) {
        pj->grant.rule = policy::kStaticLabel; // the config's own groups: bounded by the config
    } else {
        auto admitted = sessions_.admit(*this, ask);
        if (auto *no = std::get_if<proto::Failure>(&admitted)) {
            sessions_.refused(*this, ask, no->error);
            done(JoinAnswer{0, std::move(*no), {}});
            return 0;
        }
        pj->admission = std::get<policy::Admission>(std::move(admitted));
        pj->grant.rule = pj->admission.rule;
        if (pj->admission.assert_pkey) // so that the SA refuses a group of another P_Key
            ask.params.pkey = pj->admission.assert_pkey;
        sessions_.charge(who_.who.uid, Grant{});
        gate = create_gate(pj);
    }
    pending_[request_id] = pj;
    auto answered = [this, request_id, pj, alive = std::weak_ptr<bool>(alive_), done = std::move(done)](const JoinResult &res) {
        if (!alive.lock())
            return;
        pending_.erase(request_id);
        std::optional<proto::Failure> failed;
        if (res.error) {
            failed = proto::Failure{*res.error, res.error->policy ? pj->field : std::string(), {}};
        } else if (auto no = policy::check_record(pj->admission, res.record)) {
            // A group the join learned only from the SA (its P_Key or Q_Key) that the rule does
            // not allow: the membership goes as if left.
            sessions_.service().leave(client_, res.id);
            failed = proto::Failure{std::move(no->error), std::move(no->field), {}};
        }
        if (failed) {
            uncharge(pj->grant);
            if (failed->error.policy)
                sessions_.refused(*this, pj->request, failed->error);
            done(JoinAnswer{res.id, std::move(failed), {}});
            return;
        }
        grants_.emplace(res.id, std::move(pj->grant));
        done(JoinAnswer{res.id, std::nullopt, res.record});
    };
    const MembershipId m = sessions_.service().join(client_, ask, std::move(answered), std::move(gate));
    if (auto it = pending_.find(request_id); it != pending_.end())
        it->second->id = m; // still waiting for the SA: a leave {"join": id} names it so
    return m;
}

std::optional<proto::Failure> ClientSession::leave(const proto::Leave &r) {
    MembershipId m = 0;
    if (r.join) {
        auto it = pending_.find(*r.join);
        if (it == pending_.end())
            return proto::Failure::of(Errc::not_found,
                                      "no join request " + std::to_string(*r.join) + " is waiting on this connection",
                                      "/join");
        m = it->second->id;
    } else {
        m = *r.membership;
        // Evicted by an administrator: the client is told (`lost`) and may still leave it.
        if (evicted_.erase(m))
            return std::nullopt;
    }
    // A pending join is withdrawn: its own answer (`cancelled`) goes out first, and settles
    // its accounts.
    if (auto err = sessions_.service().leave(client_, m))
        return proto::Failure{*err, r.join ? "/join" : "/membership", {}};
    if (auto g = grants_.extract(m))
        uncharge(g.mapped());
    return std::nullopt;
}

void ClientSession::uncharge(const Grant &g) {
    if (door_ != Door::daemon) // the static groups are charged to nobody
        sessions_.uncharge(who_.who.uid, g);
}

std::size_t ClientSession::evict_matching(const proto::Evict &e, const std::string &why) {
    std::vector<MembershipId> held, pending;
    const bool all = e.uid && *e.uid == who_.who.uid;
    for (const auto &[id, grant] : grants_)
        if (all || (e.membership && *e.membership == id))
            held.push_back(id);
    for (const auto &[request, pj] : pending_)
        if (all || (e.membership && *e.membership == pj->id))
            pending.push_back(pj->id);
    for (MembershipId id : held) {
        MembershipEvent ev;
        ev.kind = MembershipEvent::Kind::lost;
        ev.reason = Error{Errc::denied, why, std::nullopt};
        outlet_->membership_event(id, ev);
        sessions_.service().leave(client_, id);
        uncharge(grants_.at(id));
        grants_.erase(id);
        evicted_.insert(id);
    }
    for (MembershipId id : pending)
        sessions_.service().leave(client_, id); // answered `cancelled`, which settles it
    if (!held.empty() || !pending.empty())
        sessions_.changed();
    return held.size() + pending.size();
}

std::variant<proto::ListResult, proto::Failure> ClientSession::list(const proto::List &l) const {
    ListQuery q;
    q.page_bytes = proto::kListPageBytes;
    if (l.own)
        q.only = client_;
    if (l.after && !(q.after = parse_cursor(*l.after)))
        return proto::Failure::of(Errc::invalid_argument,
                                  "not a cursor of this daemon's list (pass back a page's next as it came)", "/after");
    return list_view(sessions_.service(), q,
                     [this](const MemberView &m, proto::MemberInfo &out) { sessions_.annotate(m, out); });
}

proto::StatusResult ClientSession::status() const {
    proto::StatusResult out = status_view(sessions_.service(), StatusExtras{sessions_.daemon_name(),
                                                                            sessions_.started(), sessions_.clients()});
    sessions_.annotate(out);
    return out;
}

std::variant<proto::EvictResult, proto::Failure> ClientSession::evict(const proto::Evict &e) {
    return sessions_.evict(e, *this);
}

void ClientSession::set_monitor(bool on) {
    if (on != monitor_)
        sessions_.monitor(*this, on);
    monitor_ = on;
}

void ClientSession::membership_event(ClientId, MembershipId id, const MembershipEvent &ev) {
    outlet_->membership_event(id, ev);
}

} // namespace mcastd::frontend
