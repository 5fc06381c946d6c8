// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Named groups (PROTOCOL.md, "Named groups"): a name maps to an MGID by a fixed, documented
// function, so that every host configured with the same prefix reaches the same group from the
// same name, with nobody creating the group first and broadcasting its MGID.
//
//   digest = SHA-256("rdma-mcastd:named-group:v1:" || name)          (name: its UTF-8 bytes)
//   MGID   = the prefix's first L bits || the digest's first 128 - L bits
//
// where L is the prefix length (32..64, so at least 64 bits of the digest). Pure functions, no
// I/O; SHA-256 is FIPS 180-4, self-contained here (the project links no crypto library).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/gid.hpp"

namespace mcastd {

// The bytes hashed before the name: a new mapping would change the version, never reuse this.
inline constexpr std::string_view kGroupNameDomain = "rdma-mcastd:named-group:v1:";
// A name is 1..kMaxGroupName bytes of well-formed UTF-8 without control characters.
inline constexpr std::size_t kMaxGroupName = 255;
// The prefix length: at least 32 bits (so the MGID's flags, scope and signature are the
// operator's, never the hash's), at most 64 (so at least 64 bits of the hash).
inline constexpr unsigned kMinNamePrefixBits = 32;
inline constexpr unsigned kMaxNamePrefixBits = 64;

using Sha256Digest = std::array<std::uint8_t, 32>;
// With the CPU's SHA extensions where it has them (x86-64), every named join hashes its name.
Sha256Digest sha256(std::string_view data);

namespace detail {
// The same digest without the SHA extensions, and whether sha256() uses them: for the test
// that holds the two to each other.
Sha256Digest sha256_portable(std::string_view data);
bool sha256_uses_sha_extensions();
} // namespace detail

// Why `name` is not a group name ("is empty", "byte 3 is a control character", ...), or nullopt.
std::optional<std::string> group_name_problem(std::string_view name);

// A prefix as the config writes it, "ff15:6e61:6d65::/64".
struct NamePrefix {
    Gid bits{};          // the prefix; every bit past `length` is zero
    unsigned length = 0; // kMinNamePrefixBits..kMaxNamePrefixBits
    bool contains(const Gid &mgid) const; // its first `length` bits are the prefix's
    bool operator==(const NamePrefix &) const = default;
};
// The prefix, or why `text` is not one (its length out of range, bits set past it, not ff...).
std::optional<NamePrefix> parse_name_prefix(std::string_view text, std::string *why = nullptr);
// The same for a prefix of `min_bits`..`max_bits` (groups.owned_prefixes: 32..128, a whole MGID
// being /128); parse_name_prefix is this with the named groups' range. `past` follows the
// complaint about bits set past the length (" (the name's hash goes there)").
std::optional<NamePrefix> parse_mgid_prefix_bits(std::string_view text, unsigned min_bits, unsigned max_bits,
                                                 std::string_view past, std::string *why);
std::string format_name_prefix(const NamePrefix &p);

// The MGID of `name` under `prefix` (the name is not checked: group_name_problem() first).
Gid named_mgid(const NamePrefix &prefix, std::string_view name);

// The daemon's side (config groups.names): whether it maps names, under which prefix, and the
// P_Key of the groups (asserted on every named join, so a create gets it and a group of
// another P_Key is a conflict). The default prefix is ff15:6e61:6d65::/64: transient,
// site-local, and "name" in ASCII where the signature goes.
struct NamedGroups {
    bool enabled = true;
    NamePrefix prefix{{0xff, 0x15, 0x6e, 0x61, 0x6d, 0x65}, 64};
    std::uint16_t pkey = 0xffff;
    bool operator==(const NamedGroups &) const = default;
};

} // namespace mcastd
