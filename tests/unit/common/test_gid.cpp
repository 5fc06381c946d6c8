// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// gid_text() against the C library's inet_ntop, which it stands in for: the same text for every
// pattern of zero groups, the dotted forms, and random GIDs; parse_gid() reads it back.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <random>

#include "common/gid.hpp"

using namespace mcastd;

namespace {

std::string by_inet_ntop(const Gid &g) {
    char buf[INET6_ADDRSTRLEN];
    EXPECT_NE(inet_ntop(AF_INET6, g.data(), buf, sizeof buf), nullptr);
    return buf;
}

Gid from_words(const std::array<unsigned, 8> &w) {
    Gid g{};
    for (std::size_t i = 0; i < 8; ++i) {
        g[2 * i] = static_cast<std::uint8_t>(w[i] >> 8);
        g[2 * i + 1] = static_cast<std::uint8_t>(w[i]);
    }
    return g;
}

void expect_as_inet_ntop(const Gid &g) {
    const std::string want = by_inet_ntop(g);
    const GidText t = gid_text(g);
    ASSERT_EQ(t.view(), want);
    ASSERT_EQ(t.text[t.size], '\0');
    ASSERT_EQ(format_gid(g), want);
    ASSERT_EQ(parse_gid(t.view()), g) << want;
}

} // namespace

TEST(GidText, EveryPatternOfZeroGroupsReadsAsInetNtop) {
    // Each of the 256 choices of which groups are zero, with the others small, large, 0xffff or
    // random: where "::" goes (the longest run, the first of equals, none for a single zero).
    std::mt19937 rng(29);
    const unsigned fixed[] = {1, 0xa, 0x100, 0xffff};
    for (unsigned mask = 0; mask < 256; ++mask)
        for (unsigned k = 0; k < 5; ++k) {
            std::array<unsigned, 8> w{};
            for (unsigned i = 0; i < 8; ++i)
                w[i] = mask & (1u << i) ? 0 : k < 4 ? fixed[k] : 1 + static_cast<unsigned>(rng() % 0xffff);
            expect_as_inet_ntop(from_words(w));
        }
}

TEST(GidText, TheDottedFormsAndTheirNeighbours) {
    expect_as_inet_ntop(kZeroGid);                                            // ::
    expect_as_inet_ntop(from_words({0, 0, 0, 0, 0, 0, 0, 1}));                // ::1
    expect_as_inet_ntop(from_words({0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304})); // ::ffff:1.2.3.4
    expect_as_inet_ntop(from_words({0, 0, 0, 0, 0, 0xffff, 0, 0}));           // ::ffff:0.0.0.0
    expect_as_inet_ntop(from_words({0, 0, 0, 0, 0, 0, 0xc0a8, 0x0101}));      // ::192.168.1.1
    expect_as_inet_ntop(from_words({0, 0, 0, 0, 0, 0xfffe, 0x0102, 0x0304})); // not mapped
    expect_as_inet_ntop(from_words({0, 0, 0, 0, 0, 0, 0, 0x0100}));           // ::100, not dotted
    expect_as_inet_ntop(from_words({1, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304})); // no leading run
    expect_as_inet_ntop(from_words({0, 0, 0, 0, 0, 0xffff, 0xffff, 0xffff}));  // ::ffff:255.255.255.255
    const GidText longest = gid_text(from_words({1, 1, 1, 1, 1, 1, 1, 1}));
    EXPECT_EQ(longest.view(), "1:1:1:1:1:1:1:1");
    expect_as_inet_ntop(from_words({0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff}));
}

TEST(GidText, RandomGidsReadAsInetNtop) {
    std::mt19937 rng(16);
    for (int n = 0; n < 100000; ++n) {
        std::array<unsigned, 8> w{};
        for (unsigned &x : w) {
            // Zero half the time, so runs of every length come up.
            const auto r = static_cast<unsigned>(rng());
            x = r & 1 ? 0 : r >> 16;
        }
        expect_as_inet_ntop(from_words(w));
    }
    for (int n = 0; n < 100000; ++n) {
        Gid g;
        for (auto &b : g)
            b = static_cast<std::uint8_t>(rng());
        expect_as_inet_ntop(g);
    }
}

