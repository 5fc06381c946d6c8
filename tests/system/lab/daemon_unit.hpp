// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastd under the lab's systemd, on the simulated fabric: the drop-in that the lab's
// tests add to the shipped rdma-mcastd.service (configured from rdma-mcastd.service.in for the
// built daemon and copied into the lab with Lab::Options::unit_dir).
#pragma once

#include <filesystem>
#include <string>

#include "sim/fabric.hpp"
#include "system/lab/lab.hpp"

namespace mcastd::lab {

struct DaemonUnit {
    std::string node{};           // the fabric node the daemon is attached to
    // The built rdma-mcastd, started with config_json as its config file. Empty: the unit's
    // own ExecStart= and config file (a package installed in the lab), only attached to node.
    std::filesystem::path daemon{};
    std::string config_json{};   // its config file's contents
    std::string daemon_args{};   // more arguments for the built daemon ("--sysfs-root DIR")
    std::string extra_service{}; // more lines for the drop-in's [Service] section
};

// The shipped units, and the socket rdma-mcastd.socket listens on (ListenSequentialPacket=,
// the clients' default path).
inline constexpr const char *kService = "rdma-mcastd.service";
inline constexpr const char *kSocketUnit = "rdma-mcastd.socket";
inline constexpr const char *kSocket = "/run/rdma-mcastd.sock";
// The lab's config file and the daemon's working directory (umad2sim's sys-<pid> tree).
inline constexpr const char *kDaemonConfig = "/run/rdma-mcastd-lab/rdma-mcastd.json";
inline constexpr const char *kDaemonCwd = "/run/rdma-mcastd-lab/cwd";

// A value for a unit file's Environment= line: quoted, with systemd's specifier character
// escaped (systemd.exec(5), systemd.unit(5) "Specifiers").
std::string unit_quoted(const std::string &assignment);

// Writes rdma-mcastd.service.d/lab.conf (the fabric's environment for `node`, the working
// directory; for a built daemon also the build tree bound in and the daemon started with the
// lab's config), the config file and the working directory, and for both units the reset of
// their condition on an RDMA device (the lab's kernel has none: the fabric stands in). The
// caller adds its own drop-ins, then daemon_reload()s.
void install_daemon_unit(Lab &lab, const sim::Fabric &fabric, const DaemonUnit &unit);
// The same without a fabric (unit.node unused): a daemon that serves RoCE ports alone (a fake
// device under --sysfs-root), on which libibumad finds no InfiniBand device.
void install_daemon_unit(Lab &lab, const DaemonUnit &unit);

} // namespace mcastd::lab
