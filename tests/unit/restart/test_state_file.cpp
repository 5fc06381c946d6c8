// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>

#include "restart/state_file.hpp"

namespace mcastd::restart {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path &p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

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
    // What write(state(5)) puts in the file.
    std::string state_text() {
        char tmpl[] = "/tmp/mcastd-state-text-XXXXXX";
        const fs::path d = ::mkdtemp(tmpl);
        EXPECT_EQ(StateFile(d).write(state(5)), std::nullopt);
        std::ifstream in(d / "state.json");
        std::string text(std::istreambuf_iterator<char>(in), {});
        fs::remove_all(d);
        return text;
    }
    // Appends the Sets to `f`'s change log as an instance of boot-a would, following state
    // file generation `generation`.
    static std::optional<std::string> log_sets(const StateFile &f, const std::vector<SavedSet> &sets,
                                               const char *daemon = "d", std::uint64_t generation = 0) {
        std::string lines;
        for (const SavedSet &s : sets)
            lines += encode_change(s);
        return f.append(encode_log_header("boot-a", daemon, generation), lines);
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
    std::set<std::string> files;
    for (const auto &e : fs::directory_iterator(dir_))
        files.insert(e.path().filename().string());
    EXPECT_EQ(files, (std::set<std::string>{"state.json", "state.log"})) << "the file and its (empty) change log";
}

TEST_F(StateFileTest, AWriteThatFailsIsAnErrorNamingThePath) {
    StateFile f(dir_);
    fs::remove_all(dir_); // the directory goes while the daemon holds it
    auto err = f.write(state(5));
    ASSERT_TRUE(err);
    EXPECT_NE(err->find((dir_ / "state.json.tmp").string()), std::string::npos) << *err;
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

// ---- the change log ----

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
    EXPECT_EQ(loaded.changes, 3u);
    EXPECT_TRUE(loaded.log_skipped.empty()) << loaded.log_skipped.front();
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
    EXPECT_EQ(f.load("boot-a").changes, 3u);
}

// A compaction: the state file, then a new log with only its header; the old lines are in the
// file now.
TEST_F(StateFileTest, WritingTheStateStartsAnEmptyLogOfItsGeneration) {
    StateFile f(dir_);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}), std::nullopt);
    SavedState st = state(5);
    st.generation = 1;
    StateFile::Written w;
    ASSERT_EQ(f.write(st, &w), std::nullopt);
    EXPECT_TRUE(w.replaced);
    EXPECT_EQ(w.state_bytes, fs::file_size(f.path()));
    EXPECT_EQ(w.log_bytes, fs::file_size(f.log_path()));
    EXPECT_EQ(read(f.log_path()), encode_log_header("boot-a", "", 1));
    auto loaded = f.load("boot-a");
    EXPECT_EQ(loaded.changes, 0u);
    EXPECT_EQ(loaded.state->generation, 1u);
    EXPECT_EQ(group_in(*loaded.state, "ff15::8"), nullptr);
}

// A crash between the first Set and the first state file: the log alone is the state.
TEST_F(StateFileTest, TheChangeLogAloneIsAState) {
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

TEST_F(StateFileTest, AChangeLogFromAnotherBootIsSetAside) {
    StateFile f(dir_);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}), std::nullopt);
    auto loaded = f.load("boot-b");
    EXPECT_FALSE(loaded.state);
    EXPECT_NE(loaded.log_set_aside.find("another boot (boot-a)"), std::string::npos) << loaded.log_set_aside;
    EXPECT_FALSE(fs::exists(f.log_path()));
    EXPECT_TRUE(fs::exists(dir_ / "state.log.rejected"));
}

TEST_F(StateFileTest, AChangeLogGoesWithItsSetAsideStateFile) {
    put("[]");
    StateFile f(dir_);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}), std::nullopt);
    auto loaded = f.load("boot-a");
    EXPECT_FALSE(loaded.state);
    EXPECT_FALSE(loaded.set_aside.empty());
    EXPECT_EQ(loaded.log_set_aside, "its state file was set aside");
    EXPECT_TRUE(fs::exists(dir_ / "state.log.rejected"));
}

