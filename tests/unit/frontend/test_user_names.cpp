// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// UserNames: `status` names the uids it lists without asking NSS (getpwuid_r, which may wait on
// sssd or LDAP, on the event loop) more than once a minute per uid, however often it is asked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

#include "fakes/fake_timers.hpp"
#include "frontend/user_names.hpp"

namespace mcastd::test {
namespace {

TEST(UserNames, NssIsAskedOncePerUidAMinuteHoweverOftenANameIsWanted) {
    FakeTimers timers;
    std::map<uid_t, int> asked;
    frontend::UserNames names(timers, [&asked](uid_t uid) {
        ++asked[uid];
        return "user" + std::to_string(uid);
    });
    for (int i = 0; i < 1000; ++i) {
        EXPECT_EQ(names.name(1001), "user1001");
        EXPECT_EQ(names.name(1002), "user1002");
    }
    EXPECT_EQ(asked, (std::map<uid_t, int>{{1001, 1}, {1002, 1}}));
    timers.advance(frontend::UserNames::kFresh);
    EXPECT_EQ(names.name(1001), "user1001");
    EXPECT_EQ(asked[1001], 2) << "a renamed account shows within a minute";
}

TEST(UserNames, TheCacheIsBounded) {
    FakeTimers timers;
    int asked = 0;
    frontend::UserNames names(timers, [&asked](uid_t) { return ++asked, std::string("u"); });
    for (uid_t uid = 0; uid < frontend::UserNames::kMaxEntries + 1; ++uid)
        names.name(uid);
    names.name(0);
    EXPECT_EQ(asked, static_cast<int>(frontend::UserNames::kMaxEntries) + 2) << "uid 0 was forgotten when it filled";
}

TEST(UserNames, PasswdNameIsTheSystemsName) {
    EXPECT_EQ(frontend::passwd_name(0), "root");
    EXPECT_EQ(frontend::passwd_name(static_cast<uid_t>(-2)), "") << "nobody's uid has no entry here";
}

} // namespace
} // namespace mcastd::test
