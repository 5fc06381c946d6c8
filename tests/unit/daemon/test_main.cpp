// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastd run as a process, stopped before it opens anything: a state directory it cannot
// trust is a configuration error (exit 78), said in one sentence on stderr.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;

struct Outcome {
    int exit_code = -1;
    std::string output;
};

// Runs the daemon with `args` (shell words, already quoted) and `env` before it.
Outcome daemon(const std::string &env, const std::string &args) {
    const std::string cmd = env + " " MCASTD_DAEMON " " + args + " 2>&1";
    Outcome r;
    if (FILE *p = ::popen(cmd.c_str(), "r")) {
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;)
            r.output.append(buf, n);
        const int status = ::pclose(p);
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    return r;
}

class StateDirAtStart : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/mcastd-main-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        std::FILE *f = std::fopen((dir_ / "config.json").c_str(), "w");
        ASSERT_TRUE(f);
        std::fputs("{\"dbus\": {\"enabled\": false}}\n", f);
        std::fclose(f);
        config_ = "--config " + (dir_ / "config.json").string() + " --socket " + (dir_ / "s.sock").string();
        fs::create_directory(dir_ / "state");
    }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path dir_;
    std::string config_; // a valid config file, so that only the state directory is wrong
};

TEST_F(StateDirAtStart, AGroupWritableStateDirIsAConfigurationError) {
    const fs::path state = dir_ / "state";
    ASSERT_EQ(::chmod(state.c_str(), 0775), 0);
    const Outcome bad = daemon("", config_ + " --state-dir " + state.string());
    EXPECT_EQ(bad.exit_code, 78) << bad.output;
    EXPECT_NE(bad.output.find("rdma-mcastd: --state-dir: state directory " + state.string() + " (owner uid " +
                              std::to_string(::geteuid()) + ", mode 0775) is writable by its group"),
              std::string::npos)
        << bad.output;
}

TEST_F(StateDirAtStart, AMissingStateDirIsAConfigurationError) {
    const Outcome bad = daemon("", config_ + " --state-dir " + (dir_ / "no-such-dir").string());
    EXPECT_EQ(bad.exit_code, 78) << bad.output;
    EXPECT_NE(bad.output.find("rdma-mcastd: --state-dir: state directory " + (dir_ / "no-such-dir").string() +
                              " does not exist"),
              std::string::npos)
        << bad.output;
}

TEST_F(StateDirAtStart, ASymlinkAsRuntimeDirectoryIsAConfigurationError) {
    const fs::path link = dir_ / "link";
    fs::create_directory_symlink(dir_ / "state", link);
    const Outcome bad = daemon("RUNTIME_DIRECTORY=" + link.string(), config_);
    EXPECT_EQ(bad.exit_code, 78) << bad.output;
    EXPECT_NE(bad.output.find("rdma-mcastd: $RUNTIME_DIRECTORY: state directory " + link.string()), std::string::npos)
        << bad.output;
    EXPECT_NE(bad.output.find("is a symbolic link to " + (dir_ / "state").string()), std::string::npos) << bad.output;
}

} // namespace