TEST_F(StateFileTest, ATornLastLineIsSkippedAndNamed) {
    StateFile f(dir_);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}), std::nullopt);
    std::ofstream(f.log_path(), std::ios::app) << R"({"device":"mlx5_0","port":1,"port_g)";
    auto loaded = f.load("boot-a");
    ASSERT_TRUE(loaded.state);
    EXPECT_EQ(loaded.changes, 1u);
    ASSERT_EQ(loaded.log_skipped.size(), 1u);
    EXPECT_EQ(loaded.log_skipped[0], "line 3: torn (no end of line)");
}

TEST_F(StateFileTest, RemoveForgetsTheChangeLogToo) {
    StateFile f(dir_);
    ASSERT_EQ(f.write(state(5)), std::nullopt);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}), std::nullopt);
    f.remove();
    EXPECT_FALSE(f.load("boot-a").state);
    EXPECT_FALSE(fs::exists(f.log_path()));
}

TEST_F(StateFileTest, AnUnwritableChangeLogIsAnErrorNamingThePath) {
    StateFile f(dir_);
    fs::remove_all(dir_);
    auto err = log_sets(f, {set_of("ff15::8", 0x1)});
    ASSERT_TRUE(err);
    EXPECT_NE(err->find((dir_ / "state.log").string()), std::string::npos) << *err;
}

// Every kind of line, replayed over the file it follows.
TEST_F(StateFileTest, TheChangeLogIsReplayedOverTheStateFile) {
    StateFile f(dir_);
    SavedState st = state(5);
    st.generation = 3;
    ASSERT_EQ(f.write(st), std::nullopt);
    SavedSession s;
    s.id = 5;
    s.token = std::string(32, 'c');
    s.version = 2;
    const PortKey port{"mlx5_0", 1, *parse_gid("fe80::1")};
    std::string lines = encode_change(SessionChange{s});
    lines += encode_change(NextSession{6});
    lines += encode_change(MembershipChange{5, SavedMembership{20, "mlx5_0", 1, *parse_gid("ff15::7"), 1, {}}});
    lines += encode_change(GroupChange{port, SavedGroup{*parse_gid("ff15::7"), 0x1, 0x2, {}}});
    ASSERT_EQ(f.append(encode_log_header("boot-a", "d", 3), lines), std::nullopt);
    auto loaded = f.load("boot-a");
    ASSERT_TRUE(loaded.state);
    EXPECT_EQ(loaded.changes, 4u);
    EXPECT_EQ(loaded.state->next_session, 6u);
    ASSERT_EQ(loaded.state->sessions.size(), 1u);
    ASSERT_EQ(loaded.state->sessions[0].memberships.size(), 1u);
    EXPECT_EQ(loaded.state->sessions[0].memberships[0].id, 20u);
    EXPECT_EQ(*group_in(*loaded.state, "ff15::7"), (SavedGroup{*parse_gid("ff15::7"), 0x1, 0x2, {}}));
}

// A compaction renames the state file into place, then the new log. A crash between the two
// leaves the old log beside a file that covers it: it is dropped, not replayed (its lines would
// take back what changed after them).
TEST_F(StateFileTest, ACrashBetweenTheCompactionsRenamesLeavesALogTheFileCovers) {
    StateFile f(dir_);
    SavedState old = state(5);
    old.generation = 1;
    ASSERT_EQ(f.write(old), std::nullopt);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}, "d", 1), std::nullopt);
    const std::string old_log = read(f.log_path());
    SavedState now = state(6);
    now.generation = 2;
    ASSERT_EQ(f.write(now), std::nullopt);
    std::ofstream(f.log_path()) << old_log; // as if the second rename never happened
    auto loaded = f.load("boot-a");
    ASSERT_TRUE(loaded.state);
    EXPECT_EQ(loaded.state->next_session, 6u);
    EXPECT_EQ(loaded.changes, 0u);
    EXPECT_EQ(group_in(*loaded.state, "ff15::8"), nullptr);
    EXPECT_NE(loaded.log_covered.find("generation 1"), std::string::npos) << loaded.log_covered;
    EXPECT_TRUE(loaded.log_set_aside.empty());
    EXPECT_FALSE(fs::exists(f.log_path())) << "the next append starts generation 2's";
}

