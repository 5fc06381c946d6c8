// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-port-probe: prints what daemon/port discovers, one line of key=value pairs per port.
//
//   mcastd-port-probe                      every port of every CA (discover_ports)
//   mcastd-port-probe DEVICE PORT          one port (discover_port)
//
// Errors go to stderr as "error: <errc-name>: <message>". Exit 0 when at least one port was
// printed and nothing failed, 1 otherwise, 2 on bad usage. Run it attached to a simulated
// node (Fabric::run_on) to check discovery against what infiniband-diags report.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "port/port_discovery.hpp"

namespace {

using namespace mcastd;

void print_port(const port::PortAttributes &p) {
    std::string pkeys;
    for (auto k : p.pkeys) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%04x", k);
        pkeys += (pkeys.empty() ? "" : ",") + std::string(buf);
    }
    std::printf("device=%s port=%u port_guid=0x%016" PRIx64 " gid_prefix=0x%016" PRIx64
                " port_gid=%s lid=%u lmc=%u sm_lid=%u sm_sl=%u state=%u phys_state=%u"
                " rate=%u capability_mask=0x%08" PRIx32 " link_layer=%s pkeys=%s"
                " sa_pkey_index=%u\n",
                p.device.c_str(), p.port_num, p.port_guid, p.gid_prefix,
                format_gid(p.port_gid()).c_str(), p.lid, p.lmc, p.sm_lid, p.sm_sl, p.state,
                p.phys_state, p.rate_gbps, p.capability_mask, p.link_layer.c_str(),
                pkeys.empty() ? "-" : pkeys.c_str(), port::pkey_index_or_default(p.pkeys));
}

void print_error(const Error &e) {
    std::fprintf(stderr, "error: %s: %s\n", std::string(errc_name(e.code)).c_str(),
                 e.message.c_str());
}

} // namespace

int main(int argc, char **argv) {
    if (argc == 3) {
        char *end = nullptr;
        unsigned long port_num = std::strtoul(argv[2], &end, 10);
        if (!*argv[2] || *end || port_num > 255) {
            std::fprintf(stderr, "usage: %s [DEVICE PORT]\n", argv[0]);
            return 2;
        }
        auto r = port::discover_port(argv[1], static_cast<unsigned>(port_num));
        if (auto *e = std::get_if<Error>(&r)) {
            print_error(*e);
            return 1;
        }
        print_port(std::get<port::PortAttributes>(r));
        return 0;
    }
    if (argc != 1) {
        std::fprintf(stderr, "usage: %s [DEVICE PORT]\n", argv[0]);
        return 2;
    }
    auto d = port::discover_ports();
    for (const auto &p : d.ports)
        print_port(p);
    for (const auto &e : d.errors)
        print_error(e);
    return !d.ports.empty() && d.errors.empty() ? 0 : 1;
}
