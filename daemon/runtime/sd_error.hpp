// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// sd-* calls return 0/positive or -errno. This turns a failure into std::system_error whose
// code is the errno and whose what() names the call.
#pragma once

#include <string>
#include <system_error>

namespace mcastd::runtime {

inline int sd_check(int r, const char *call) {
    if (r < 0)
        throw std::system_error(-r, std::generic_category(), call);
    return r;
}

inline int sd_check(int r, const std::string &call) { return sd_check(r, call.c_str()); }

} // namespace mcastd::runtime
