// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Subordinate uid ranges (config limits.subuid_file): which uid's share a uid takes, as the file
// says now. Owner names go through a fake passwd lookup.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "frontend/subordinate_ids.hpp"

namespace mcastd::test {
namespace {

using frontend::SubordinateIds;

std::optional<uid_t> fake_passwd(const std::string &name) {
    if (name == "alice")
        return 1001;
    if (name == "bob")
        return 1002;
    if (name == "root")
        return 0;
    return std::nullopt;
}

class Subuids : public ::testing::Test {
protected:
    Subuids() {
        char tmpl[] = "/tmp/mcastd-subuid-XXXXXX";
        dir_ = ::mkdtemp(tmpl);
        path_ = dir_ / "subuid";
    }
    ~Subuids() override { std::filesystem::remove_all(dir_); }

    // Written as shadow's tools write it: a new file renamed over the old one.
    void write(const std::string &text) {
        const auto next = dir_ / "subuid+";
        std::ofstream(next) << text;
        std::filesystem::rename(next, path_);
    }

    std::filesystem::path dir_, path_;
};

TEST_F(Subuids, AUidInARangeIsChargedToItsOwnerByNameOrUid) {
    write("alice:100000:65536\n"
          "1002:165536:65536\n");
    SubordinateIds ids(path_, fake_passwd);
    EXPECT_EQ(ids.account_of(100000), 1001u);
    EXPECT_EQ(ids.account_of(165535), 1001u) << "the range's last uid";
    EXPECT_EQ(ids.account_of(165536), 1002u);
    EXPECT_EQ(ids.account_of(231071), 1002u);
    EXPECT_EQ(ids.account_of(231072), 231072u) << "past every range: its own";
    EXPECT_EQ(ids.account_of(99999), 99999u);
    EXPECT_EQ(ids.account_of(1001), 1001u);
    EXPECT_EQ(ids.ranges(), 2u);
}

TEST_F(Subuids, RootsRangeKeepsItsUidsOwnSharesAndBadLinesAreSkipped) {
    write("# written by hand\n"
          "\n"
          "root:100000:65536\n"    // root has no share to charge
          "nobody-here:200000:10\n" // no such user
          "alice:300000\n"          // two fields
          "alice:x:10\n"            // not a number
          "alice:400000:0\n"        // an empty range
          "alice:4294967290:10\n"   // past the 32-bit uids
          "alice:500000:10:extra\n" // four fields
          "alice:600000:10\n");
    SubordinateIds ids(path_, fake_passwd);
    EXPECT_EQ(ids.account_of(100005), 100005u) << "root's range: no account but its own";
    EXPECT_EQ(ids.account_of(200005), 200005u);
    EXPECT_EQ(ids.account_of(4294967291u), 4294967291u);
    EXPECT_EQ(ids.account_of(500005), 500005u);
    EXPECT_EQ(ids.account_of(600005), 1001u) << "a good line after bad ones still counts";
    EXPECT_EQ(ids.ranges(), 1u);
}

TEST_F(Subuids, RootIsNobodysSubordinate) {
    write("alice:0:100\n");
    SubordinateIds ids(path_, fake_passwd);
    EXPECT_EQ(ids.account_of(0), 0u) << "root keeps its reserve and no share";
    EXPECT_EQ(ids.account_of(1), 1001u);
}

TEST_F(Subuids, OverlappingRangesChargeTheFirstListed) {
    write("bob:100000:100\nalice:100050:100\n");
    SubordinateIds ids(path_, fake_passwd);
    EXPECT_EQ(ids.account_of(100060), 1002u);
    EXPECT_EQ(ids.account_of(100120), 1001u);
}

TEST_F(Subuids, TheFileIsReadAgainOnceItChangedAndNoFileIsNoRanges) {
    SubordinateIds ids(path_, fake_passwd);
    EXPECT_EQ(ids.account_of(100000), 100000u) << "no file yet";
    write("alice:100000:65536\n");
    EXPECT_EQ(ids.account_of(100000), 1001u) << "a range useradd just added counts at once";
    write("bob:100000:65536\n");
    EXPECT_EQ(ids.account_of(100000), 1002u);
    std::filesystem::remove(path_);
    EXPECT_EQ(ids.account_of(100000), 100000u) << "a file removed is no ranges";
}

TEST_F(Subuids, NoFileConfiguredChargesEveryUidToItself) {
    write("alice:100000:65536\n");
    SubordinateIds ids(path_, fake_passwd);
    EXPECT_EQ(ids.account_of(100000), 1001u);
    ids.set_file("");
    EXPECT_EQ(ids.account_of(100000), 100000u);
    EXPECT_EQ(ids.ranges(), 0u);
    ids.set_file(path_);
    EXPECT_EQ(ids.account_of(100000), 1001u);
}

TEST_F(Subuids, TheRealPasswdNamesRoot) {
    EXPECT_EQ(frontend::passwd_uid("root"), std::optional<uid_t>(0));
    EXPECT_EQ(frontend::passwd_uid("no-such-user-of-rdma-mcastd"), std::nullopt);
}

} // namespace
} // namespace mcastd::test
