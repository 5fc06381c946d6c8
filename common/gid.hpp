// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// 128-bit InfiniBand GIDs (MGIDs and PortGIDs), held in network byte order.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace mcastd {

using Gid = std::array<std::uint8_t, 16>;

inline constexpr Gid kZeroGid{};

inline bool is_zero(const Gid &g) { return g == kZeroGid; }

// The order of std::less<Gid> (bytes, most significant first) as two 64-bit compares. The
// daemon's maps keyed by MGID are searched on every join; std::less<Gid> calls memcmp for
// every step down the tree, which was the daemon's largest single user-space cost then.
struct GidLess {
    static std::uint64_t half(const Gid &g, std::size_t at) noexcept {
        std::uint64_t v;
        std::memcpy(&v, g.data() + at, sizeof v);
        return __builtin_bswap64(v);
    }
    bool operator()(const Gid &a, const Gid &b) const noexcept {
        const std::uint64_t ah = half(a, 0), bh = half(b, 0);
        return ah != bh ? ah < bh : half(a, 8) < half(b, 8);
    }
};

template <class T>
using GidMap = std::map<Gid, T, GidLess>;

// (port, MGID) keys in the order of std::less on the pair.
struct PortGidLess {
    template <class Port>
    bool operator()(const std::pair<Port, Gid> &a, const std::pair<Port, Gid> &b) const noexcept {
        return a.first != b.first ? a.first < b.first : GidLess{}(a.second, b.second);
    }
};

// The longest IPv6 text form, "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", and its NUL.
inline constexpr std::size_t kGidTextSize = 46;

// A GID's IPv6 text form in a buffer of its own, for the hot paths (every record a join's answer
// carries has two) where a std::string would be an allocation.
struct GidText {
    char text[kGidTextSize];
    std::uint8_t size;
    std::string_view view() const { return {text, size}; }
};

// IPv6 text form, compressed as inet_ntop does: "ff12:1234::1", byte for byte the same text (the
// longest run of two or more zero groups, the first of equals, becomes "::"; ::a.b.c.d and
// ::ffff:a.b.c.d keep their dotted quad). glibc's inet_ntop prints each group with sprintf: a
// third of the daemon's cost to write a join's answer went there.
GidText gid_text(const Gid &g);
std::string format_gid(const Gid &g);

// Accepts the IPv6 text form (with "::" compression). Returns nullopt on anything else.
std::optional<Gid> parse_gid(std::string_view text);

// Builds a GID from a 64-bit subnet prefix and a 64-bit GUID, both in host order.
Gid make_gid(std::uint64_t prefix, std::uint64_t guid);

// The 16-bit signature in MGID bytes 2-3 (0x401b for IPoIB, 0x4001 for rdma_cm, ...).
inline std::uint16_t mgid_signature(const Gid &mgid) {
    return static_cast<std::uint16_t>(mgid[2] << 8 | mgid[3]);
}

// The scope nibble of an MGID (byte 1, low nibble).
inline std::uint8_t mgid_scope(const Gid &mgid) { return mgid[1] & 0x0f; }

} // namespace mcastd
