// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/port_source.hpp"

#include <algorithm>

#include "common/link_layer.hpp"
#include "common/port_name.hpp"

namespace mcastd::port {

namespace {

bool has_link_layer(const PortAttributes &p, LinkLayer l) { return link_layer_from(p.link_layer) == l; }

bool same_port(const PortAttributes &a, const PortAttributes &b) {
    return a.device == b.device && a.port_num == b.port_num;
}

} // namespace

Discovery combine(Discovery infiniband, Discovery ethernet, std::string_view ethernet_name) {
    Discovery d;
    d.errors = std::move(infiniband.errors);
    d.errors.insert(d.errors.end(), std::make_move_iterator(ethernet.errors.begin()),
                    std::make_move_iterator(ethernet.errors.end()));
    for (PortAttributes &p : infiniband.ports)
        if (has_link_layer(p, LinkLayer::infiniband))
            d.ports.push_back(std::move(p));
    const std::size_t from_infiniband = d.ports.size();
    for (PortAttributes &p : ethernet.ports) {
        if (!has_link_layer(p, LinkLayer::ethernet))
            continue;
        const auto first = d.ports.begin(), last = first + static_cast<std::ptrdiff_t>(from_infiniband);
        if (std::any_of(first, last, [&](const PortAttributes &q) { return same_port(p, q); })) {
            d.errors.push_back(Error{Errc::internal,
                                     port_name(p.device, p.port_num) + " under " + std::string(ethernet_name) +
                                         " is left out: libibumad serves an InfiniBand port of that name",
                                     {}});
            continue;
        }
        d.ports.push_back(std::move(p));
    }
    return d;
}

CombinedPortSource::CombinedPortSource(std::unique_ptr<PortSource> infiniband, std::unique_ptr<PortSource> ethernet)
    : infiniband_(std::move(infiniband)), ethernet_(std::move(ethernet)) {}

std::string CombinedPortSource::name() const { return infiniband_->name() + " and " + ethernet_->name(); }

Discovery CombinedPortSource::discover() const {
    return combine(infiniband_->discover(), ethernet_->discover(), ethernet_->name());
}

std::variant<PortAttributes, Error> CombinedPortSource::read_port(std::string_view device, unsigned port) const {
    auto ib = infiniband_->read_port(device, port);
    if (const auto *p = std::get_if<PortAttributes>(&ib); p && has_link_layer(*p, LinkLayer::infiniband))
        return ib;
    auto eth = ethernet_->read_port(device, port);
    if (const auto *p = std::get_if<PortAttributes>(&eth); p && has_link_layer(*p, LinkLayer::ethernet))
        return eth;
    // Neither has it with its own link layer: the error of one that has not found it at all.
    if (auto *e = std::get_if<Error>(&ib))
        return std::move(*e);
    if (auto *e = std::get_if<Error>(&eth))
        return std::move(*e);
    return Error{Errc::no_such_port,
                 port_name(device, port) + " is an Ethernet port to libibumad and an InfiniBand port under " +
                     ethernet_->name(),
                 {}};
}

std::variant<GidTable, Error> CombinedPortSource::read_gid_table(std::string_view device, unsigned port) const {
    return ethernet_->read_gid_table(device, port);
}

} // namespace mcastd::port
