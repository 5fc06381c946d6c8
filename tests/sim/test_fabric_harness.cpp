// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The sim harness's pieces that need no fabric: Process, and the parser of saquery/smpquery
// output (fed with text captured from the real tools on an ibsim fabric).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "sim/fabric.hpp"
#include "sim/tool_output.hpp"

namespace mcastd::sim {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// ---- Process ----

TEST(FabricProcess, ReadLineReturnsLinesThenEof) {
    Process p({.argv = {"printf", "one\ntwo\nlast-without-newline"}});
    EXPECT_EQ(p.read_line(5s), "one");
    EXPECT_EQ(p.read_line(5s), "two");
    EXPECT_EQ(p.read_line(5s), "last-without-newline");
    EXPECT_EQ(p.read_line(5s), std::nullopt);
    EXPECT_EQ(p.wait(5s), 0);
}

TEST(FabricProcess, WaitForLineSkipsToTheMatch) {
    Process p({.argv = {"printf", "a\nb ready now\nc\n"}});
    EXPECT_EQ(p.wait_for_line("ready", 5s), "b ready now");
    EXPECT_EQ(p.read_line(5s), "c");
    EXPECT_EQ(p.wait_for_line("never", 5s), std::nullopt); // EOF, not the timeout
}

TEST(FabricProcess, ReadLineTimesOutWhileTheChildIsQuiet) {
    Process p({.argv = {"sleep", "30"}});
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(p.read_line(200ms), std::nullopt);
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_GE(took, 200ms);
    EXPECT_LT(took, 5s);
    EXPECT_TRUE(p.running());
}

TEST(FabricProcess, StdinPipeRoundTripAndEof) {
    Process p({.argv = {"cat"}, .stdin_pipe = true});
    ASSERT_TRUE(p.write_stdin("hello\n"));
    EXPECT_EQ(p.read_line(5s), "hello");
    p.close_stdin();
    EXPECT_EQ(p.wait(5s), 0); // cat saw EOF
    EXPECT_FALSE(p.write_stdin("late\n"));
}

TEST(FabricProcess, WriteToAChildThatClosedStdinFailsWithoutSigpipe) {
    Process p({.argv = {"true"}, .stdin_pipe = true});
    ASSERT_EQ(p.wait(5s), 0);
    // The reader is gone: EPIPE, and the test process must survive the SIGPIPE.
    std::string big(1 << 20, 'x');
    EXPECT_FALSE(p.write_stdin(big));
}

TEST(FabricProcess, StopTerminatesAndReportsTheSignal) {
    Process p({.argv = {"sleep", "30"}});
    EXPECT_TRUE(p.running());
    auto start = std::chrono::steady_clock::now();
    p.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 4s); // TERM was enough, no KILL grace
    EXPECT_FALSE(p.running());
    EXPECT_EQ(p.wait(0ms), 128 + SIGTERM);
    p.stop(); // idempotent
}

TEST(FabricProcess, StopEscalatesToKillAfterTheGrace) {
    // A child that ignores SIGTERM (ignored dispositions survive exec).
    Process p({.argv = {"sh", "-c", "trap '' TERM; echo armed; exec sleep 30"}});
    ASSERT_EQ(p.read_line(5s), "armed");
    auto start = std::chrono::steady_clock::now();
    p.stop(300ms);
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_GE(took, 300ms);
    EXPECT_EQ(p.wait(0ms), 128 + SIGKILL);
}

TEST(FabricProcess, ExitCodeStderrAndEnvironment) {
    Process p({.argv = {"sh", "-c", "echo \"$MCASTD_TEST_VAR\"; echo oops >&2; exit 3"},
               .env = {{"MCASTD_TEST_VAR", "from-options"}}});
    EXPECT_EQ(p.wait(5s), 3);
    EXPECT_EQ(p.read_all(5s), "from-options\n");
    EXPECT_EQ(p.stderr_text(), "oops\n");
}

