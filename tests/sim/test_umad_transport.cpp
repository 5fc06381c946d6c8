// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// daemon/sa's UmadTransport against a real OpenSM on ibsim. The test process is not attached
// to the fabric; mcastd-umad-probe (umad_probe.cpp) runs the transport on node H2 and prints
// what it sends and receives, one line each.
#include <gtest/gtest.h>

#include <sched.h>

#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/fabric.hpp"

namespace mcastd::sim {
namespace {

using namespace std::chrono_literals;
using Fields = std::map<std::string, std::string>;

Fields parse_fields(const std::string &line) {
    Fields kv;
    std::istringstream words(line);
    for (std::string w; words >> w;)
        if (auto eq = w.find('='); eq != std::string::npos)
            kv[w.substr(0, eq)] = w.substr(eq + 1);
    return kv;
}

unsigned long num(const Fields &kv, const std::string &key) {
    const auto it = kv.find(key);
    if (it == kv.end())
        throw std::runtime_error("no field " + key);
    return std::stoul(it->second, nullptr, 0);
}

std::string hex(unsigned v, int width) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*x", width, v);
    return buf;
}

class UmadTransportSim : public ::testing::Test {
protected:
    void SetUp() override {
        fabric_.emplace();
        std::vector<std::string> argv{MCASTD_UMAD_PROBE};
        argv.insert(argv.end(), probe_args_.begin(), probe_args_.end());
        probe_ = &fabric_->spawn_on("H2", argv, {}, /*stdin_pipe=*/true);
        // Keep the startup lines: the probe reports its deliberately bad opens first.
        while (auto line = probe_->read_line(30s)) {
            if (line->rfind("ready ", 0) == 0) {
                ready_ = parse_fields(*line);
                return;
            }
            startup_.push_back(*line);
        }
        FAIL() << "probe did not start: " << probe_->stderr_text();
    }

    void TearDown() override {
        if (probe_ && probe_->running()) {
            probe_->write_stdin("quit\n");
            EXPECT_EQ(probe_->wait(10s), 0) << probe_->stderr_text();
        }
    }

    // Sends one command and returns the probe's "recv" line for `tid`.
    Fields exchange(const std::string &command, unsigned tid) {
        EXPECT_TRUE(probe_->write_stdin(command + " " + hex(tid, 0) + "\n"));
        const auto line = probe_->wait_for_line("tid=" + hex(tid, 8) + " attr=", 10s);
        if (!line) {
            ADD_FAILURE() << "no answer to '" << command << "' tid " << hex(tid, 8) << "; stderr: "
                          << probe_->stderr_text();
            return {};
        }
        return parse_fields(*line);
    }

    std::vector<std::string> probe_args_; // after the program's name
    std::optional<Fabric> fabric_;
    Process *probe_ = nullptr;
    std::vector<std::string> startup_;
    Fields ready_;
};

TEST_F(UmadTransportSim, OpeningAMissingPortOrDeviceNamesIt) {
    ASSERT_EQ(startup_.size(), 2u);
    const std::string &no_port = startup_[0];
    EXPECT_EQ(no_port.rfind("open-error device=ibsim0 port=2 ", 0), 0u) << no_port;
    EXPECT_NE(no_port.find("errno=19"), std::string::npos) << no_port; // ENODEV
    EXPECT_NE(no_port.find("ibsim0:2"), std::string::npos) << no_port;
    EXPECT_NE(no_port.find("no such port"), std::string::npos) << no_port;

    const std::string &no_dev = startup_[1];
    EXPECT_EQ(no_dev.rfind("open-error device=nosuchdev0 port=1 ", 0), 0u) << no_dev;
    EXPECT_NE(no_dev.find("errno=19"), std::string::npos) << no_dev;
    EXPECT_NE(no_dev.find("nosuchdev0:1"), std::string::npos) << no_dev;
    EXPECT_NE(no_dev.find("no such device"), std::string::npos) << no_dev;
}

TEST_F(UmadTransportSim, SaGetOfTheBroadcastGroupIsAnswered) {
    EXPECT_EQ(num(ready_, "lid"), fabric_->lid("H2"));
    EXPECT_EQ(num(ready_, "sm_lid"), fabric_->lid("H1"));

    const Fields r = exchange("sa-get", 0x1001);
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(num(r, "umad_status"), 0u);
    EXPECT_EQ(num(r, "class"), 0x03u);
    EXPECT_EQ(num(r, "method"), 0x81u); // GetResp
    EXPECT_EQ(num(r, "status"), 0u);
    EXPECT_EQ(num(r, "attr"), 0x0038u);
    EXPECT_EQ(num(r, "mlid"), 0xC000u); // OpenSM's IPoIB broadcast group
}

TEST_F(UmadTransportSim, DirectedRouteSmpGetPortInfoToSelfIsAnswered) {
    const Fields r = exchange("smp-portinfo", 0x2002);
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(num(r, "umad_status"), 0u);
    EXPECT_EQ(num(r, "class"), 0x81u);
    EXPECT_EQ(num(r, "method"), 0x81u);
    EXPECT_EQ(num(r, "status") & 0x7fff, 0u); // bit 15 is the D (direction) bit
    EXPECT_EQ(num(r, "attr"), 0x0015u);
    EXPECT_EQ(num(r, "lid"), fabric_->lid("H2"));
    EXPECT_EQ(num(r, "sm_lid"), fabric_->lid("H1"));
    EXPECT_EQ(num(r, "state"), 4u); // Active
}

TEST_F(UmadTransportSim, ManySendsWhileTheReceiveThreadReadsTheSameFd) {
    // 200 outstanding SA Gets: sends on the loop thread race the receive thread's umad_recv
    // on the same fd. (Far bigger back-to-back bursts, ~600+, can deadlock umad2sim itself.)
    ASSERT_TRUE(probe_->write_stdin("burst 200\n"));
    const auto done = probe_->wait_for_line("burst-done ", 30s);
    ASSERT_TRUE(done) << probe_->stderr_text();
    const Fields r = parse_fields(*done);
    EXPECT_EQ(num(r, "n"), 200u);
    EXPECT_EQ(num(r, "ok"), 200u);

    ASSERT_TRUE(probe_->write_stdin("stats\n"));
    const auto stats = probe_->wait_for_line("stats ", 10s);
    ASSERT_TRUE(stats);
    EXPECT_EQ(num(parse_fields(*stats), "recv_errors"), 0u);
    EXPECT_EQ(num(parse_fields(*stats), "bounced"), 0u);
}

TEST_F(UmadTransportSim, ReceiveThreadKeepsItsHeartbeat) {
    // The thread comes back from umad_recv at least every 250 ms even with no traffic.
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(probe_->write_stdin("heartbeat\n"));
        const auto hb = probe_->wait_for_line("heartbeat ", 10s);
        ASSERT_TRUE(hb);
        const long age = std::stol(parse_fields(*hb).at("age_ms"));
        EXPECT_GE(age, 0);
        EXPECT_LT(age, 2000);
    }
}

