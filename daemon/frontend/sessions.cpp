#include "frontend/sessions.hpp"

#include <vector>

#include "common/port_name.hpp"

namespace mcastd::frontend {

namespace {

const char *note_kind(EngineNote::Kind k) {
    switch (k) {
    case EngineNote::Kind::joined: return "joined";
    case EngineNote::Kind::left: return "left";
    case EngineNote::Kind::join_failed: return "join-failed";
    case EngineNote::Kind::sa_left: return "deleted";
    case EngineNote::Kind::lost: return "lost";
    case EngineNote::Kind::restored: return "restored";
    case EngineNote::Kind::warning: return "warning";
    }
    return "warning";
}

} // namespace

Sessions::Sessions(Service &service, std::string daemon_name, Limits limits, AccessPolicy access)
    : service_(service), daemon_name_(std::move(daemon_name)), limits_(limits), access_(std::move(access)),
      started_(std::chrono::steady_clock::now()) {
    service_.add_observer([this, alive = std::weak_ptr<bool>(alive_)](const EngineNote &n) {
        if (alive.lock())
            on_note(n);
    });
}

Sessions::~Sessions() {
    *alive_ = false;
    change_hook_ = nullptr;
    detached_.clear(); // while the sets their destructors update still exist
}

std::variant<std::unique_ptr<ClientSession>, proto::Failure> Sessions::open(Door door, Credentials who,
                                                                            SessionOutlet &outlet) {
    if (door != Door::daemon && clients_ >= limits_.max_clients)
        return proto::Failure::of(Errc::limit, "the daemon serves " + std::to_string(clients_) +
                                                    " clients, its limit (config: limits.max_clients)");
    return std::make_unique<ClientSession>(*this, door, std::move(who), outlet);
}

void Sessions::opened(ClientSession &s) {
    if (s.door() != Door::daemon)
        ++clients_;
    all_.insert(&s);
    changed();
}

void Sessions::closed(ClientSession &s) {
    if (s.door() != Door::daemon)
        --clients_;
    all_.erase(&s);
    changed();
}

void Sessions::monitor(ClientSession &s, bool on) {
    if (on)
        monitors_.insert(&s);
    else
        monitors_.erase(&s);
    changed();
}

namespace {

// Events of a session nobody is connected to are dropped: a client that resumes lists what it
// holds (the resumed hello answers with its memberships).
struct NoOutlet final : SessionOutlet {
    void membership_event(MembershipId, const MembershipEvent &) override {}
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

ClientSession &Sessions::restore(const RestoredSession &saved) {
    auto s = std::make_unique<ClientSession>(*this, saved, no_outlet);
    ClientSession &ref = *s;
    detached_[saved.id] = std::move(s);
    return ref;
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

std::size_t Sessions::release_detached(const std::function<bool(const ClientSession &)> &drop) {
    for (auto it = detached_.begin(); it != detached_.end();)
        it = drop(*it->second) ? detached_.erase(it) : std::next(it);
    return detached_.size();
}

void Sessions::on_note(const EngineNote &n) {
    if (monitors_.empty())
        return;
    proto::MonitorEvent ev;
    ev.kind = note_kind(n.kind);
    const auto &ports = service_.ports();
    if (n.port < ports.size()) {
        ev.device = ports[n.port].device;
        ev.port = ports[n.port].port_num;
    }
    ev.mgid = n.mgid;
    ev.mlid = n.mlid;
    ev.join_state = n.join_state;
    if (n.client_info) { // the client may be gone already ("left" after its disconnect)
        ev.pid = n.client_info->pid;
        ev.uid = n.client_info->uid;
        ev.comm = n.client_info->comm;
    }
    ev.message = describe(n, port_name(ev.device, ev.port));
    ev.sa_status = n.sa_status;
    // A copy: delivering may make a transport drop a session.
    const std::vector<ClientSession *> to(monitors_.begin(), monitors_.end());
    for (ClientSession *s : to)
        if (monitors_.count(s))
            s->outlet_->monitor_event(ev);
}

} // namespace mcastd::frontend