// A crash while the new state file was written: its temporary is left, the old file and its
// log are whole.
TEST_F(StateFileTest, ACrashWhileTheStateFileIsWrittenLeavesTheOldFileAndLog) {
    StateFile f(dir_);
    SavedState old = state(5);
    old.generation = 1;
    ASSERT_EQ(f.write(old), std::nullopt);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}, "d", 1), std::nullopt);
    std::ofstream(dir_ / "state.json.tmp") << R"({"format":"rdma-mcastd-state","vers)";
    auto loaded = f.load("boot-a");
    ASSERT_TRUE(loaded.state);
    EXPECT_EQ(loaded.state->generation, 1u);
    EXPECT_EQ(loaded.changes, 1u);
    EXPECT_EQ(group_in(*loaded.state, "ff15::8")->uncertain, 0x1);
    SavedState next = state(7);
    next.generation = 2;
    EXPECT_EQ(f.write(next), std::nullopt) << "the temporary is no obstacle";
}

// The new log could not be started after the file was replaced: the old one goes (its lines
// are in the file), and the next append starts the file's generation's log.
TEST_F(StateFileTest, ALogThatCannotBeStartedAfterTheFileIsRemovedAndStartedByTheNextAppend) {
    StateFile f(dir_);
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}), std::nullopt);
    fs::create_directory(dir_ / "state.log.tmp");
    fs::create_directory(dir_ / "state.log.tmp" / "x"); // not removable as a stale temporary
    SavedState st = state(5);
    st.generation = 1;
    StateFile::Written w;
    auto err = f.write(st, &w);
    ASSERT_TRUE(err);
    EXPECT_NE(err->find("state.log"), std::string::npos) << *err;
    EXPECT_TRUE(w.replaced);
    EXPECT_FALSE(fs::exists(f.log_path()));
    ASSERT_EQ(log_sets(f, {set_of("ff15::9", 0x2)}, "d", 1), std::nullopt);
    auto loaded = f.load("boot-a");
    EXPECT_EQ(loaded.changes, 1u);
    EXPECT_EQ(group_in(*loaded.state, "ff15::9")->uncertain, 0x2);
}

// A log of a generation the file does not have (the file is older, or missing) is not this
// file's: set aside.
TEST_F(StateFileTest, ALogOfAnotherGenerationThanTheFileIsSetAside) {
    StateFile f(dir_);
    SavedState st = state(5);
    st.generation = 1;
    ASSERT_EQ(f.write(st), std::nullopt);
    fs::remove(f.log_path());
    ASSERT_EQ(log_sets(f, {set_of("ff15::8", 0x1)}, "d", 2), std::nullopt);
    auto loaded = f.load("boot-a");
    ASSERT_TRUE(loaded.state);
    EXPECT_EQ(loaded.log_set_aside, "it follows state file generation 2, not generation 1");
    EXPECT_TRUE(fs::exists(dir_ / "state.log.rejected"));
    EXPECT_EQ(group_in(*loaded.state, "ff15::8"), nullptr);
}

// ---- the upgrade from the release before (a format version 1 file and its sets log) ----

TEST_F(StateFileTest, TheReleaseBeforesStateFileAndSetsLogAreTakenBack) {
    std::string v1 = encode(state(5));
    const std::string from = R"("version":2)", generation = R"("generation":0,)";
    v1.replace(v1.find(from), from.size(), R"("version":1)");
    v1.erase(v1.find(generation), generation.size());
    put(v1);
    std::ofstream(dir_ / "state.sets")
        << encode_sets_header("boot-a", "rdma-mcastd old") + encode_set(set_of("ff15::8", 0x1));
    StateFile f(dir_);
    // The new release's first lines (a Set before its first compaction) follow generation 0.
    ASSERT_EQ(log_sets(f, {set_of("ff15::9", 0x2)}), std::nullopt);
    auto loaded = f.load("boot-a");
    ASSERT_TRUE(loaded.state) << loaded.set_aside;
    EXPECT_EQ(loaded.state->generation, 0u);
    EXPECT_EQ(loaded.sets, 1u);
    EXPECT_EQ(loaded.changes, 1u);
    EXPECT_EQ(group_in(*loaded.state, "ff15::7")->held, 0x1);
    EXPECT_EQ(group_in(*loaded.state, "ff15::8")->uncertain, 0x1);
    EXPECT_EQ(group_in(*loaded.state, "ff15::9")->uncertain, 0x2);
    // The first compaction covers both logs.
    SavedState next = *loaded.state;
    next.generation = 1;
    ASSERT_EQ(f.write(next), std::nullopt);
    EXPECT_FALSE(fs::exists(dir_ / "state.sets"));
    auto again = f.load("boot-a");
    EXPECT_EQ(again.sets + again.changes, 0u);
    EXPECT_EQ(group_in(*again.state, "ff15::8")->uncertain, 0x1);
}

