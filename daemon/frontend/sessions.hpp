// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Sessions: the daemon's front door, shared by every transport. It keeps the registry of client
// sessions (the live ones and those a previous instance left, detached), admits new clients,
// holds the rules in force (limits, the access policy; a reload replaces them for the next
// request) and does what reaches across sessions: a reload's review, root's evict, the parts of
// `list` and `status` only the front door knows. Each uid's share of everything shared is its
// account (accounts.hpp), names map to groups in the name registry (name_registry.hpp), the
// daemon's activity reaches monitors through the monitor outlet (monitor_outlet.hpp), and what
// was refused is counted by reason (refusals.hpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "frontend/accounts.hpp"
#include "frontend/client_session.hpp"
#include "frontend/limits.hpp"
#include "frontend/monitor_outlet.hpp"
#include "frontend/name_registry.hpp"
#include "frontend/refusals.hpp"
#include "frontend/subordinate_ids.hpp"
#include "frontend/user_names.hpp"

namespace mcastd::frontend {

class Sessions {
public:
    // `daemon_name` is what hello and status say ("rdma-mcastd 0.1.0"); `timers` is the clock of
    // the uids' SA budgets.
    Sessions(Service &service, Timers &timers, std::string daemon_name, Limits limits, policy::Policy policy);
    ~Sessions();
    Sessions(const Sessions &) = delete;
    Sessions &operator=(const Sessions &) = delete;

    // A new client, or why not: the host's or its uid's client slots are taken (accounts.hpp), or,
    // for a D-Bus caller (which says no hello), the allow lists refuse its uid. The daemon's own
    // door is never refused.
    std::variant<std::unique_ptr<ClientSession>, proto::Failure> open(Door door, Credentials who,
                                                                      SessionOutlet &outlet);

    // ---- the rules in force ----

    // A reload (SIGHUP): limits apply to the next request, the access policy to the next request
    // of every session (a caller the allow lists no longer admit may only leave; its monitor
    // stops). Memberships the new rules would refuse are kept, and flagged (review()).
    void set_limits(const Limits &limits) {
        limits_ = limits;
        subordinate_ids_.set_file(limits_.subuid_file);
    }
    void set_policy(policy::Policy policy);
    const Limits &limits() const { return limits_; }
    const policy::Policy &policy() const { return policy_; }
    // Counts set_policy() calls: what remembers a verdict of the policy (the D-Bus transport's
    // refusal()) knows when it is stale.
    std::uint64_t policy_generation() const { return policy_generation_; }
    // Flags every membership the rules in force would refuse now, and clears the flag of
    // those they would admit; the journal hears of each change. Returns how many are flagged.
    std::size_t review();

    // The policy's verdict on a join and the quotas it may not exceed (the uid's and the host's);
    // the create quota is the create gate's. `by_name`: the join named its group by name.
    std::variant<policy::Admission, proto::Failure> admit(const ClientSession &s, const JoinRequest &req,
                                                          bool by_name) const;

    // ---- the parts ----

    Accounts &accounts() { return accounts_; }
    const Accounts &accounts() const { return accounts_; }
    NameRegistry &names() { return names_; }
    MonitorOutlet &monitors() { return monitors_; }
    // What the front door refused, by reason: counted where each refusal is decided, by the
    // sessions and by the transports' doors (a caller nobody could identify, no hello in time).
    Refusals &refusals() { return refusals_; }
    const Refusals &refusals() const { return refusals_; }
    Service &service() const { return service_; }
    const std::string &daemon_name() const { return daemon_name_; }
    std::chrono::steady_clock::time_point started() const { return started_; }
    // Clients of the socket and D-Bus (not the daemon's own), detached ones included.
    std::size_t clients() const { return accounts_.clients(); }

    // ---- the registry (ClientSession's constructors and destructor) ----

