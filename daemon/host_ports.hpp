// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// HostPorts: the host's InfiniBand ports as the daemon drives them, the I/O half of the daemon.
// Discovery, one libibumad port each, the SA transaction layer over them (TIDs, retransmits,
// window), and the event sources (PortInfo and SMInfoRecord polls, the audit clock, verbs async
// events). It adds the ports to the Service and feeds it what the event sources observe; the
// Service decides what that means for the memberships.
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

class HostPorts final : public PortBackend, private port::PortEventSink {
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

    // port::PortEventSink: the Service hears everything; moving the SA moves the MADs too.
    void port_usable(PortIndex port, bool usable, const std::string &why) override;
    void port_invalidated(PortIndex port, port::Trigger trigger, const std::string &why) override;
    void sa_moved(PortIndex port, std::uint16_t sm_lid, std::uint8_t sm_sl) override;
    void sm_seen(PortIndex port, std::uint16_t lid, std::uint64_t guid, std::uint32_t act_count) override;
    void port_info(PortIndex port, std::uint16_t lid, std::uint8_t state, std::uint8_t mtu) override;
    void audit_due(PortIndex port) override;

    void route_sa(PortIndex port); // SA MADs of `port` go where its attributes say
    void watch_sa_load();          // every kSaLoadInterval: the journal hears of amplification

    runtime::EventLoop &loop_;
    HostPortsConfig cfg_;
    sa::UmadTransport transport_;
    sa::MadTransactions txns_;
    sa::SaClient sa_client_;
    port::PortPoller poller_;
    std::unique_ptr<port::VerbsEvents> verbs_;
    sa::AmplificationWatch sa_load_;
    Timers::Id sa_load_timer_ = 0;
    Service *service_ = nullptr; // set by open(); it may go before this does
};

// SA address of a port: the SM's LID and SL on QP1, through the P_Key index of 0xFFFF.
sa::MadAddress sa_address_of(const port::PortAttributes &p);

} // namespace mcastd