// LISTEN_FDS as a service manager passes them: the given descriptors at 3, 4, ... in order,
// and nothing else of the test's above 2.
TEST(FabricProcess, PassedFdsArriveAtThreeUpAndNothingElseLeaks) {
    int a[2], b[2];
    ASSERT_EQ(::pipe2(a, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(b, O_CLOEXEC), 0);
    Process p({.argv = {"sh", "-c", "echo first >&3; echo second >&4; ls /proc/self/fd"},
               .pass_fds = {a[1], b[1]}});
    ::close(a[1]);
    ::close(b[1]);
    EXPECT_EQ(p.wait(std::chrono::seconds(10)), 0) << p.stderr_text();
    char buf[32] = {};
    ASSERT_GT(::read(a[0], buf, sizeof buf - 1), 0);
    EXPECT_STREQ(buf, "first\n");
    std::memset(buf, 0, sizeof buf);
    ASSERT_GT(::read(b[0], buf, sizeof buf - 1), 0);
    EXPECT_STREQ(buf, "second\n");
    std::string fds;
    while (auto line = p.read_line(std::chrono::seconds(5)))
        fds += *line + " ";
    EXPECT_EQ(fds, "0 1 2 3 4 5 ") << "ls's own directory fd is 5; the rest were passed";
    ::close(a[0]);
    ::close(b[0]);
}

// Passed in an order that crosses the numbers they are placed at (the last one passed is among the
// lowest open here, so placing the first at 3 without a copy would overwrite a later one): each
// still arrives at its own place. The child makes the copies (process.cpp says why).
TEST(FabricProcess, PassedFdsWhoseNumbersCrossTheirPlacesArriveInOrder) {
    constexpr int kPassed = 40;
    std::vector<std::array<int, 2>> pipes(kPassed);
    for (auto &p : pipes)
        ASSERT_EQ(::pipe2(p.data(), O_CLOEXEC), 0);
    std::vector<int> pass;
    for (auto it = pipes.rbegin(); it != pipes.rend(); ++it)
        pass.push_back((*it)[1]);
    ASSERT_LT(pass.back(), 3 + kPassed) << "the crossing this test is about";
    Process p({.argv = {"bash", "-c", "for ((i = 0; i < " + std::to_string(kPassed) + "; i++)); do echo $i >&$((3 + i)); done"},
               .pass_fds = pass});
    for (auto &pp : pipes)
        ::close(pp[1]);
    EXPECT_EQ(p.wait(std::chrono::seconds(10)), 0) << p.stderr_text();
    for (int i = 0; i < kPassed; ++i) {
        char buf[16] = {};
        ASSERT_GT(::read(pipes[kPassed - 1 - i][0], buf, sizeof buf - 1), 0) << i;
        EXPECT_EQ(std::string(buf), std::to_string(i) + "\n") << "fd " << 3 + i;
        ::close(pipes[kPassed - 1 - i][0]);
    }
}

// With LISTEN_FDS, LISTEN_PID is the child's own pid, as a service manager sets it.
TEST(FabricProcess, ListenPidIsTheChildsOwnWithListenFds) {
    int a[2];
    ASSERT_EQ(::pipe2(a, O_CLOEXEC), 0);
    Process p({.argv = {"sh", "-c", "echo \"$LISTEN_PID $$\""}, .env = {{"LISTEN_FDS", "1"}}, .pass_fds = {a[1]}});
    ::close(a[1]);
    ::close(a[0]);
    EXPECT_EQ(p.wait(std::chrono::seconds(10)), 0) << p.stderr_text();
    const std::string out = p.read_all(std::chrono::seconds(5));
    const auto space = out.find(' ');
    ASSERT_NE(space, std::string::npos) << out;
    EXPECT_EQ(out.substr(0, space), std::to_string(p.pid()));
    EXPECT_EQ(out.substr(space + 1), std::to_string(p.pid()) + "\n");
}

TEST(FabricProcess, MergedStderrCwdAndLogFile) {
    fs::path dir = fs::temp_directory_path() / ("mcastd-proc-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    {
        Process p({.argv = {"sh", "-c", "pwd; echo err >&2"},
                   .cwd = dir,
                   .merge_stderr = true,
                   .log_file = dir / "log"});
        EXPECT_EQ(p.wait(5s), 0);
        EXPECT_EQ(p.read_all(5s), dir.string() + "\nerr\n");
        EXPECT_EQ(p.stderr_text(), "");
    }
    EXPECT_EQ(read_text_file(dir / "log"), dir.string() + "\nerr\n");
    fs::remove_all(dir);
}

TEST(FabricProcess, StdinFromAFile) {
    fs::path file = fs::temp_directory_path() / ("mcastd-stdin-" + std::to_string(::getpid()));
    std::ofstream(file) << "line from file\n";
    Process p({.argv = {"cat"}, .stdin_path = file});
    EXPECT_EQ(p.read_line(5s), "line from file");
    EXPECT_EQ(p.wait(5s), 0);
    fs::remove(file);
}

TEST(FabricProcess, StartFailuresThrowWithTheCause) {
    try {
        Process p({.argv = {"mcastd-no-such-binary"}});
        FAIL() << "expected a throw";
    } catch (const std::runtime_error &e) {
        EXPECT_NE(std::string(e.what()).find("not found in PATH"), std::string::npos) << e.what();
    }
    try {
        Process p({.argv = {"true"}, .cwd = "/nonexistent/mcastd"});
        FAIL() << "expected a throw";
    } catch (const std::runtime_error &e) {
        EXPECT_NE(std::string(e.what()).find("chdir"), std::string::npos) << e.what();
    }
    EXPECT_THROW(Process({.argv = {}}), std::invalid_argument);
}

TEST(FabricProcess, OutputIsDrainedWhileNobodyReads) {
    // 4 MB is far more than a pipe holds: without the drain thread the child would block.
    Process p({.argv = {"head", "-c", "4194304", "/dev/zero"}});
    EXPECT_EQ(p.wait(10s), 0);
    EXPECT_EQ(p.read_all(5s).size(), 4194304u);
}

TEST(FabricProcess, MoveKeepsTheChild) {
    Process a({.argv = {"sleep", "30"}});
    pid_t pid = a.pid();
    Process b(std::move(a));
    EXPECT_EQ(b.pid(), pid);
    EXPECT_TRUE(b.running());
    b.stop();
    EXPECT_EQ(::kill(pid, 0), -1); // reaped: the pid is no longer ours
}

TEST(FabricProcess, AnotherThreadAskingRunningDoesNotStealTheExitCode) {
    // A Fabric counts its running clients from whichever thread starts a tool, so running()
    // races wait() on the same child. The loser of the waitpid race used to take ECHILD for
    // "reaped elsewhere" and report -1, or join the drain thread a second time and throw.
    for (int round = 0; round < 100; ++round) {
        Process p({.argv = {"sh", "-c", "read line; exit 7"}, .stdin_pipe = true});
        std::atomic<bool> done{false};
        std::thread asker([&] {
            while (!done)
                p.running();
        });
        p.close_stdin();
        const auto code = p.wait(10s);
        done = true;
        asker.join();
        ASSERT_EQ(code, 7) << "round " << round;
        ASSERT_FALSE(p.running());
    }
}

// ---- saquery / smpquery output ----

// `saquery --smkey 1 MCMR --mgid ff12:1234::1 --gid fe80::10:3` after a join with flow label
// 0x12345, SL 3, hop limit 7, captured on a 4-HCA ibsim fabric.
constexpr const char *kMcmrTrusted = "MCMember Record dump:\n"
                                     "\t\tMGID....................ff12:1234::1\n"
                                     "\t\tPortGid.................fe80::10:3\n"
                                     "\t\tqkey....................0x1234\n"
                                     "\t\tmlid....................0xc001\n"
                                     "\t\tmtu.....................0x84\n"
                                     "\t\tTClass..................0x0\n"
                                     "\t\tpkey....................0xffff\n"
                                     "\t\trate....................0x83\n"
                                     "\t\tpkt_life................0x80\n"
                                     "\t\tSL......................0x3\n"
                                     "\t\tFlowLabel...............0x12345\n"
                                     "\t\tHopLimit................0x7\n"
                                     "\t\tScope...................0x0\n"
                                     "\t\tJoinState...............0x1\n"
                                     "\t\tProxyJoin...............0x0\n";

TEST(FabricToolOutput, ParsesAnMcMemberRecord) {
    auto recs = parse_records(kMcmrTrusted, "MCMember Record dump:");
    ASSERT_EQ(recs.size(), 1u);
    const auto &r = recs[0];
    EXPECT_EQ(field_gid(r, "mgid"), parse_gid("ff12:1234::1"));
    EXPECT_EQ(field_gid(r, "portgid"), parse_gid("fe80::10:3"));
    EXPECT_EQ(field_number(r, "qkey"), 0x1234u);
    EXPECT_EQ(field_number(r, "mlid"), 0xc001u);
    EXPECT_EQ(field_number(r, "mtu"), 0x84u);
    EXPECT_EQ(field_number(r, "flowlabel"), 0x12345u);
    EXPECT_EQ(field_number(r, "joinstate", 0xf), 1u);
    EXPECT_EQ(field_number(r, "sl"), 3u);
}

TEST(FabricToolOutput, SplitsSeveralRecordsAndIgnoresTheRest) {
    std::string text = std::string("ibwarn: noise before\n") + kMcmrTrusted + kMcmrTrusted;
    EXPECT_EQ(parse_records(text, "MCMember Record dump:").size(), 2u);
    EXPECT_TRUE(parse_records("", "MCMember Record dump:").empty());
    // `saquery -g` labels differ in case; keys are lower-cased.
    auto g = parse_records("MCMemberRecord group dump:\n"
                           "\t\tMGID....................ff12:401b:ffff::ffff:ffff\n"
                           "\t\tMlid....................0xC000\n",
                           "MCMemberRecord group dump:");
    ASSERT_EQ(g.size(), 1u);
    EXPECT_EQ(field_number(g[0], "mlid"), 0xc000u);
}

TEST(FabricToolOutput, ParsesSmpqueryLines) {
    // Lines of `smpquery -D portinfo 0 1`, including the one-dot leader and a value with dots.
    auto r = parse_fields("# Port info: DR path slid 65535; dlid 65535; 0 port 1\n"
                          "Mkey:............................<not displayed>\n"
                          "GidPrefix:.......................0xfe80000000000000\n"
                          "Lid:.............................3\n"
                          "CapMask:.........................0x50c048\n"
                          "\t\t\t\tIsTrapSupported\n"
                          "LinkSpeedActive:.................2.5 Gbps\n"
                          "McastPkeyTrapSuppressionEnabled:.0\n");
    EXPECT_EQ(field_number(r, "gidprefix"), 0xfe80000000000000u);
    EXPECT_EQ(field_number(r, "lid"), 3u);
    EXPECT_EQ(field_number(r, "capmask"), 0x50c048u);
    EXPECT_EQ(r.at("linkspeedactive"), "2.5 Gbps");
    EXPECT_EQ(field_number(r, "mcastpkeytrapsuppressionenabled"), 0u);
    EXPECT_EQ(r.count("istrapsupported"), 0u);
    EXPECT_EQ(r.count("# port info"), 0u);
}

TEST(FabricToolOutput, NonFieldLines) {
    EXPECT_EQ(parse_field_line("MCMember Record dump:"), std::nullopt);
    EXPECT_EQ(parse_field_line("Query SA failed: Connection timed out"), std::nullopt);
    EXPECT_EQ(parse_field_line("sim> ibwarn: [4778] process_packet: no one"), std::nullopt);
    EXPECT_EQ(parse_field_line("SMP status: 0x8000"), std::nullopt);
    EXPECT_EQ(parse_field_line("a.b"), std::nullopt); // one dot without a colon is no leader
    EXPECT_EQ(parse_field_line("....x"), std::nullopt); // no label
}

TEST(FabricToolOutput, NumbersAreStrict) {
    EXPECT_EQ(parse_number("0x1F"), 0x1fu);
    EXPECT_EQ(parse_number("0XC000"), 0xc000u);
    EXPECT_EQ(parse_number(" 42 "), 42u);
    EXPECT_EQ(parse_number("0x"), std::nullopt);
    EXPECT_EQ(parse_number("12abc"), std::nullopt);
    EXPECT_EQ(parse_number("-1"), std::nullopt);
    EXPECT_EQ(parse_number("0x10000", 0xffff), std::nullopt);
    EXPECT_EQ(parse_number("99999999999999999999"), std::nullopt);
    ToolRecord r{{"lid", "abc"}};
    EXPECT_THROW(field_number(r, "lid"), std::runtime_error);
    EXPECT_THROW(field_number(r, "missing"), std::runtime_error);
    EXPECT_THROW(field_gid(r, "lid"), std::runtime_error);
}

// Two groups of a dump as OpenSM 3.3.23 writes them (the member lines come from the same
// format string as a live dump; test_fabric checks a real one).
constexpr const char *kSaDump =
    "MC Group 0xc000  (well known): mgid=0xff12401bffff0000:0x00000000ffffffff "
    "port_gid=0x0000000000000000:0x0000000000000000 qkey=0x00000b1b mlid=0xc000 mtu=0x84 "
    "tclass=0x00 pkey=0xffff rate=0x83 pkt_life=0x92 sl_flow_hop=0x00000000 scope_state=0x21 "
    "proxy_join=0x0\n\n"
    "MC Group 0xc001 : mgid=0xff15000700000000:0x0000000000000001 "
    "port_gid=0xfe80000000000000:0x0000000000100003 qkey=0x01234567 mlid=0xc001 mtu=0x84 "
    "tclass=0x00 pkey=0xffff rate=0x83 pkt_life=0x92 sl_flow_hop=0x00000000 scope_state=0x51 "
    "proxy_join=0x0\n\n"
    "mcm_port: port_gid=0xfe80000000000000:0x0000000000100003 scope_state=0x51 proxy_join=0x0\n\n"
    "mcm_port: port_gid=0xfe80000000000000:0x0000000000100005 scope_state=0x58 proxy_join=0x0\n\n";

TEST(FabricToolOutput, ParsesAnSaDump) {
    auto groups = parse_sa_dump(kSaDump);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_TRUE(groups[0].well_known);
    EXPECT_EQ(groups[0].mgid, parse_gid("ff12:401b:ffff::ffff:ffff"));
    EXPECT_EQ(groups[0].mlid, 0xc000);
    EXPECT_TRUE(groups[0].members.empty());
    EXPECT_FALSE(groups[1].well_known);
    EXPECT_EQ(groups[1].mgid, parse_gid("ff15:7::1"));
    EXPECT_EQ(groups[1].mlid, 0xc001);
    EXPECT_EQ(groups[1].members, (std::map<Gid, std::uint8_t>{{*parse_gid("fe80::10:3"), 0x1},
                                                              {*parse_gid("fe80::10:5"), 0x8}}));
    EXPECT_TRUE(parse_sa_dump("").empty());
}

TEST(FabricToolOutput, MalformedSaDumpLinesThrowNamingTheLine) {
    EXPECT_THROW(parse_sa_dump("mcm_port: port_gid=0x1:0x2 scope_state=0x51\n"), std::runtime_error);
    EXPECT_THROW(parse_sa_dump("MC Group 0xc001 : mgid=0xff15 mlid=0xc001\n"), std::runtime_error);
    try {
        parse_sa_dump("MC Group 0xc001 : mgid=0x1:0x2 mlid=0xc001\nmcm_port: port_gid=zz scope_state=0x51\n");
        FAIL() << "no throw";
    } catch (const std::runtime_error &e) {
        EXPECT_NE(std::string(e.what()).find("port_gid=zz"), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace mcastd::sim
