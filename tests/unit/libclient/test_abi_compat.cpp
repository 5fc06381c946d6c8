// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The library's ABI across releases (libclient/ABI.md):
//   - a program built against the headers of librdmamcast 0.1.0 (abi/0.1.0, the layouts of
//     every program built before RDMAMCAST_1.5) reads, from this library, exactly what a
//     program built against today's headers reads, and nothing of its memory is overwritten;
//   - a program built against today's headers does not load on a library without
//     RDMAMCAST_1.5, and one whose structures are larger than this library's is refused by name
//     (RDMAMCAST_E_ABI) instead of reading past their end.
#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>
#include <string>

#include "client_testing.hpp"
#include "process.hpp"

namespace {

using namespace fake;
namespace proto = mcastd::proto;

const mcastd::PolicyRef kDenyRule{"no-dead", "", 0};
const mcastd::PolicyRef kQuota{"", "memberships_per_uid", 4096};

proto::ListResult probe_list() {
    proto::ListResult l;
    proto::PortGroups p{"mlx5_0", 1, gid("fe80::10:3"), {}};
    proto::GroupInfo g;
    g.mgid = gid("ff15::1:2");
    g.mlid = 0xc001;
    g.qkey = 0x12345678;
    g.held = mcastd::join::full;
    g.counts = {2, 0, 0, 0};
    g.members.push_back({7, mcastd::join::full, "active", 4242, 1000, "my-app", "hpc", true, ""});
    g.members.push_back({9, mcastd::join::full, "pending", 4343, 0, "other", "root", false,
                         "no rule admits uid 0 any more", "job-42"});
    p.groups.push_back(g);
    l.ports.push_back(p);
    return l;
}

proto::StatusResult probe_status() {
    proto::StatusResult st;
    st.daemon = "rdma-mcastd 9.9.9";
    st.uptime_s = 12.5;
    st.clients = 3;
    st.ports.push_back({"mlx5_0", 1, "ACTIVE", 3, 1, 0, gid("fe80::10:3"), "InfiniBand", 100, 4,
                        4096, 0x0002c90300000001, 77, false,
                        proto::RejoinStatus{"SM changed", 30.5, 0.25, 4}});
    st.ports[0].max_groups = 1024;
    st.ports[0].sa = proto::SaCongestion{3.5, true, 0.41, 300};
    st.counters = {10, 1, 2, 3, 12, 8, 1, 5};
    st.counters.sa_responses = 9;
    st.counters.sa_late = 4;
    st.counters.sa_amplification = 1.25;
    st.counters.sa_sets = 6;
    st.counters.sa_deletes = 2;
    st.counters.sa_gets = 11;
    st.users.push_back({1001, "bob", 3, 4096, 1, 64, 1});
    return st;
}

// What abi_probe.c asks for, answered the same way on every connection.
bool script(Session &s, const proto::RequestEnvelope &env) {
    if (std::holds_alternative<proto::List>(env.request)) {
        s.reply(env.id, probe_list());
        return true;
    }
    if (std::holds_alternative<proto::Status>(env.request)) {
        s.reply(env.id, probe_status());
        return true;
    }
    const auto *j = std::get_if<proto::Join>(&env.request);
    if (!j)
        return false;
    const auto &r = j->request;
    if (r.name == "job-42") {
        proto::RestoredEvent restored{7, sample_record(), mcastd::field::mlid | mcastd::field::qkey};
        restored.record.mlid = 0xc002;
        proto::LostEvent lost{7, {}};
        lost.why.error = mcastd::Error{mcastd::Errc::sa_error, "the SA forgot the group", 0x0300};
        s.event(restored);
        s.event(lost);
        s.event(sample_monitor_event());
        // A RoCE port's record: its fields are reserved bytes to the 0.1.0 program.
        s.reply(env.id, proto::JoinResult{7, sample_roce_record()});
    } else if (r.mgid == gid("ff15::dead")) {
        s.fail(env.id, policy_failure(mcastd::Errc::denied, "rule no-dead refuses ff15::dead",
                                      kDenyRule));
    } else if (r.mgid == gid("ff15::beef")) {
        s.fail(env.id, policy_failure(mcastd::Errc::limit, "uid 1000 holds 4096 memberships",
                                      kQuota));
    } else {
        auto rec = sample_record();
        rec.mgid = r.mgid;
        s.reply(env.id, proto::JoinResult{8, rec});
    }
    return true;
}

std::map<std::string, std::string> lines_of(const std::string &text) {
    std::map<std::string, std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (auto eq = line.find('='); eq != std::string::npos)
            out[line.substr(0, eq)] = line.substr(eq + 1);
    return out;
}

std::string hex(unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", v);
    return buf;
}

// Runs an abi_probe program against `d` with the library in `libdir`.
Finished probe(const char *program, const FakeDaemon &d, const std::string &libdir) {
    return run({program, d.path()}, {{"LD_LIBRARY_PATH", libdir}, {"ASAN_OPTIONS", "detect_leaks=0"}});
}

TEST(AbiCompat, AProgramBuiltOnThe010HeadersReadsWhatATodaysOneReads) {
    FakeDaemon d(script);
    const Finished now = probe(ABI_PROBE_CURRENT, d, ABI_LIBRARY_DIR);
    ASSERT_EQ(now.exit_code, 0) << now.out << now.err;
    const Finished old = probe(ABI_PROBE_0_1_0, d, ABI_LIBRARY_DIR);
    ASSERT_EQ(old.exit_code, 0) << old.out << old.err;
    EXPECT_EQ(old.out, now.out);
    EXPECT_EQ(old.err, "");

    // And what both read is what the daemon said, the fields added since 1.0 included.
    auto v = lines_of(old.out);
    const auto rec = sample_roce_record();
    EXPECT_EQ(v["end"], "0");
    EXPECT_EQ(v["join"], "0:7");
    EXPECT_EQ(v["join.record.mlid"], "0x0");
    EXPECT_EQ(v["join.record.qkey"], hex(rec.qkey));
    EXPECT_EQ(v["join.record.flow_label"], hex(rec.flow_label));
    // link_layer 1, gid_type 2, sgid_index 3, a zero, the MAC, the IP group, zeros (1.6).
    EXPECT_EQ(v["join.record.tail"], "01020300" "01005e010203" "00000000000000000000ffffef010203" "0000000000000000");
    EXPECT_EQ(v["event.0.restored.record.tail"], std::string(2 * 34, '0')) << "an InfiniBand record";
    EXPECT_EQ(v["event.0.type"], std::to_string(RDMAMCAST_EVENT_RESTORED));
    EXPECT_EQ(v["event.0.restored.record.mlid"], "0xc002");
    EXPECT_EQ(v["event.0.restored.changed"], hex(RDMAMCAST_FIELD_MLID | RDMAMCAST_FIELD_QKEY));
    EXPECT_EQ(v["event.1.lost"], std::to_string(RDMAMCAST_E_SA_ERROR) +
                                     ":1:0x300:sa-error:the SA forgot the group");
    EXPECT_EQ(v["event.2.monitor"], std::to_string(RDMAMCAST_MONITOR_JOINED) +
                                        ":joined:mlx5_0:1:0xc001:1:4242:1000:0:0x0:my-app:"
                                        "joined ff15::1:2");
    EXPECT_EQ(v["event.none"], std::to_string(-EAGAIN));
    EXPECT_EQ(v["denied"], std::to_string(-EACCES));
    EXPECT_EQ(v["denied.code_name"], "denied");
    EXPECT_EQ(v["denied.rule"], kDenyRule.rule);
    EXPECT_EQ(v["denied.quota"], "");
    EXPECT_EQ(v["limit"], std::to_string(-ENOSPC));
    EXPECT_EQ(v["limit.quota"], kQuota.quota);
    EXPECT_EQ(v["limit.limit"], std::to_string(kQuota.limit));
    EXPECT_EQ(v["completion.0.type"], std::to_string(RDMAMCAST_EVENT_JOINED));
    EXPECT_EQ(v["completion.0.joined.context"], "first");
    EXPECT_EQ(v["completion.0.joined.record.mgid"], "ff150000000000000000000000010003");
    EXPECT_EQ(v["completion.1.type"], std::to_string(RDMAMCAST_EVENT_JOIN_ERROR));
    EXPECT_EQ(v["completion.1.join_error.context"], "second");
    EXPECT_EQ(v["completion.1.join_error.error.err"], std::to_string(-EACCES));
    EXPECT_EQ(v["completion.1.join_error.error.rule"], kDenyRule.rule);
    EXPECT_EQ(v["list.0.0.0.policy"], "hpc:1:(null)");
    EXPECT_EQ(v["list.0.0.1.policy"], "root:0:no rule admits uid 0 any more");
    EXPECT_EQ(v["list.0.0.0.name"], "(null)");
    EXPECT_EQ(v["list.0.0.1.name"], "job-42");
    EXPECT_EQ(v["status"], "rdma-mcastd 9.9.9:" + std::to_string(probe_status().protocol) +
                               ":12.5:3:1:1");
    EXPECT_EQ(v["status.counters"], "10,1,2,3,12,8,1,5,9,4,1.25,6,2,11");
    EXPECT_EQ(v["status.port.0"],
              "mlx5_0:1:0:3:1:ACTIVE:InfiniBand:100:4:4096:1:77:0x2c90300000001:0:1024");
    EXPECT_EQ(v["status.port.0.rejoin"], "SM changed:30.5:1:0.25:4");
    EXPECT_EQ(v["status.port.0.sa"], "3.5:1:1:0.40999999999999998:1:300");
    EXPECT_EQ(v["status.user.0"], "1001:bob:3:4096:1:64:1");
    // The record is RoCE's: no DLID, and the record's GID index rather than the caller's 2.
    EXPECT_EQ(v["ah"], "0:0x0:3:0:1:1:" + hex(rec.flow_label) + ":3:64:32");
    EXPECT_EQ(v["leave"], "0");
    EXPECT_NE(v["connect_nowhere.message"].find("/nonexistent/rdma-mcastd.sock"),
              std::string::npos);
}

// What the dynamic loader does with a program built against today's headers and a library
// without the *_sized entry points (RDMAMCAST_1.5): it refuses to start it, by name, before the
// program could read a structure shorter than it expects.
TEST(AbiCompat, ATodaysProgramDoesNotLoadOnALibraryOlderThan15) {
    FakeDaemon d(script);
    const Finished r = probe(ABI_PROBE_CURRENT, d, ABI_OLDER_LIBRARY_DIR);
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find("version `RDMAMCAST_1.5' not found"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(d.requests().empty());
    // The 0.1.0 program needs no node the stand-in lacks: it gets past the version check, and
    // stops at a function the stand-in does not have (its first call, or at load when linked
    // with -z now, as Debian's hardening does).
    const Finished old = probe(ABI_PROBE_0_1_0, d, ABI_OLDER_LIBRARY_DIR);
    EXPECT_EQ(old.err.find("not found"), std::string::npos) << old.err;
    EXPECT_NE(old.err.find("undefined symbol: rdmamcast_"), std::string::npos) << old.err;
}

// ---- the sizes a program passes ----

// This library's sizes, with one of them changed by `delta` bytes.
rdmamcast_sizes sizes_with(std::uint32_t rdmamcast_sizes::*member, int delta) {
    rdmamcast_sizes s = *rdmamcast_compiled_sizes();
    s.*member = static_cast<std::uint32_t>(static_cast<int>(s.*member) + delta);
    return s;
}

// The message names the call, the structure and both sizes.
void expect_abi_refusal(const rdmamcast_error *e, const std::string &call,
                        const std::string &structure, std::uint32_t theirs, std::size_t ours) {
    EXPECT_EQ(e->code, RDMAMCAST_E_ABI);
    EXPECT_EQ(e->err, -EINVAL);
    EXPECT_STREQ(e->code_name, "abi");
    EXPECT_EQ(std::string(e->message),
              call + ": struct " + structure + " is " + std::to_string(theirs) +
                  " bytes in this program and " + std::to_string(ours) + " in librdmamcast " +
                  rdmamcast_version() +
                  (structure == "rdmamcast_event" || structure == "rdmamcast_record"
                       ? ", and its size never changes: the program's headers are not "
                         "librdmamcast's"
                       : ": the program was built against a newer librdmamcast, and needs it"));
}

TEST(AbiSizes, AListStructureLargerThanTheLibrarysIsRefusedBeforeAnythingIsSent) {
    FakeDaemon d(script);
    auto c = connect_to(d);
    rdmamcast_group_list stale{};
    rdmamcast_group_list *l = &stale; // set to NULL on failure
    auto newer = sizes_with(&rdmamcast_sizes::member, 8);
    EXPECT_EQ(rdmamcast_list_sized(c.get(), &l, &newer), -EINVAL);
    EXPECT_EQ(l, nullptr);
    expect_abi_refusal(rdmamcast_last_error(c.get()), "rdmamcast_list", "rdmamcast_member",
                       newer.member, sizeof(rdmamcast_member));
    newer = sizes_with(&rdmamcast_sizes::port_groups, 8);
    EXPECT_EQ(rdmamcast_list_own_sized(c.get(), &l, &newer), -EINVAL);
    expect_abi_refusal(rdmamcast_last_error(c.get()), "rdmamcast_list_own",
                       "rdmamcast_port_groups", newer.port_groups, sizeof(rdmamcast_port_groups));
    EXPECT_TRUE(d.requests_of<proto::List>().empty());

    // An older program's smaller structure is what it reads of ours.
    auto older = sizes_with(&rdmamcast_sizes::member, -32);
    ASSERT_EQ(rdmamcast_list_sized(c.get(), &l, &older), 0) << rdmamcast_last_error(c.get())->message;
    EXPECT_EQ(l->ports[0]->groups[0]->members[1]->membership, 9u);
    rdmamcast_list_free(l);
}

TEST(AbiSizes, AStatusStructureLargerThanTheLibrarysIsRefused) {
    FakeDaemon d(script);
    auto c = connect_to(d);
    rdmamcast_daemon_status *s = nullptr;
    for (auto member : {&rdmamcast_sizes::daemon_status, &rdmamcast_sizes::counters,
                        &rdmamcast_sizes::port_status, &rdmamcast_sizes::rejoin,
                        &rdmamcast_sizes::port_sa, &rdmamcast_sizes::user_usage, &rdmamcast_sizes::refusal}) {
        auto newer = sizes_with(member, 8);
        EXPECT_EQ(rdmamcast_status_sized(c.get(), &s, &newer), -EINVAL);
        EXPECT_EQ(s, nullptr);
        EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_ABI);
    }
    auto newer = sizes_with(&rdmamcast_sizes::counters, 8);
    ASSERT_EQ(rdmamcast_status_sized(c.get(), &s, &newer), -EINVAL);
    expect_abi_refusal(rdmamcast_last_error(c.get()), "rdmamcast_status", "rdmamcast_counters",
                       newer.counters, sizeof(rdmamcast_counters));
    EXPECT_TRUE(d.requests_of<proto::Status>().empty());
    ASSERT_EQ(rdmamcast_status(c.get(), &s), 0);
    rdmamcast_status_free(s);
}

// A table from before struct rdmamcast_refusal (RDMAMCAST_1.5's first, 56 bytes) names no size
// for it: the program cannot reach the refusals, and its status is served.
TEST(AbiSizes, ATableWithoutTheRefusalsSizeIsServed) {
    FakeDaemon d(script);
    auto c = connect_to(d);
    auto first = *rdmamcast_compiled_sizes();
    first.size = offsetof(rdmamcast_sizes, refusal);
    ASSERT_EQ(first.size, 56u);
    first.refusal = 1u << 30; // past its size: never read
    rdmamcast_daemon_status *s = nullptr;
    ASSERT_EQ(rdmamcast_status_sized(c.get(), &s, &first), 0) << rdmamcast_last_error(c.get())->message;
    rdmamcast_status_free(s);
}

TEST(AbiSizes, EventsNeedTheFixedSizesAndAnErrorNoLargerThanTheLibrarys) {
    FakeDaemon d(script);
    auto c = connect_to(d);
    auto p = join_params();
    std::memset(p.mgid, 0, sizeof p.mgid);
    p.name = "job-42"; // three events come before the reply
    ASSERT_EQ(rdmamcast_join(c.get(), &p, nullptr, nullptr), 0);
    rdmamcast_event ev;
    for (auto [member, delta] : {std::pair{&rdmamcast_sizes::event, 8},
                                 std::pair{&rdmamcast_sizes::event, -8},
                                 std::pair{&rdmamcast_sizes::record, 8},
                                 std::pair{&rdmamcast_sizes::error, 8}}) {
        auto other = sizes_with(member, delta);
        EXPECT_EQ(rdmamcast_next_event_sized(c.get(), &ev, &other), -EINVAL);
        EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_ABI);
    }
    auto fixed = sizes_with(&rdmamcast_sizes::record, -8);
    ASSERT_EQ(rdmamcast_next_event_sized(c.get(), &ev, &fixed), -EINVAL);
    expect_abi_refusal(rdmamcast_last_error(c.get()), "rdmamcast_next_event", "rdmamcast_record",
                       fixed.record, sizeof(rdmamcast_record));
    // None was taken: all three are still there.
    for (auto type : {RDMAMCAST_EVENT_RESTORED, RDMAMCAST_EVENT_LOST, RDMAMCAST_EVENT_MONITOR}) {
        ASSERT_EQ(rdmamcast_next_event(c.get(), &ev), 0);
        EXPECT_EQ(ev.type, type);
    }
}