TEST_F(UmadTransportSim, ReceiveThreadRunsUnderSchedBatchAndTheRestDoesNot) {
    // doc/architecture.md §4: the receive thread must not preempt the loop to hand over one MAD.
    const pid_t pid = probe_->pid();
    const std::vector<pid_t> receivers = threads_named(pid, "umad-recv");
    ASSERT_EQ(receivers.size(), 1u) << thread_states(pid);
    EXPECT_EQ(::sched_getscheduler(receivers[0]), SCHED_BATCH) << thread_states(pid);
    EXPECT_EQ(::sched_getscheduler(pid), SCHED_OTHER) << "the loop's thread keeps the normal policy";
    // And it still delivers.
    const Fields r = exchange("sa-get", 0x105a);
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(num(r, "method"), 0x81u);
    EXPECT_EQ(num(r, "status"), 0u);
}

TEST_F(UmadTransportSim, SaMadBouncesWithStatus110OnceOpenSmIsGone) {
    const Fields before = exchange("sa-get", 0x3001);
    ASSERT_FALSE(before.empty());
    ASSERT_EQ(num(before, "umad_status"), 0u);

    fabric_->stop_opensm();

    // The request comes back unchanged (request method, no answer) with umad status 110.
    const Fields bounce = exchange("sa-get", 0x3003);
    ASSERT_FALSE(bounce.empty());
    EXPECT_EQ(num(bounce, "umad_status"), 110u);
    EXPECT_EQ(num(bounce, "class"), 0x03u);
    EXPECT_EQ(num(bounce, "method"), 0x01u);
    EXPECT_EQ(num(bounce, "mlid"), 0u);

    // The SMP to the port itself does not involve the SM and still works.
    const Fields smp = exchange("smp-portinfo", 0x3004);
    ASSERT_FALSE(smp.empty());
    EXPECT_EQ(num(smp, "umad_status"), 0u);
    EXPECT_EQ(num(smp, "lid"), fabric_->lid("H2"));
}

// A receive thread whose umad_recv would block for an hour: only the wake-up the close sends
// it (a PortInfo SMP to its own port) can end it in time.
class UmadTransportLongReceive : public UmadTransportSim {
protected:
    UmadTransportLongReceive() { probe_args_ = {"ibsim0", "1", "3600000"}; }
};

TEST_F(UmadTransportLongReceive, ClosingAPortWakesItsReceiveThread) {
    ASSERT_TRUE(probe_->write_stdin("close\n"));
    EXPECT_TRUE(probe_->wait_for_line("closed", 20s)) << probe_->stderr_text();
}

TEST_F(UmadTransportLongReceive, AnswersInFlightAreReadBeforeThePortCloses) {
    // The wake-up's answer comes first (the port's own agent answers it at once); the thread
    // still reads the 50 SA answers before the port closes, or umad2sim would crash on them.
    ASSERT_TRUE(probe_->write_stdin("burst 50\nclose\n"));
    const auto line = probe_->wait_for_line("closed", 20s);
    ASSERT_TRUE(line) << probe_->stderr_text();
    ASSERT_TRUE(probe_->write_stdin("quit\n"));
    EXPECT_EQ(probe_->wait(10s), 0) << probe_->stderr_text();
}

} // namespace
} // namespace mcastd::sim
