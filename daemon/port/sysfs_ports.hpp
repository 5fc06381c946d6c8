// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SysfsPortSource: ports read from a directory laid out like the kernel's /sys/class/infiniband,
// the RoCE half of the daemon's discovery (port_source.hpp). Production reads
// /sys/class/infiniband itself; `rdma-mcastd --sysfs-root DIR` points it elsewhere, which is how
// the tests give a machine without RDMA in its kernel a RoCE device (doc/ethernet-bed.md §5).
//
//   DIR/<dev>/ports/<p>/state                "4: ACTIVE"
//                       phys_state           "5: LinkUp"           (optional)
//                       link_layer           "Ethernet"            (absent: InfiniBand, as libibumad)
//                       rate                 "25 Gb/sec (1X EDR)"  (optional)
//                       lid, sm_lid, sm_sl, lid_mask_count, cap_mask   (optional, 0 when absent)
//                       pkeys/<i>            "0xffff"              (optional)
//                       gids/<i>             "fe80:0000:...:0001"; all zeros when unused
//                       gid_attrs/types/<i>  "IB/RoCE v1", "RoCE v2"; unreadable when unused
//                       gid_attrs/ndevs/<i>  "eth0"; unreadable when unused
//
// Tolerant as the kernel is: an unused GID entry reads as zeros and reading its attributes
// fails (EINVAL on the kernel, ENOENT in a fake tree); either is "no entry", never an error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "port/port_source.hpp"

namespace mcastd::port {

// Where the kernel shows the RDMA devices.
inline constexpr const char *kSysfsRoot = "/sys/class/infiniband";

// The number at the start of a state or phys_state text: "4: ACTIVE" is 4. nullopt without one.
std::optional<std::uint8_t> parse_sysfs_state(std::string_view text);
// The integer part of the Gb/s number a rate text starts with, as libibumad takes it: "25 Gb/sec
// (1X EDR)" is 25, "2.5 Gb/sec (1X SDR)" 2; 0 without a number.
unsigned parse_sysfs_rate(std::string_view text);
// A number as sysfs prints one, hex with 0x ("0x0", "0xffff") or decimal ("0"); surrounding
// whitespace is ignored. nullopt for anything else.
std::optional<std::uint64_t> parse_sysfs_number(std::string_view text);

// Why `dir` cannot be a sysfs root (it does not exist, is no directory, cannot be listed), or
// nullopt. For --sysfs-root, checked before the daemon starts.
std::optional<std::string> sysfs_root_problem(const std::filesystem::path &dir);

// The GID table under a port's directory (<root>/<dev>/ports/<p>): every gids/<i>, and the
// gid_attrs files of the entries in use. Errors: internal when gids/ cannot be listed.
std::variant<GidTable, Error> read_gid_table(const std::filesystem::path &port_dir, LinkLayer link_layer);

class SysfsPortSource final : public PortSource {
public:
    explicit SysfsPortSource(std::filesystem::path root = kSysfsRoot) : root_(std::move(root)) {}

    const std::filesystem::path &root() const { return root_; }
    std::string name() const override { return root_.string(); }
    // Every port of every device under the root, of either link layer; an Ethernet port's with
    // its GID table (an InfiniBand port's is not read: libibumad's port GID is enough). A root
    // that does not exist is a host without RDMA devices: no ports, no error.
    Discovery discover() const override;
    std::variant<PortAttributes, Error> read_port(std::string_view device, unsigned port) const override;
    std::variant<GidTable, Error> read_gid_table(std::string_view device, unsigned port) const override;

private:
    std::filesystem::path port_dir(std::string_view device, unsigned port) const;
    // read_port, with the GID table's problems added to `problems`.
    std::variant<PortAttributes, Error> read(std::string_view device, unsigned port,
                                             std::vector<Error> *problems) const;
    // The error for a port that is not there: no_such_device or no_such_port.
    std::optional<Error> missing(std::string_view device, unsigned port) const;

    std::filesystem::path root_;
};

} // namespace mcastd::port
