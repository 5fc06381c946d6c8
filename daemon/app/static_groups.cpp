// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "app/static_groups.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "common/port_name.hpp"

namespace mcastd {

namespace {

std::string describe(const JoinRequest &r) {
    const std::string what = !r.name.empty() ? "named \"" + r.name + "\""
                             : is_zero(r.mgid)  ? std::string("a new group")
                                                : format_gid(r.mgid);
    return what + " on " +
           port_name(r.device, r.port) + " as " + join_state_name(r.join_state);
}

bool can_pass(Errc c) {
    return c != Errc::no_such_device && c != Errc::no_such_port && c != Errc::invalid_argument &&
           c != Errc::denied;
}

} // namespace

StaticGroups::StaticGroups(frontend::Sessions &sessions, Timers &timers, std::vector<JoinRequest> groups,
                           Duration retry_min, Duration retry_max)
    : timers_(timers), retry_min_(retry_min), retry_max_(retry_max) {
    // No groups, no session: STATUS= counts only real holders.
    if (groups.empty())
        return;
    frontend::Credentials self{ClientInfo{getpid(), getuid(), getgid(), "static-groups"}, {}};
    auto opened = sessions.open(frontend::Door::daemon, std::move(self), *this);
    session_ = std::get<std::unique_ptr<frontend::ClientSession>>(std::move(opened)); // never refused
    for (JoinRequest &r : groups)
        entries_.push_back(Entry{std::move(r), false, Duration{0}, 0});
    for (std::size_t i = 0; i < entries_.size(); ++i)
        join(i);
}

StaticGroups::~StaticGroups() {
    for (Entry &e : entries_)
        timers_.cancel(e.retry);
}

std::size_t StaticGroups::held() const {
    std::size_t n = 0;
    for (const Entry &e : entries_)
        n += e.held;
    return n;
}

// The entry's index is its request id: at most one join per entry is pending.
void StaticGroups::join(std::size_t i) {
    entries_[i].retry = 0;
    session_->join(i, entries_[i].request, [this, i](const frontend::JoinAnswer &res) {
        Entry &e = entries_[i];
        if (!res.failure) {
            e.held = true;
            e.backoff = Duration{0};
            spdlog::info("static group {} joined (MLID 0x{:04x})", describe(e.request), res.record.mlid);
            return;
        }
        const Error &err = res.failure->error;
        if (!can_pass(err.code)) {
            spdlog::error("static group {} cannot be joined: {}", describe(e.request), err.message);
            return;
        }
        e.backoff = e.backoff.count() ? std::min(e.backoff * 2, retry_max_) : retry_min_;
        spdlog::warn("static group {}: {}; retrying in {} ms", describe(e.request), err.message,
                     std::chrono::duration_cast<std::chrono::milliseconds>(e.backoff).count());
        e.retry = timers_.start(e.backoff, [this, i] { join(i); });
    });
}

void StaticGroups::membership_event(MembershipId, const MembershipEvent &ev) {
    if (ev.kind == MembershipEvent::Kind::lost)
        spdlog::warn("static group {} lost: {}", format_gid(ev.record.mgid),
                     ev.reason ? ev.reason->message : std::string("unknown reason"));
    else
        spdlog::info("static group {} restored", format_gid(ev.record.mgid));
}

} // namespace mcastd
