// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Accounts: each uid's share of what every client of the daemon shares, across all its sessions
// on every transport (doc/architecture.md §12): client slots, monitors, reply bytes the daemon
// holds for it, memberships, creates, groups per port, and SA MADs. The front door asks before
// it lets a uid take more and gives back when it is done, so that one user over a share gets
// `limit` (naming the key and the figure) and nobody else notices anything.
//
// Root (uid 0) has no per-uid share: the administrator's tools must work while a user attacks,
// so root instead keeps `limits.root_reserved_clients` slots nobody else may take. The host-wide
// bounds (max_clients, max_queued_bytes_total, max_memberships) are what keep the daemon's memory
// bounded: max_clients and max_queued_bytes_total hold for everyone; max_memberships counts
// root's memberships but never refuses root's joins (root's tools must still work when users
// have filled it).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "common/error.hpp"
#include "common/gid.hpp"
#include "common/record.hpp"
#include "common/request.hpp"
#include "common/token_bucket.hpp"
#include "core/sa_service.hpp"
#include "core/timers.hpp"
#include "frontend/limits.hpp"
#include "policy/policy.hpp"
#include "proto/protocol.hpp"

namespace mcastd::frontend {

// One uid's use of the shared resources.
struct Usage {
    std::size_t clients = 0;      // socket connections and D-Bus callers with a session
    std::size_t monitors = 0;     // sessions with a monitor subscription
    std::size_t queued_bytes = 0; // replies and events written for it and not yet sent
    std::size_t memberships = 0;  // held and pending
    std::size_t creates = 0;      // held memberships whose join created the group, and pending
                                  // ones about to create it
    // The groups its memberships are in, per port, with how many of its memberships each has.
    // MGID 0 counts the SA-assigned creates still waiting for their MGID, each one a group.
    std::map<PortIndex, GidMap<std::size_t>> groups;
    std::optional<TokenBucket> sa; // its SA budget, once it spent any

    std::size_t groups_on(PortIndex port) const;
    // How many of its memberships are in group `mgid` on `port`.
    std::size_t memberships_in(PortIndex port, const Gid &mgid) const;
};

// "1 membership", "2 memberships": the counts refusals name.
std::string counted(std::size_t n, std::string_view noun);

// `no`, a refusal by a share of `who`'s account, saying whose share that is when it is not its
// own uid's (a subordinate uid's, subordinate_ids.hpp): "uid 1001 has 3 clients" alone would puzzle
// a client that runs as uid 100005.
template <class Refusal> std::optional<Refusal> whose_share(const ClientInfo &who, std::optional<Refusal> no);

class Accounts {
public:
    // `limits` and `policy` are the ones in force (Sessions owns them; a reload replaces them in
    // place). `timers` is the SA budget's clock.
    Accounts(Timers &timers, const Limits &limits, const policy::Policy &policy)
        : timers_(timers), limits_(limits), policy_(policy) {}

    // ---- clients ----
    // A new client of `uid`, or why not: the host's slots (the last root_reserved_clients are
    // root's) or the uid's share.
    std::optional<proto::Failure> may_connect(uid_t uid) const;
    void connected(uid_t uid);
    void disconnected(uid_t uid);
    std::size_t clients() const { return clients_; }

    // ---- monitors ----
    std::optional<proto::Failure> may_monitor(uid_t uid) const;
    void monitoring(uid_t uid, bool on);

    // ---- bytes the transports hold for clients ----
    // Why `bytes` more for `uid` may not be held (its share, or the host's total), or nullopt.
    std::optional<std::string> may_queue(uid_t uid, std::size_t bytes) const;
    void queued(uid_t uid, std::size_t bytes);
    void sent(uid_t uid, std::size_t bytes);
    std::size_t queued_total() const { return queued_total_; }

    // ---- memberships ----
    // A join of `mgid` (zero: SA-assigned) on `port` by `uid`, under its memberships quota, or
    // why not: that quota, the host's memberships, or the uid's groups on the port.
    std::optional<proto::Failure> may_join(uid_t uid, std::size_t memberships_quota, PortIndex port, const Gid &mgid,
                                           const std::string &port_name) const;
    // `created`: a membership taken back after a restart whose join created its group, charged
    // its create again (whatever the quota is now: the previous instance admitted it). A join's
    // create is charged by take_create() instead, at the create gate.
    void charge(uid_t uid, PortIndex port, const Gid &mgid, bool created = false);
    void uncharge(uid_t uid, PortIndex port, const Gid &mgid, bool created);
    // An SA-assigned create of `uid` on `port` got its MGID.
    void assigned(uid_t uid, PortIndex port, const Gid &mgid);
    // One more create, or the `limit` error when the quota is used up; may_create() asks the same
    // without counting it.
    std::optional<Error> take_create(uid_t uid, std::size_t quota);
    std::optional<Error> may_create(uid_t uid, std::size_t quota) const;
    std::size_t memberships() const { return memberships_; }

    // ---- SA MADs (access.quotas.sa_mads_per_second, sa_mads_burst) ----
    // One MAD `uid`'s request would cost, or the `limit` error when its budget is spent.
    std::optional<Error> take_sa(uid_t uid, SaMethod method);
    // A MAD `uid` caused and that cannot be refused (a Delete after its leave): it is paid from
    // the budget, into debt if need be.
    void charge_sa(uid_t uid);

    // The `limit` error of a quota, share or limit: "<what>, its <kind> (config <section>.<name>[ or
    // the admitting rule's]: <value>)", with the PolicyRef that names the key and its value for
    // programs (PROTOCOL.md: `quota`, `limit`). Every refusal by a number is made by it, so that
    // each says which key to raise.
    static proto::Failure over(std::string_view what, std::string_view kind, std::string_view section,
                               std::string_view name, std::size_t value, bool rule_may_set = false);

    // ---- views ----
    const Usage *usage(uid_t uid) const;
    // The SA tokens `uid` has now (its burst when it never spent any).
    double sa_tokens(uid_t uid);

private:
    Usage &of(uid_t uid) { return usage_[uid]; }
    // Forgets a uid that uses nothing and whose SA budget is full again.
    void prune(uid_t uid);
    TokenBucket &sa_bucket(Usage &u);

    Timers &timers_;
    const Limits &limits_;
    const policy::Policy &policy_;
    std::unordered_map<uid_t, Usage> usage_;
    std::size_t clients_ = 0, queued_total_ = 0, memberships_ = 0;
};

template <class Refusal> std::optional<Refusal> whose_share(const ClientInfo &who, std::optional<Refusal> no) {
    if (no && who.account_uid() != who.uid) {
        Error &e = [&]() -> Error & {
            if constexpr (std::is_same_v<Refusal, Error>)
                return *no;
            else
                return no->error;
        }();
        e.message += "; uid " + std::to_string(who.uid) + " is charged to uid " + std::to_string(who.account_uid()) +
                     ", whose subordinate range holds it (config limits.subuid_file)";
    }
    return no;
}

} // namespace mcastd::frontend
