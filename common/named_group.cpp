// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "common/named_group.hpp"

#include <charconv>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "common/utf8.hpp"

namespace mcastd {

namespace {

// FIPS 180-4, section 6.2.
constexpr std::uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::uint32_t rotr(std::uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

void compress(std::uint32_t (&h)[8], const std::uint8_t *block) {
    std::uint32_t w[64];
    for (unsigned i = 0; i < 16; ++i)
        w[i] = std::uint32_t{block[4 * i]} << 24 | std::uint32_t{block[4 * i + 1]} << 16 |
               std::uint32_t{block[4 * i + 2]} << 8 | std::uint32_t{block[4 * i + 3]};
    for (unsigned i = 16; i < 64; ++i) {
        const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (unsigned i = 0; i < 64; ++i) {
        const std::uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
        const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

#if defined(__x86_64__)
// The compression function with the SHA extensions (SHA-NI): two rounds per instruction, a
// named join's hash in about a tenth of the instructions of compress() above. The state is
// kept as the instructions want it, ABEF and CDGH.
__attribute__((target("sha,sse4.1"))) void compress_sha_extensions(std::uint32_t (&h)[8],
                                                                     const std::uint8_t *block) {
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i *>(&h[0]));
    __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i *>(&h[4]));
    const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    const __m128i abef_in = abef, cdgh_in = cdgh;

    __m128i w[4]; // the last four groups of four message words
    for (unsigned g = 0; g < 16; ++g) {
        __m128i &m = w[g % 4];
        if (g < 4) {
            m = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(block + 16 * g)), byte_swap);
        } else {
            // W[t] = sigma1(W[t-2]) + W[t-7] + sigma0(W[t-15]) + W[t-16], four at a time.
            m = _mm_sha256msg1_epu32(m, w[(g + 1) % 4]);
            m = _mm_add_epi32(m, _mm_alignr_epi8(w[(g + 3) % 4], w[(g + 2) % 4], 4));
            m = _mm_sha256msg2_epu32(m, w[(g + 3) % 4]);
        }
        __m128i wk = _mm_add_epi32(m, _mm_loadu_si128(reinterpret_cast<const __m128i *>(&kK[4 * g])));
        cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
        wk = _mm_shuffle_epi32(wk, 0x0E);
        abef = _mm_sha256rnds2_epu32(abef, cdgh, wk);
    }

    abef = _mm_add_epi32(abef, abef_in);
    cdgh = _mm_add_epi32(cdgh, cdgh_in);
    const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    dcba = _mm_blend_epi16(feba, dchg, 0xF0);
    hgfe = _mm_alignr_epi8(dchg, feba, 8);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(&h[0]), dcba);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(&h[4]), hgfe);
}

bool cpu_has_sha_extensions() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3))
        return false;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
}
#endif

using Compress = void (*)(std::uint32_t (&)[8], const std::uint8_t *);

Compress chosen_compress() {
#if defined(__x86_64__)
    static const Compress chosen = cpu_has_sha_extensions() ? compress_sha_extensions : compress;
    return chosen;
#else
    return compress;
#endif
}

Sha256Digest sha256_with(std::string_view data, Compress compress_block) {
    std::uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const auto *p = reinterpret_cast<const std::uint8_t *>(data.data());
    std::size_t left = data.size();
    for (; left >= 64; left -= 64, p += 64)
        compress_block(h, p);
    // The tail, 0x80, zeros, and the length in bits (big-endian): one or two blocks.
    std::uint8_t tail[128] = {};
    std::memcpy(tail, p, left);
    tail[left] = 0x80;
    const std::size_t blocks = left + 1 + 8 <= 64 ? 1 : 2;
    const std::uint64_t bits = std::uint64_t{data.size()} * 8;
    for (unsigned i = 0; i < 8; ++i)
        tail[blocks * 64 - 1 - i] = static_cast<std::uint8_t>(bits >> (8 * i));
    for (std::size_t b = 0; b < blocks; ++b)
        compress_block(h, tail + 64 * b);
    Sha256Digest out{};
    for (unsigned i = 0; i < 8; ++i)
        for (unsigned j = 0; j < 4; ++j)
            out[4 * i + j] = static_cast<std::uint8_t>(h[i] >> (24 - 8 * j));
    return out;
}

} // namespace

Sha256Digest sha256(std::string_view data) { return sha256_with(data, chosen_compress()); }

