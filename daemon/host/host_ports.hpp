// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// HostPorts: the host's ports as the daemon drives them, the I/O half of the daemon. Discovery
// through one PortSource (InfiniBand ports from libibumad, Ethernet ones from a directory laid
// out like /sys/class/infiniband: port/port_source.hpp); for each InfiniBand port one libibumad
// port, the SA transaction layer over them (TIDs, retransmits, window), and the event sources
// (PortInfo and SMInfoRecord polls, the audit clock, verbs async events). An Ethernet (RoCE) port
// has no SA and no SM: it is registered with its GID table and none of that is started for it.
// It adds the ports to the Service's registry and points the event sources at the Service, which
// decides what they mean for the memberships. What HostPorts must do itself in turn (the SA
// MADs follow the SM; a re-join restarts the SA window and the SMInfo baseline) it hears as the
// Service's PortListener, each in one place.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "port/port_attributes.hpp"
#include "port/netdevs.hpp"
#include "port/port_events.hpp"
#include "port/port_poller.hpp"
#include "port/port_source.hpp"
#include "port/sysfs_ports.hpp"
#include "port/verbs_events.hpp"
#include "host/port_backend.hpp"
#include "runtime/event_loop.hpp"
#include "sa/amplification_watch.hpp"
#include "sa/sa_client.hpp"
#include "sa/transactions.hpp"
#include "sa/umad_transport.hpp"
#include "service/service.hpp"

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
    // Restrict the daemon to these "device" or "device/port" names; empty means every port
    // found, of either link layer.
    std::vector<std::string> ports;
    // Where Ethernet (RoCE) ports and GID tables are read: a directory laid out like
    // /sys/class/infiniband. Not a key of the config file: --sysfs-root, for tests and diagnosis.
    std::string sysfs_root = port::kSysfsRoot;
    bool operator==(const HostPortsConfig &) const = default;
};

class HostPorts final : public PortBackend, private PortListener {
public:
    // The umad transport and the SA transaction layer, with no port open yet. Ports are found
    // through `source`; by default the host's (libibumad, and cfg.sysfs_root for RoCE ports).
    HostPorts(runtime::EventLoop &loop, HostPortsConfig cfg);
    HostPorts(runtime::EventLoop &loop, HostPortsConfig cfg, std::unique_ptr<port::PortSource> source);
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
    // Reads the port's GID table afresh, with each entry's netdev as the daemon's network
    // namespace has it (port/netdevs.hpp), and hands it to the Service, which keeps it and
    // tells the RoCE memberships sent from it: what changed since the last read (also in the
    // journal, logging/gid_log.hpp), or why it could not be read.
    std::variant<port::GidTableChange, Error> reread_gid_table(PortIndex port);
    // Re-reads an Ethernet port now, as its watch does every monitor.portinfo_interval_ms: its
    // state (ACTIVE or not: the port's usable flag, which re-joins nothing on RoCE) and its GID
    // table with the netdevs, in one PortSource::read_port. The cost is bounded per port: its
    // attribute files, one read per GID table entry, two system calls per netdev named.
    void check_ethernet(PortIndex port);
    // How a netdev is looked up in the daemon's network namespace; the host's (lookup_netdev)
    // unless a test says otherwise. Before open().
    void set_netdev_lookup(port::NetdevLookup lookup) { netdevs_ = std::move(lookup); }
    // Whether the port's watch (check_ethernet on a period) runs: Ethernet ports only.
    bool watched(PortIndex port) const { return watches_.count(port) != 0; }
    const sa::MadTransactions &transactions() const { return txns_; }
    // Whether the port's PortInfo and SMInfo polls and audit clock run (InfiniBand ports only).
    bool polled(PortIndex port) const { return poller_ && poller_->watching(port); }

private:
    void open_ports();
    void open_infiniband(const port::PortAttributes &p);
    void open_ethernet(port::PortAttributes p);
    // Arms the port's next check_ethernet, monitor.portinfo_interval_ms from now, jittered.
    void watch_ethernet(PortIndex port);
    // The port's GID table as read: its netdevs looked up, handed to the Service, the change
    // journaled.
    port::GidTableChange apply_gid_table(PortIndex port, std::vector<port::GidEntry> entries);
    void watch_verbs();
    // The port's link layer is InfiniBand: it has an SA stack and is polled.
    bool infiniband(PortIndex port) const;

    // PortListener
    void sa_route_changed(PortIndex port) override;
    void memberships_gone(PortIndex port) override;

    void watch_sa_load(); // every kSaLoadInterval: the journal hears of amplification

    runtime::EventLoop &loop_;
    HostPortsConfig cfg_;
    std::unique_ptr<port::PortSource> source_;
    sa::UmadTransport transport_;
    sa::MadTransactions txns_;
    sa::SaClient sa_client_;
    std::unique_ptr<port::PortPoller> poller_; // made by open(): its sink is the Service
    std::unique_ptr<port::VerbsEvents> verbs_;
    sa::AmplificationWatch sa_load_;
    Timers::Id sa_load_timer_ = 0;
    Service *service_ = nullptr; // set by open(); it may go before this does
    port::NetdevLookup netdevs_ = port::lookup_netdev;
    std::map<PortIndex, Timers::Id> watches_; // the Ethernet ports' next check
    std::mt19937_64 rng_;                      // of the watches' jitter
};

// SA address of a port: the SM's LID and SL on QP1, through the P_Key index of 0xFFFF.
sa::MadAddress sa_address_of(const port::PortAttributes &p);

} // namespace mcastd
