// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Sessions: the daemon's front door, shared by every transport. It admits clients (the
// `max_clients` limit counts the socket's and D-Bus's clients together), holds the rules
// sessions apply (limits, the access policy; a reload changes them for the next request),
// keeps each uid's accounts against its quotas across every connection and transport, and
// brings the daemon's activity to the clients that monitor it.
#pragma once

#include <chrono>
#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "common/named_group.hpp"
#include "frontend/client_session.hpp"

namespace mcastd::frontend {

struct Limits {
    std::size_t max_message_bytes = 65536;        // the socket's longest request
    std::size_t max_requests_in_flight = 64;      // joins waiting for the SA, per client
    std::size_t max_memberships_per_client = 4096;
    std::size_t max_clients = 1024;               // socket and D-Bus clients together
    std::size_t max_queued_bytes = 4u << 20;      // replies and events a slow socket reader may owe
    bool operator==(const Limits &) const = default;
};

class Sessions {
public:
    // `daemon_name` is what hello and status say ("rdma-mcastd 0.1.0").
    Sessions(Service &service, std::string daemon_name, Limits limits, policy::Policy policy);
    ~Sessions();
    Sessions(const Sessions &) = delete;
    Sessions &operator=(const Sessions &) = delete;

    // A new client. Refused with `limit` when the daemon already serves max_clients clients
    // (the daemon's own door is never refused).
    std::variant<std::unique_ptr<ClientSession>, proto::Failure> open(Door door, Credentials who,
                                                                      SessionOutlet &outlet);

    // A reload (SIGHUP): limits apply to the next request (max_message_bytes to connections
    // made from now on), the access policy to the next hello and the next join. Memberships
    // the new rules would refuse are kept, and flagged (review()).
    void set_limits(const Limits &limits) { limits_ = limits; }
    // How a join's name maps to its MGID (config groups.names); read at start, never reloaded:
    // a name keeps meaning the group it means while the daemon holds it.
    void set_names(const NamedGroups &names) { names_ = names; }
    const NamedGroups &names() const { return names_; }
    void set_policy(policy::Policy policy);
    const Limits &limits() const { return limits_; }
    const policy::Policy &policy() const { return policy_; }

    // Flags every membership the rules in force would refuse now, and clears the flag of
    // those they would admit; the journal hears of each change. Returns how many are flagged.
    std::size_t review();

    // Clients of the socket and D-Bus (not the daemon's own).
    std::size_t clients() const { return clients_; }

    // ---- across a restart of the daemon (doc/architecture.md §9) ----

    // Every session that exists, the daemon's own and the detached ones included.
    template <class F> void for_each(F f) const {
        for (ClientSession *s : all_)
            f(*s);
    }
    // The id the next session gets (kept in the state file, so ids are never reused).
    std::uint64_t next_id() const { return next_id_; }
    void set_next_id(std::uint64_t next) { next_id_ = std::max(next_id_, next); }
    // A session of the previous instance, detached: it has no transport until a connection
    // takes it back (take_detached() for one the service manager kept, a hello's `resume`),
    // and its memberships hold meanwhile.
    ClientSession &restore(const RestoredSession &saved);
    std::unique_ptr<ClientSession> take_detached(std::uint64_t id);
    // Back to detached (a stored connection that turned out not to be the session's).
    void restore_detached(std::unique_ptr<ClientSession> s);
    // Releases (as if they had left) the detached sessions `drop` picks; returns how many
    // are still detached.
    std::size_t release_detached(const std::function<bool(const ClientSession &)> &drop);
    std::size_t detached() const { return detached_.size(); }

    // `fn` runs whenever a session comes, goes, or changes what the state file keeps of it.
    void set_change_hook(std::function<void()> fn) { change_hook_ = std::move(fn); }
    Service &service() const { return service_; }
    const std::string &daemon_name() const { return daemon_name_; }
    std::chrono::steady_clock::time_point started() const { return started_; }

private:
    friend class ClientSession;
    // One uid's share, across its sessions on every transport.
    struct Usage {
        std::size_t memberships = 0; // held and pending
        std::size_t creates = 0;     // held memberships whose join created the group, and
                                     // pending ones about to create it
    };
    // A named join as the join of its MGID with the configured P_Key asserted, or why not: names
    // disabled, another P_Key asked for, or another name that this daemon holds or is joining
    // maps to the same MGID (a collision: `conflict`, naming both).
    std::variant<JoinRequest, proto::Failure> resolve_name(const JoinRequest &req) const;
    // The policy's verdict on a join and the quotas it may not exceed (memberships per uid,
    // groups per port); the create quota is the create gate's (take_create()).
    std::variant<policy::Admission, proto::Failure> admit(const ClientSession &s, const JoinRequest &req) const;
    void charge(uid_t uid, const Grant &g);
    void uncharge(uid_t uid, const Grant &g);
    // One more create for `uid`, or the `limit` error when its quota is used up.
    std::optional<Error> take_create(uid_t uid, std::size_t quota);
    // The journal entry of a join the policy refused.
    void refused(const ClientSession &s, const JoinRequest &req, const Error &why) const;
    std::variant<proto::EvictResult, proto::Failure> evict(const proto::Evict &e, const ClientSession &by);
    // The policy's part of `list` (a member's grant) and of `status` (per uid, per port).
    void annotate(const MemberView &m, proto::MemberInfo &out) const;
    void annotate(proto::StatusResult &out) const;
    // hello's `resume`: the detached session with that ticket, when `uid` owns it.
    std::unique_ptr<ClientSession> take_resumable(const proto::SessionTicket &ticket, uid_t uid);
    void changed() const {
        if (change_hook_)
            change_hook_();
    }
    void opened(ClientSession &s);
    void closed(ClientSession &s);
    // The session's engine client became `now` (hello's `resume`); it was `before`.
    void reclient(ClientSession &s, ClientId before, ClientId now);
    void monitor(ClientSession &s, bool on);
    void on_note(const EngineNote &note);

    Service &service_;
    std::string daemon_name_;
    Limits limits_;
    policy::Policy policy_;
    NamedGroups names_;
    std::unordered_map<uid_t, Usage> usage_;
    std::chrono::steady_clock::time_point started_;
    std::size_t clients_ = 0;
    std::uint64_t next_id_ = 1;
    std::unordered_set<ClientSession *> all_;
    std::unordered_map<ClientId, ClientSession *> by_client_; // every session by its engine client
    std::map<std::uint64_t, std::unique_ptr<ClientSession>> detached_;
    std::function<void()> change_hook_;
    std::unordered_set<ClientSession *> monitors_; // a join costs nothing extra while empty
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true); // for the observer it registers
};

} // namespace mcastd::frontend
