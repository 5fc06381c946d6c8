// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "frontend/client_session.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <system_error>
#include <utility>

#include "common/roce_address.hpp"
#include "frontend/sessions.hpp"
#include "logging/policy_log.hpp"
#include "service/list_cursor.hpp"
#include "service/views.hpp"

namespace mcastd::frontend {

namespace {

// RoCE's join keys name nothing on an InfiniBand port (PROTOCOL.md, "RoCE ports"): a source GID
// type, an interface, or RoCE v2's MGID ::ffff:a.b.c.d of an IPv4 group (not in ff00::/8, so
// no InfiniBand MGID), is refused naming its key rather than sent to the SA. (`ip` is refused by the engine's
// group_of.) Unknown ports are left to the engine.
std::optional<proto::Failure> roce_keys_on_infiniband(const port::PortRegistry &ports, PortIndex port,
                                                      const JoinRequest &ask) {
    if (port == kNoPort || ports.link_layer(port) != LinkLayer::infiniband)
        return std::nullopt;
    const std::string on = ports.name(port) + " is an InfiniBand port: ";
    if (ask.roce && ask.roce->gid_type)
        return proto::Failure{
            Error{Errc::invalid_argument, on + "a GID type names a RoCE source GID, on RoCE ports only", {}},
            "/gid_type",
            {}};
    if (ask.roce && !ask.roce->ifname.empty())
        return proto::Failure{Error{Errc::invalid_argument,
                                    on + "an interface holds a RoCE group's IP membership, on RoCE ports only",
                                    {}},
                              "/ifname",
                              {}};
    if (ask.mgid[0] != 0xff && roce_ip_group(ask.mgid))
        return proto::Failure{Error{Errc::invalid_argument,
                                    on + format_gid(ask.mgid) +
                                        " is RoCE v2's MGID of an IPv4 group, which names a group on RoCE ports only",
                                    {}},
                              "/mgid",
                              {}};
    return std::nullopt;
}


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
    std::string field; // the request field a refusal by a gate is about
};

ClientSession::ClientSession(Sessions &sessions, Door door, Credentials who, SessionOutlet &outlet)
    : sessions_(sessions), door_(door), who_(std::move(who)), outlet_(&outlet), greeted_(door != Door::socket) {
    client_ = sessions_.service().add_client(who_.who, this);
    id_ = sessions_.take_id();
    token_ = new_token();
    start_time_ = who_.start_time; // attested with the process by the transport
    sessions_.add(*this);
}

ClientSession::ClientSession(Sessions &sessions, const RestoredSession &saved, SessionOutlet &outlet)
    : sessions_(sessions), door_(saved.door), outlet_(&outlet), greeted_(true) {
    who_ = saved.who;
    client_ = sessions_.service().add_client(who_.who, this);
    id_ = saved.id;
    token_ = saved.token;
    version_ = saved.version;
    start_time_ = saved.start_time;
    sessions_.set_next_id(id_ + 1);
    sessions_.add(*this);
    // Over the uid's share of monitors now (the limits may have changed): restored without.
    if (saved.monitor && set_monitor(true))
        spdlog::warn("session {} of uid {} is restored without its monitor subscription: over its share (config "
                     "limits.max_monitors_per_uid)",
                     id_, who_.who.uid);
}

ClientSession::~ClientSession() {
    *alive_ = false;
    set_monitor(false);
    // The engine drops the pending joins without answering them (remove_client below). Taken out
    // first, so that a create given back is not handed on to a membership of this session that
    // was already given back (Sessions::pass_create).
    for (const auto &[request, pj] : std::exchange(pending_, {}))
        uncharge(pj->grant);
    for (const auto &[id, grant] : std::exchange(grants_, {}))
        uncharge(grant);
    sessions_.remove(*this);
    // Releases every membership of this client, exactly as if each had been left.
    if (client_)
        sessions_.service().remove_client(client_);
}

bool ClientSession::adopt_member(MembershipId id, PortIndex port, const Gid &mgid, std::uint8_t bits,
                                 const GroupParams &params, Grant grant) {
    if (!sessions_.service().adopt_member(client_, id, port, mgid, bits, params))
        return false;
    grant.port = port;
    grant.mgid = mgid;
    charge(grant);
    flagged_ += !grant.flagged.empty();
    grants_.emplace(id, std::move(grant));
    return true;
}

void ClientSession::take_over(ClientSession &old) {
    sessions_.service().remove_client(client_); // this connection's own, still empty
    const ClientId own = std::exchange(client_, std::exchange(old.client_, 0));
    sessions_.reclient(*this, own, client_);
    sessions_.service().set_client_sink(client_, this);
    // The grants were charged to the old session's account (its uid, which take_resumable() made
    // sure is ours, or the owner of the subordinate range it was in). The account is not in the
    // restart state: should the ranges have changed since, this session takes the old account
    // over, its client slot with it, so that what it gives back goes where it was charged.
    if (old.who_.who.account_uid() != who_.who.account_uid()) {
        sessions_.accounts().disconnected(who_.who.account_uid());
        who_.who.account = old.who_.who.account;
        sessions_.accounts().connected(who_.who.account_uid());
    }
    grants_ = std::exchange(old.grants_, {});
    flagged_ = std::exchange(old.flagged_, 0);
    evicted_ = std::exchange(old.evicted_, {}); // its untold losses: resume's answer lists what it holds
    id_ = old.id_;
    token_ = old.token_;
    const bool monitor = old.monitor_;
    old.set_monitor(false);
    if (monitor || monitor_)
        set_monitor(true); // the old one's slot was just given back
    sessions_.changed();
}

std::optional<proto::Failure> ClientSession::not_allowed() const {
    if (door_ == Door::daemon || sessions_.policy().admits(who_.caller()))
        return std::nullopt;
    return proto::Failure::of(Errc::denied, policy::not_admitted(who_.who.uid) +
                                                 "; it may leave the memberships it holds, and nothing else");
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
    // The allow lists hold for the whole life of a session: a reload that removes a caller leaves
    // it only its leaves.
    if (greeted_ && !std::holds_alternative<proto::Leave>(request) && !std::holds_alternative<proto::Hello>(request))
        if (auto no = not_allowed()) {
            sessions_.refusals().count(refusal::kAllowLists);
            respond(std::move(*no));
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
                       if (auto no = set_monitor(r.enable))
                           respond(std::move(*no));
                       else
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
        const std::string why = policy::not_admitted(c.uid);
        logging::log_refused_client(c, why);
        sessions_.refusals().count(refusal::kAllowLists);
        refused_ = true;
        return proto::Failure::of(Errc::denied, why);
    }
    greeted_ = true;
    version_ = best;
    sessions_.changed(); // the restart state keeps greeted sessions only
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
    Refusals &refusals = sessions_.refusals();
    if (auto no = not_allowed()) {
        refusals.count(refusal::kAllowLists);
        return no;
    }
    const Limits &lim = sessions_.limits();
    std::optional<proto::Failure> over;
    if (pending_.size() >= lim.max_requests_in_flight)
        over = Accounts::over("this connection has " + counted(pending_.size(), "join") + " waiting for the SA", "limit",
                              "limits", "max_requests_in_flight", lim.max_requests_in_flight);
    else if (held() + pending_.size() >= lim.max_memberships_per_client)
        over = Accounts::over(
            "this connection holds or waits for " + counted(held() + pending_.size(), "membership"), "limit",
            "limits", "max_memberships_per_client", lim.max_memberships_per_client);
    if (over)
        refusals.count(over->error); // its key
    return over;
}

JoinGates ClientSession::gates(const std::shared_ptr<PendingJoin> &pj) {
    // The engine asks only while the session lives: removing its client drops its joins.
    JoinGates g;
    g.create = [this, pj]() -> std::optional<Error> {
        if (const auto &no = pj->admission.no_create) {
            pj->field = no->field;
            return no->error;
        }
        if (pj->grant.created) // it carries on the create of the uid's membership that ended
            return std::nullopt;
        if (auto over = whose_share(who_.who, sessions_.accounts().take_create(who_.who.account_uid(),
                                                                               pj->admission.creates_quota)))
            return over;
        pj->grant.created = true;
        return std::nullopt;
    };
    g.would_create = [this, pj]() -> std::optional<Error> {
        if (const auto &no = pj->admission.no_create) {
            pj->field = no->field;
            return no->error;
        }
        return whose_share(who_.who, sessions_.accounts().may_create(who_.who.account_uid(), pj->admission.creates_quota));
    };
    g.sa = [this](SaMethod m) { return whose_share(who_.who, sessions_.accounts().take_sa(who_.who.account_uid(), m)); };
    return g;
}

MembershipId ClientSession::join(std::uint64_t request_id, const JoinRequest &req, JoinDone done) {
    if (auto refused = check_join(request_id)) {
        // A refusal of the allow lists or of a limit is journaled as the policy's are; a request
        // id used twice is the client's bug, only answered.
        if (refused->error.code != Errc::invalid_argument)
            logging::log_refused(who_.who, req, refused->error);
        done(JoinAnswer{0, std::move(refused), {}});
        return 0;
    }
    auto pj = std::make_shared<PendingJoin>();
    const bool by_name = !req.name.empty();
    if (by_name) { // from here on the join of the name's MGID, its P_Key asserted
        auto resolved = sessions_.names().resolve(req);
        if (auto *no = std::get_if<proto::Failure>(&resolved)) {
            done(JoinAnswer{0, std::move(*no), {}});
            return 0;
        }
        pj->request = std::get<JoinRequest>(std::move(resolved));
        pj->grant.name = req.name;
    } else {
        pj->request = req;
    }
    JoinRequest &ask = pj->request;
    // An IP group (a RoCE port's) has its MGID by the port's rules: known before the access
    // policy judges the join by MGID, and before its zero MGID could read as a create.
    if (ask.roce && ask.roce->group && is_zero(ask.mgid)) {
        auto group = sessions_.service().group_of(ask);
        if (auto *err = std::get_if<Error>(&group)) {
            done(JoinAnswer{0, proto::Failure{std::move(*err), "/ip", {}}, {}});
            return 0;
        }
        ask.mgid = std::get<Gid>(group);
    }
    pj->grant.mgid = ask.mgid;
    pj->grant.port = sessions_.service().ports().find(ask.device, ask.port).value_or(kNoPort);
    if (auto no = roce_keys_on_infiniband(sessions_.service().ports(), pj->grant.port, ask)) {
        done(JoinAnswer{0, std::move(*no), {}});
        return 0;
    }
    pj->grant.sa_assigned = is_zero(ask.mgid);
    JoinGates gates;
    if (door_ == Door::daemon) {
        pj->grant.rule = policy::kStaticLabel; // the config's own groups: bounded by the config
    } else {
        auto admitted = sessions_.admit(*this, ask, by_name);
        if (auto *no = std::get_if<proto::Failure>(&admitted)) {
            logging::log_refused(who_.who, ask, no->error);
            sessions_.refusals().count(no->error);
            done(JoinAnswer{0, std::move(*no), {}});
            return 0;
        }
        pj->admission = std::get<policy::Admission>(std::move(admitted));
        pj->grant.rule = pj->admission.rule;
        if (pj->admission.assert_pkey) // so that the SA refuses a group of another P_Key
            ask.params.pkey = pj->admission.assert_pkey;
        gates = this->gates(pj);
    }
    charge(pj->grant);
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
            if (failed->error.policy) {
                logging::log_refused(who_.who, pj->request, failed->error);
                sessions_.refusals().count(failed->error);
            }
            done(JoinAnswer{res.id, std::move(failed), {}});
            return;
        }
        if (is_zero(pj->grant.mgid) && door_ != Door::daemon) // the SA assigned it
            sessions_.accounts().assigned(who_.who.account_uid(), pj->grant.port, res.record.mgid);
        pj->grant.mgid = res.record.mgid;
        flagged_ += !pj->grant.flagged.empty();
        grants_.emplace(res.id, std::move(pj->grant));
        done(JoinAnswer{res.id, std::nullopt, res.record});
    };
    const MembershipId m = sessions_.service().join(client_, ask, std::move(answered), std::move(gates));
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
    if (auto g = grants_.extract(m)) {
        flagged_ -= !g.mapped().flagged.empty();
        uncharge(g.mapped());
    }
    return std::nullopt;
}

