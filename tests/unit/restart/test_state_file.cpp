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

} // namespace
} // namespace mcastd::restart
