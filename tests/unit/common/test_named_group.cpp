// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The named-group mapping: SHA-256 against FIPS 180-4's examples (with and without the CPU's SHA
// extensions), the MGIDs PROTOCOL.md gives as test vectors, the prefix's bits kept, names
// checked, and no two of 10,000 names on one MGID.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "common/named_group.hpp"

namespace mcastd {
namespace {

std::string hex(const Sha256Digest &d) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (auto b : d) {
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
    }
    return out;
}

NamePrefix prefix(std::string_view text) {
    std::string why;
    auto p = parse_name_prefix(text, &why);
    EXPECT_TRUE(p) << text << ": " << why;
    return p.value_or(NamePrefix{});
}

TEST(Sha256, KnownAnswers) {
    EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    // The padding's edges: 55 bytes fit one block with the length, 56 need two, 64 is a block.
    EXPECT_EQ(hex(sha256(std::string(55, 'a'))), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    EXPECT_EQ(hex(sha256(std::string(56, 'a'))), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
    EXPECT_EQ(hex(sha256(std::string(64, 'a'))), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
    EXPECT_EQ(hex(sha256(std::string(1000000, 'a'))),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// sha256() takes the CPU's SHA extensions where there are any: the same digests as the portable
// code, at every length around the block boundaries and beyond, both checked against FIPS above.
TEST(Sha256, WithTheCpusShaExtensionsTheSameDigests) {
    EXPECT_EQ(hex(detail::sha256_portable("abc")),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    if (!detail::sha256_uses_sha_extensions())
        GTEST_SKIP() << "this CPU has no SHA extensions: sha256() is the portable code";
    std::mt19937_64 rng(20261128);
    for (std::size_t length = 0; length <= 300; ++length)
        for (int round = 0; round < 20; ++round) {
            std::string data(length, '\0');
            for (char &c : data)
                c = static_cast<char>(rng());
            ASSERT_EQ(hex(sha256(data)), hex(detail::sha256_portable(data))) << "length " << length;
        }
}

// The vectors of PROTOCOL.md ("Named groups"): another implementation checks itself on these.
TEST(NamedGroup, TestVectors) {
    EXPECT_EQ(hex(sha256(std::string(kGroupNameDomain) + "job-42")),
              "663689a97bcf99db18c22b3d41e99b45db31779d30ad277843480c30555237fc");
    const NamePrefix p64 = prefix("ff15:6e61:6d65::/64");
    EXPECT_EQ(format_gid(named_mgid(p64, "job-42")), "ff15:6e61:6d65:0:6636:89a9:7bcf:99db");
    EXPECT_EQ(format_gid(named_mgid(p64, "ucc/team/7")), "ff15:6e61:6d65:0:2aee:e789:7f20:d817");
    EXPECT_EQ(format_gid(named_mgid(p64, "gr\xc3\xb6\xc3\x9f" "e")), "ff15:6e61:6d65:0:f736:8a46:1b70:fb24");
    EXPECT_EQ(format_gid(named_mgid(prefix("ff15:6e61::/32"), "job-42")), "ff15:6e61:6636:89a9:7bcf:99db:18c2:2b3d");
    // Not on a byte boundary: the digest's bits start in the middle of a byte.
    EXPECT_EQ(format_gid(named_mgid(prefix("ff15:6e61:6000::/36"), "job-42")),
              "ff15:6e61:6663:689a:97bc:f99d:b18c:22b3");
}

TEST(NamedGroup, DeterministicAndKeepsThePrefix) {
    for (std::string_view text : {"ff15:6e61:6d65::/64", "ff12:1234::/32", "ff15:a:2:3000::/52", "ff1e:ffff:ffff::/48"}) {
        const NamePrefix p = prefix(text);
        for (std::string_view name : {"a", "job-42", "x/y/z", "\xe2\x82\xac"}) {
            const Gid g = named_mgid(p, name);
            EXPECT_EQ(g, named_mgid(p, name));
            for (unsigned bit = 0; bit < p.length; ++bit) {
                const bool want = p.bits[bit / 8] & (0x80 >> (bit % 8));
                const bool got = g[bit / 8] & (0x80 >> (bit % 8));
                ASSERT_EQ(want, got) << text << " " << name << " bit " << bit;
            }
            EXPECT_EQ(g[0], 0xff);
        }
    }
}

// contains() compares whole bytes, then the last partial byte under a mask: checked against the
// definition (every one of the first `length` bits equal) with one bit flipped at a time, at
// lengths on and off a byte boundary, a whole MGID (/128, an owned prefix) included.
TEST(NamedGroup, PrefixContainsExactlyItsFirstLengthBits) {
    for (unsigned length : {32u, 36u, 47u, 48u, 63u, 64u, 100u, 128u}) {
        NamePrefix pre;
        pre.length = length;
        pre.bits = named_mgid(prefix("ff15:6e61::/32"), "bits"); // 96 bits of hash after ff15:6e61
        for (unsigned bit = length; bit < 128; ++bit) // clear what lies past the length
            pre.bits[bit / 8] &= static_cast<std::uint8_t>(~(0x80 >> (bit % 8)));
        EXPECT_TRUE(pre.contains(pre.bits)) << length;
        for (unsigned bit = 0; bit < 128; ++bit) {
            Gid g = pre.bits;
            g[bit / 8] ^= static_cast<std::uint8_t>(0x80 >> (bit % 8));
            EXPECT_EQ(pre.contains(g), bit >= length) << "length " << length << ", bit " << bit << " flipped";
        }
    }
}

// The longest name hashes as the domain and the name would, joined (the input is built on the
// stack up to that length); one byte more still maps, on the heap.
TEST(NamedGroup, LongestNameHashesItsWholeInput) {
    const NamePrefix p64 = prefix("ff15:6e61:6d65::/64");
    for (std::size_t n : {kMaxGroupName - 1, kMaxGroupName, kMaxGroupName + 1}) {
        const std::string name(n, 'n');
        const Sha256Digest d = sha256(std::string(kGroupNameDomain) + name);
        const Gid g = named_mgid(p64, name);
        EXPECT_TRUE(std::equal(d.begin(), d.begin() + 8, g.begin() + 8)) << n << " bytes";
    }
}

TEST(NamedGroup, TenThousandNamesTenThousandMgids) {
    const NamePrefix p = prefix("ff15:6e61:6d65::/64");
    std::set<Gid> seen;
    for (int i = 0; i < 10000; ++i)
        seen.insert(named_mgid(p, "job-" + std::to_string(i)));
    EXPECT_EQ(seen.size(), 10000u);
    // Names that differ in one byte, or by a prefix of each other, too.
    std::set<Gid> close{named_mgid(p, "a"), named_mgid(p, "b"), named_mgid(p, "aa"), named_mgid(p, "a ")};
    EXPECT_EQ(close.size(), 4u);
}

TEST(NamedGroup, NamesAreChecked) {
    EXPECT_FALSE(group_name_problem("job-42"));
    EXPECT_FALSE(group_name_problem("with space"));
    EXPECT_FALSE(group_name_problem("gr\xc3\xb6\xc3\x9f" "e"));
    EXPECT_FALSE(group_name_problem(std::string(kMaxGroupName, 'x')));
    EXPECT_EQ(group_name_problem(""), "is empty");
    EXPECT_EQ(group_name_problem(std::string(kMaxGroupName + 1, 'x')), "is 256 bytes long, more than 255");
    EXPECT_EQ(group_name_problem("ab\xff"), "is not UTF-8 (byte 2)");
    EXPECT_EQ(group_name_problem("\xc0\xaf"), "is not UTF-8 (byte 0)"); // overlong '/'
    EXPECT_EQ(group_name_problem("a\nb"), "has a control character at byte 1");
    EXPECT_EQ(group_name_problem(std::string("a\0b", 3)), "has a control character at byte 1");
    EXPECT_EQ(group_name_problem("a\x7f"), "has a control character at byte 1");
    EXPECT_EQ(group_name_problem("a\xc2\x85"), "has a control character at byte 1"); // U+0085 NEL
    EXPECT_FALSE(group_name_problem("a\xc2\xa0"));                                      // U+00A0
}

TEST(NamedGroup, PrefixesAreChecked) {
    EXPECT_EQ(format_name_prefix(prefix("ff15:6e61:6d65:0::/64")), "ff15:6e61:6d65::/64");
    for (const auto &[text, why] : std::vector<std::pair<std::string, std::string>>{
             {"ff15:6e61:6d65::", "has no prefix length (an MGID prefix is written \"ff15:6e61:6d65::/64\")"},
             {"ff15:6e61:6d65::/", "the prefix length after '/' is not a number"},
             {"ff15:6e61:6d65::/6x", "the prefix length after '/' is not a number"},
             {"ff15::/16", "prefix length 16 out of range [32, 64]"},
             {"ff15:6e61:6d65::/65", "prefix length 65 out of range [32, 64]"},
             {"fe80::/64", "is not a multicast GID prefix (those begin with ff)"},
             {"ff15:zz::/32", "\"ff15:zz::\" is not a GID in IPv6 text form"},
             {"ff15:6e61:6d65:0:1::/64", "has bits set past its length 64 (the name's hash goes there)"},
             {"ff15:6e61:6800::/36", "has bits set past its length 36 (the name's hash goes there)"},
         }) {
        std::string got;
        EXPECT_FALSE(parse_name_prefix(text, &got)) << text;
        EXPECT_EQ(got, why) << text;
    }
}

} // namespace
} // namespace mcastd
