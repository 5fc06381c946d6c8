// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// valid_utf8: well-formed text passes unchanged, every byte that starts no well-formed sequence
// becomes U+FFFD (overlongs, surrogates, truncated sequences, stray continuation bytes).
#include <gtest/gtest.h>

#include "common/utf8.hpp"

namespace mcastd::proto {
namespace {

constexpr const char *kReplacement = "\xEF\xBF\xBD";

TEST(ValidUtf8, WellFormedTextIsUnchanged) {
    for (const char *s : {"", "my-app", "caf\xC3\xA9", "\xE2\x82\xAC 5", "\xF0\x9F\x98\x80", "tab\tand\nnewline"})
        EXPECT_EQ(valid_utf8(s), s);
}

TEST(ValidUtf8, EachBadByteBecomesOneReplacementCharacter) {
    const std::string r = kReplacement;
    EXPECT_EQ(valid_utf8("a\xFF" "b"), "a" + r + "b");
    EXPECT_EQ(valid_utf8("\x80\x80"), r + r) << "stray continuation bytes";
    EXPECT_EQ(valid_utf8("\xC0\xAF"), r + r) << "an overlong '/'";
    EXPECT_EQ(valid_utf8("\xED\xA0\x80"), r + r + r) << "a surrogate";
    EXPECT_EQ(valid_utf8("x\xE2\x82"), "x" + r + r) << "a sequence cut short";
    EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), r + r + r + r) << "above U+10FFFF";
    // A process name as /proc gives it: 15 bytes, the last character cut in half.
    EXPECT_EQ(valid_utf8("worker-\xC3\xA9\xC3\xA9\xC3\xA9\xC3"), "worker-\xC3\xA9\xC3\xA9\xC3\xA9" + r);
}

} // namespace
} // namespace mcastd::proto