TEST_F(StateFileTest, TheReleaseBeforesSetsLogFromAnotherBootIsSetAside) {
    std::ofstream(dir_ / "state.sets") << encode_sets_header("boot-a", "old") + encode_set(set_of("ff15::8", 0x1));
    StateFile f(dir_);
    auto loaded = f.load("boot-b");
    EXPECT_FALSE(loaded.state);
    EXPECT_NE(loaded.sets_set_aside.find("another boot (boot-a)"), std::string::npos) << loaded.sets_set_aside;
    EXPECT_TRUE(fs::exists(dir_ / "state.sets.rejected"));
}

// ---- the directory: the daemon's alone ----

std::string problem(const fs::path &dir) { return state_dir_problem(dir).value_or("(accepted)"); }

TEST_F(StateFileTest, TheDaemonsOwnDirectoryIsAccepted) {
    EXPECT_EQ(state_dir_problem(dir_), std::nullopt) << "mkdtemp: 0700, ours";
    ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
    EXPECT_EQ(state_dir_problem(dir_), std::nullopt) << "readable by others is fine: the files are 0600";
    ASSERT_EQ(::chmod(dir_.c_str(), 01755), 0);
    EXPECT_EQ(state_dir_problem(dir_), std::nullopt);
}

TEST_F(StateFileTest, AGroupWritableDirectoryIsRefusedNamingOwnerAndMode) {
    ASSERT_EQ(::chmod(dir_.c_str(), 0770), 0);
    EXPECT_EQ(problem(dir_), "state directory " + dir_.string() + " (owner uid " + std::to_string(::geteuid()) +
                                 ", mode 0770) is writable by its group: whoever can write there decides which "
                                 "memberships the daemon deletes at the SA and which sessions it hands back; use a "
                                 "directory owned by uid " + std::to_string(::geteuid()) +
                                 " that nobody else may write");
    EXPECT_THROW(StateFile{dir_}, std::runtime_error);
    ASSERT_EQ(::chmod(dir_.c_str(), 01777), 0); // as /tmp: the sticky bit does not make it ours
    EXPECT_NE(problem(dir_).find("(owner uid " + std::to_string(::geteuid()) + ", mode 1777) is writable by its "
                                 "group and by others"),
              std::string::npos)
        << problem(dir_);
}

TEST_F(StateFileTest, ADirectoryOfAnotherOwnerIsRefused) {
    // Whose the directory is, against whom the daemon runs as: the check itself needs no root.
    const uid_t other = ::geteuid() == 65534 ? 65533 : 65534;
    EXPECT_NE(problem(dir_).find("(accepted)"), std::string::npos);
    const std::string as_other = state_dir_problem(dir_, other).value_or("(accepted)");
    EXPECT_NE(as_other.find("is owned by uid " + std::to_string(::geteuid()) + ", not by the daemon's uid " +
                            std::to_string(other)),
              std::string::npos)
        << as_other;
    // And a real chown, where the test may make one.
    if (::geteuid() != 0)
        GTEST_SKIP() << "chown to 65534 needs root; the owner check ran above with another daemon uid";
    ASSERT_EQ(::chown(dir_.c_str(), 65534, 65534), 0);
    EXPECT_NE(problem(dir_).find("(owner uid 65534, mode 0700) is owned by uid 65534, not by the daemon's uid 0"),
              std::string::npos)
        << problem(dir_);
    EXPECT_THROW(StateFile{dir_}, std::runtime_error);
}

TEST_F(StateFileTest, ASymlinkedDirectoryIsRefusedAndNotFollowed) {
    const fs::path link = dir_.string() + "-link";
    fs::create_directory_symlink(dir_, link);
    const std::string why = problem(link);
    fs::remove(link);
    EXPECT_NE(why.find("state directory " + link.string() + " (owner uid "), std::string::npos) << why;
    EXPECT_NE(why.find("is a symbolic link to " + dir_.string() + ", not a directory"), std::string::npos) << why;
}

TEST_F(StateFileTest, AMissingDirectoryOrAFileIsRefused) {
    EXPECT_EQ(problem(dir_ / "missing"), "state directory " + (dir_ / "missing").string() + " does not exist");
    put("x");
    EXPECT_NE(problem(dir_ / "state.json").find("is not a directory"), std::string::npos) << problem(dir_ / "state.json");
}

