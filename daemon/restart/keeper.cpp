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
      sets_header_(encode_sets_header(boot_id_, daemon_name_)) {}

StateKeeper::~StateKeeper() {
    *alive_ = false;
    if (timer_)
        loop_.timers().cancel(timer_);
}

SavedState StateKeeper::snapshot(bool clean) const {
    SavedState st;
    st.boot_id = boot_id_;
    st.daemon = daemon_name_;
    st.clean = clean;
    st.next_session = sessions_.next_id();
    st.bus_id = bus_id_;

    const auto &ports = service_.ports();
    for (const port::RegisteredPort &p : ports)
        st.ports.push_back(SavedPort{p.device(), p.number(), p.gid(), {}});
    // Memberships by engine client, to file them under their sessions.
    std::map<ClientId, std::vector<SavedMembership>> members;
    for (const GroupView &g : service_.group_views()) {
        if (is_zero(g.mgid))
            continue; // a group the SA has not named yet: its Set is what it will hold
        if (g.held || g.uncertain)
            st.ports[g.port].groups.push_back(SavedGroup{
                g.mgid, g.held, g.uncertain, g.have_record ? std::optional<McRecord>(g.record) : std::nullopt});
        for (const MemberView &m : g.members)
            if (m.state != MemberView::State::pending)
                members[m.client].push_back(SavedMembership{m.id, ports.at(g.port).device(), ports.at(g.port).number(), g.mgid,
                                                            m.join_state, m.params});
    }
    sessions_.for_each([&](const frontend::ClientSession &s) {
        if (s.door() == frontend::Door::daemon)
            return; // the static groups: the next instance joins them from its config
        // Never handed on: a connection that said no hello (the allow lists have not judged
        // it) or that the allow lists refused. Its connection is not in the fd store either.
        if (!s.greeted() || s.refused())
            return;
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
        if (auto it = members.find(s.client()); it != members.end()) {
            out.memberships = std::move(it->second);
            for (SavedMembership &m : out.memberships)
                if (const auto g = s.grants().find(m.id); g != s.grants().end()) {
                    m.rule = g->second.rule;
                    m.created = g->second.created;
                    m.sa_assigned = g->second.sa_assigned;
                    m.name = g->second.name;
                }
        }
        st.sessions.push_back(std::move(out));
    });
    if (roce_)
        st.roce = roce_->kept([&](PortIndex pi) {
            return roce::RoceBackend::PortName{ports.at(pi).device(), ports.at(pi).number()};
        });
    return st;
}

void StateKeeper::changed() {
    if (sealed_ || timer_)
        return;
    // Small states (a write under a millisecond) only wait for the coalescing delay.
    const TimePoint t = loop_.timers().now();
    const TimePoint due = last_cost_ > std::chrono::milliseconds(1) ? last_end_ + 4 * last_cost_ : t;
    const Duration wait = std::max<Duration>(kCoalesce, std::chrono::duration_cast<Duration>(due - t));
    timer_ = loop_.timers().start(wait, [this] {
        timer_ = 0;
        write(false);
    });
}

void StateKeeper::set_going_out(const SaRequest &req) {
    if (sealed_)
        return;
    changed();
    if (is_zero(req.record.mgid))
        return; // the SA names the group in its answer: nothing to find it by (nor in the state)
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
    report(file_.append(sets_header_, sets_));
    sets_.clear();
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

bool StateKeeper::write(bool clean) {
    if (sealed_)
        return false;
    if (timer_) {
        loop_.timers().cancel(timer_);
        timer_ = 0;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto err = file_.write(snapshot(clean));
    last_end_ = loop_.timers().now();
    last_cost_ = std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - t0);
    if (!err)
        sets_.clear(); // in the state file now, as uncertain or held bits
    return report(err);
}

void StateKeeper::seal(bool remove) {
    sealed_ = true;
    sets_.clear();
    if (timer_) {
        loop_.timers().cancel(timer_);
        timer_ = 0;
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
    sessions_.set_next_id(state.next_session);

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
                adopted.emplace(m.id, roce::RoceBackend::TakenBack{*pi, m.mgid});
                holder.emplace(m.id, &s);
                continue;
            }
            out.set_aside.push_back("membership " + std::to_string(m.id) + " of session " + std::to_string(ss.id) +
                                    " (pid " + std::to_string(ss.who.pid) + ") in group " + format_gid(m.mgid) +
                                    " on " + port_name(m.device, m.port) + ": the daemon held no such bits there");
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
