// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The rules of text that comes from clients and /proc (common/utf8.hpp, common/device_name.hpp):
// what is valid, what is replaced by U+FFFD, how a bad value is quoted.
#include <gtest/gtest.h>

#include "common/device_name.hpp"
#include "common/utf8.hpp"

namespace mcastd {
namespace {

const std::string R(kReplacementCharacter);

TEST(ClientText, ValidUtf8ReplacesEveryByteThatIsNotUtf8AndKeepsTheRest) {
    EXPECT_EQ(valid_utf8("plain \x01 text"), "plain \x01 text") << "controls are valid UTF-8";
    EXPECT_EQ(valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    EXPECT_EQ(valid_utf8("\xff\xfe"), R + R);
    EXPECT_EQ(valid_utf8("a\xc3"), "a" + R) << "a truncated sequence";
    EXPECT_EQ(valid_utf8("\xc0\xaf"), R + R) << "an overlong '/'";
    EXPECT_EQ(valid_utf8("\xed\xa0\x80"), R + R + R) << "a UTF-16 surrogate";
    EXPECT_EQ(valid_utf8("\xf4\x90\x80\x80"), R + R + R + R) << "above U+10FFFF";
    EXPECT_EQ(valid_utf8(std::string_view("a\0b", 3)), std::string("a\0b", 3));
    // A process name as /proc gives it: 15 bytes, the last character cut in half.
    EXPECT_EQ(valid_utf8("worker-\xc3\xa9\xc3\xa9\xc3\xa9\xc3"), "worker-\xc3\xa9\xc3\xa9\xc3\xa9" + R);
}

TEST(ClientText, PrintableUtf8AlsoReplacesControlCharacters) {
    EXPECT_EQ(printable_utf8("my-app"), "my-app");
    EXPECT_EQ(printable_utf8("a\x1b[2J"), "a" + R + "[2J");
    EXPECT_EQ(printable_utf8("\t\x7f"), R + R);
    EXPECT_EQ(printable_utf8("\xc2\x85x\xc2\xa0"), R + "x\xc2\xa0") << "C1 NEL is a control, NBSP is not";
    EXPECT_EQ(printable_utf8("\xff\xfe"), R + R);
}

TEST(ClientText, TextProblemNamesTheFirstBadByte) {
    EXPECT_EQ(text_problem("job-1234/allreduce \xc3\xa9"), std::nullopt);
    EXPECT_EQ(text_problem(""), std::nullopt);
    EXPECT_EQ(text_problem("ab\xff"), "is not UTF-8 (byte 2)");
    EXPECT_EQ(text_problem("ab\n"), "has a control character at byte 2");
    EXPECT_EQ(text_problem("\xc2\x9f"), "has a control character at byte 0");
}

TEST(ClientText, EscapeBytesKeepsPrintableAsciiOnly) {
    EXPECT_EQ(escape_bytes("mlx5_0"), "mlx5_0");
    EXPECT_EQ(escape_bytes("a\x1b\"\\\xc3\xa9 b"), "a\\x1b\\x22\\x5c\\xc3\\xa9 b");
    EXPECT_EQ(escape_bytes(std::string(70, 'x')), std::string(64, 'x') + "...");
    EXPECT_EQ(escape_bytes("abcd", 2), "ab...");
}

TEST(DeviceName, WhatSysfsAllows) {
    for (const char *ok : {"mlx5_0", "rxe0", "hfi1_0", "ibp94s0f0", "a", "...", "x.y-z:1"})
        EXPECT_EQ(device_name_problem(ok), std::nullopt) << ok;
    EXPECT_EQ(device_name_problem(std::string(kMaxDeviceName, 'm')), std::nullopt);
    EXPECT_EQ(kMaxDeviceName, 63u) << "IB_DEVICE_NAME_MAX is 64 with its NUL";
}

TEST(DeviceName, AnythingElseIsNamedWithTheValueEscaped) {
    const auto why = [](std::string_view n) { return device_name_problem(n).value_or("(accepted)"); };
    EXPECT_EQ(why(""), "\"\" is not an RDMA device name: it is empty (a device name is 1..63 printable ASCII "
                       "characters without '/' or spaces, as in sysfs)");
    EXPECT_NE(why(std::string(64, 'm')).find("it is 64 bytes long"), std::string::npos);
    EXPECT_NE(why(".").find("it names a directory"), std::string::npos);
    EXPECT_NE(why("..").find("it names a directory"), std::string::npos);
    EXPECT_NE(why("a/b").find("byte 1 is '/'"), std::string::npos);
    EXPECT_NE(why("a b").find("byte 1 is not printable ASCII"), std::string::npos);
    EXPECT_NE(why("mlx5\x1b[2J").find("\"mlx5\\x1b[2J\" is not an RDMA device name: byte 4"), std::string::npos);
    EXPECT_NE(why("ml\xc3\xa9").find("\"ml\\xc3\\xa9\""), std::string::npos);
    EXPECT_EQ(why("a\nb").find('\n'), std::string::npos) << "never raw";
    EXPECT_LT(why(std::string(100000, '\x01')).size(), 512u) << "a long value is cut in the quote";
}

} // namespace
} // namespace mcastd
