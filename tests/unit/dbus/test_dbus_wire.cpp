// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// daemon/dbus's messages, written and read back through sd-bus itself: the bus's credentials
// (GetConnectionCredentials' a{sv}), ListGroups and ListGroups2 with what the socket's list
// carries and text that is not UTF-8, StateChanged and error replies, and Evict's options
// through the protocol's decoder.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <thread>
#include <vector>
#include <string>

#include "dbus/caller_identity.hpp"
#include "dbus/errors.hpp"
#include "dbus/evict_args.hpp"
#include "dbus/list_reply.hpp"
#include "dbus/wire.hpp"
#include "common/utf8.hpp"

namespace mcastd::dbus {
namespace {

// An sd-bus that builds messages: started on one end of a socketpair, with nothing on the
// other end (building, sealing and reading a message needs no peer).
class Messages : public ::testing::Test {
protected:
    Messages() {
        int fds[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        other_ = fds[1];
        sd_bus_new(&bus_);
        sd_bus_set_fd(bus_, fds[0], fds[0]);
        sd_bus_set_anonymous(bus_, 1);
        EXPECT_GE(sd_bus_start(bus_), 0);
    }
    ~Messages() override {
        for (auto *m : made_)
            sd_bus_message_unref(m);
        sd_bus_close_unref(bus_); // no flush: nobody will ever read the other end
        ::close(other_);
    }
    sd_bus_message *message() {
        sd_bus_message *m = nullptr;
        EXPECT_GE(sd_bus_message_new_method_call(bus_, &m, "org.rdmamcast1", "/org/rdmamcast1", "test.Iface", "M"), 0);
        made_.push_back(m);
        return m;
    }
    // Done writing: sealed and rewound for reading.
    static void to_read(sd_bus_message *m) {
        ASSERT_GE(sd_bus_message_seal(m, 1, 0), 0);
        ASSERT_GE(sd_bus_message_rewind(m, 1), 0);
    }

private:
    sd_bus *bus_ = nullptr;
    int other_ = -1;
    std::vector<sd_bus_message *> made_;
};

// ---- GetConnectionCredentials ----

TEST_F(Messages, TheBusCredentialsAreReadAndUnknownKeysSkipped) {
    sd_bus_message *m = message();
    const std::uint32_t gids[] = {100, 1001, 3000};
    ASSERT_GE(sd_bus_message_append(m, "a{sv}", 4, "ProcessID", "u", 4242u, "LinuxSecurityLabel", "ay", 3, 'a', 'b',
                                    'c', "UnixUserID", "u", 1001u, "UnixGroupIDs", "au", 3, gids[0], gids[1], gids[2]),
              0);
    to_read(m);
    BusCredentials c;
    ASSERT_GE(read_bus_credentials(m, c), 0);
    EXPECT_EQ(c.uid, std::optional<uid_t>(1001));
    EXPECT_EQ(c.pid, std::optional<pid_t>(4242));
    EXPECT_EQ(c.gids, (std::optional<std::vector<gid_t>>{{100, 1001, 3000}}));
}

TEST_F(Messages, FieldsTheBusLeavesOutStayUnknown) {
    sd_bus_message *m = message();
    ASSERT_GE(sd_bus_message_append(m, "a{sv}", 1, "UnixUserID", "u", 0u), 0);
    to_read(m);
    BusCredentials c;
    ASSERT_GE(read_bus_credentials(m, c), 0);
    EXPECT_EQ(c.uid, std::optional<uid_t>(0));
    EXPECT_FALSE(c.gids);
    EXPECT_FALSE(c.pid);
    // And attest_caller refuses such a caller, naming what is missing.
    const auto r = attest_caller(":1.9", c, std::chrono::seconds(1));
    ASSERT_TRUE(std::holds_alternative<Error>(r));
    EXPECT_NE(std::get<Error>(r).message.find("no supplementary groups for :1.9"), std::string::npos);
}

TEST_F(Messages, AValueOfTheWrongTypeIsAnError) {
    sd_bus_message *m = message();
    ASSERT_GE(sd_bus_message_append(m, "a{sv}", 1, "UnixUserID", "s", "root"), 0);
    to_read(m);
    BusCredentials c;
    EXPECT_LT(read_bus_credentials(m, c), 0);
    EXPECT_FALSE(c.uid);
}

// ---- text ----

TEST_F(Messages, SdBusRefusesAStringThatIsNotUtf8) {
    // Why append_text() exists: the premise of every test of text here.
    EXPECT_EQ(sd_bus_message_append_basic(message(), 's', "\xff\xfe"), -EINVAL);
}

TEST_F(Messages, TextKeepsUtf8AndReplacesTheRest) {
    sd_bus_message *m = message();
    ASSERT_GE(append_text(m, "gr\xc3\xb6\xc3\x9f" "e"), 0);
    ASSERT_GE(append_text(m, "a\xc0z"), 0);
    to_read(m);
    const char *a = nullptr, *b = nullptr;
    ASSERT_GE(sd_bus_message_read(m, "ss", &a, &b), 0);
    EXPECT_STREQ(a, "gr\xc3\xb6\xc3\x9f" "e");
    EXPECT_EQ(std::string(b), "a" + std::string(kReplacementCharacter) + "z");
}

// ---- ListGroups, ListGroups2 ----

proto::ListResult sample_list() {
    proto::MemberInfo a{7, join::full, "active", 4242, 1001, "my-app", "hpc", true, "", "job-42"};
    proto::MemberInfo b{8, join::send_only_non_member, "lost", 4343, 1002, "bad-\xff" "name", "everyone", false,
                        "rule \"everyone\" (config access.rules) allows MGIDs in ff15:a::/32 only", ""};
    proto::GroupInfo g;
    g.mgid = *parse_gid("ff15::1:2");
    g.mlid = 0xc001;
    g.qkey = 0x12345678;
    g.held = join::full | join::send_only_non_member;
    g.foreign = join::non_member;
    g.counts = {1, 0, 1, 0};
    g.members = {a, b};
    proto::PortGroups p{"mlx5_0", 1, *parse_gid("fe80::10:3"), {g}};
    return proto::ListResult{{p}};
}

// A variant's contents as text, for the basic types and string arrays the list uses.
std::string read_variant(sd_bus_message *m) {
    char type = 0;
    const char *contents = nullptr;
    sd_bus_message_peek_type(m, &type, &contents);
    std::string out;
    sd_bus_message_enter_container(m, 'v', contents);
    const std::string t = contents;
    if (t == "s") {
        const char *s = nullptr;
        sd_bus_message_read(m, "s", &s);
        out = s;
    } else if (t == "t") {
        std::uint64_t v = 0;
        sd_bus_message_read(m, "t", &v);
        out = std::to_string(v);
    } else if (t == "u") {
        std::uint32_t v = 0;
        sd_bus_message_read(m, "u", &v);
        out = std::to_string(v);
    } else if (t == "q") {
        std::uint16_t v = 0;
        sd_bus_message_read(m, "q", &v);
        out = std::to_string(v);
    } else if (t == "y") {
        std::uint8_t v = 0;
        sd_bus_message_read(m, "y", &v);
        out = std::to_string(v);
    } else if (t == "b") {
        int v = 0;
        sd_bus_message_read(m, "b", &v);
        out = v ? "true" : "false";
    } else if (t == "as") {
        sd_bus_message_enter_container(m, 'a', "s");
        for (const char *s = nullptr; sd_bus_message_read(m, "s", &s) > 0;)
            out += (out.empty() ? "" : ",") + std::string(s);
        sd_bus_message_exit_container(m);
    } else if (t == "a{su}") {
        sd_bus_message_enter_container(m, 'a', "{su}");
        const char *k = nullptr;
        std::uint32_t v = 0;
        while (sd_bus_message_read(m, "{su}", &k, &v) > 0)
            out += (out.empty() ? "" : ",") + std::string(k) + "=" + std::to_string(v);
        sd_bus_message_exit_container(m);
    } else {
        out = "(" + t + ")";
        sd_bus_message_skip(m, contents);
    }
    sd_bus_message_exit_container(m);
    return out;
}

// One a{sv}, its values as text; "members" is read into `members` when given.
std::map<std::string, std::string> read_dict(sd_bus_message *m,
                                             std::vector<std::map<std::string, std::string>> *members = nullptr) {
    std::map<std::string, std::string> out;
    EXPECT_GT(sd_bus_message_enter_container(m, 'a', "{sv}"), 0);
    while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
        const char *key = nullptr;
        sd_bus_message_read(m, "s", &key);
        if (members && std::string(key) == "members") {
            sd_bus_message_enter_container(m, 'v', "aa{sv}");
            sd_bus_message_enter_container(m, 'a', "a{sv}");
            while (sd_bus_message_peek_type(m, nullptr, nullptr) > 0)
                members->push_back(read_dict(m));
            sd_bus_message_exit_container(m);
            sd_bus_message_exit_container(m);
            out[key] = "(read)";
        } else {
            out[key] = read_variant(m);
        }
        sd_bus_message_exit_container(m);
    }
    sd_bus_message_exit_container(m);
    return out;
}

TEST_F(Messages, ListGroups2CarriesWhatTheSocketsListCarries) {
    sd_bus_message *m = message();
    ASSERT_GE(append_groups(m, sample_list()), 0) << "text that is not UTF-8 is made valid";
    to_read(m);
    ASSERT_GT(sd_bus_message_enter_container(m, 'a', "a{sv}"), 0);
    std::vector<std::map<std::string, std::string>> members;
    const auto g = read_dict(m, &members);
    EXPECT_EQ(g, (std::map<std::string, std::string>{{"device", "mlx5_0"},
                                                     {"port", "1"},
                                                     {"port_gid", "fe80::10:3"},
                                                     {"link_layer", "InfiniBand"},
                                                     {"mgid", "ff15::1:2"},
                                                     {"mlid", "49153"},
                                                     {"qkey", "305419896"},
                                                     {"busy", "false"},
                                                     {"held", "full,sendonly-nonmember"},
                                                     {"foreign", "nonmember"},
                                                     {"counts", "full=1,nonmember=0,sendonly-nonmember=1,sendonly-full=0"},
                                                     {"members", "(read)"}}));
    ASSERT_EQ(members.size(), 2u);
    EXPECT_EQ(members[0], (std::map<std::string, std::string>{{"membership", "7"},
                                                              {"join_state", "full"},
                                                              {"state", "active"},
                                                              {"pid", "4242"},
                                                              {"uid", "1001"},
                                                              {"comm", "my-app"},
                                                              {"rule", "hpc"},
                                                              {"created", "true"},
                                                              {"name", "job-42"}}));
    EXPECT_EQ(members[1].at("comm"), "bad-\xEF\xBF\xBDname");
    EXPECT_EQ(members[1].at("flagged"), "rule \"everyone\" (config access.rules) allows MGIDs in ff15:a::/32 only");
    EXPECT_EQ(members[1].count("name"), 0u) << "set keys only, as on the socket";
    EXPECT_EQ(members[1].at("created"), "false");
}

// A RoCE port's group says where it is sent from, with the socket's keys.
TEST_F(Messages, ListGroups2HasARoceGroupsSource) {
    proto::GroupInfo g;
    g.mgid = *parse_gid("::ffff:239.1.2.3");
    g.roce = RoceSource{GidType::roce_v2, 3, "veth1"};
    proto::ListResult l{{proto::PortGroups{"rxe0", 1, *parse_gid("::ffff:10.77.0.1"), {g}, LinkLayer::ethernet}}};
    sd_bus_message *m = message();
    ASSERT_GE(append_groups(m, l), 0);
    to_read(m);
    ASSERT_GT(sd_bus_message_enter_container(m, 'a', "a{sv}"), 0);
    std::vector<std::map<std::string, std::string>> members;
    const auto d = read_dict(m, &members);
    EXPECT_EQ(d.at("link_layer"), "Ethernet");
    EXPECT_EQ(d.at("gid_type"), "roce_v2");
    EXPECT_EQ(d.at("sgid_index"), "3");
    EXPECT_EQ(d.at("netdev"), "veth1");
}

TEST_F(Messages, ListGroupsKeepsItsSignatureAndMakesNamesValid) {
    sd_bus_message *m = message();
    ASSERT_GE(append_groups_v1(m, sample_list()), 0);
    to_read(m);
    ASSERT_GT(sd_bus_message_enter_container(m, 'a', "(sqsquasasa(tssuus))"), 0);
    ASSERT_GT(sd_bus_message_enter_container(m, 'r', "sqsquasasa(tssuus)"), 0);
    const char *dev = nullptr, *mgid = nullptr;
    std::uint16_t port = 0, mlid = 0;
    std::uint32_t qkey = 0;
    ASSERT_GT(sd_bus_message_read(m, "sqsqu", &dev, &port, &mgid, &mlid, &qkey), 0);
    EXPECT_STREQ(mgid, "ff15::1:2");
    sd_bus_message_skip(m, "asas");
    ASSERT_GT(sd_bus_message_enter_container(m, 'a', "(tssuus)"), 0);
    std::vector<std::string> comms;
    std::uint64_t id = 0;
    const char *js = nullptr, *st = nullptr, *comm = nullptr;
    std::uint32_t pid = 0, uid = 0;
    while (sd_bus_message_read(m, "(tssuus)", &id, &js, &st, &pid, &uid, &comm) > 0)
        comms.push_back(comm);
    EXPECT_EQ(comms, (std::vector<std::string>{"my-app", "bad-\xEF\xBF\xBDname"}));
}

// ---- the size of a list reply ----

// What sd-bus really sends for a list: the message goes over a socketpair to a peer that speaks
// just enough of the D-Bus authentication (it answers the client's pipelined AUTH ... BEGIN with
// DATA and OK), and the body length comes from the message's fixed header (bytes 4..7, little-endian).
std::size_t sent_body_bytes(const proto::ListResult &list, bool v2) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    std::uint32_t body = 0;
    std::thread peer([fd = fds[1], &body] {
        std::string in;
        char buf[4096];
        while (in.find("BEGIN\r\n") == std::string::npos) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n <= 0)
                return;
            in.append(buf, static_cast<std::size_t>(n));
        }
        // sd-bus sends "AUTH EXTERNAL" with no initial response and its empty DATA at once:
        // the server asks for the data, then accepts.
        const std::string ok = "DATA\r\nOK 0123456789abcdef0123456789abcdef\r\n";
        if (::write(fd, ok.data(), ok.size()) != static_cast<ssize_t>(ok.size()))
            return;
        std::uint8_t header[16];
        std::size_t got = 0;
        while (got < sizeof header) {
            const ssize_t n = ::read(fd, header + got, sizeof header - got);
            if (n <= 0)
                return;
            got += static_cast<std::size_t>(n);
        }
        auto le32 = [&header](int at) {
            return header[at] | header[at + 1] << 8 | header[at + 2] << 16 |
                   static_cast<std::uint32_t>(header[at + 3]) << 24;
        };
        body = le32(4);
        // The rest of the message (its header fields, padded to 8, and the body), so that the
        // client's flush completes.
        std::size_t left = (le32(12) + 7) / 8 * 8 + body;
        while (left > 0) {
            const ssize_t n = ::read(fd, buf, std::min(left, sizeof buf));
            if (n <= 0)
                return;
            left -= static_cast<std::size_t>(n);
        }
    });
    sd_bus *bus = nullptr;
    sd_bus_new(&bus);
    sd_bus_set_fd(bus, fds[0], fds[0]);
    sd_bus_negotiate_fds(bus, 0);
    EXPECT_GE(sd_bus_start(bus), 0);
    sd_bus_message *m = nullptr;
    EXPECT_GE(sd_bus_message_new_signal(bus, &m, "/org/rdmamcast1", "test.Iface", "L"), 0);
    EXPECT_GE(v2 ? append_groups(m, list) : append_groups_v1(m, list), 0);
    EXPECT_GE(sd_bus_send(bus, m, nullptr), 0);
    EXPECT_GE(sd_bus_flush(bus), 0);
    peer.join();
    sd_bus_message_unref(m);
    sd_bus_close_unref(bus);
    ::close(fds[1]);
    return body;
}

