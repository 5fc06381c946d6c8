// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// How the daemon names one port of one CA in logs, errors and config: "mlx5_0/1".
#pragma once

#include <string>
#include <string_view>

namespace mcastd {

inline std::string port_name(std::string_view device, unsigned port) {
    std::string s(device);
    s += '/';
    s += std::to_string(port);
    return s;
}

} // namespace mcastd
