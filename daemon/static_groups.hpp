// Groups the config lists (`static_groups`): joined at start and held by the daemon itself,
// as one more client of the engine, for as long as it runs.
#pragma once

#include <vector>

#include "core/timers.hpp"
#include "service.hpp"

namespace mcastd {

class StaticGroups final : private MembershipEventSink {
public:
    // Joins every group now. A join that fails for a reason that can pass (SA timeout or
    // error, port not active, a conflict with other members) is retried with capped backoff;
    // one that can never work (no such device or port) is logged and dropped.
    StaticGroups(Service &service, Timers &timers, std::vector<JoinRequest> groups, Duration retry_min,
                 Duration retry_max);
    ~StaticGroups() override; // leaves them all (through the service)
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
    void membership_event(ClientId client, MembershipId id, const MembershipEvent &ev) override;

    Service &service_;
    Timers &timers_;
    Duration retry_min_, retry_max_;
    ClientId client_ = 0;
    std::vector<Entry> entries_;
};

} // namespace mcastd
