// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/port_registry.hpp"

#include <stdexcept>

#include "common/port_name.hpp"

namespace mcastd::port {

PortIndex PortRegistry::add(PortAttributes attributes, bool usable) {
    if (find(attributes.device, attributes.port_num))
        throw std::invalid_argument(mcastd::port_name(attributes.device, attributes.port_num) +
                                    " is in the port registry already");
    RegisteredPort p;
    p.index = static_cast<PortIndex>(ports_.size());
    p.link_layer = link_layer_from(attributes.link_layer);
    p.name = mcastd::port_name(attributes.device, attributes.port_num);
    p.attributes = std::move(attributes);
    p.usable = usable;
    ports_.push_back(std::move(p));
    return ports_.back().index;
}

std::vector<PortIndex> PortRegistry::of_device(std::string_view device) const {
    std::vector<PortIndex> out;
    for (const RegisteredPort &p : ports_)
        if (p.device() == device)
            out.push_back(p.index);
    return out;
}

bool PortRegistry::set_usable(PortIndex port, bool usable) {
    RegisteredPort &p = mut(port);
    if (p.usable == usable)
        return false;
    p.usable = usable;
    return true;
}

void PortRegistry::set_sa(PortIndex port, std::uint16_t sm_lid, std::uint8_t sm_sl) {
    PortAttributes &a = mut(port).attributes;
    a.sm_lid = sm_lid;
    a.sm_sl = sm_sl;
}

void PortRegistry::set_port_info(PortIndex port, std::uint16_t lid, std::uint8_t state, std::uint8_t mtu) {
    PortAttributes &a = mut(port).attributes;
    a.lid = lid;
    a.state = state;
    a.mtu = mtu;
}

void PortRegistry::set_pkeys(PortIndex port, std::vector<std::uint16_t> pkeys) {
    mut(port).attributes.pkeys = std::move(pkeys);
}

void PortRegistry::set_sm(PortIndex port, const SmView &sm) { mut(port).sm = sm; }

void PortRegistry::set_gids(PortIndex port, std::vector<GidEntry> gids) { mut(port).attributes.gids = std::move(gids); }

std::optional<PortIndex> PortRegistry::find(std::string_view device, std::uint8_t port) const {
    for (const RegisteredPort &p : ports_)
        if (p.device() == device && p.number() == port)
            return p.index;
    return std::nullopt;
}

Error PortRegistry::not_found(std::string_view device, std::uint8_t port) const {
    std::string known_ports;
    for (const RegisteredPort &p : ports_)
        if (p.device() == device)
            known_ports += (known_ports.empty() ? "" : ", ") + std::to_string(p.number());
    if (!known_ports.empty())
        return Error{Errc::no_such_port,
                     std::string(device) + " has no port " + std::to_string(port) + " (ports: " + known_ports + ")",
                     {}};
    std::string names;
    for (const RegisteredPort &p : ports_)
        if (names.find(p.device()) == std::string::npos)
            names += (names.empty() ? "" : ", ") + p.device();
    return Error{Errc::no_such_device,
                 "no RDMA device '" + std::string(device) + "' (devices: " + (names.empty() ? "none" : names) +
                     ")",
                 {}};
}

std::string port_name(const PortRegistry &ports, PortIndex port) {
    const RegisteredPort *p = ports.get(port);
    return p ? p->name : "?";
}

} // namespace mcastd::port