void ClientSession::charge(const Grant &g) {
    if (door_ == Door::daemon) // the static groups are charged to nobody
        return;
    // A join's grant has no create yet (its create gate charges it); a membership taken back
    // brings the create its join made.
    sessions_.accounts().charge(who_.who.account_uid(), g.port, g.mgid, g.created);
    if (!g.name.empty())
        sessions_.names().hold(g.name, g.mgid);
}

void ClientSession::uncharge(const Grant &g) {
    if (door_ == Door::daemon)
        return;
    // While the uid still holds the group, the create stays charged: otherwise joining a group
    // twice and leaving the creating membership would give back a create of a group still held.
    const bool give_back = g.created && !sessions_.pass_create(who_.who.account_uid(), g.port, g.mgid);
    sessions_.accounts().uncharge(who_.who.account_uid(), g.port, g.mgid, give_back);
    if (!g.name.empty())
        sessions_.names().release(g.name, g.mgid);
}

bool ClientSession::carry_create(PortIndex port, const Gid &mgid) {
    auto carries = [&](Grant &g) {
        if (g.created || g.port != port || g.mgid != mgid)
            return false;
        g.created = true;
        return true;
    };
    for (auto &[id, grant] : grants_)
        if (carries(grant))
            return true;
    for (auto &[request, pj] : pending_)
        if (carries(pj->grant))
            return true;
    return false;
}