// A program whose rdmamcast_error is larger than the library's cannot be given the last error
// in it: it gets an RDMAMCAST_E_ABI error instead, in memory as large as its structure (the
// event's union bounds it), zero past the library's.
TEST(AbiSizes, ALargerErrorStructureGetsARefusalWithZerosPastTheLibrarys) {
    FakeDaemon d(script);
    auto c = connect_to(d);
    auto newer = sizes_with(&rdmamcast_sizes::error, 24);
    const rdmamcast_error *e = rdmamcast_last_error_sized(c.get(), &newer);
    ASSERT_NE(e, nullptr);
    expect_abi_refusal(e, "rdmamcast_last_error", "rdmamcast_error", newer.error,
                       sizeof(rdmamcast_error));
    EXPECT_STREQ(e->field, "");
    EXPECT_STREQ(e->rule, "");
    const auto *bytes = reinterpret_cast<const unsigned char *>(e);
    for (std::size_t i = sizeof(rdmamcast_error); i < newer.error; ++i)
        EXPECT_EQ(bytes[i], 0) << "byte " << i;
    // The same for the error of a failed connect, and the handle's own error is untouched.
    EXPECT_EQ(rdmamcast_last_error_sized(nullptr, &newer)->code, RDMAMCAST_E_ABI);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_NONE);
}

