// The daemon minus its front-ends: the host's IB ports, their umad transport, the SA
// transaction layer and the membership engine, wired in the order data flows
// (engine -> SA client -> transactions -> transport; answers back the same way).
//
// main.cpp puts the Unix-socket and D-Bus transports in front of it; the sim tier's engine
// driver puts a line protocol on stdin in front of it. Both run one event loop.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engine.hpp"
#include "port/port_events.hpp"
#include "port/port_attributes.hpp"
#include "port/port_poller.hpp"
#include "port/verbs_events.hpp"
#include "runtime/event_loop.hpp"
#include "sa/sa_client.hpp"
#include "sa/transactions.hpp"
#include "sa/umad_transport.hpp"

namespace mcastd {

struct ServiceConfig {
    EngineConfig engine;
    sa::TransactionConfig sa;
    port::MonitorConfig monitor; // the port event sources' polls
    // Restrict the daemon to these "device" or "device/port" names; empty means every
    // InfiniBand port found.
    std::vector<std::string> ports;
};

class Service : private MembershipEventSink, private port::PortEventSink {
public:
    // Discovers ports and opens them. Throws std::runtime_error naming the device and port
    // when a requested port cannot be used, or when no port is usable at all.
    Service(runtime::EventLoop &loop, ServiceConfig cfg);
    ~Service();
    Service(const Service &) = delete;
    Service &operator=(const Service &) = delete;

    // Clients of every transport. The engine's membership events reach the sink the client's
    // transport registered, so the core never learns which transport a client came from.
    ClientId add_client(ClientInfo info, MembershipEventSink *sink);
    void remove_client(ClientId client);

    // Every engine note goes to every observer (the log, monitor subscribers, the journal).
    void add_observer(EngineObserver observer);
    // `fn` runs after anything a one-line summary shows may have changed: a client came or
    // went, a port became usable or not, an engine note. For sd_notify STATUS= (notify.hpp).
    void set_change_listener(std::function<void()> fn) { changed_ = std::move(fn); }
    // Clients of every transport, the daemon's own static-groups holder included.
    std::size_t clients() const { return sinks_.size(); }

    Engine &engine() { return engine_; }
    const Engine &engine() const { return engine_; }
    sa::MadTransactions &transactions() { return txns_; }
    const sa::MadTransactions &transactions() const { return txns_; }
    const std::vector<port::PortAttributes> &ports() const { return ports_; }

    // Asks the port itself for its PortInfo now (a directed-route SMP, answered locally), and
    // acts on what changed; `done` runs once an answer newer than this call is applied.
    void refresh_port(PortIndex port, std::function<void()> done = {});

    // The master SM as last seen on a port (SMInfoRecord), for status.
    struct SmView {
        std::uint16_t lid = 0;
        std::uint64_t guid = 0;
        std::uint32_t act_count = 0;
        bool known = false;
    };
    const SmView &sm(PortIndex port) const { return sms_.at(port); }

private:
    void open_ports(const std::vector<std::string> &wanted);
    void membership_event(ClientId client, MembershipId id, const MembershipEvent &ev) override;

    // port::PortEventSink: what the port event sources observed.
    void port_usable(PortIndex port, bool usable, const std::string &why) override;
    void port_invalidated(PortIndex port, port::Trigger trigger, const std::string &why) override;
    void sa_moved(PortIndex port, std::uint16_t sm_lid, std::uint8_t sm_sl) override;
    void sm_seen(PortIndex port, std::uint16_t lid, std::uint64_t guid, std::uint32_t act_count) override;
    void port_info(PortIndex port, std::uint16_t lid, std::uint8_t state, std::uint8_t mtu) override;
    void audit_due(PortIndex port) override;

    runtime::EventLoop &loop_;
    sa::UmadTransport transport_;
    sa::MadTransactions txns_;
    sa::SaClient sa_client_;
    Engine engine_;
    port::PortPoller monitor_;
    std::unique_ptr<port::VerbsEvents> verbs_;
    std::vector<port::PortAttributes> ports_; // index = PortIndex
    std::vector<SmView> sms_;                 // index = PortIndex
    std::unordered_map<ClientId, MembershipEventSink *> sinks_;
    std::vector<EngineObserver> observers_;
    std::function<void()> changed_;
    void changed() const {
        if (changed_)
            changed_();
    }
};

// SA address of a port: the SM's LID and SL on QP1, through the P_Key index of 0xFFFF.
sa::MadAddress sa_address_of(const port::PortAttributes &p);

// "mlx5_0/1" for a port index the service knows, "?" otherwise.
std::string port_name(const Service &service, PortIndex port);

} // namespace mcastd
