// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/sysfs_ports.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/device_name.hpp"
#include "common/port_name.hpp"
#include "runtime/small_file.hpp"

namespace mcastd::port {

namespace fs = std::filesystem;

namespace {

// A sysfs attribute's text, or the errno of the failed open or read: reading an unused GID
// entry's attributes fails with EINVAL on the kernel.
std::variant<std::string, int> read_text(const fs::path &file) {
    std::string text;
    if (const int err = runtime::read_small_file(AT_FDCWD, file.c_str(), text))
        return err;
    return text;
}

std::optional<std::string> read_optional(const fs::path &file) {
    auto r = read_text(file);
    if (auto *s = std::get_if<std::string>(&r))
        return std::move(*s);
    return std::nullopt;
}

template <class T> T number_or(const fs::path &file, T fallback) {
    const auto text = read_optional(file);
    const auto v = text ? parse_sysfs_number(*text) : std::nullopt;
    return v ? static_cast<T>(*v) : fallback;
}

// The numeric names in `dir` ("0", "1", ...), sorted; nullopt with the errno when it cannot be
// listed.
std::variant<std::vector<unsigned>, std::error_code> numbered_entries(const fs::path &dir, unsigned max) {
    std::error_code ec;
    std::vector<unsigned> out;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        unsigned v = 0;
        const auto [p, err] = std::from_chars(name.data(), name.data() + name.size(), v);
        if (err == std::errc{} && p == name.data() + name.size() && v <= max && (name == "0" || name[0] != '0'))
            out.push_back(v);
    }
    if (ec)
        return ec;
    std::sort(out.begin(), out.end());
    return out;
}

Error internal(std::string message) { return Error{Errc::internal, std::move(message), {}}; }

} // namespace

std::optional<std::uint8_t> parse_sysfs_state(std::string_view text) {
    const std::string_view t = trim_sysfs_text(text);
    unsigned v = 0;
    const auto [p, err] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (err != std::errc{} || p == t.data() || v > 0xFF)
        return std::nullopt;
    if (p != t.data() + t.size() && *p != ':')
        return std::nullopt;
    return static_cast<std::uint8_t>(v);
}

unsigned parse_sysfs_rate(std::string_view text) {
    const std::string_view t = trim_sysfs_text(text);
    unsigned v = 0;
    const auto [p, err] = std::from_chars(t.data(), t.data() + t.size(), v);
    return err == std::errc{} ? v : 0;
}

std::optional<std::uint64_t> parse_sysfs_number(std::string_view text) {
    std::string_view t = trim_sysfs_text(text);
    int base = 10;
    if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
        t.remove_prefix(2);
        base = 16;
    }
    std::uint64_t v = 0;
    const auto [p, err] = std::from_chars(t.data(), t.data() + t.size(), v, base);
    if (err != std::errc{} || t.empty() || p != t.data() + t.size())
        return std::nullopt;
    return v;
}

std::optional<std::string> sysfs_root_problem(const fs::path &dir) {
    std::error_code ec;
    const fs::file_status st = fs::status(dir, ec);
    if (ec || !fs::exists(st))
        return dir.string() + ": " + (ec ? ec.message() : std::strerror(ENOENT));
    if (!fs::is_directory(st))
        return dir.string() + " is not a directory";
    fs::directory_iterator it(dir, ec);
    if (ec)
        return dir.string() + ": cannot list it: " + ec.message();
    return std::nullopt;
}

std::variant<GidTable, Error> read_gid_table(const fs::path &port_dir, LinkLayer link_layer) {
    const fs::path gids = port_dir / "gids";
    auto indexes = numbered_entries(gids, 0xFFFF);
    if (auto *ec = std::get_if<std::error_code>(&indexes))
        return internal("cannot list " + gids.string() + ": " + ec->message());
    std::vector<GidFiles> files;
    for (unsigned i : std::get<std::vector<unsigned>>(indexes)) {
        const std::string name = std::to_string(i);
        GidFiles f{i, read_optional(gids / name), std::nullopt, std::nullopt};
        // An unused entry's attributes fail to read anyway: a full table costs one read each.
        if (f.gid && !unused_gid_text(*f.gid)) {
            f.type = read_optional(port_dir / "gid_attrs" / "types" / name);
            f.netdev = read_optional(port_dir / "gid_attrs" / "ndevs" / name);
        }
        files.push_back(std::move(f));
    }
    return parse_gid_table(files, link_layer);
}

fs::path SysfsPortSource::port_dir(std::string_view device, unsigned port) const {
    return root_ / std::string(device) / "ports" / std::to_string(port);
}

std::optional<Error> SysfsPortSource::missing(std::string_view device, unsigned port) const {
    std::error_code ec;
    if (device_name_problem(device) || !fs::is_directory(root_ / std::string(device), ec))
        return Error{Errc::no_such_device, "no RDMA device '" + std::string(device) + "' under " + root_.string(), {}};
    if (port > 0xFF || !fs::is_directory(port_dir(device, port), ec))
        return Error{Errc::no_such_port, std::string(device) + " has no port " + std::to_string(port) + " under " +
                                             root_.string(),
                     {}};
    return std::nullopt;
}

