// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/gid.hpp"

#include <arpa/inet.h>
#include <endian.h>

namespace mcastd {

namespace {

// Writes `v` in decimal at `p`; returns the end.
char *put_decimal(char *p, unsigned v) {
    if (v >= 100)
        *p++ = static_cast<char>('0' + v / 100);
    if (v >= 10)
        *p++ = static_cast<char>('0' + v / 10 % 10);
    *p++ = static_cast<char>('0' + v % 10);
    return p;
}

// Writes `v` in lower-case hex without leading zeros at `p`; returns the end.
char *put_hex(char *p, unsigned v) {
    constexpr char kHex[] = "0123456789abcdef";
    bool started = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
        const unsigned d = v >> shift & 0xf;
        if (d || started || shift == 0) {
            *p++ = kHex[d];
            started = true;
        }
    }
    return p;
}

} // namespace

GidText gid_text(const Gid &g) {
    unsigned words[8];
    for (int i = 0; i < 8; ++i)
        words[i] = static_cast<unsigned>(g[static_cast<std::size_t>(2 * i)] << 8 | g[static_cast<std::size_t>(2 * i + 1)]);
    // The first longest run of zero groups, if at least two long (RFC 5952 section 4.2).
    int best = -1, best_len = 0;
    for (int i = 0; i < 8;) {
        if (words[i]) {
            ++i;
            continue;
        }
        int j = i;
        while (j < 8 && !words[j])
            ++j;
        if (j - i > best_len)
            best = i, best_len = j - i;
        i = j;
    }
    if (best_len < 2)
        best = -1;

    GidText out;
    char *p = out.text;
    for (int i = 0; i < 8; ++i) {
        if (best >= 0 && i >= best && i < best + best_len) {
            if (i == best)
                *p++ = ':';
            continue;
        }
        if (i)
            *p++ = ':';
        // ::a.b.c.d and ::ffff:a.b.c.d, as inet_ntop writes them.
        if (i == 6 && best == 0 && (best_len == 6 || (best_len == 5 && words[5] == 0xffff))) {
            for (std::size_t b = 12; b < 16; ++b) {
                if (b > 12)
                    *p++ = '.';
                p = put_decimal(p, g[b]);
            }
            break;
        }
        p = put_hex(p, words[i]);
    }
    if (best >= 0 && best + best_len == 8)
        *p++ = ':';
    *p = '\0';
    out.size = static_cast<std::uint8_t>(p - out.text);
    return out;
}

std::string format_gid(const Gid &g) { return std::string(gid_text(g).view()); }

std::optional<Gid> parse_gid(std::string_view text) {
    // inet_pton wants a terminated string; an MGID is never longer than an IPv6 address.
    // A NUL inside (JSON's "\u0000") would end inet_pton's text early and pass what came before.
    if (text.empty() || text.size() >= INET6_ADDRSTRLEN || text.find('\0') != text.npos)
        return std::nullopt;
    char terminated[INET6_ADDRSTRLEN];
    text.copy(terminated, text.size());
    terminated[text.size()] = '\0';
    Gid g{};
    if (inet_pton(AF_INET6, terminated, g.data()) != 1)
        return std::nullopt;
    return g;
}

Gid make_gid(std::uint64_t prefix, std::uint64_t guid) {
    // A port's GID is built every time the engine asks for it (several times per join).
    const std::uint64_t halves[2] = {htobe64(prefix), htobe64(guid)};
    Gid g;
    std::memcpy(g.data(), halves, sizeof halves);
    return g;
}

} // namespace mcastd
