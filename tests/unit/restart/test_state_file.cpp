// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "restart/state_file.hpp"

namespace mcastd::restart {
namespace {

namespace fs = std::filesystem;

class StateFileTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/mcastd-state-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { fs::remove_all(dir_); }

    SavedState state(std::uint64_t next) {
        SavedState st;
        st.boot_id = "boot-a";
        st.next_session = next;
        st.ports.push_back(SavedPort{"mlx5_0", 1, *parse_gid("fe80::1"), {SavedGroup{*parse_gid("ff15::7"), 1, 0, {}}}});
        return st;
    }
    void put(const std::string &text) { std::ofstream(dir_ / "state.json") << text; }
    // Appends the Sets to `f`'s log as an instance of boot-a would.
    static std::optional<std::string> log_sets(const StateFile &f, const std::vector<SavedSet> &sets,
                                               const char *daemon = "d") {
        return f.append(encode_sets_header("boot-a", daemon), sets);
    }

    fs::path dir_;
};

TEST_F(StateFileTest, NoFileIsAFirstStart) {
    StateFile f(dir_);
    auto loaded = f.load("boot-a");
    EXPECT_FALSE(loaded.state);
    EXPECT_TRUE(loaded.set_aside.empty());
}

TEST_F(StateFileTest, WriteThenLoad) {
    StateFile f(dir_);
    ASSERT_EQ(f.write(state(5)), std::nullopt);
    auto loaded = f.load("boot-a");
    ASSERT_TRUE(loaded.state);
    EXPECT_EQ(*loaded.state, state(5));
    struct stat st{};
    ASSERT_EQ(::stat(f.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u); // client tokens inside
}

TEST_F(StateFileTest, WriteReplacesAtomicallyAndLeavesNoTemporary) {
    StateFile f(dir_);
    ASSERT_EQ(f.write(state(5)), std::nullopt);
    struct stat before{};
    ASSERT_EQ(::stat(f.path().c_str(), &before), 0);
    ASSERT_EQ(f.write(state(6)), std::nullopt);
    struct stat after{};
    ASSERT_EQ(::stat(f.path().c_str(), &after), 0);
    // A new inode: the old file was replaced by rename(2), never rewritten in place, so a
    // reader (or a crash) sees one whole file or the other.
    EXPECT_NE(before.st_ino, after.st_ino);
    EXPECT_EQ(f.load("boot-a").state->next_session, 6u);
    std::size_t files = 0;
    for ([[maybe_unused]] const auto &e : fs::directory_iterator(dir_))
        ++files;
    EXPECT_EQ(files, 1u);
}

TEST_F(StateFileTest, AnUnwritableDirectoryIsAnErrorNamingThePath) {
    StateFile f(dir_ / "missing");
    auto err = f.write(state(5));
    ASSERT_TRUE(err);
    EXPECT_NE(err->find((dir_ / "missing").string()), std::string::npos) << *err;
    EXPECT_NE(err->find("No such file"), std::string::npos) << *err;
}

TEST_F(StateFileTest, ACorruptFileIsSetAsideWithItsReason) {
    put("{\"format\":\"rdma-mcastd-state\",\"version\":1,");
    StateFile f(dir_);
    auto loaded = f.load("boot-a");
    EXPECT_FALSE(loaded.state);
    EXPECT_NE(loaded.set_aside.find("not JSON"), std::string::npos) << loaded.set_aside;
    EXPECT_FALSE(fs::exists(f.path()));
    EXPECT_TRUE(fs::exists(dir_ / "state.json.rejected"));
    EXPECT_FALSE(f.load("boot-a").state); // and the next start finds none
}

TEST_F(StateFileTest, AFileFromAnotherBootIsSetAside) {
    StateFile f(dir_);
    ASSERT_EQ(f.write(state(5)), std::nullopt);
    auto loaded = f.load("boot-b");
    EXPECT_FALSE(loaded.state);
    EXPECT_NE(loaded.set_aside.find("another boot"), std::string::npos) << loaded.set_aside;
}

TEST_F(StateFileTest, RemoveForgetsIt) {
    StateFile f(dir_);
    ASSERT_EQ(f.write(state(5)), std::nullopt);
    f.remove();
    EXPECT_FALSE(f.load("boot-a").state);
}

// ---- the sets log ----

SavedSet set_of(const char *mgid, std::uint8_t bits, const char *port_gid = "fe80::1") {
    return SavedSet{"mlx5_0", 1, *parse_gid(port_gid), *parse_gid(mgid), bits};
}

const SavedGroup *group_in(const SavedState &st, const char *mgid, const char *port_gid = "fe80::1") {
    for (const SavedPort &p : st.ports)
        if (p.port_gid == *parse_gid(port_gid))
            for (const SavedGroup &g : p.groups)
                if (g.mgid == *parse_gid(mgid))
                    return &g;
    return nullptr;
}

TEST_F(StateFileTest, SetsLoggedAfterTheStateAreTakenBackAsUncertainBits) {
    StateFile f(dir_);
    ASSERT_EQ(f.write(state(5)), std::nullopt); // ff15::7 held 0x1
    ASSERT_EQ(log_sets(f, {set_of("ff15::7", 0x1 | 0x2), set_of("ff15::8", 0x1)}), std::nullopt);
    ASSERT_EQ(log_sets(f, {set_of("ff15::9", 0x8, "fe80::2")}), std::nullopt); // appended: no second header
    auto loaded = f.load("boot-a");
    ASSERT_TRUE(loaded.state);
    EXPECT_EQ(loaded.sets, 3u);
    EXPECT_TRUE(loaded.sets_skipped.empty()) << loaded.sets_skipped.front();
    EXPECT_EQ(loaded.state->next_session, 5u); // the rest is the state file's
    const SavedGroup *g7 = group_in(*loaded.state, "ff15::7");
    ASSERT_TRUE(g7);
    EXPECT_EQ(g7->held, 0x1);
    EXPECT_EQ(g7->uncertain, 0x2); // the held bit stays held
    const SavedGroup *g8 = group_in(*loaded.state, "ff15::8");
    ASSERT_TRUE(g8);
    EXPECT_EQ(g8->held, 0);
    EXPECT_EQ(g8->uncertain, 0x1);
    const SavedGroup *g9 = group_in(*loaded.state, "ff15::9", "fe80::2"); // a port the state lacked
    ASSERT_TRUE(g9);
    EXPECT_EQ(g9->uncertain, 0x8);
    // The log stays until a state file covers it: a second crash before that finds it again.
    EXPECT_EQ(f.load("boot-a").sets, 3u);
}

TEST_F(StateFileTest, WritingTheStateRemovesTheSetsLogItCovers) {
    StateFile f(dir_);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}), std::nullopt);
    ASSERT_TRUE(fs::exists(f.sets_path()));
    ASSERT_EQ(f.write(state(5)), std::nullopt);
    EXPECT_FALSE(fs::exists(f.sets_path()));
    auto loaded = f.load("boot-a");
    EXPECT_EQ(loaded.sets, 0u);
    EXPECT_EQ(group_in(*loaded.state, "ff15::8"), nullptr);
}

