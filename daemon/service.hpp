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
#include "port/port_info.hpp"
#include "port/portinfo_smp.hpp"
#include "runtime/event_loop.hpp"
#include "sa/sa_client.hpp"
#include "sa/transactions.hpp"
#include "sa/umad_transport.hpp"

namespace mcastd {

struct ServiceConfig {
    EngineConfig engine;
    sa::TransactionConfig sa;
    // Restrict the daemon to these "device" or "device/port" names; empty means every
    // InfiniBand port found.
    std::vector<std::string> ports;
};

class Service : private EventSink {
public:
    // Discovers ports and opens them. Throws std::runtime_error naming the device and port
    // when a requested port cannot be used, or when no port is usable at all.
    Service(runtime::EventLoop &loop, ServiceConfig cfg);
    ~Service();
    Service(const Service &) = delete;
    Service &operator=(const Service &) = delete;

    // Clients of every transport. The engine's membership events reach the sink the client's
    // transport registered, so the core never learns which transport a client came from.
    ClientId add_client(ClientInfo info, EventSink *sink);
    void remove_client(ClientId client);

    // Every engine note goes to every observer (the log, monitor subscribers, the journal).
    void add_observer(EngineObserver observer);

    Engine &engine() { return engine_; }
    const Engine &engine() const { return engine_; }
    sa::MadTransactions &transactions() { return txns_; }
    const sa::MadTransactions &transactions() const { return txns_; }
    const std::vector<port::PortAttributes> &ports() const { return ports_; }

    // Asks the port itself (a directed-route SMP Get(PortInfo), answered locally, no SA
    // involved) for its live LID, SM LID and SL, state and MTU, and follows what changed.
    // `done` runs once the answer (or the timeout) is in.
    void refresh_port(PortIndex port, std::function<void()> done = {});

private:
    void open_ports(const std::vector<std::string> &wanted);
    void apply_portinfo(PortIndex port, const port::PortInfo &info);
    void membership_event(ClientId client, MembershipId id, const MembershipEvent &ev) override;

    runtime::EventLoop &loop_;
    sa::UmadTransport transport_;
    sa::MadTransactions txns_;
    sa::SaClient sa_client_;
    Engine engine_;
    std::vector<port::PortAttributes> ports_; // index = PortIndex
    std::unordered_map<ClientId, EventSink *> sinks_;
    std::vector<EngineObserver> observers_;
};

// SA address of a port: the SM's LID and SL on QP1, through the P_Key index of 0xFFFF.
sa::MadAddress sa_address_of(const port::PortAttributes &p);

// Logs engine notes through spdlog ("joined ...", "deleted ..."), with the port named.
EngineObserver log_observer(const Service &service);

// "mlx5_0/1" for a port index the service knows, "?" otherwise.
std::string port_name(const Service &service, PortIndex port);

} // namespace mcastd
