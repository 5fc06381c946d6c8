// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Real, unprivileged users and groups for tests of the access policy: the daemon identifies its
// socket clients by SO_PEERCRED and its D-Bus callers by the bus's credentials, so a test of a
// rule has to run its clients as other users, not pretend to.
//
// TestUsers (as root) creates groups and users with names unique to the test process
// ("mcp<pid>-<rand><tag>", no home, shell nologin) and deletes every one of them in its
// destructor, also when the test fails. What a test killed before its destructor left, it
// removes as it starts (maker_of() names the process that made a name). Clients run as a user through
// `setpriv --reuid=U --regid=G --init-groups` (as_user()), so the supplementary groups come from
// the group file exactly as they would at a login.
//
// Declare it before anything that runs as its users (its destructor runs last): userdel refuses
// a user who still runs a process, and the destructor reports that as a test failure.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mcastd::sim {

struct TestUser {
    std::string name;
    uid_t uid = 0;
    gid_t gid = 0; // primary group
};

struct TestGroup {
    std::string name;
    gid_t gid = 0;
};

class TestUsers {
public:
    // Why users cannot be made here ("not root", "no useradd in PATH ..."), or nullopt when they
    // can. A test calls GTEST_SKIP() with it.
    static std::optional<std::string> unavailable();

    TestUsers();
    ~TestUsers();
    TestUsers(const TestUsers &) = delete;
    TestUsers &operator=(const TestUsers &) = delete;

    // groupadd; `tag` (a few lower-case letters) ends the name. Throws with groupadd's output.
    TestGroup add_group(const std::string &tag);
    // useradd with `primary` as its group and `supplementary` as further ones.
    TestUser add_user(const std::string &tag, const TestGroup &primary,
                      const std::vector<TestGroup> &supplementary = {});
    // usermod -a -G: adds `user` to `group` (seen by processes started after this).
    void add_to_group(const TestUser &user, const TestGroup &group);

    // setpriv ... argv: `argv` run as `user` with its primary and supplementary groups.
    static std::vector<std::string> as_user(const TestUser &user, std::vector<std::string> argv);

    // Removes the users and groups of test processes that are gone (the constructor does).
    static void sweep();

    // Every name this fixture created, for the check that nothing is left behind.
    std::vector<std::string> user_names() const;
    std::vector<std::string> group_names() const;

private:
    std::string prefix_;
    std::vector<TestUser> users_;
    std::vector<TestGroup> groups_;
};

// The pid of the test process that made user or group `name`, or nullopt when TestUsers did
// not make it.
std::optional<pid_t> maker_of(const std::string &name);

// Gives "others" search (x, not read) permission on `top` and every directory between it and
// `file`, so that unprivileged users can reach `file` (the fabric's scratch directory is 0700).
// What may then use the file is the file's own mode.
void make_reachable(const std::filesystem::path &file, const std::filesystem::path &top);

// True when `name` is in /etc/passwd (users) or /etc/group (groups): the leak check.
bool in_passwd(const std::string &name);
bool in_group_file(const std::string &name);

} // namespace mcastd::sim