bool ClientSession::flag(MembershipId id, std::string why) {
    const auto it = grants_.find(id);
    if (it == grants_.end())
        return false;
    flagged_ += !why.empty();
    flagged_ -= !it->second.flagged.empty();
    it->second.flagged = std::move(why);
    return true;
}

std::size_t ClientSession::evict_matching(const proto::Evict &e, const std::string &why) {
    std::vector<MembershipId> held, pending;
    // A uid's own and those of its subordinate range: `status` lists them as one.
    const bool all = e.uid && who_.who.counts_as(*e.uid);
    for (const auto &[id, grant] : grants_)
        if (all || (e.membership && *e.membership == id))
            held.push_back(id);
    for (const auto &[request, pj] : pending_)
        if (all || (e.membership && *e.membership == pj->id))
            pending.push_back(pj->id);
    for (MembershipId id : held)
        withdraw(id, Error{Errc::denied, why, std::nullopt});
    for (MembershipId id : pending)
        sessions_.service().leave(client_, id); // answered `cancelled`, which settles it
    if (!pending.empty())
        sessions_.changed();
    return held.size() + pending.size();
}

bool ClientSession::withdraw(MembershipId id, const Error &why) {
    const auto grant = grants_.find(id);
    if (grant == grants_.end())
        return false;
    const auto &port = sessions_.service().ports().at(grant->second.port);
    not_held({id, port.device(), port.number(), grant->second.mgid, why}); // told first
    sessions_.service().leave(client_, id);
    uncharge(grant->second);
    flagged_ -= !grant->second.flagged.empty();
    grants_.erase(grant);
    return true;
}

