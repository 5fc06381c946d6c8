// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Service: the daemon's logic with no I/O of its own, the one API the client sessions
// (frontend/) see. The membership engine, the port registry (every port's facts: attributes,
// SM, usable), the reactions to port events, and the engine's notes fanned out to observers.
//
// Where its ports and its SA come from is not its business: HostPorts (host_ports.hpp) adds
// the host's ports and points their event sources at the Service; unit tests add ports by hand
// over a fake SA. Nothing here opens a device.
//
// The port event sources talk to the Service directly (port::PortEventSink), and it decides.
// What the layers under it must do about a port in turn, it tells them through PortListener:
// one place per reaction, never a relay of the events.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engine.hpp"
#include "port/port_attributes.hpp"
#include "port/port_events.hpp"
#include "port/port_registry.hpp"

namespace mcastd {

// The SA transaction counters `status` shows (from daemon/sa, when there is one).
struct SaCounters {
    std::uint64_t sent = 0, retransmits = 0, timeouts = 0, bounces = 0, responses = 0, late = 0;
};
// A port's learned SA window (sa.congestion_control), for `status` and STATUS=.
struct SaPortCongestion {
    double window = 0;
    bool slow_start = false;
    std::optional<Duration> srtt{};    // nullopt before the first answer
    std::optional<Duration> timeout{}; // the next first try's; nullopt: sa.timeout_ms
};

// What the layers under the Service do when one of its ports changes (HostPorts: the SA window
// and the SMInfo baseline). Called on the event loop, once the engine's state is consistent.
class PortListener {
public:
    // Where the port's SA MADs go may have changed: the SM's LID or SL (sa_moved), or the P_Key
    // table (the SA MADs' P_Key index). The registry has the new facts.
    virtual void sa_route_changed(PortIndex port) = 0;
    // The port's memberships are gone at the fabric and the engine re-joins them all: the one
    // path of "the SA lost this port", whatever found it (the port rules' port_invalidated, or
    // the engine's audit). Called once per re-join, before any of its Sets goes out.
    virtual void memberships_gone(PortIndex port) = 0;

protected:
    ~PortListener() = default;
};

class Service final : private MembershipEventSink, public port::PortEventSink {
public:
    // `sa` and `timers` must outlive the service.
    Service(const EngineConfig &cfg, SaService &sa, Timers &timers);
    ~Service() override;
    Service(const Service &) = delete;
    Service &operator=(const Service &) = delete;

    // ---- ports ----

    // How memberships are made on ports of a link layer other than InfiniBand (whose SA the
    // service was made with): before such a port is added. `backend` must outlive the service.
    void set_membership_backend(LinkLayer link_layer, MembershipBackend &backend) {
        engine_.set_backend(link_layer, backend);
    }
    // A port the engine serves, with what discovery knows of it. `usable`: ACTIVE with an SM
    // (InfiniBand), ACTIVE (Ethernet). Its link layer picks how its memberships are made:
    // throws std::invalid_argument naming the port when no backend serves it
    // (set_membership_backend).
    PortIndex add_port(const port::PortAttributes &attributes, bool usable);
    // The port's GID table as read now, its netdevs looked up (HostPorts::reread_gid_table): the
    // registry keeps it, and what changed since the last read is returned. On a port whose
    // memberships a backend makes, a change goes to the engine (Engine::sources_changed): the
    // memberships sent from an entry that went are `lost`, and `restored` when one serves them
    // again.
    port::GidTableChange gid_table(PortIndex port, std::vector<port::GidEntry> entries);
    // Every port served, with its facts: the one place every layer looks ports up (find).
    const port::PortRegistry &ports() const { return ports_; }
    // Where the SA counters for `status` come from.
    void set_sa_counters(std::function<SaCounters()> fn) { sa_counters_ = std::move(fn); }
    SaCounters sa_counters() const { return sa_counters_ ? sa_counters_() : SaCounters{}; }
    using SaCongestionView = std::function<std::optional<SaPortCongestion>(PortIndex)>;
    void set_sa_congestion(SaCongestionView fn) { sa_congestion_ = std::move(fn); }
    std::optional<SaPortCongestion> sa_congestion(PortIndex port) const {
        return sa_congestion_ ? sa_congestion_(port) : std::nullopt;
    }

