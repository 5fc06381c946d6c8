// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/gid.hpp"

#include <arpa/inet.h>

namespace mcastd {

std::string format_gid(const Gid &g) {
    char buf[INET6_ADDRSTRLEN];
    if (!inet_ntop(AF_INET6, g.data(), buf, sizeof buf))
        return {};
    return buf;
}

std::optional<Gid> parse_gid(std::string_view text) {
    // inet_pton wants a terminated string; an MGID is never longer than an IPv6 address.
    if (text.empty() || text.size() >= INET6_ADDRSTRLEN)
        return std::nullopt;
    std::string s(text);
    Gid g{};
    if (inet_pton(AF_INET6, s.c_str(), g.data()) != 1)
        return std::nullopt;
    return g;
}

Gid make_gid(std::uint64_t prefix, std::uint64_t guid) {
    Gid g{};
    for (int i = 0; i < 8; ++i) {
        g[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(prefix >> (56 - 8 * i));
        g[static_cast<std::size_t>(8 + i)] = static_cast<std::uint8_t>(guid >> (56 - 8 * i));
    }
    return g;
}

} // namespace mcastd
