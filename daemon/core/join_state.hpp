// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// JoinState bit algebra the engine applies to one port's membership of one group.
//
// A port holds one 4-bit JoinState per group at the SA (doc/sa-multicast.md §11). The engine
// counts members per bit and derives from the counts what the port should hold.
#pragma once

#include <array>
#include <cstdint>

#include "common/record.hpp"

namespace mcastd {

// Bits effectively present at the SA: a FullMember also serves send-only-full members.
constexpr std::uint8_t cover(std::uint8_t bits) {
    return (bits & join::full) ? static_cast<std::uint8_t>(bits | join::send_only_full) : bits;
}

// What the port should hold for the bits its members need: 0x1 or 0x8, never both
// (doc/sa-multicast.md §13, the OpenSM MLID leak).
constexpr std::uint8_t normalize(std::uint8_t bits) {
    return (bits & join::full) ? static_cast<std::uint8_t>(bits & ~join::send_only_full) : bits;
}

// Active members per JoinState bit (index 0 = 0x1 ... 3 = 0x8).
using BitCounts = std::array<std::uint32_t, 4>;

// The bits some member needs, normalized.
constexpr std::uint8_t wanted_bits(const BitCounts &counts) {
    std::uint8_t b = 0;
    for (unsigned i = 0; i < 4; ++i)
        if (counts[i])
            b = static_cast<std::uint8_t>(b | (1u << i));
    return normalize(b);
}

// Adds `delta` members to each bit of `bits`.
constexpr void count_bits(BitCounts &counts, std::uint8_t bits, int delta) {
    for (unsigned i = 0; i < 4; ++i)
        if (bits & (1u << i))
            counts[i] = static_cast<std::uint32_t>(static_cast<int>(counts[i]) + delta);
}

} // namespace mcastd