TEST(AbiSizes, AMissingOrTruncatedTableIsRefused) {
    FakeDaemon d(script);
    auto c = connect_to(d);
    rdmamcast_group_list *l = nullptr;
    EXPECT_EQ(rdmamcast_list_sized(c.get(), &l, nullptr), -EINVAL);
    EXPECT_EQ(rdmamcast_last_error(c.get())->code, RDMAMCAST_E_ABI);
    EXPECT_STREQ(rdmamcast_last_error(c.get())->message,
                 "rdmamcast_list: no structure sizes (pass rdmamcast_compiled_sizes())");
    auto shorter = *rdmamcast_compiled_sizes();
    shorter.size = 8;
    EXPECT_EQ(rdmamcast_list_sized(c.get(), &l, &shorter), -EINVAL);
    EXPECT_NE(std::string(rdmamcast_last_error(c.get())->message).find("rdmamcast_sizes is 8 bytes"),
              std::string::npos);
    EXPECT_EQ(rdmamcast_last_error_sized(c.get(), nullptr)->code, RDMAMCAST_E_ABI);
}

// A newer program's table is longer: what follows this library's members names structures
// it never hands out, and is ignored.
TEST(AbiSizes, ALongerTableFromANewerProgramIsRead) {
    FakeDaemon d(script);
    auto c = connect_to(d);
    struct {
        rdmamcast_sizes known;
        std::uint32_t newer_structures[4];
    } longer{};
    longer.known = *rdmamcast_compiled_sizes();
    longer.known.size = sizeof longer;
    longer.newer_structures[0] = 1u << 30;
    rdmamcast_group_list *l = nullptr;
    ASSERT_EQ(rdmamcast_list_sized(c.get(), &l, &longer.known), 0)
        << rdmamcast_last_error(c.get())->message;
    rdmamcast_list_free(l);
}

// Join parameters carry their own size: a newer program's fields this library does not know
// must be zero, else the join is refused as RDMAMCAST_E_ABI, -E2BIG, naming both sizes.
TEST(AbiSizes, JoinParametersThatSetUnknownFieldsAreAnAbiError) {
    FakeDaemon d(script);
    auto c = connect_to(d);
    struct {
        rdmamcast_join_params p;
        std::uint64_t newer_field;
    } big{};
    big.p = join_params();
    big.p.size = sizeof big;
    big.newer_field = 1;
    EXPECT_EQ(rdmamcast_join(c.get(), &big.p, nullptr, nullptr), -E2BIG);
    const rdmamcast_error *e = rdmamcast_last_error(c.get());
    EXPECT_EQ(e->code, RDMAMCAST_E_ABI);
    EXPECT_NE(std::string(e->message).find("struct rdmamcast_join_params is " +
                                           std::to_string(sizeof big) + " bytes in this program and " +
                                           std::to_string(sizeof(rdmamcast_join_params))),
              std::string::npos)
        << e->message;
    EXPECT_TRUE(d.requests_of<proto::Join>().empty());
}

} // namespace
