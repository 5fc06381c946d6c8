// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// What the D-Bus transport puts on the wire (dbus/wire.hpp), on real sd-bus messages of an
// unconnected bus: a string that is not UTF-8 (a process name can be anything) must not fail
// the message, or one client would break ListGroups for everyone.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/gid.hpp"
#include "common/utf8.hpp"
#include "dbus/wire.hpp"

namespace mcastd::dbus {
namespace {

// A bus over one end of a socketpair, started but never authenticated: enough for sd-bus to
// build, seal and read back messages.
class Wire : public ::testing::Test {
protected:
    Wire() {
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0);
        EXPECT_GE(sd_bus_new(&bus_), 0);
        EXPECT_GE(sd_bus_set_fd(bus_, fds_[0], fds_[0]), 0);
        EXPECT_GE(sd_bus_start(bus_), 0);
    }
    ~Wire() override {
        for (sd_bus_message *m : messages_)
            sd_bus_message_unref(m);
        sd_bus_close_unref(bus_); // closes fds_[0]
        ::close(fds_[1]);
    }
    sd_bus_message *message() {
        sd_bus_message *m = nullptr;
        EXPECT_GE(sd_bus_message_new_signal(bus_, &m, "/org/rdmamcast1", "org.rdmamcast1.Manager", "Test"), 0);
        messages_.push_back(m);
        return m;
    }
    // Seals `m` as sending would, and rewinds it for reading.
    static void seal(sd_bus_message *m) {
        ASSERT_GE(sd_bus_message_seal(m, 1, 0), 0);
        ASSERT_GE(sd_bus_message_rewind(m, 1), 0);
    }

    int fds_[2] = {-1, -1};
    sd_bus *bus_ = nullptr;
    std::vector<sd_bus_message *> messages_;
};

proto::ListResult one_member(const std::string &comm) {
    proto::MemberInfo mem;
    mem.membership = 7;
    mem.join_state = join::full;
    mem.state = "active";
    mem.pid = 4242;
    mem.uid = 1001;
    mem.comm = comm;
    proto::GroupInfo g;
    g.mgid = *parse_gid("ff15::1");
    g.mlid = 0xc001;
    g.qkey = 0x11;
    g.held = join::full;
    g.members.push_back(mem);
    proto::PortGroups p;
    p.device = "mlx5_0";
    p.port = 1;
    p.groups.push_back(g);
    return proto::ListResult{{p}};
}

TEST_F(Wire, SdBusRefusesAStringThatIsNotUtf8) {
    // Why append_text() exists: the premise of every test below.
    EXPECT_EQ(sd_bus_message_append_basic(message(), 's', "\xff\xfe"), -EINVAL);
}

TEST_F(Wire, ListGroupsWithAMemberWhoseCommIsNotUtf8WorksAndShowsTheReplacement) {
    sd_bus_message *m = message();
    ASSERT_GE(append_groups(m, one_member("\xff\xfe")), 0);
    seal(m);
    ASSERT_GT(sd_bus_message_enter_container(m, 'a', "(sqsquasasa(tssuus))"), 0);
    ASSERT_GT(sd_bus_message_enter_container(m, 'r', "sqsquasasa(tssuus)"), 0);
    const char *device = nullptr, *mgid = nullptr;
    std::uint16_t port = 0, mlid = 0;
    std::uint32_t qkey = 0;
    ASSERT_GE(sd_bus_message_read(m, "sqsqu", &device, &port, &mgid, &mlid, &qkey), 0);
    EXPECT_STREQ(device, "mlx5_0");
    EXPECT_EQ(port, 1);
    EXPECT_STREQ(mgid, "ff15::1");
    EXPECT_EQ(mlid, 0xc001);
    ASSERT_GE(sd_bus_message_skip(m, "asas"), 0);
    ASSERT_GT(sd_bus_message_enter_container(m, 'a', "(tssuus)"), 0);
    std::uint64_t id = 0;
    const char *join_state = nullptr, *state = nullptr, *comm = nullptr;
    std::uint32_t pid = 0, uid = 0;
    ASSERT_GT(sd_bus_message_read(m, "(tssuus)", &id, &join_state, &state, &pid, &uid, &comm), 0);
    EXPECT_EQ(id, 7u);
    EXPECT_STREQ(join_state, "full");
    EXPECT_EQ(pid, 4242u);
    EXPECT_EQ(uid, 1001u);
    EXPECT_EQ(std::string(comm), std::string(kReplacementCharacter) + std::string(kReplacementCharacter));
}

TEST_F(Wire, TextKeepsUtf8AndReplacesTheRest) {
    sd_bus_message *m = message();
    ASSERT_GE(append_text(m, "gr\xc3\xb6\xc3\x9f" "e"), 0);
    ASSERT_GE(append_text(m, "a\xc0z"), 0);
    seal(m);
    const char *a = nullptr, *b = nullptr;
    ASSERT_GE(sd_bus_message_read(m, "ss", &a, &b), 0);
    EXPECT_STREQ(a, "gr\xc3\xb6\xc3\x9f" "e");
    EXPECT_EQ(std::string(b), "a" + std::string(kReplacementCharacter) + "z");
}

} // namespace
} // namespace mcastd::dbus
