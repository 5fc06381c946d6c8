// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// read_rest: the read loop of every file the daemon reads whole. It reads to the end, stops
// once past a bound (E2BIG), and keeps what came before a failed read.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "runtime/small_file.hpp"

using mcastd::runtime::read_rest;

namespace {

// A pipe whose read end holds `text` and then EOF.
int pipe_of(const std::string &text) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0 || ::write(p[1], text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        return -1;
    ::close(p[1]);
    return p[0];
}

} // namespace

TEST(ReadRest, ReadsToTheEndAfterWhatIsThere) {
    const std::string text(20000, 'x'); // several reads
    const int fd = pipe_of(text);
    ASSERT_GE(fd, 0);
    std::string out = "before:";
    EXPECT_EQ(read_rest(fd, out), 0);
    EXPECT_EQ(out, "before:" + text);
    ::close(fd);
}

TEST(ReadRest, StopsOncePastItsBound) {
    const int fd = pipe_of(std::string(60000, 'x'));
    ASSERT_GE(fd, 0);
    std::string out;
    EXPECT_EQ(read_rest(fd, out, 10000), E2BIG);
    EXPECT_GT(out.size(), 10000u);
    EXPECT_LT(out.size(), 60000u) << "it stopped reading";
    ::close(fd);
}

TEST(ReadRest, AFailedReadIsItsErrnoAndKeepsWhatCameBefore) {
    const int dir = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dir, 0);
    std::string out = "kept";
    EXPECT_EQ(read_rest(dir, out), EISDIR);
    EXPECT_EQ(out, "kept");
    ::close(dir);
}
