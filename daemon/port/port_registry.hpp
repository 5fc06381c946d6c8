// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// PortRegistry: every port the daemon serves, once. Per port its index, device, number, link
// layer, the attributes discovery and the PortInfo polls report (GID, LID, P_Keys, state, MTU,
// the SM's LID and SL; an Ethernet port's GID table), the master SM as last seen, and whether it
// is usable. Every layer looks
// ports up here (find), the engine through PortFacts; the modules around a port keep only
// what is genuinely theirs (the poller's timers, the SA window), indexed by PortIndex.
//
// Pure data, no I/O. The Service owns the one registry and is the only writer: it applies what
// the port event sources observe (service.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/port_facts.hpp"
#include "port/port_attributes.hpp"

namespace mcastd::port {

// The master SM as last seen on a port (a successful SMInfoRecord Get), for status.
struct SmView {
    std::uint16_t lid = 0;
    std::uint64_t guid = 0;
    std::uint32_t act_count = 0;
    bool known = false;
    bool operator==(const SmView &) const = default;
};

struct RegisteredPort {
    PortIndex index = 0;
    LinkLayer link_layer = LinkLayer::infiniband;
    std::string name; // "mlx5_0/1"
    // What discovery found, kept up to date from the PortInfo polls and the P_Key re-reads.
    PortAttributes attributes;
    SmView sm;
    // Memberships can be made now: InfiniBand, ACTIVE with an SM; Ethernet (no SM), ACTIVE.
    bool usable = false;

    const std::string &device() const { return attributes.device; }
    std::uint8_t number() const { return attributes.port_num; }
    Gid gid() const { return attributes.port_gid(); }
};

class PortRegistry final : public PortFacts {
public:
    // A port served from now on, under the next index (0, 1, ...). Its link layer is the one
    // its attributes name. Throws std::invalid_argument when the device already has that port.
    PortIndex add(PortAttributes attributes, bool usable);

    std::size_t size() const { return ports_.size(); }
    bool empty() const { return ports_.empty(); }
    // Throws std::out_of_range for an index the registry never gave.
    const RegisteredPort &at(PortIndex port) const { return ports_.at(port); }
    // nullptr for an index the registry never gave (a note about a port that is not served).
    const RegisteredPort *get(PortIndex port) const { return port < ports_.size() ? &ports_[port] : nullptr; }
    std::vector<RegisteredPort>::const_iterator begin() const { return ports_.begin(); }
    std::vector<RegisteredPort>::const_iterator end() const { return ports_.end(); }
    // The served ports of `device`, in index order.
    std::vector<PortIndex> of_device(std::string_view device) const;

    // ---- what the port event sources observed (the Service applies them) ----

    // Returns whether the flag changed.
    bool set_usable(PortIndex port, bool usable);
    void set_sa(PortIndex port, std::uint16_t sm_lid, std::uint8_t sm_sl);
    void set_port_info(PortIndex port, std::uint16_t lid, std::uint8_t state, std::uint8_t mtu);
    void set_pkeys(PortIndex port, std::vector<std::uint16_t> pkeys);
    void set_sm(PortIndex port, const SmView &sm);
    // The GID table as read now (an Ethernet port's: addresses come and go with the netdev's).
    void set_gids(PortIndex port, std::vector<GidEntry> gids);

    // ---- PortFacts ----
    std::optional<PortIndex> find(std::string_view device, std::uint8_t port) const override;
    Error not_found(std::string_view device, std::uint8_t port) const override;
    const std::string &name(PortIndex port) const override { return ports_.at(port).name; }
    Gid gid(PortIndex port) const override { return ports_.at(port).gid(); }
    LinkLayer link_layer(PortIndex port) const override { return ports_.at(port).link_layer; }
    bool usable(PortIndex port) const override { return ports_.at(port).usable; }

private:
    RegisteredPort &mut(PortIndex port) { return ports_.at(port); }

    std::vector<RegisteredPort> ports_; // index = PortIndex
};

// "mlx5_0/1" for a port the registry has, "?" otherwise.
std::string port_name(const PortRegistry &ports, PortIndex port);

} // namespace mcastd::port
