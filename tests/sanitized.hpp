// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Whether this is the sanitized build (scripts/test --asan: MCASTD_SANITIZE, AddressSanitizer
// and UBSan together), for the few checks that cannot hold there.
#pragma once

namespace mcastd::testing_build {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// UBSan's vptr check reads the object it checks through a pipe of its own (sanitizer_common's
// IsAccessibleMemoryRange() returns false when pipe() fails): with every descriptor taken, it
// reports a valid object as "invalid vptr". A test that fills the descriptor table on purpose
// says this and skips, in the sanitized build only.
inline constexpr const char *kNoDescriptorForUbsan =
    "UBSan's vptr check needs a free descriptor, which this test takes away";

// What ASAN_OPTIONS needs under a unit with SystemCallFilter= (both of ours have one):
// LeakSanitizer stops the process with ptrace at its exit, which the filter refuses, and the
// process then fails ("LeakSanitizer does not work under ptrace"). The sim tier, which runs the
// daemon without the unit, keeps checking its leaks.
inline constexpr const char *kAsanOptionsUnderSyscallFilter = "detect_leaks=0";

} // namespace mcastd::testing_build
