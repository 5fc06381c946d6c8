// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/port_discovery.hpp"

#include <endian.h>
#include <infiniband/umad.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/port_name.hpp"
#include "port/sysfs_ports.hpp"

namespace mcastd::port {

namespace {

std::string errno_text(int negative_or_positive) {
    int e = negative_or_positive < 0 ? -negative_or_positive : negative_or_positive;
    return std::strerror(e);
}

// libibumad's char arrays are NUL-terminated when it fills them, but a bounded copy costs
// nothing and keeps a corrupt record from reading past the array.
template <std::size_t N> std::string bounded(const char (&s)[N]) {
    return std::string(s, strnlen(s, N));
}

Error error(Errc code, std::string message) { return Error{code, std::move(message), {}}; }

} // namespace

PortAttributes port_from_umad(const ::umad_port &p) {
    PortAttributes a;
    a.device = bounded(p.ca_name);
    a.port_num = static_cast<std::uint8_t>(p.portnum);
    a.port_guid = be64toh(p.port_guid);
    a.gid_prefix = be64toh(p.gid_prefix);
    a.lid = static_cast<std::uint16_t>(p.base_lid);
    a.lmc = static_cast<std::uint8_t>(p.lmc);
    a.sm_lid = static_cast<std::uint16_t>(p.sm_lid);
    a.sm_sl = static_cast<std::uint8_t>(p.sm_sl);
    a.state = static_cast<std::uint8_t>(p.state);
    a.phys_state = static_cast<std::uint8_t>(p.phys_state);
    a.rate_gbps = p.rate;
    a.capability_mask = be32toh(p.capmask);
    a.link_layer = bounded(p.link_layer);
    if (p.pkeys)
        a.pkeys.assign(p.pkeys, p.pkeys + p.pkeys_size);
    return a;
}

std::variant<std::vector<std::string>, Error> list_devices() {
    if (int rc = umad_init(); rc < 0)
        return error(Errc::internal, "libibumad: umad_init failed: " + errno_text(rc) +
                                         " (is the ib_umad kernel module loaded?)");
    // Not umad_get_cas_names(): on a host without InfiniBand devices it names its default one
    // ("mthca0"), which then cannot be read, and a RoCE-only host would warn of a device it
    // never had. The device list is empty there (NULL with errno 0).
    errno = 0;
    umad_device_node *list = umad_get_ca_device_list();
    if (!list && errno != 0)
        return error(Errc::internal, "libibumad: umad_get_ca_device_list failed: " + errno_text(-errno));
    std::vector<std::string> out;
    for (const umad_device_node *d = list; d; d = d->next)
        out.emplace_back(d->ca_name);
    umad_free_ca_device_list(list);
    return out;
}

Discovery discover_ports() {
    Discovery d;
    auto devices = list_devices();
    if (auto *e = std::get_if<Error>(&devices)) {
        d.errors.push_back(std::move(*e));
        return d;
    }
    for (const auto &name : std::get<std::vector<std::string>>(devices)) {
        umad_ca_t ca{};
        if (int rc = umad_get_ca(name.c_str(), &ca); rc < 0) {
            d.errors.push_back(
                error(Errc::internal, "libibumad: umad_get_ca(" + name + "): " + errno_text(rc)));
            continue;
        }
        // ports[] is indexed by port number: 1..numports on a CA, 0 on a switch.
        int last = std::min(ca.numports, UMAD_CA_MAX_PORTS - 1);
        for (int i = 0; i <= last; ++i)
            if (ca.ports[i])
                d.ports.push_back(port_from_umad(*ca.ports[i]));
        umad_release_ca(&ca);
    }
    return d;
}

std::variant<PortAttributes, Error> discover_port(std::string_view device, unsigned port_num) {
    auto devices = list_devices();
    if (auto *e = std::get_if<Error>(&devices))
        return std::move(*e);
    const auto &names = std::get<std::vector<std::string>>(devices);
    std::string dev(device);
    if (std::find(names.begin(), names.end(), dev) == names.end())
        return error(Errc::no_such_device, "no RDMA device named '" + dev + "'");
    umad_port_t p{};
    if (port_num > 0xFF)
        return error(Errc::no_such_port, "port number " + std::to_string(port_num) + " > 255");
    if (int rc = umad_get_port(dev.c_str(), static_cast<int>(port_num), &p); rc < 0)
        return error(Errc::no_such_port, "cannot read " + dev + " port " +
                                             std::to_string(port_num) + ": " + errno_text(rc));
    PortAttributes a = port_from_umad(p);
    umad_release_port(&p);
    return a;
}

std::variant<GidTable, Error> UmadPortSource::read_gid_table(std::string_view device, unsigned port) const {
    return error(Errc::internal, "libibumad reads no GID table (" + port_name(device, port) + ")");
}

std::unique_ptr<PortSource> host_port_source(const std::string &sysfs_root) {
    return std::make_unique<CombinedPortSource>(std::make_unique<UmadPortSource>(),
                                                std::make_unique<SysfsPortSource>(sysfs_root));
}

} // namespace mcastd::port