// Lists of every shape: no group, a group with no member, members with and without the
// optional keys, long text and text that is not UTF-8, a RoCE group, many groups and members.
std::vector<proto::ListResult> lists_of_every_shape() {
    std::vector<proto::ListResult> out{proto::ListResult{}, sample_list()};
    proto::ListResult empty_group = sample_list();
    empty_group.ports[0].groups[0].members.clear();
    out.push_back(empty_group);
    proto::ListResult big = sample_list();
    proto::GroupInfo roce;
    roce.mgid = *parse_gid("::ffff:239.1.2.3");
    roce.roce = RoceSource{GidType::roce_v2, 3, "veth1"};
    for (int i = 0; i < 300; ++i) {
        proto::MemberInfo mem{static_cast<std::uint64_t>(i), join::full, "active", i, 1000 + static_cast<uid_t>(i),
                              std::string(static_cast<std::size_t>(i % 16), 'c'), std::string(static_cast<std::size_t>(i % 40), 'r'),
                              i % 2 == 0, i % 3 ? "" : std::string(static_cast<std::size_t>(i), 'f'),
                              i % 5 ? "" : std::string(static_cast<std::size_t>(i % 100), 'n')};
        roce.members.push_back(mem);
        big.ports[0].groups[0].members.push_back(mem);
    }
    big.ports.push_back(proto::PortGroups{"rxe0", 1, *parse_gid("::ffff:10.77.0.1"), {roce}, LinkLayer::ethernet});
    for (int i = 0; i < 50; ++i) {
        proto::GroupInfo g = sample_list().ports[0].groups[0];
        g.held = static_cast<std::uint8_t>(i % 16);
        g.foreign = static_cast<std::uint8_t>((i / 3) % 16);
        big.ports[0].groups.push_back(g);
    }
    out.push_back(big);
    return out;
}