void ClientSession::not_held(LostMembership lost) {
    MembershipEvent ev;
    ev.kind = MembershipEvent::Kind::lost;
    ev.reason = lost.why;
    outlet_->membership_event(lost.id, ev);
    evicted_.insert(lost.id);
    if (!outlet_->attached())
        untold_.push_back(std::move(lost));
    sessions_.changed();
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

// Both are in the restart state (what a stored connection or a D-Bus caller is matched by).
void ClientSession::set_inode(std::uint64_t inode) {
    inode_ = inode;
    sessions_.changed();
}

void ClientSession::set_bus_name(std::string name) {
    bus_name_ = std::move(name);
    sessions_.changed();
}

std::optional<proto::Failure> ClientSession::set_monitor(bool on) {
    if (on == monitor_)
        return std::nullopt;
    Accounts &acc = sessions_.accounts();
    const bool counted = door_ != Door::daemon;
    if (on && counted) {
        if (auto no = not_allowed()) {
            sessions_.refusals().count(refusal::kAllowLists);
            return no;
        }
        if (auto no = whose_share(who_.who, acc.may_monitor(who_.who.account_uid()))) {
            sessions_.refusals().count(no->error);
            return no;
        }
    }
    if (counted)
        acc.monitoring(who_.who.account_uid(), on);
    on ? sessions_.monitors().subscribe(*this) : sessions_.monitors().unsubscribe(*this);
    monitor_ = on;
    sessions_.changed();
    return std::nullopt;
}

void ClientSession::membership_event(ClientId, MembershipId id, const MembershipEvent &ev) {
    outlet_->membership_event(id, ev);
}

} // namespace mcastd::frontend
