// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// An RDMA device name as the kernel allows one (it becomes a directory name in
// /sys/class/infiniband): the one rule for a join's `device` (socket and D-Bus), the config's
// static_groups and ports; and a network interface name, for a RoCE join's `ifname`. A name
// that passes either is printable ASCII, so it is safe in a log line, a journal field, JSON
// and D-Bus as it is.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mcastd {

// IB_DEVICE_NAME_MAX is 64 with the terminating NUL.
inline constexpr std::size_t kMaxDeviceName = 63;

// Why `name` is not a device name, as a sentence that quotes it escaped (control and non-ASCII
// bytes as \xNN, never raw): "\"mlx5\\x1b[2J\" is not an RDMA device name: byte 4 is not
// printable ASCII (...)"; or nullopt. A name is 1..63 bytes of 0x21..0x7e without '/', and
// neither "." nor "..".
std::optional<std::string> device_name_problem(std::string_view name);

// IFNAMSIZ is 16 with the terminating NUL.
inline constexpr std::size_t kMaxInterfaceName = 15;

// The same for a network interface name (a RoCE join's `ifname`), by the kernel's
// dev_valid_name(): 1..15 bytes of 0x21..0x7e without '/' or ':', and neither "." nor "..".
std::optional<std::string> interface_name_problem(std::string_view name);

} // namespace mcastd