// A symbolic link planted in the directory is never followed: the file it points to stays as it was.
class PlantedLink : public StateFileTest {
protected:
    void SetUp() override {
        StateFileTest::SetUp();
        char tmpl[] = "/tmp/mcastd-target-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        outside_ = tmpl;
        target_ = outside_ / "precious";
        std::ofstream(target_) << kPrecious;
    }
    void TearDown() override {
        fs::remove_all(outside_);
        StateFileTest::TearDown();
    }
    void plant(const char *name) { fs::create_symlink(target_, dir_ / name); }
    std::string target_text() const {
        std::ifstream in(target_);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }

    static constexpr const char *kPrecious = "not the daemon's";
    fs::path outside_, target_;
};

TEST_F(PlantedLink, AsTheStateFileItIsSetAsideUnread) {
    std::ofstream(target_) << state_text();
    const std::string before = target_text();
    plant("state.json");
    StateFile f(dir_);
    auto loaded = f.load("boot-a");
    EXPECT_FALSE(loaded.state) << "a valid state behind the link is not taken";
    EXPECT_EQ(loaded.set_aside, "it is a symbolic link, which is not followed");
    EXPECT_TRUE(fs::is_symlink(dir_ / "state.json.rejected")) << "the link itself moved aside";
    // The next write replaces it in the directory, never writes through it.
    ASSERT_EQ(f.write(state(6)), std::nullopt);
    EXPECT_FALSE(fs::is_symlink(f.path()));
    EXPECT_EQ(target_text(), before);
}

TEST_F(PlantedLink, AsTheStateFileItIsReplacedNotWrittenThrough) {
    plant("state.json");
    StateFile f(dir_);
    ASSERT_EQ(f.write(state(5)), std::nullopt);
    EXPECT_FALSE(fs::is_symlink(f.path()));
    EXPECT_EQ(f.load("boot-a").state->next_session, 5u);
    EXPECT_EQ(target_text(), kPrecious);
}

TEST_F(PlantedLink, AsTheChangeLogItIsRefusedByName) {
    plant("state.log");
    StateFile f(dir_);
    auto err = log_sets(f, {set_of("ff15::8", 0x1)});
    ASSERT_TRUE(err);
    EXPECT_EQ(*err, "open " + f.log_path().string() + ": it is a symbolic link, which is not followed");
    EXPECT_EQ(target_text(), kPrecious);
    auto loaded = f.load("boot-a");
    EXPECT_EQ(loaded.log_set_aside, "it is a symbolic link, which is not followed");
    EXPECT_EQ(target_text(), kPrecious);
}

TEST_F(PlantedLink, AsTheTemporaryItIsRefusedByName) {
    plant("state.json.tmp");
    StateFile f(dir_);
    auto err = f.write(state(5));
    ASSERT_TRUE(err);
    EXPECT_EQ(*err, "create " + (dir_ / "state.json.tmp").string() + ": it is a symbolic link, which is not followed");
    EXPECT_EQ(target_text(), kPrecious);
    EXPECT_FALSE(fs::exists(f.path()));
}

// A temporary a crash left behind is no obstacle, and a hard link there is not written through.
TEST_F(PlantedLink, AStaleTemporaryIsReplacedAndAHardLinkNotWrittenThrough) {
    fs::create_hard_link(target_, dir_ / "state.json.tmp");
    StateFile f(dir_);
    ASSERT_EQ(f.write(state(5)), std::nullopt);
    EXPECT_EQ(target_text(), kPrecious);
    EXPECT_EQ(f.load("boot-a").state->next_session, 5u);
}

TEST_F(PlantedLink, AHardLinkAsTheChangeLogIsRefused) {
    fs::create_hard_link(target_, dir_ / "state.log");
    StateFile f(dir_);
    auto err = log_sets(f, {set_of("ff15::8", 0x1)});
    ASSERT_TRUE(err);
    EXPECT_NE(err->find("not a regular file of its own"), std::string::npos) << *err;
    EXPECT_EQ(target_text(), kPrecious);
}

TEST_F(PlantedLink, AFifoAsTheStateFileDoesNotHangTheStart) {
    ASSERT_EQ(::mkfifo((dir_ / "state.json").c_str(), 0600), 0);
    StateFile f(dir_);
    auto loaded = f.load("boot-a");
    EXPECT_FALSE(loaded.state);
    EXPECT_EQ(loaded.set_aside, "it is not a regular file");
}

} // namespace
} // namespace mcastd::restart