    // `listener` hears of every port's changes from now on (PortListener); it must outlive the
    // service or be removed first.
    void add_port_listener(PortListener &listener) { port_listeners_.push_back(&listener); }
    void remove_port_listener(PortListener &listener) { std::erase(port_listeners_, &listener); }

    // port::PortEventSink: what the port event sources observed. port_invalidated re-joins the
    // port (Engine::invalidate_port), and the listeners hear of it as of an audit's finding.
    void port_usable(PortIndex port, bool usable, const std::string &why) override;
    void port_invalidated(PortIndex port, port::Trigger trigger, const std::string &why) override;
    void sa_moved(PortIndex port, std::uint16_t sm_lid, std::uint8_t sm_sl) override;
    void sm_seen(PortIndex port, std::uint16_t lid, std::uint64_t guid, std::uint32_t act_count) override;
    void port_info(PortIndex port, std::uint16_t lid, std::uint8_t state, std::uint8_t mtu) override;
    void pkey_table(PortIndex port, const std::vector<std::uint16_t> &pkeys) override;
    void audit_due(PortIndex port) override;

    // ---- clients ----

    // A client of any transport. The engine's membership events for it reach `sink`, so the
    // core never learns which transport a client came from.
    ClientId add_client(ClientInfo info, MembershipEventSink *sink);
    // Releases every membership of the client as if it had left (engine.hpp).
    void remove_client(ClientId client);
    MembershipId join(ClientId client, const JoinRequest &req, JoinCallback done, JoinGates gates = {});
    // The MGID of the group a join names (Engine::group_of): on a RoCE port its IP group's. The
    // session asks before the access policy judges the join, which decides by MGID.
    std::variant<Gid, Error> group_of(const JoinRequest &req) const { return engine_.group_of(req); }
    // Every SA MAD a client's change made due, with its uid (Engine::set_debt_meter).
    void set_debt_meter(std::function<void(uid_t)> meter) { engine_.set_debt_meter(std::move(meter)); }
    // Whether a join for `mgid` on `port` would add a group there (MGID 0 always does).
    bool adds_group(PortIndex port, const Gid &mgid) const { return is_zero(mgid) || !engine_.has_group(port, mgid); }
    std::size_t group_count(PortIndex port) const { return engine_.group_count(port); }
    // The Q_Key a create uses when the join asserts none (groups.create.qkey).
    std::uint32_t create_qkey() const { return create_qkey_; }
    std::optional<Error> leave(ClientId client, MembershipId id);
    // Engine clients of every transport, the daemon's own static-groups holder included.
    std::size_t clients() const { return sinks_.size(); }
    const ClientInfo *client_info(ClientId client) const { return engine_.client_info(client); }

    // Points the client's membership events at another sink (a session resumed on a new
    // connection, or left without one).
    void set_client_sink(ClientId client, MembershipEventSink *sink) { sinks_[client] = sink; }

    // ---- adoption after a restart (engine.hpp) ----

    void adopt_group(PortIndex port, const Gid &mgid, std::uint8_t held, std::uint8_t uncertain,
                     const std::optional<McRecord> &record) {
        engine_.adopt_group(port, mgid, held, uncertain, record);
    }
    bool adopt_member(ClientId client, MembershipId id, PortIndex port, const Gid &mgid, std::uint8_t bits,
                      const GroupParams &params) {
        return engine_.adopt_member(client, id, port, mgid, bits, params);
    }
    void end_adoption() { engine_.end_adoption(); }

    // ---- what it shows ----