TEST(ParseGid, TakesTheTextFormAndNothingAround) {
    EXPECT_EQ(parse_gid("ff12:401b::1"), from_words({0xff12, 0x401b, 0, 0, 0, 0, 0, 1}));
    EXPECT_EQ(parse_gid("::ffff:1.2.3.4"), from_words({0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304}));
    EXPECT_FALSE(parse_gid(""));
    EXPECT_FALSE(parse_gid("ff12::1 "));
    EXPECT_FALSE(parse_gid("ff12::g"));
    EXPECT_FALSE(parse_gid("ff12:0:0:0:0:0:0:0:1"));
    // A NUL would end the C library's text early: what came before it must not pass.
    EXPECT_FALSE(parse_gid(std::string_view("ff12::1\0junk", 12)));
    EXPECT_FALSE(parse_gid(std::string_view("ff12::1\0", 8)));
    // 45 characters is the longest text; past it, no GID.
    EXPECT_TRUE(parse_gid("0000:0000:0000:0000:0000:ffff:255.255.255.255"));
    EXPECT_FALSE(parse_gid("0000:0000:0000:0000:0000:ffff:255.255.255.2555"));
}

// GidLess orders the daemon's maps (and so its listings and audits) as std::less<Gid> did:
// pairs that differ in any one byte, in both halves, and random pairs.
TEST(GidLess, OrdersAsTheBytesDo) {
    std::mt19937 rng(29);
    auto random_gid = [&] {
        Gid g;
        for (auto &b : g)
            b = static_cast<std::uint8_t>(rng());
        return g;
    };
    auto expect_same = [](const Gid &a, const Gid &b) {
        ASSERT_EQ(GidLess{}(a, b), std::less<Gid>{}(a, b)) << format_gid(a) << " < " << format_gid(b);
        ASSERT_EQ(GidLess{}(b, a), std::less<Gid>{}(b, a)) << format_gid(b) << " < " << format_gid(a);
    };
    for (int n = 0; n < 20000; ++n) {
        const Gid a = random_gid();
        expect_same(a, a);
        expect_same(a, random_gid());
        Gid b = a; // one byte apart, the other bytes equal
        const auto at = static_cast<std::size_t>(rng() % 16);
        b[at] = static_cast<std::uint8_t>(b[at] + 1 + rng() % 255);
        expect_same(a, b);
    }
    // A high bit in a later byte must not outweigh a lower first byte (signed compares would).
    expect_same(from_words({0x0100, 0, 0, 0, 0, 0, 0, 0}), from_words({0x00ff, 0xffff, 0, 0, 0, 0, 0, 0xffff}));
    expect_same(from_words({0, 0, 0, 0, 0x7fff, 0, 0, 0}), from_words({0, 0, 0, 0, 0x8000, 0, 0, 0}));

    using PortGid = std::pair<std::uint32_t, Gid>;
    const PortGid p1{1, from_words({0xff12, 0, 0, 0, 0, 0, 0, 2})}, p2{2, from_words({0xff12, 0, 0, 0, 0, 0, 0, 1})};
    EXPECT_TRUE(PortGidLess{}(p1, p2));
    EXPECT_FALSE(PortGidLess{}(p2, p1));
    EXPECT_TRUE(PortGidLess{}(PortGid{2, p2.second}, PortGid{2, p1.second}));
    EXPECT_FALSE(PortGidLess{}(p1, p1));
}

TEST(MakeGid, PrefixThenGuidMostSignificantByteFirst) {
    EXPECT_EQ(make_gid(0xfe80000000000000ULL, 0x0002c90300a1b2c3ULL), parse_gid("fe80::2:c903:a1:b2c3"));
    EXPECT_EQ(make_gid(0x0123456789abcdefULL, 0xfedcba9876543210ULL),
              from_words({0x0123, 0x4567, 0x89ab, 0xcdef, 0xfedc, 0xba98, 0x7654, 0x3210}));
}