std::variant<PortAttributes, Error> SysfsPortSource::read(std::string_view device, unsigned port,
                                                          std::vector<Error> *problems) const {
    if (auto e = missing(device, port))
        return std::move(*e);
    const fs::path dir = port_dir(device, port);
    PortAttributes a;
    a.device = std::string(device);
    a.port_num = static_cast<std::uint8_t>(port);
    // As libibumad: a port without the file (an old kernel) is InfiniBand.
    a.link_layer = std::string(trim_sysfs_text(read_optional(dir / "link_layer").value_or("IB")));
    const auto state_text = read_text(dir / "state");
    if (auto *e = std::get_if<int>(&state_text))
        return internal("cannot read " + (dir / "state").string() + ": " + std::strerror(*e));
    const auto state = parse_sysfs_state(std::get<std::string>(state_text));
    if (!state)
        return internal((dir / "state").string() + ": '" + std::string(trim_sysfs_text(std::get<std::string>(state_text))) +
                        "' is not a port state");
    a.state = *state;
    if (const auto phys = read_optional(dir / "phys_state"))
        a.phys_state = parse_sysfs_state(*phys).value_or(0);
    if (const auto rate = read_optional(dir / "rate"))
        a.rate_gbps = parse_sysfs_rate(*rate);
    a.lid = number_or<std::uint16_t>(dir / "lid", 0);
    a.sm_lid = number_or<std::uint16_t>(dir / "sm_lid", 0);
    a.sm_sl = number_or<std::uint8_t>(dir / "sm_sl", 0);
    a.lmc = number_or<std::uint8_t>(dir / "lid_mask_count", 0);
    a.capability_mask = number_or<std::uint32_t>(dir / "cap_mask", 0);
    if (auto pkeys = numbered_entries(dir / "pkeys", 0xFFFF); auto *indexes = std::get_if<std::vector<unsigned>>(&pkeys))
        for (unsigned i : *indexes) {
            a.pkeys.resize(i + 1, 0);
            a.pkeys[i] = number_or<std::uint16_t>(dir / "pkeys" / std::to_string(i), 0);
        }
    // The port GID is GID index 0, as libibumad takes it.
    if (const auto gid0 = read_optional(dir / "gids" / "0"))
        if (const auto gid = parse_sysfs_gid(*gid0)) {
            for (int i = 0; i < 8; ++i) {
                a.gid_prefix = a.gid_prefix << 8 | (*gid)[static_cast<std::size_t>(i)];
                a.port_guid = a.port_guid << 8 | (*gid)[static_cast<std::size_t>(i + 8)];
            }
        }
    if (link_layer_from(a.link_layer) == LinkLayer::ethernet) {
        auto table = port::read_gid_table(dir, LinkLayer::ethernet);
        if (auto *e = std::get_if<Error>(&table))
            return std::move(*e);
        GidTable &t = std::get<GidTable>(table);
        a.gids = std::move(t.entries);
        if (problems)
            for (std::string &p : t.problems)
                problems->push_back(internal(port_name(device, port) + ": " + std::move(p)));
    }
    return a;
}

std::variant<PortAttributes, Error> SysfsPortSource::read_port(std::string_view device, unsigned port) const {
    return read(device, port, nullptr);
}

std::variant<GidTable, Error> SysfsPortSource::read_gid_table(std::string_view device, unsigned port) const {
    if (auto e = missing(device, port))
        return std::move(*e);
    const fs::path dir = port_dir(device, port);
    return port::read_gid_table(dir, link_layer_from(trim_sysfs_text(read_optional(dir / "link_layer").value_or("IB"))));
}

Discovery SysfsPortSource::discover() const {
    Discovery d;
    std::error_code ec;
    std::vector<std::string> devices;
    for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec))
        devices.push_back(it->path().filename().string());
    if (ec) {
        if (ec != std::errc::no_such_file_or_directory)
            d.errors.push_back(internal("cannot list " + root_.string() + ": " + ec.message()));
        return d;
    }
    std::sort(devices.begin(), devices.end());
    for (const std::string &dev : devices) {
        if (auto why = device_name_problem(dev)) {
            d.errors.push_back(internal(root_.string() + ": " + *why));
            continue;
        }
        auto ports = numbered_entries(root_ / dev / "ports", 0xFF);
        if (auto *e = std::get_if<std::error_code>(&ports)) {
            d.errors.push_back(internal("cannot list " + (root_ / dev / "ports").string() + ": " + e->message()));
            continue;
        }
        for (unsigned p : std::get<std::vector<unsigned>>(ports)) {
            auto r = read(dev, p, &d.errors);
            if (auto *e = std::get_if<Error>(&r))
                d.errors.push_back(std::move(*e));
            else
                d.ports.push_back(std::get<PortAttributes>(std::move(r)));
        }
    }
    return d;
}

} // namespace mcastd::port