// A crash between the first Set and the first state file: the log alone is the state.
TEST_F(StateFileTest, TheSetsLogAloneIsAState) {
    StateFile f(dir_);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}, "rdma-mcastd 9"), std::nullopt);
    auto loaded = f.load("boot-a");
    ASSERT_TRUE(loaded.state);
    EXPECT_EQ(loaded.state->daemon, "rdma-mcastd 9");
    EXPECT_TRUE(loaded.state->sessions.empty());
    ASSERT_EQ(loaded.state->ports.size(), 1u);
    EXPECT_EQ(loaded.state->ports[0].device, "mlx5_0");
    EXPECT_EQ(loaded.state->ports[0].port, 1);
    const SavedGroup *g = group_in(*loaded.state, "ff15::8");
    ASSERT_TRUE(g);
    EXPECT_EQ(g->uncertain, 0x1);
}

TEST_F(StateFileTest, ASetsLogFromAnotherBootIsSetAside) {
    StateFile f(dir_);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}), std::nullopt);
    auto loaded = f.load("boot-b");
    EXPECT_FALSE(loaded.state);
    EXPECT_NE(loaded.sets_set_aside.find("another boot (boot-a)"), std::string::npos) << loaded.sets_set_aside;
    EXPECT_FALSE(fs::exists(f.sets_path()));
    EXPECT_TRUE(fs::exists(dir_ / "state.sets.rejected"));
}

TEST_F(StateFileTest, ASetsLogGoesWithItsSetAsideStateFile) {
    put("[]");
    StateFile f(dir_);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}), std::nullopt);
    auto loaded = f.load("boot-a");
    EXPECT_FALSE(loaded.state);
    EXPECT_FALSE(loaded.set_aside.empty());
    EXPECT_EQ(loaded.sets_set_aside, "its state file was set aside");
    EXPECT_TRUE(fs::exists(dir_ / "state.sets.rejected"));
}

TEST_F(StateFileTest, ATornLastLineIsSkippedAndNamed) {
    StateFile f(dir_);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}), std::nullopt);
    std::ofstream(f.sets_path(), std::ios::app) << R"({"device":"mlx5_0","port":1,"port_g)";
    auto loaded = f.load("boot-a");
    ASSERT_TRUE(loaded.state);
    EXPECT_EQ(loaded.sets, 1u);
    ASSERT_EQ(loaded.sets_skipped.size(), 1u);
    EXPECT_EQ(loaded.sets_skipped[0], "line 3: torn (no end of line)");
}

TEST_F(StateFileTest, RemoveForgetsTheSetsLogToo) {
    StateFile f(dir_);
    ASSERT_EQ(f.write(state(5)), std::nullopt);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}), std::nullopt);
    f.remove();
    EXPECT_FALSE(f.load("boot-a").state);
    EXPECT_FALSE(fs::exists(f.sets_path()));
}

TEST_F(StateFileTest, AnUnwritableSetsLogIsAnErrorNamingThePath) {
    StateFile f(dir_ / "missing");
    const std::vector<SavedSet> sets{set_of("ff15::8", 0x1)};
    auto err = f.append(encode_sets_header("boot-a", "d"), sets);
    ASSERT_TRUE(err);
    EXPECT_NE(err->find((dir_ / "missing" / "state.sets").string()), std::string::npos) << *err;
}

} // namespace
} // namespace mcastd::restart
