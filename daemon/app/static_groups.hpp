// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Groups the config lists (`static_groups`): joined at start and held by the daemon itself, as
// one more client session (the daemon's own door: no hello, no limits) for as long as it runs.
#pragma once

#include <memory>
#include <vector>

#include "core/timers.hpp"
#include "frontend/sessions.hpp"

namespace mcastd {

class StaticGroups final : private frontend::SessionOutlet {
public:
    // Joins every group now. A join that fails for a reason that can pass (SA timeout or
    // error, port not active, a conflict with other members) is retried with capped backoff;
    // one that can never work (no such device or port) is logged and dropped.
    StaticGroups(frontend::Sessions &sessions, Timers &timers, std::vector<JoinRequest> groups, Duration retry_min,
                 Duration retry_max);
    ~StaticGroups(); // leaves them all (through the session)
    StaticGroups(const StaticGroups &) = delete;
    StaticGroups &operator=(const StaticGroups &) = delete;

    std::size_t held() const;

private:
    struct Entry {
        JoinRequest request;
        bool held = false;
        Duration backoff{0};
        Timers::Id retry = 0;
    };

    void join(std::size_t i);
    void membership_event(MembershipId id, const MembershipEvent &ev) override;
    void disconnect(const std::string &) override {} // the daemon's own door is never evicted

    Timers &timers_;
    Duration retry_min_, retry_max_;
    std::vector<Entry> entries_;
    std::unique_ptr<frontend::ClientSession> session_; // none without groups: not a holder
};

} // namespace mcastd