// ListGroups answers in one message, which the bus drops the daemon for past its limit: the
// daemon answers TooLarge above kMaxReplyBytes by reply_bytes_at_most(), which must never be
// short of what sd-bus sends, and not so far over that it refuses lists the bus would take.
TEST(ListReplySize, TheBoundIsNeverShortOfWhatSdBusSends) {
    for (const bool v2 : {true, false})
        for (const auto &list : lists_of_every_shape()) {
            const std::size_t sent = sent_body_bytes(list, v2);
            const std::size_t bound = reply_bytes_at_most(list, v2);
            ASSERT_GT(sent, 0u);
            EXPECT_GE(bound, sent) << (v2 ? "ListGroups2" : "ListGroups");
            EXPECT_LE(bound, 2 * sent + 64) << (v2 ? "ListGroups2" : "ListGroups") << ": far over";
        }
}

TEST(ListReplySize, AFullHostIsRefusedAndAnOrdinaryOneIsNot) {
    auto host = [](std::size_t members) {
        proto::ListResult l = sample_list();
        proto::GroupInfo g = l.ports[0].groups[0];
        g.members.assign(members, proto::MemberInfo{123456, join::full, "active", 123456, 1001, "mpi-rank-0042",
                                                    "hpc-jobs", false, "", ""});
        l.ports[0].groups = {g};
        return l;
    };
    EXPECT_LT(reply_bytes_at_most(host(20'000), true), kMaxReplyBytes);
    EXPECT_GT(reply_bytes_at_most(host(262'144), true), kMaxReplyBytes) << "limits.max_memberships";
}

// ---- StateChanged ----

TEST_F(Messages, StateChangedCarriesTheChangedFieldsMlidFirstAndAValidReason) {
    sd_bus_message *m = message();
    McRecord rec;
    rec.mgid = *parse_gid("ff15::1");
    rec.mlid = 0xc002;
    ASSERT_GE(append_state_changed(m, "lost", rec, field::mlid | field::qkey, "evicted (bad-\xff)"), 0);
    to_read(m);
    const char *state = nullptr;
    ASSERT_GT(sd_bus_message_read(m, "s", &state), 0);
    EXPECT_STREQ(state, "lost");
    ASSERT_GE(sd_bus_message_skip(m, "a{sv}"), 0);
    std::vector<std::string> changed;
    ASSERT_GT(sd_bus_message_enter_container(m, 'a', "s"), 0);
    for (const char *c = nullptr; sd_bus_message_read(m, "s", &c) > 0;)
        changed.push_back(c);
    sd_bus_message_exit_container(m);
    ASSERT_FALSE(changed.empty());
    EXPECT_EQ(changed.front(), "mlid");
    EXPECT_EQ(changed.size(), 2u);
    const char *reason = nullptr;
    ASSERT_GT(sd_bus_message_read(m, "s", &reason), 0);
    EXPECT_STREQ(reason, "evicted (bad-\xEF\xBF\xBD)");
}

// ---- errors ----

TEST_F(Messages, AnErrorReplyCarriesTheNameAndAValidSentence) {
    sd_bus_message *call = message();
    to_read(call);
    sd_bus_message *reply = nullptr;
    ASSERT_GE(error_reply(call,
                          Error{Errc::denied, "evicted by an administrator (bad-\xff" "name, pid 7)", std::nullopt},
                          &reply),
              0);
    const sd_bus_error *e = sd_bus_message_get_error(reply);
    ASSERT_NE(e, nullptr);
    EXPECT_STREQ(e->name, "org.rdmamcast1.Error.Denied");
    EXPECT_STREQ(e->message, "evicted by an administrator (bad-\xEF\xBF\xBDname, pid 7)");
    sd_bus_message_unref(reply);
}

// ---- a call's size (config limits.max_message_bytes, as on the socket) ----

// An a{sv} of `n` options, `key(i)` each with the uint32 i, or the string `text` when not empty.
template <class Key>
void append_options(sd_bus_message *m, std::size_t n, Key key, const std::string &text = {}) {
    ASSERT_GE(sd_bus_message_open_container(m, 'a', "{sv}"), 0);
    for (std::size_t i = 0; i < n; ++i) {
        const std::string k = key(i);
        ASSERT_GE(text.empty() ? sd_bus_message_append(m, "{sv}", k.c_str(), "u", static_cast<std::uint32_t>(i))
                               : sd_bus_message_append(m, "{sv}", k.c_str(), "s", text.c_str()),
                  0);
    }
    ASSERT_GE(sd_bus_message_close_container(m), 0);
}

// Reads the options of `m` under a bound of 65536 bytes: the error, or nullopt.
std::optional<Error> options_refusal(sd_bus_message *m, Options &out) {
    ArgumentBound bound(65536);
    std::optional<Error> refused;
    EXPECT_GE(read_options(m, out, refused, bound), 0);
    return refused;
}

// One key of 16 MiB of '/' made the daemon build a JSON object that size and answer with a
// message quoting it escaped, twice that: past the bus's limit, so the bus dropped the daemon.
TEST_F(Messages, AHugeOptionKeyIsTooLargeAndNothingOfItIsKept) {
    sd_bus_message *m = message();
    append_options(m, 1, [](std::size_t) { return std::string(1 << 20, '/'); });
    to_read(m);
    Options out;
    const auto refused = options_refusal(m, out);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->code, Errc::too_large);
    EXPECT_EQ(refused->message,
              "the call carries more than the 65536 bytes of arguments this daemon accepts (config "
              "limits.max_message_bytes: 65536; each option counts 16 bytes besides its key and string value)");
    EXPECT_TRUE(out.empty()) << "refused before it was copied";
}

TEST_F(Messages, AHugeStringValueIsTooLarge) {
    sd_bus_message *m = message();
    append_options(m, 1, [](std::size_t) { return std::string("name"); }, std::string(70000, 'x'));
    to_read(m);
    Options out;
    const auto refused = options_refusal(m, out);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->code, Errc::too_large);
    EXPECT_TRUE(out.empty());
}

// Many small options are bounded too: each costs kOptionBytes besides its key, so 65536 bytes
// hold 4096 options with empty keys and no more.
TEST_F(Messages, ManyOptionsAreTooLargeAndOptionsWithinTheBoundAreRead) {
    sd_bus_message *many = message();
    append_options(many, 4097, [](std::size_t) { return std::string(); });
    to_read(many);
    Options out;
    const auto refused = options_refusal(many, out);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->code, Errc::too_large);
    EXPECT_EQ(out.size(), 4096u) << "read up to the bound, and not one more";

    sd_bus_message *fits = message();
    append_options(fits, 4096, [](std::size_t) { return std::string(); });
    to_read(fits);
    Options all;
    EXPECT_FALSE(options_refusal(fits, all));
    EXPECT_EQ(all.size(), 4096u);
}

TEST(DbusArgumentBound, CountsUpToItsLimitAndStaysOverOnceOver) {
    ArgumentBound b(100);
    EXPECT_TRUE(b.take(60));
    EXPECT_TRUE(b.take(40)) << "exactly the limit is within it";
    EXPECT_FALSE(b.over());
    EXPECT_FALSE(b.take(1));
    EXPECT_TRUE(b.over());
    EXPECT_FALSE(b.take(0)) << "over stays over";
    ArgumentBound huge(100);
    EXPECT_FALSE(huge.take(SIZE_MAX)) << "no wrap-around";
    EXPECT_TRUE(huge.over());
    EXPECT_EQ(huge.too_large().code, Errc::too_large);
}

// A key is quoted short: the error message of a long one stays small, whatever the key.
TEST_F(Messages, AWrongTypeNamesItsKeyCutShort) {
    sd_bus_message *m = message();
    ASSERT_GE(sd_bus_message_append(m, "a{sv}", 1, std::string(1000, '/').c_str(), "d", 1.5), 0);
    to_read(m);
    Options out;
    const auto refused = options_refusal(m, out);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->code, Errc::invalid_argument);
    std::string slashes;
    for (int i = 0; i < 32; ++i)
        slashes += "~1";
    EXPECT_EQ(refused->message,
              "/" + slashes + "...: a value of D-Bus type 'd' where an integer, a boolean or a string belongs");
}

// ---- Evict ----

// What a key of 40 '/' is called: its first 32 bytes as a JSON pointer token, then "...".
std::string long_key_unknown() {
    std::string out = "/";
    for (int i = 0; i < 32; ++i)
        out += "~1";
    return out + "...: unknown key";
}

std::string evict_error(const Options &o) {
    auto r = decode_evict_args(o);
    if (auto *e = std::get_if<Error>(&r)) {
        EXPECT_EQ(e->code, Errc::invalid_argument);
        return e->message;
    }
    return "(accepted)";
}

TEST(DbusEvictArgs, TheSocketsRulesAndSentences) {
    auto ok = decode_evict_args({{"uid", std::uint64_t{1001}}, {"disconnect", true}});
    ASSERT_TRUE(std::holds_alternative<proto::Evict>(ok));
    EXPECT_EQ(std::get<proto::Evict>(ok).uid, std::optional<uid_t>(1001));
    EXPECT_TRUE(std::get<proto::Evict>(ok).disconnect);
    auto one = decode_evict_args({{"membership", std::int64_t{7}}});
    ASSERT_TRUE(std::holds_alternative<proto::Evict>(one));
    EXPECT_EQ(std::get<proto::Evict>(one).membership, std::optional<std::uint64_t>(7));

    EXPECT_EQ(evict_error({}), "/uid: required key is missing (or membership: one membership's id)");
    EXPECT_EQ(evict_error({{"uid", std::uint64_t{1}}, {"membership", std::uint64_t{2}}}),
              "/membership: uid and membership exclude each other");
    EXPECT_EQ(evict_error({{"membership", std::uint64_t{2}}, {"disconnect", true}}),
              "/disconnect: goes with uid: a membership has no connection of its own to close");
    EXPECT_EQ(evict_error({{"uid", std::uint64_t{4294967295}}}).rfind("/uid: ", 0), 0u);
    EXPECT_EQ(evict_error({{"uid", std::string("root")}}).rfind("/uid: ", 0), 0u);
    EXPECT_EQ(evict_error({{"uid", std::uint64_t{1}}, {"uid", std::uint64_t{2}}}), "/uid: given twice");
    EXPECT_EQ(evict_error({{"op", std::string("join")}, {"uid", std::uint64_t{1}}}), "/op: unknown key");
    EXPECT_EQ(evict_error({{"uid", std::uint64_t{1}}, {"colour", std::string("red")}}).rfind("/colour: ", 0), 0u);
    // A key is quoted cut short, and the decoder, which quotes a key whole, never sees a long one.
    EXPECT_EQ(evict_error({{std::string(40, '/'), std::uint64_t{1}}}), long_key_unknown());
    EXPECT_EQ(evict_error({{std::string(32, 'k'), std::uint64_t{1}}}), "/" + std::string(32, 'k') + ": unknown key");
}

} // namespace
} // namespace mcastd::dbus
