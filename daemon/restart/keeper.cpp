// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "restart/keeper.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <map>
#include <set>

#include "common/port_name.hpp"
#include "server/fd_store.hpp"
#include "server/peer.hpp"

namespace mcastd::restart {

StateKeeper::StateKeeper(runtime::EventLoop &loop, Service &service, frontend::Sessions &sessions, StateFile file,
                         std::string daemon_name)
    : loop_(loop), service_(service), sessions_(sessions), file_(std::move(file)),
      daemon_name_(std::move(daemon_name)), boot_id_(current_boot_id()),
      log_header_(encode_log_header(boot_id_, daemon_name_, generation_)) {}

StateKeeper::~StateKeeper() {
    *alive_ = false;
    if (timer_)
        loop_.timers().cancel(timer_);
    if (compact_timer_)
        loop_.timers().cancel(compact_timer_);
    if (watching_) {
        service_.on_sa_set({});
        service_.on_sa_group({});
        sessions_.set_change_hook({});
    }
    if (roce_)
        roce_->set_before_add({});
}

namespace {

SavedGroup saved_group(const GroupView &g) {
    return SavedGroup{g.mgid, g.held, g.uncertain, g.have_record ? std::optional<McRecord>(g.record) : std::nullopt};
}

// Whether the state keeps `s`: not the daemon's own (the static groups: the next instance
// joins them from its config), and never a connection that said no hello (the allow lists
// have not judged it) or that the allow lists refused; its connection is not in the fd store
// either.
bool kept(const frontend::ClientSession &s) {
    return s.door() != frontend::Door::daemon && s.greeted() && !s.refused();
}

SavedSession head_of(const frontend::ClientSession &s) {
    SavedSession out;
    out.id = s.id();
    out.token = s.token();
    out.door = s.door() == frontend::Door::dbus ? SavedDoor::dbus : SavedDoor::socket;
    out.who = s.who().who;
    out.groups = s.who().supplementary_groups;
    out.cgroup = s.who().cgroup;
    out.cgroup_unattested = s.who().cgroup_unattested;
    out.start_time = s.start_time();
    out.version = s.version();
    out.monitor = s.monitoring();
    out.inode = s.inode();
    out.bus_name = s.bus_name();
    return out;
}

} // namespace

std::optional<MembershipChange> StateKeeper::saved_member(const MemberView &m, PortIndex port,
                                                          const Gid &mgid) const {
    if (m.state == MemberView::State::pending)
        return std::nullopt;
    const frontend::ClientSession *s = sessions_.of_client(m.client);
    if (!s || !kept(*s))
        return std::nullopt;
    const port::RegisteredPort &p = service_.ports().at(port);
    MembershipChange out{s->id(), SavedMembership{m.id, p.device(), p.number(), mgid, m.join_state, m.params}};
    if (const auto g = s->grants().find(m.id); g != s->grants().end()) {
        out.membership.rule = g->second.rule;
        out.membership.created = g->second.created;
        out.membership.sa_assigned = g->second.sa_assigned;
        out.membership.name = g->second.name;
    }
    return out;
}

SavedState StateKeeper::snapshot(bool clean) const {
    SavedState st;
    st.boot_id = boot_id_;
    st.daemon = daemon_name_;
    st.clean = clean;
    st.next_session = sessions_.next_id();
    st.generation = generation_;
    st.bus_id = bus_id_;

    const auto &ports = service_.ports();
    for (const port::RegisteredPort &p : ports)
        st.ports.push_back(SavedPort{p.device(), p.number(), p.gid(), {}});
    // Memberships by session, to file them under it.
    std::map<std::uint64_t, std::vector<SavedMembership>> members;
    for (const GroupView &g : service_.group_views()) {
        if (is_zero(g.mgid))
            continue; // a group the SA has not named yet: its Set is what it will hold
        if (g.held || g.uncertain)
            st.ports[g.port].groups.push_back(saved_group(g));
        for (const MemberView &m : g.members)
            if (auto saved = saved_member(m, g.port, g.mgid))
                members[saved->session].push_back(std::move(saved->membership));
    }
    sessions_.for_each([&](const frontend::ClientSession &s) {
        if (!kept(s))
            return;
        SavedSession out = head_of(s);
        if (auto it = members.find(s.id()); it != members.end()) {
            out.memberships = std::move(it->second);
            std::sort(out.memberships.begin(), out.memberships.end(),
                      [](const SavedMembership &a, const SavedMembership &b) { return a.id < b.id; });
        }
        st.sessions.push_back(std::move(out));
    });
    std::sort(st.sessions.begin(), st.sessions.end(),
              [](const SavedSession &a, const SavedSession &b) { return a.id < b.id; });
    if (roce_)
        st.roce = kept_roce();
    return st;
}

roce::KeptRoce StateKeeper::kept_roce() const {
    const auto &ports = service_.ports();
    return roce_->kept([&](PortIndex pi) {
        return roce::RoceBackend::PortName{ports.at(pi).device(), ports.at(pi).number()};
    });
}

void StateKeeper::watch() {
    watching_ = true;
    service_.on_sa_set([this](const SaRequest &req) { set_going_out(req); });
    service_.on_sa_group([this](PortIndex port, const Gid &mgid) { group_changed(port, mgid); });
    service_.add_observer([this, alive = std::weak_ptr<bool>(alive_)](const EngineNote &n) {
        // A group the SA has not named yet is not in the state: its Set is what it will hold,
        // and the note that it joined names it.
        if (!alive.lock() || n.kind == EngineNote::Kind::join_failed || n.kind == EngineNote::Kind::warning ||
            is_zero(n.mgid))
            return;
        if (n.member && (n.kind == EngineNote::Kind::joined || n.kind == EngineNote::Kind::left))
            member_changed(n);
        group_changed(n.port, n.mgid);
    });
    sessions_.set_change_hook([this] { sessions_changed(); });
}

void StateKeeper::set_roce(roce::RoceBackend *roce) {
    if (roce_)
        roce_->set_before_add({});
    roce_ = roce;
    if (roce_)
        roce_->set_before_add([this](const roce::KeptAdding &a) { roce_adding(a); });
}

void StateKeeper::roce_adding(const roce::KeptAdding &a) {
    if (sealed_)
        return;
    // Now, not within kCoalesce: the kernel is asked right after this returns.
    const std::string line = encode_change(RoceAdding{a});
    if (report(file_.append(log_header_, line)))
        log_bytes_ += line.size();
}

void StateKeeper::arm() {
    if (sealed_ || timer_)
        return;
    timer_ = loop_.timers().start(kCoalesce, [this] {
        timer_ = 0;
        flush();
    });
}

void StateKeeper::changed() {
    mirror_valid_ = false;
    arm();
}

void StateKeeper::group_changed(PortIndex port, const Gid &mgid) {
    if (sealed_)
        return;
    dirty_groups_.emplace(port, mgid);
    arm();
}

void StateKeeper::member_changed(const EngineNote &n) {
    if (sealed_)
        return;
    const bool joined = n.kind == EngineNote::Kind::joined;
    const auto [it, added] = members_.try_emplace(n.member, MemberChange{joined, n.port, n.mgid, n.client});
    if (!added) {
        // It came and went within one delay: the disk never had it.
        if (it->second.joined && !joined)
            members_.erase(it);
        else
            it->second = MemberChange{joined, n.port, n.mgid, n.client};
    }
}

void StateKeeper::sessions_changed() {
    sessions_dirty_ = true;
    arm();
}

void StateKeeper::set_going_out(const SaRequest &req) {
    if (sealed_)
        return;
    if (is_zero(req.record.mgid))
        return; // the SA names the group in its answer: nothing to find it by (nor in the state)
    group_changed(req.port, req.record.mgid);
    const port::RegisteredPort &port = service_.ports().at(req.port);
    sets_.push_back(SavedSet{port.device(), port.number(), port.gid(), req.record.mgid, req.record.join_state});
    if (append_posted_)
        return;
    append_posted_ = true;
    loop_.post([this, alive = std::weak_ptr<bool>(alive_)] {
        if (!alive.lock())
            return;
        append_posted_ = false;
        append_sets();
    });
}

void StateKeeper::append_sets() {
    if (sealed_ || sets_.empty())
        return;
    std::string lines;
    for (const SavedSet &set : sets_)
        lines += encode_change(set);
    sets_.clear();
    if (report(file_.append(log_header_, lines)))
        log_bytes_ += lines.size();
}

bool StateKeeper::report(const std::optional<std::string> &err) {
    if (err) {
        if (*err != last_error_)
            spdlog::error("cannot write the restart state: {}; a restart or crash now would lose memberships",
                          *err);
        last_error_ = *err;
        return false;
    }
    if (!last_error_.empty())
        spdlog::info("the restart state is written again ({})", file_.path().string());
    last_error_.clear();
    return true;
}

bool StateKeeper::append_changes() {
    // A port whose GID changed holds its groups under another key: the disk's are stale as a
    // whole, which a compaction says in one go.
    if (ports_changed()) {
        mirror_valid_ = false;
        compact_when_due();
        return true;
    }
    std::vector<Change> changes;
    for (const SavedSet &set : sets_) // not logged yet: before any line that says what became of it
        changes.emplace_back(set);
    bool roce = false;
    for (const auto &[pi, mgid] : dirty_groups_) {
        const port::RegisteredPort &port = service_.ports().at(pi);
        roce = roce || service_.ports().link_layer(pi) != LinkLayer::infiniband;
        const std::optional<GroupView> g = service_.group_view(pi, mgid, false);
        std::optional<SavedGroup> now;
        if (g && (g->held || g->uncertain))
            now = saved_group(*g);
        mirror_.group(PortKey{port.device(), port.number(), port.gid()}, mgid, now, changes);
    }
    // The memberships that came and went: a saved membership never changes (its port, group,
    // bits, parameters, grant and session are fixed when it is made).
    for (const auto &[id, m] : members_) {
        if (!m.joined) {
            // One of a session the state keeps; one whose session went goes with it.
            if (const frontend::ClientSession *s = sessions_.of_client(m.client); s && kept(*s))
                changes.emplace_back(MembershipGone{id});
            continue;
        }
        const std::optional<MemberView> view = service_.member_view(id);
        if (!view)
            continue;
        if (auto saved = saved_member(*view, m.port, m.mgid)) {
            // A session the disk does not have yet (hello and a join within one delay).
            sessions_dirty_ = sessions_dirty_ || !mirror_.has_session(saved->session);
            changes.emplace_back(std::move(*saved));
        }
    }
    members_.clear();
    if (sessions_dirty_) {
        std::vector<SavedSession> heads;
        sessions_.for_each([&](const frontend::ClientSession &s) {
            if (kept(s))
                heads.push_back(head_of(s));
        });
        mirror_.sessions(std::move(heads), changes);
    }
    mirror_.next_session(sessions_.next_id(), changes);
    if (roce && roce_)
        mirror_.roce(kept_roce(), changes);
    dirty_groups_.clear();
    sessions_dirty_ = false;
    if (changes.empty())
        return true;
    std::string lines;
    for (const Change &c : changes)
        lines += encode_change(c);
    if (!report(file_.append(log_header_, lines))) {
        mirror_valid_ = false; // the disk lacks what the mirror has now: the next write compacts
        return false;
    }
    sets_.clear();
    log_bytes_ += lines.size();
    return true;
}

bool StateKeeper::ports_changed() const {
    const auto &ports = service_.ports();
    if (ports.size() != port_keys_.size())
        return true;
    for (PortIndex i = 0; i < ports.size(); ++i)
        if (port_keys_[i] != PortKey{ports.at(i).device(), ports.at(i).number(), ports.at(i).gid()})
            return true;
    return false;
}

void StateKeeper::flush() {
    if (sealed_)
        return;
    if (!mirror_valid_) {
        compact_when_due();
        return;
    }
    append_changes();
    if (log_bytes_ > std::max(compact_min_bytes_, kCompactFactor * state_bytes_))
        compact_when_due();
}

void StateKeeper::compact_when_due() {
    if (compact_timer_)
        return;
    // A state whose write costs over a millisecond is compacted at most a fifth of the time.
    const TimePoint t = loop_.timers().now();
    const TimePoint due = last_cost_ > std::chrono::milliseconds(1) ? last_end_ + 4 * last_cost_ : t;
    if (due <= t) {
        compact(false);
        return;
    }
    compact_timer_ = loop_.timers().start(std::chrono::duration_cast<Duration>(due - t), [this] {
        compact_timer_ = 0;
        if (!sealed_)
            compact(false);
    });
}

bool StateKeeper::compact(bool clean) {
    if (compact_timer_) {
        loop_.timers().cancel(compact_timer_);
        compact_timer_ = 0;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto st = std::make_unique<SavedState>(snapshot(clean));
    st->generation = generation_ + 1;
    StateFile::Written written;
    const auto err = file_.write(*st, &written);
    if (written.replaced) {
        // The file is this generation's now, and so is every log line from here on (a log that
        // could not be started is started by the next append).
        generation_ = st->generation;
        log_header_ = encode_log_header(boot_id_, daemon_name_, generation_);
        port_keys_.clear();
        for (const SavedPort &p : st->ports)
            port_keys_.push_back(PortKey{p.device, p.port, p.port_gid});
        // The snapshot is as large as the state: the mirror is copied into place once it is
        // gone, so that what stays lives where it was and the heap's top goes back to the system.
        StateMirror next;
        next.reset(*st);
        st.reset();
        mirror_ = next;
        mirror_valid_ = true;
        dirty_groups_.clear();
        members_.clear();
        sessions_dirty_ = false;
        sets_.clear(); // in the state file now, as uncertain or held bits
        state_bytes_ = written.state_bytes;
        log_bytes_ = written.log_bytes;
        ++compactions_;
    }
    st.reset();
    last_end_ = loop_.timers().now();
    last_cost_ = std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - t0);
    return report(err);
}

bool StateKeeper::write(bool clean) {
    if (sealed_)
        return false;
    if (timer_) {
        loop_.timers().cancel(timer_);
        timer_ = 0;
    }
    if (clean || !mirror_valid_)
        return compact(clean);
    append_sets(); // a Set of this iteration first, as its own post would
    return append_changes();
}

void StateKeeper::seal(bool remove) {
    sealed_ = true;
    sets_.clear();
    if (timer_) {
        loop_.timers().cancel(timer_);
        timer_ = 0;
    }
    if (compact_timer_) {
        loop_.timers().cancel(compact_timer_);
        compact_timer_ = 0;
    }
    if (remove)
        file_.remove();
}

namespace {

std::uint64_t inode_of(int fd) {
    struct stat st{};
    return ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

} // namespace

StateKeeper::Restored StateKeeper::restore(const SavedState &state, std::vector<server::StoredConnection> stored,
                                           server::SocketServer &server,
                                           std::map<std::uint64_t, int> kernel_sockets) {
    Restored out;
    // The memberships taken back, for the RoCE backend, and their sessions.
    std::map<MembershipId, roce::RoceBackend::TakenBack> adopted;
    std::map<MembershipId, frontend::ClientSession *> holder;
    struct NotTakenBack {
        frontend::ClientSession *session;
        frontend::LostMembership lost;
    };
    std::vector<NotTakenBack> not_taken_back;
    std::set<std::pair<PortIndex, Gid>, PortGidLess> remaking;
    sessions_.set_next_id(state.next_session);
    // Lines appended before this instance's first compaction follow the file it read.
    generation_ = state.generation;
    log_header_ = encode_log_header(boot_id_, daemon_name_, generation_);

    // The SA side: what the previous instance set, on the ports the host still has as it was.
    std::vector<std::optional<PortIndex>> port_of(state.ports.size());
    for (std::size_t i = 0; i < state.ports.size(); ++i) {
        const SavedPort &sp = state.ports[i];
        const std::string name = port_name(sp.device, sp.port);
        const auto pi = service_.ports().find(sp.device, sp.port);
        if (!pi) {
            if (!sp.groups.empty())
                out.set_aside.push_back(name + " is not served now; its " + std::to_string(sp.groups.size()) +
                                        " group(s) are left alone");
            continue;
        }
        if (service_.ports().gid(*pi) != sp.port_gid) {
            out.set_aside.push_back(name + " has GID " + format_gid(service_.ports().gid(*pi)) + ", not " +
                                    format_gid(sp.port_gid) + " (another host's state, or a new port GID); its " +
                                    std::to_string(sp.groups.size()) + " group(s) are not this port's");
            continue;
        }
        port_of[i] = *pi;
        for (const SavedGroup &g : sp.groups) {
            service_.adopt_group(*pi, g.mgid, g.held, g.uncertain, g.record);
            // On a RoCE port, uncertain bits are a group being made again (the rule
            // Engine::end_adoption applies): its members' kernel memberships were set aside.
            if (g.uncertain)
                remaking.emplace(*pi, g.mgid);
            ++out.groups;
        }
    }
    auto port_index = [&](const std::string &device, std::uint8_t port) -> std::optional<PortIndex> {
        for (std::size_t i = 0; i < state.ports.size(); ++i)
            if (state.ports[i].device == device && state.ports[i].port == port)
                return port_of[i];
        return std::nullopt;
    };

    // The client side: every session, detached, with its memberships.
    for (const SavedSession &ss : state.sessions) {
        frontend::RestoredSession rs{ss.id,
                                     ss.token,
                                     ss.door == SavedDoor::dbus ? frontend::Door::dbus : frontend::Door::socket,
                                     frontend::Credentials{ss.who, ss.groups, ss.cgroup, ss.cgroup_unattested,
                                                           ss.start_time},
                                     ss.start_time,
                                     ss.version,
                                     ss.monitor};
        // A socket session that never said hello: only a state file of an older daemon has one
        // (which stored connections before hello). The allow lists never judged it: it goes,
        // and its stored connection with it.
        if (rs.door == frontend::Door::socket && ss.version == 0) {
            out.set_aside.push_back("session " + std::to_string(ss.id) + " (pid " + std::to_string(ss.who.pid) +
                                    ", uid " + std::to_string(ss.who.uid) +
                                    ") never said hello: it is not taken back");
            continue;
        }
        std::string why;
        frontend::ClientSession *restored = sessions_.restore(rs, why);
        if (!restored) {
            out.set_aside.push_back("session " + std::to_string(ss.id) + " (pid " + std::to_string(ss.who.pid) +
                                    ", uid " + std::to_string(ss.who.uid) + ") is not taken back: " + why);
            continue;
        }
        frontend::ClientSession &s = *restored;
        s.set_inode(ss.inode);
        s.set_bus_name(ss.bus_name);
        ++out.sessions;
        for (const SavedMembership &m : ss.memberships) {
            const auto pi = port_index(m.device, m.port);
            frontend::Grant grant;
            grant.rule = m.rule.empty() ? std::string(policy::kRestoredLabel) : m.rule;
            grant.created = m.created;
            grant.sa_assigned = m.sa_assigned;
            grant.name = m.name; // adopt_member() fills in its port and MGID
            if (pi && s.adopt_member(m.id, *pi, m.mgid, m.join_state, m.params, grant)) {
                ++out.memberships;
                adopted.emplace(m.id, roce::RoceBackend::TakenBack{*pi, m.mgid, remaking.count({*pi, m.mgid}) > 0});
                holder.emplace(m.id, &s);
                continue;
            }
            // Its client still counts it (perhaps as lost and waiting): told once its session is
            // alive again, below.
            const std::string reason =
                pi ? "its group held no such bits when the state was written"
                   : "its port " + port_name(m.device, m.port) + " is not served now";
            out.set_aside.push_back("membership " + std::to_string(m.id) + " of session " + std::to_string(ss.id) +
                                    " (pid " + std::to_string(ss.who.pid) + ") in group " + format_gid(m.mgid) +
                                    " on " + port_name(m.device, m.port) + " is not taken back: " + reason);
            not_taken_back.push_back(
                {&s,
                 {m.id, m.device, m.port, m.mgid,
                  Error{Errc::cancelled,
                        "the daemon restarted and could not take this membership back: " + reason + "; join again",
                        std::nullopt}}});
        }
    }

    // The connections the service manager kept, back to their sessions.
    for (const server::StoredConnection &c : stored) {
        const std::string name = server::connection_fd_name(c.session);
        std::string why;
        std::unique_ptr<frontend::ClientSession> s = sessions_.take_detached(c.session);
        if (!s) {
            why = "no session " + std::to_string(c.session) + " in the state";
        } else if (s->door() != frontend::Door::socket || inode_of(c.fd) != s->inode()) {
            why = "it is not the connection session " + std::to_string(c.session) + " had";
        } else {
            try {
                if (server::peer_credentials(c.fd).who.uid != s->who().who.uid)
                    why = "its peer is not uid " + std::to_string(s->who().who.uid);
            } catch (const std::exception &e) {
                why = e.what();
            }
        }
        if (why.empty()) {
            server.adopt(c.fd, std::move(s));
            ++out.connections;
            continue;
        }
        if (s) // back to waiting for its client
            sessions_.restore_detached(std::move(s));
        out.set_aside.push_back("stored connection " + name + " closed: " + why);
        server::discard_stored_connection(c.fd, c.session);
    }

    // The sessions are alive now (a stored connection's is the server's, the rest detached).
    for (NotTakenBack &n : not_taken_back)
        n.session->not_held(std::move(n.lost));

    // The RoCE ports' kernel memberships, for the memberships taken back.
    if (!roce_) {
        for (const auto &[id, fd] : kernel_sockets)
            server::discard_stored(fd, server::membership_socket_fd_name(id));
        return out;
    }
    const roce::Adoption a = roce_->adopt(state.roce, std::move(kernel_sockets), port_index, adopted);
    out.kernel_adopted = a.adopted;
    out.kernel_remade = a.remade;
    for (const std::string &why : a.dropped)
        out.set_aside.push_back("RoCE kernel membership: " + why);
    // A member whose kernel membership is gone holds nothing the daemon can make again (another
    // namespace's socket, a netdev that is another now): it is released, and its client told.
    // The sessions are alive: a stored connection's is the server's now, the rest detached.
    for (const auto &[id, why] : a.lost)
        if (holder.at(id)->withdraw(
                id, Error{Errc::cancelled, "the daemon restarted and could not keep this RoCE membership: " + why +
                                               "; join again",
                          std::nullopt}))
            ++out.kernel_lost;
    return out;
}

} // namespace mcastd::restart
