// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// TestUsers' sweep (test_users.hpp): the users and groups a killed test left are removed by the
// next test that makes users; those of a test that still runs are kept. Real useradd, as root.
#include <gtest/gtest.h>
#include <unistd.h>

#include "sim/fabric.hpp"
#include "sim/test_users.hpp"

namespace mcastd::sim {
namespace {

int admin(std::vector<std::string> argv) {
    argv.front() = find_tool(argv.front())->string();
    Process p(Process::Options{.argv = std::move(argv), .merge_stderr = true});
    return p.wait(60s).value_or(-1);
}

TEST(TestUsersSweep, TheMakerIsReadFromTheName) {
    EXPECT_EQ(maker_of("mcp123-0abcv"), std::optional<pid_t>(123));
    EXPECT_EQ(maker_of("mcp123-0abc"), std::optional<pid_t>(123));
    EXPECT_EQ(maker_of("mcp61894d36v"), std::nullopt) << "no dash: not one TestUsers makes now";
    EXPECT_EQ(maker_of("mcp-0abcv"), std::nullopt);
    EXPECT_EQ(maker_of("mcp12-0ABCv"), std::nullopt);
    EXPECT_EQ(maker_of("mcp12-0abc-x"), std::nullopt);
    EXPECT_EQ(maker_of("root"), std::nullopt);
}

TEST(TestUsersSweep, RemovesWhatADeadTestLeftAndKeepsALiveOnes) {
    if (auto why = TestUsers::unavailable())
        GTEST_SKIP() << *why;
    // A pid that is gone: a child that exited and was reaped.
    Process gone(Process::Options{.argv = {"true"}});
    const pid_t dead = gone.pid();
    ASSERT_EQ(gone.wait(10s), std::optional<int>(0));
    const std::string dead_group = "mcp" + std::to_string(dead) + "-0abcg";
    const std::string dead_user = "mcp" + std::to_string(dead) + "-0abcv";
    const std::string live_user = "mcp" + std::to_string(::getpid()) + "-0abcl";
    ASSERT_EQ(admin({"groupadd", dead_group}), 0);
    for (const std::string &u : {dead_user, live_user})
        ASSERT_EQ(admin({"useradd", "--no-create-home", "--no-user-group", "--gid", dead_group, "--shell",
                         "/usr/sbin/nologin", u}),
                  0);

    TestUsers::sweep();
    EXPECT_FALSE(in_passwd(dead_user)) << "its maker is gone";
    EXPECT_TRUE(in_passwd(live_user)) << "its maker runs";
    EXPECT_TRUE(in_group_file(dead_group)) << "a group with a member left is not removed";

    EXPECT_EQ(admin({"userdel", live_user}), 0);
    TestUsers::sweep();
    EXPECT_FALSE(in_group_file(dead_group)) << "removed once nobody is in it";
}

} // namespace
} // namespace mcastd::sim