namespace detail {
Sha256Digest sha256_portable(std::string_view data) { return sha256_with(data, compress); }
bool sha256_uses_sha_extensions() { return chosen_compress() != compress; }
} // namespace detail

std::optional<std::string> group_name_problem(std::string_view name) {
    if (name.empty())
        return "is empty";
    if (name.size() > kMaxGroupName)
        return "is " + std::to_string(name.size()) + " bytes long, more than " + std::to_string(kMaxGroupName);
    if (auto why = text_problem(name))
        return *why;
    return std::nullopt;
}

std::optional<NamePrefix> parse_name_prefix(std::string_view text, std::string *why) {
    return parse_mgid_prefix_bits(text, kMinNamePrefixBits, kMaxNamePrefixBits, " (the name's hash goes there)", why);
}

std::optional<NamePrefix> parse_mgid_prefix_bits(std::string_view text, unsigned min_bits, unsigned max_bits,
                                                 std::string_view past, std::string *why) {
    auto fail = [&](std::string reason) -> std::optional<NamePrefix> {
        if (why)
            *why = std::move(reason);
        return std::nullopt;
    };
    const auto slash = text.find('/');
    if (slash == text.npos)
        return fail("has no prefix length (an MGID prefix is written \"ff15:6e61:6d65::/64\")");
    const std::string_view len_text = text.substr(slash + 1);
    unsigned len = 0;
    const auto [end, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), len);
    if (len_text.empty() || ec != std::errc() || end != len_text.data() + len_text.size())
        return fail("the prefix length after '/' is not a number");
    if (len < min_bits || len > max_bits)
        return fail("prefix length " + std::to_string(len) + " out of range [" + std::to_string(min_bits) + ", " +
                    std::to_string(max_bits) + "]");
    const auto g = parse_gid(text.substr(0, slash));
    if (!g)
        return fail("\"" + std::string(text.substr(0, slash)) + "\" is not a GID in IPv6 text form");
    if ((*g)[0] != 0xff)
        return fail("is not a multicast GID prefix (those begin with ff)");
    for (unsigned bit = len; bit < 128; ++bit)
        if ((*g)[bit / 8] & (0x80 >> (bit % 8)))
            return fail("has bits set past its length " + std::to_string(len) + std::string(past));
    return NamePrefix{*g, len};
}

std::string format_name_prefix(const NamePrefix &p) { return format_gid(p.bits) + "/" + std::to_string(p.length); }

bool NamePrefix::contains(const Gid &mgid) const {
    const unsigned whole = length / 8, rest = length % 8;
    if (std::memcmp(mgid.data(), bits.data(), whole) != 0)
        return false;
    const auto mask = static_cast<std::uint8_t>(0xff00u >> rest); // the first `rest` bits
    return rest == 0 || ((mgid[whole] ^ bits[whole]) & mask) == 0;
}

Gid named_mgid(const NamePrefix &prefix, std::string_view name) {
    // The input on the stack: a join's name is at most kMaxGroupName bytes, and this runs on
    // every named join.
    std::array<char, kGroupNameDomain.size() + kMaxGroupName> buf;
    std::string heap;
    std::string_view input;
    if (name.size() <= kMaxGroupName) {
        std::memcpy(buf.data(), kGroupNameDomain.data(), kGroupNameDomain.size());
        std::memcpy(buf.data() + kGroupNameDomain.size(), name.data(), name.size());
        input = {buf.data(), kGroupNameDomain.size() + name.size()};
    } else {
        heap = std::string(kGroupNameDomain) + std::string(name);
        input = heap;
    }
    const Sha256Digest d = sha256(input);
    // Bit i of the MGID (0 = the most significant) is the prefix's below `length`, and bit
    // i - length of the digest from there on: byte by byte, the digest shifted right by length.
    const unsigned first = prefix.length / 8, shift = prefix.length % 8;
    Gid out = prefix.bits;
    for (unsigned b = first; b < out.size(); ++b) {
        const unsigned k = b - first; // digest byte whose high bits land in this byte
        const unsigned hi = shift ? (k ? d[k - 1] : 0u) << (8 - shift) : 0u;
        out[b] = static_cast<std::uint8_t>(out[b] | ((hi | d[k] >> shift) & 0xffu));
    }
    return out;
}

} // namespace mcastd