    std::vector<PortView> port_views() const { return engine_.ports(); }
    // A port's active memberships per JoinState bit (Engine::memberships: O(groups), for status).
    PortMemberships port_memberships(PortIndex port) const { return engine_.memberships(port); }
    std::vector<GroupView> group_views() const { return engine_.groups(); }
    // One group (Engine::group): what the restart state's change log reads for a change.
    std::optional<GroupView> group_view(PortIndex port, const Gid &mgid, bool with_members = true) const {
        return engine_.group(port, mgid, with_members);
    }
    // One membership (Engine::member).
    std::optional<MemberView> member_view(MembershipId id) const { return engine_.member(id); }
    // A read of the groups from a cursor (Engine::groups_from): what a page of `list` reads.
    GroupRead group_views_from(const std::optional<GroupCursor> &from, std::size_t max_members,
                               std::optional<ClientId> only = std::nullopt) const {
        return engine_.groups_from(from, max_members, only);
    }
    // The ids of a client's memberships, in id order.
    std::vector<MembershipId> memberships_of(ClientId client) const;
    const EngineStats &stats() const { return engine_.stats(); }

    // Every engine note goes to every observer (the log, monitor subscribers, the journal).
    void add_observer(EngineObserver observer) { observers_.push_back(std::move(observer)); }
    // `fn` runs after anything a one-line summary shows may have changed: a client came or
    // went, a port became usable or not, an engine note. For sd_notify STATUS=.
    void set_change_listener(std::function<void()> fn) { changed_ = std::move(fn); }

    // ---- stopping ----

    // `fn` runs just before the engine hands the SA a Set (the restart state records the bits
    // the daemon may be about to own before the MAD can be answered).
    void on_sa_set(std::function<void(const SaRequest &)> fn) { tap_.on_set = std::move(fn); }
    // `fn` runs as an SA transaction about a named group (MGID not zero) goes out, and again
    // once the engine has taken in its answer: what it sent or learned may change the bits the
    // daemon holds there (the restart state's change log re-reads that group).
    void on_sa_group(std::function<void(PortIndex, const Gid &)> fn) { tap_.on_group = std::move(fn); }
    // A restart hands the SA over to the next instance: from now on nothing more reaches it,
    // whatever the engine does while the daemon takes itself apart.
    void mute_sa() { tap_.muted = true; }

    // True when no SA transaction is in flight and no retry is scheduled.
    bool idle() const { return engine_.idle(); }
    // Runs `fn` once the engine is idle (engine.hpp).
    void when_idle(std::function<void()> fn) { engine_.when_idle(std::move(fn)); }

private:
    void membership_event(ClientId client, MembershipId id, const MembershipEvent &ev) override;
    // The engine re-joins the whole port (Engine::set_memberships_gone_listener).
    void memberships_gone(PortIndex port);
    // Tells every PortListener (a copy of the list: a listener may remove itself).
    template <class F> void tell_listeners(F &&f) {
        for (PortListener *l : std::vector<PortListener *>(port_listeners_))
            f(*l);
    }
    void changed() const {
        if (changed_)
            changed_();
    }

    // Between the engine and the SA: sees Sets go out, and drops everything once muted.
    struct SaTap final : SaService {
        explicit SaTap(SaService &sa) : inner(sa) {}
        TxnId submit(const SaRequest &req, Callback done) override;
        void cancel(TxnId id) override;
        void hasten(TxnId id) override { inner.hasten(id); } // a muted id is unknown there too
        SaService &inner;
        std::function<void(const SaRequest &)> on_set;
        std::function<void(PortIndex, const Gid &)> on_group;
        bool muted = false;
        TxnId muted_ids = 0;
    };

    SaTap tap_;                // before engine_, which uses it
    port::PortRegistry ports_; // before engine_, which asks it
    Engine engine_;
    std::unordered_map<ClientId, MembershipEventSink *> sinks_;
    std::vector<EngineObserver> observers_;
    std::vector<PortListener *> port_listeners_;
    std::function<void()> changed_;
    std::function<SaCounters()> sa_counters_;
    SaCongestionView sa_congestion_;
    std::uint32_t create_qkey_;
};

// "mlx5_0/1" for a port index the service knows, "?" otherwise.
std::string port_name(const Service &service, PortIndex port);

} // namespace mcastd