    void add(ClientSession &s);
    void remove(ClientSession &s);
    // The session's engine client became `now` (hello's `resume`); it was `before`.
    void reclient(ClientSession &s, ClientId before, ClientId now);
    // A new session's id (kept in the state file, so ids are never reused).
    std::uint64_t take_id() { return next_id_++; }
    // Something the restart state keeps changed.
    void changed() const {
        if (change_hook_)
            change_hook_();
    }

    // creates_per_uid counts the groups a uid created and still holds: when a membership that
    // carries a create ends, another membership of `uid` in the same group on `port` (in any of
    // its sessions) carries it on. False when there is none, and the create is given back.
    bool pass_create(uid_t uid, PortIndex port, const Gid &mgid);

    // ---- root's requests, and what only the front door adds to list and status ----

    // Releases the memberships `e` names, whoever holds them; with `disconnect`, also closes
    // every connection of the uid. For root only (`by`).
    std::variant<proto::EvictResult, proto::Failure> evict(const proto::Evict &e, const ClientSession &by);
    // A member's grant (rule, created, flagged, name) for `list`, and per uid and port for
    // `status`.
    void annotate(const MemberView &m, proto::MemberInfo &out) const;
    void annotate(proto::StatusResult &out);

    // ---- across a restart of the daemon (doc/architecture.md §9) ----

    // Every session that exists, the daemon's own and the detached ones included.
    template <class F> void for_each(F f) const {
        for (ClientSession *s : all_)
            f(*s);
    }
    std::uint64_t next_id() const { return next_id_; }
    // The session of engine client `client`, or null.
    const ClientSession *of_client(ClientId client) const {
        const auto it = by_client_.find(client);
        return it == by_client_.end() ? nullptr : it->second;
    }
    void set_next_id(std::uint64_t next) { next_id_ = std::max(next_id_, next); }
    // A session of the previous instance, detached: it has no transport until a connection
    // takes it back (take_detached() for one the service manager kept, a hello's `resume`), and
    // its memberships hold meanwhile. Null (and why, in `why`) when its uid's or the host's client
    // slots are taken now.
    ClientSession *restore(const RestoredSession &saved, std::string &why);
    std::unique_ptr<ClientSession> take_detached(std::uint64_t id);
    // Back to detached (a stored connection that turned out not to be the session's).
    void restore_detached(std::unique_ptr<ClientSession> s);
    // hello's `resume`: the detached socket session with that ticket, when `uid` owns it.
    std::unique_ptr<ClientSession> take_resumable(const proto::SessionTicket &ticket, uid_t uid);
    // Releases (as if they had left) the detached sessions `drop` picks; returns how many are
    // still detached.
    std::size_t release_detached(const std::function<bool(const ClientSession &)> &drop);
    std::size_t detached() const { return detached_.size(); }
    // The ids of the detached sessions that came through `door`.
    std::vector<std::uint64_t> detached_of(Door door) const;

    // `fn` runs whenever a session comes, goes, or changes what the state file keeps of it.
    void set_change_hook(std::function<void()> fn) { change_hook_ = std::move(fn); }

private:
    // Sets who.account when its uid is in another user's subordinate range.
    void charge_to_account(ClientInfo &who);

    Service &service_;
    std::string daemon_name_;
    Limits limits_;
    policy::Policy policy_;
    std::uint64_t policy_generation_ = 0;
    Accounts accounts_;
    UserNames user_names_; // for status: NSS asked at most once a minute per uid
    SubordinateIds subordinate_ids_; // whose share a new client's uid takes
    NameRegistry names_;
    MonitorOutlet monitors_;
    Refusals refusals_;
    std::chrono::steady_clock::time_point started_;
    std::uint64_t next_id_ = 1;
    std::unordered_set<ClientSession *> all_;
    std::unordered_map<ClientId, ClientSession *> by_client_; // every session by its engine client
    std::map<std::uint64_t, std::unique_ptr<ClientSession>> detached_;
    std::function<void()> change_hook_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true); // for the observers it registers
};

} // namespace mcastd::frontend
