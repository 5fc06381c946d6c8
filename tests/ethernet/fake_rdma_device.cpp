// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/fake_rdma_device.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace mcastd::eth {

namespace fs = std::filesystem;

namespace {

void write_line(const fs::path &file, const std::string &value) {
    fs::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::trunc);
    if (!out || !(out << value << '\n') || !out.flush())
        throw std::runtime_error("cannot write " + file.string() + ": " + std::strerror(errno));
}

std::string hex16(unsigned v) {
    char text[8];
    std::snprintf(text, sizeof text, "0x%04x", v);
    return text;
}

} // namespace

std::uint64_t eui64_from_mac(const Mac &mac) {
    const std::array<std::uint8_t, 8> b{static_cast<std::uint8_t>(mac[0] ^ 0x02), mac[1], mac[2], 0xff,
                                        0xfe, mac[3], mac[4], mac[5]};
    std::uint64_t v = 0;
    for (auto byte : b)
        v = v << 8 | byte;
    return v;
}

Gid link_local_gid(const Mac &mac) { return make_gid(0xfe80'0000'0000'0000ULL, eui64_from_mac(mac)); }

Gid ipv4_mapped_gid(const std::array<std::uint8_t, 4> &ipv4) {
    Gid g{};
    g[10] = g[11] = 0xff;
    std::copy(ipv4.begin(), ipv4.end(), g.begin() + 12);
    return g;
}

std::string sysfs_gid_text(const Gid &gid) {
    std::string s;
    for (std::size_t i = 0; i < gid.size(); i += 2) {
        char group[6];
        std::snprintf(group, sizeof group, "%02x%02x", gid[i], gid[i + 1]);
        s += (i ? ":" : "") + std::string(group);
    }
    return s;
}

std::string sysfs_guid_text(std::uint64_t guid) {
    char text[20];
    std::snprintf(text, sizeof text, "%04x:%04x:%04x:%04x", static_cast<unsigned>(guid >> 48 & 0xffff),
                  static_cast<unsigned>(guid >> 32 & 0xffff), static_cast<unsigned>(guid >> 16 & 0xffff),
                  static_cast<unsigned>(guid & 0xffff));
    return text;
}

fs::path FakeRdmaDevice::write(const fs::path &sysfs_root) const {
    if (name.empty() || name.find('/') != std::string::npos)
        throw std::invalid_argument("FakeRdmaDevice: bad device name '" + name + "'");
    const fs::path dev = sysfs_root / "class" / "infiniband" / name;
    std::error_code ec;
    fs::remove_all(dev, ec);
    write_line(dev / "node_type", node_type);
    write_line(dev / "node_guid", sysfs_guid_text(node_guid));
    for (const auto &port : ports) {
        const fs::path p = dev / "ports" / std::to_string(port.number);
        write_line(p / "state", port.state);
        write_line(p / "phys_state", port.phys_state);
        write_line(p / "link_layer", port.link_layer);
        write_line(p / "rate", port.rate);
        // An Ethernet port has no LID and no SM.
        write_line(p / "lid", "0x0");
        write_line(p / "sm_lid", "0x0");
        write_line(p / "lid_mask_count", "0");
        write_line(p / "sm_sl", "0");
        for (std::size_t i = 0; i < port.pkeys.size(); ++i)
            write_line(p / "pkeys" / std::to_string(i), hex16(port.pkeys[i]));
        for (std::size_t i = 0; i < port.gids.size(); ++i) {
            const auto &e = port.gids[i];
            write_line(p / "gids" / std::to_string(i), sysfs_gid_text(e.gid));
            if (e.type.empty())
                continue;
            write_line(p / "gid_attrs" / "types" / std::to_string(i), e.type);
            write_line(p / "gid_attrs" / "ndevs" / std::to_string(i), e.ndev);
        }
    }
    return dev;
}

FakeRdmaDevice roce_device(const std::string &name, const std::string &ndev, const Mac &mac,
                           const std::array<std::uint8_t, 4> &ipv4, const std::optional<Gid> &ipv6) {
    FakeRdmaPort port;
    port.gids = {{link_local_gid(mac), kRoceV1, ndev}, {ipv4_mapped_gid(ipv4), kRoceV2, ndev}, {}};
    if (ipv6)
        port.gids.push_back({*ipv6, kRoceV2, ndev});
    return {name, eui64_from_mac(mac), "1: CA", {port}};
}

} // namespace mcastd::eth
