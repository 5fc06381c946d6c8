#include "static_groups.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

namespace mcastd {

namespace {

std::string describe(const JoinRequest &r) {
    return (is_zero(r.mgid) ? std::string("a new group") : format_gid(r.mgid)) + " on " + r.device + "/" +
           std::to_string(r.port) + " as " + join_state_name(r.join_state);
}

bool can_pass(Errc c) {
    return c != Errc::no_such_device && c != Errc::no_such_port && c != Errc::invalid_argument &&
           c != Errc::denied;
}

} // namespace

StaticGroups::StaticGroups(Service &service, Timers &timers, std::vector<JoinRequest> groups,
                           Duration retry_min, Duration retry_max)
    : service_(service), timers_(timers), retry_min_(retry_min), retry_max_(retry_max) {
    // No groups, no client: `clients` in the status counts only real holders.
    if (!groups.empty())
        client_ = service_.add_client(ClientInfo{getpid(), getuid(), getgid(), "static-groups"}, this);
    for (JoinRequest &r : groups)
        entries_.push_back(Entry{std::move(r), false, Duration{0}, 0});
    for (std::size_t i = 0; i < entries_.size(); ++i)
        join(i);
}

StaticGroups::~StaticGroups() {
    for (Entry &e : entries_)
        timers_.cancel(e.retry);
    if (client_)
        service_.remove_client(client_);
}

std::size_t StaticGroups::held() const {
    std::size_t n = 0;
    for (const Entry &e : entries_)
        n += e.held;
    return n;
}

void StaticGroups::join(std::size_t i) {
    entries_[i].retry = 0;
    service_.engine().join(client_, entries_[i].request, [this, i](const JoinResult &res) {
        Entry &e = entries_[i];
        if (!res.error) {
            e.held = true;
            e.backoff = Duration{0};
            spdlog::info("static group {} joined (MLID 0x{:04x})", describe(e.request), res.record.mlid);
            return;
        }
        if (!can_pass(res.error->code)) {
            spdlog::error("static group {} cannot be joined: {}", describe(e.request), res.error->message);
            return;
        }
        e.backoff = e.backoff.count() ? std::min(e.backoff * 2, retry_max_) : retry_min_;
        spdlog::warn("static group {}: {}; retrying in {} ms", describe(e.request), res.error->message,
                     std::chrono::duration_cast<std::chrono::milliseconds>(e.backoff).count());
        e.retry = timers_.start(e.backoff, [this, i] { join(i); });
    });
}

void StaticGroups::membership_event(ClientId, MembershipId, const MembershipEvent &ev) {
    if (ev.kind == MembershipEvent::Kind::lost)
        spdlog::warn("static group {} lost: {}", format_gid(ev.record.mgid),
                     ev.reason ? ev.reason->message : std::string("unknown reason"));
    else
        spdlog::info("static group {} restored", format_gid(ev.record.mgid));
}

} // namespace mcastd
