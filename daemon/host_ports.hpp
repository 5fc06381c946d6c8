// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// HostPorts: the host's InfiniBand ports as the daemon drives them, the I/O half of the daemon.
// Discovery, one libibumad port each, the SA transaction layer over them (TIDs, retransmits,
// window), and the event sources (PortInfo and SMInfoRecord polls, the audit clock, verbs async
// events). It adds the ports to the Service's registry and points the event sources at the
// Service, which decides what they mean for the memberships. What HostPorts must do itself in
// turn (the SA MADs follow the SM; a re-join restarts the SA window and the SMInfo baseline) it
// hears as the Service's PortListener, each in one place.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "port/port_attributes.hpp"
#include "port/port_events.hpp"
#include "port/port_poller.hpp"
#include "port/verbs_events.hpp"
#include "port_backend.hpp"
#include "runtime/event_loop.hpp"
#include "sa/amplification_watch.hpp"
#include "sa/sa_client.hpp"
#include "sa/transactions.hpp"
#include "sa/umad_transport.hpp"
#include "service.hpp"

namespace mcastd {

// The daemon's SA transactions: TransactionConfig's defaults, with congestion control on.
inline sa::TransactionConfig daemon_sa_defaults() {
    sa::TransactionConfig sa;
    sa.congestion.enabled = true;
    return sa;
}

struct HostPortsConfig {
    sa::TransactionConfig sa = daemon_sa_defaults();
    port::MonitorConfig monitor; // the port event sources' polls
    // Restrict the daemon to these "device" or "device/port" names; empty means every
    // InfiniBand port found.
    std::vector<std::string> ports;
    bool operator==(const HostPortsConfig &) const = default;
};

class HostPorts final : public PortBackend, private PortListener {
public:
    // The umad transport and the SA transaction layer, with no port open yet.
    HostPorts(runtime::EventLoop &loop, HostPortsConfig cfg);
    ~HostPorts() override;
    HostPorts(const HostPorts &) = delete;
    HostPorts &operator=(const HostPorts &) = delete;

    SaService &sa() override { return sa_client_; }
    // Discovers the ports, opens the wanted ones, adds them to `service` and starts watching
    // them; verbs async events are watched where there is hardware.
    void open(Service &service) override;
    void quiesce() override { txns_.abandon_all(); }

    // Asks the port itself for its PortInfo now (a directed-route SMP, answered locally), and
    // acts on what changed; `done` runs once an answer newer than this call is applied.
    void refresh_port(PortIndex port, std::function<void()> done = {});
    const sa::MadTransactions &transactions() const { return txns_; }

private:
    void open_ports();
    void watch_verbs();

    // PortListener
    void sa_route_changed(PortIndex port) override { txns_.sa_route_changed(port); }
    void memberships_gone(PortIndex port) override;

    void watch_sa_load(); // every kSaLoadInterval: the journal hears of amplification

    runtime::EventLoop &loop_;
    HostPortsConfig cfg_;
    sa::UmadTransport transport_;
    sa::MadTransactions txns_;
    sa::SaClient sa_client_;
    std::unique_ptr<port::PortPoller> poller_; // made by open(): its sink is the Service
    std::unique_ptr<port::VerbsEvents> verbs_;
    sa::AmplificationWatch sa_load_;
    Timers::Id sa_load_timer_ = 0;
    Service *service_ = nullptr; // set by open(); it may go before this does
};

// SA address of a port: the SM's LID and SL on QP1, through the P_Key index of 0xFFFF.
sa::MadAddress sa_address_of(const port::PortAttributes &p);

} // namespace mcastd
