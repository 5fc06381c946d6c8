// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "ethernet/kernel_tables.hpp"

#include <nlohmann/json.hpp>

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace mcastd::eth {

namespace {

[[noreturn]] void bad_line(const char *file, std::size_t number, std::string_view line,
                           const std::string &why) {
    throw std::runtime_error(std::string(file) + " line " + std::to_string(number) + " (" + why +
                             "): '" + std::string(line) + "'");
}

// A whole token of hex digits, at most 16 of them.
std::optional<std::uint64_t> hex_value(const std::string &token) {
    if (token.empty() || token.size() > 16 ||
        token.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
        return std::nullopt;
    return std::stoull(token, nullptr, 16);
}

std::optional<int> decimal(const std::string &token) {
    if (token.empty() || token.size() > 9 || token.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    return std::stoi(token);
}

std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string_view::npos)
        return {};
    return std::string(s.substr(b, s.find_last_not_of(" \t") - b + 1));
}

// iproute2's JSON output, which is always an array; `what` names the command in errors.
nlohmann::json json_array(std::string_view text, const std::string &what) {
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception &e) {
        throw std::runtime_error(what + ": not JSON: " + e.what());
    }
    if (!doc.is_array())
        throw std::runtime_error(what + ": not a JSON array: " + doc.dump());
    return doc;
}

} // namespace

std::map<std::string, GroupUsers> parse_proc_igmp(std::string_view text) {
    // A device line ("2\tveth1     :     2      V3") opens a block of group lines
    // ("\t\t\t\t030201EF     1 0:00000000\t\t0"); the first line is the header.
    std::map<std::string, GroupUsers> out;
    std::string device;
    std::istringstream in{std::string(text)};
    std::size_t number = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        if (line.empty() || line.rfind("Idx", 0) == 0)
            continue;
        if (line[0] != '\t') {
            const auto tab = line.find('\t'), colon = line.find(':');
            if (tab == std::string::npos || colon == std::string::npos || colon < tab)
                bad_line("/proc/net/igmp", number, line, "no device name");
            device = trim(std::string_view(line).substr(tab + 1, colon - tab - 1));
            out[device];
            continue;
        }
        if (device.empty())
            bad_line("/proc/net/igmp", number, line, "a group before any device");
        std::istringstream fields(line);
        std::string hex, users;
        fields >> hex >> users;
        const auto value = hex_value(hex);
        const auto n = decimal(users);
        if (!value || hex.size() != 8 || !n)
            bad_line("/proc/net/igmp", number, line, "no group and users count");
        // The kernel printed the address's in-memory 32 bits as a host-order number: storing
        // the number back into memory gives the address bytes in network order.
        const auto raw = static_cast<std::uint32_t>(*value);
        std::array<std::uint8_t, 4> bytes{};
        std::memcpy(bytes.data(), &raw, bytes.size());
        const auto group = IpGroup::from_v4(bytes);
        if (!group)
            bad_line("/proc/net/igmp", number, line, "not a multicast address");
        out[device][*group] = *n;
    }
    return out;
}

std::map<std::string, GroupUsers> parse_proc_igmp6(std::string_view text) {
    // "2    veth1           ff0e0000000000000000000000010002     1 00000004 0"
    std::map<std::string, GroupUsers> out;
    std::istringstream in{std::string(text)};
    std::size_t number = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        if (trim(line).empty())
            continue;
        std::istringstream fields(line);
        std::string index, device, hex, users;
        fields >> index >> device >> hex >> users;
        const auto n = decimal(users);
        if (!decimal(index) || device.empty() || hex.size() != 32 || !n)
            bad_line("/proc/net/igmp6", number, line, "not index, device, group, users");
        std::array<std::uint8_t, 16> bytes{};
        for (std::size_t i = 0; i < bytes.size(); ++i) {
            const auto byte = hex_value(hex.substr(i * 2, 2));
            if (!byte)
                bad_line("/proc/net/igmp6", number, line, "the group is not hex");
            bytes[i] = static_cast<std::uint8_t>(*byte);
        }
        const auto group = IpGroup::from_v6(bytes);
        if (!group)
            bad_line("/proc/net/igmp6", number, line, "not a multicast address");
        out[device][*group] = *n;
    }
    return out;
}

std::vector<MdbEntry> parse_mdb_json(std::string_view json) {
    // [{"mdb": [{"index": 2, "dev": "br0", "port": "p1", "grp": "239.1.2.3", "state": "temp",
    //            "flags": [], ...}], "router": {...}}], one object per bridge.
    std::vector<MdbEntry> out;
    for (const auto &bridge : json_array(json, "bridge -j mdb show")) {
        if (!bridge.is_object() || !bridge.contains("mdb"))
            continue; // an object with only "router"
        for (const auto &e : bridge.at("mdb")) {
            if (!e.is_object() || !e.contains("port") || !e.contains("grp") ||
                !e.at("port").is_string() || !e.at("grp").is_string())
                throw std::runtime_error("bridge -j mdb show: an entry without port and grp: " +
                                         e.dump());
            const auto group = IpGroup::parse(e.at("grp").get<std::string>());
            if (!group)
                throw std::runtime_error("bridge -j mdb show: grp is not a multicast address: " +
                                         e.dump());
            out.push_back({e.at("port").get<std::string>(), *group, e.value("state", std::string()),
                           e.value("src", std::string())});
        }
    }
    return out;
}

std::map<std::string, std::string> parse_bridge_port_states(std::string_view json) {
    // [{"ifindex":4,"link":"veth1","ifname":"p1","flags":[...],"master":"br0","state":"forwarding",...}]
    std::map<std::string, std::string> out;
    for (const auto &port : json_array(json, "bridge -j link show")) {
        if (!port.is_object() || !port.contains("ifname") || !port.at("ifname").is_string() ||
            !port.contains("state") || !port.at("state").is_string())
            throw std::runtime_error("bridge -j link show: a port without ifname and state: " + port.dump());
        out[port.at("ifname").get<std::string>()] = port.at("state").get<std::string>();
    }
    return out;
}

std::vector<std::string> parse_usable_link_locals(std::string_view json) {
    // [{"ifname":"br0",...,"addr_info":[{"family":"inet6","local":"fe80::..","prefixlen":64,
    //   "scope":"link","tentative":true,...}]}]
    std::vector<std::string> out;
    for (const auto &link : json_array(json, "ip -j addr show")) {
        if (!link.is_object() || !link.contains("addr_info") || !link.at("addr_info").is_array())
            throw std::runtime_error("ip -j addr show: a link without addr_info: " + link.dump());
        for (const auto &a : link.at("addr_info")) {
            if (!a.is_object() || a.value("family", "") != "inet6" || a.value("scope", "") != "link")
                continue;
            if (a.value("tentative", false) || a.value("dadfailed", false) || !a.contains("local"))
                continue;
            out.push_back(a.at("local").get<std::string>());
        }
    }
    return out;
}

} // namespace mcastd::eth
