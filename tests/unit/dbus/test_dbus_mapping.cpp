// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// daemon/dbus without a bus: what each domain error is called on D-Bus, how a record becomes
// a{sv} and properties, how Join's arguments are validated, and LogControl1's level names.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "common/gid.hpp"
#include "dbus/errors.hpp"
#include "dbus/join_args.hpp"
#include "dbus/log_control.hpp"
#include "dbus/record_dict.hpp"

namespace mcastd::dbus {
namespace {

constexpr Errc kAll[] = {Errc::invalid_argument, Errc::no_such_device, Errc::no_such_port, Errc::port_not_active,
                         Errc::conflict,         Errc::sa_error,       Errc::sa_timeout,   Errc::denied,
                         Errc::too_large,        Errc::unsupported_version, Errc::not_found, Errc::cancelled,
                         Errc::limit,            Errc::internal};

// "sa-timeout" -> "SaTimeout"
std::string camel(std::string_view kebab) {
    std::string out;
    bool up = true;
    for (char c : kebab) {
        if (c == '-') {
            up = true;
            continue;
        }
        out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
        up = false;
    }
    return out;
}

TEST(DbusErrors, EveryCodeIsItsProtocolNameInCamelCase) {
    std::set<std::string> names;
    for (Errc c : kAll) {
        EXPECT_EQ(error_name(c), std::string(kErrorPrefix) + camel(errc_name(c)));
        names.insert(error_name(c));
    }
    EXPECT_EQ(names.size(), std::size(kAll));
    EXPECT_STREQ(error_name(Errc::sa_error), "org.rdmamcast1.Error.SaError");
    EXPECT_STREQ(error_name(Errc::port_not_active), "org.rdmamcast1.Error.PortNotActive");
}

TEST(DbusErrors, TheMapGivesClientsTheErrno) {
    ASSERT_GE(sd_bus_error_add_map(error_map()), 0);
    for (Errc c : kAll) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        EXPECT_EQ(sd_bus_error_set(&e, error_name(c), "why"), -error_errno(c)) << error_name(c);
        EXPECT_EQ(sd_bus_error_get_errno(&e), error_errno(c));
        sd_bus_error_free(&e);
    }
    EXPECT_EQ(error_errno(Errc::sa_timeout), ETIMEDOUT);
    EXPECT_EQ(error_errno(Errc::denied), EACCES);
}

TEST(DbusRecord, EntriesCarryEveryRecordKeyWithItsDbusType) {
    McRecord r;
    r.mgid = *parse_gid("ff15::1:2");
    r.port_gid = *parse_gid("fe80::10:3");
    r.mlid = 0xc001;
    r.qkey = 0x12345678;
    r.pkey = 0xffff;
    r.sl = 3;
    r.mtu = 4;  // 2048
    r.rate = 3; // 10 Gb/s
    r.flow_label = 0xabcde;
    r.tclass = 7;
    r.hop_limit = 9;
    r.scope = 5;
    r.join_state = join::full | join::send_only_full;
    const auto entries = record_entries(r);
    std::vector<std::string> keys;
    for (const auto &e : entries)
        keys.emplace_back(e.key);
    EXPECT_EQ(keys, (std::vector<std::string>{"mgid", "port_gid", "mlid", "qkey", "pkey", "sl", "mtu", "rate",
                                              "rate_gbps", "flow_label", "traffic_class", "hop_limit", "scope",
                                              "join_state", "link_layer"}))
        << "an InfiniBand record has none of RoCE's keys";
    EXPECT_EQ(record_property(r, "MGID"), Value(std::string("ff15::1:2")));
    EXPECT_EQ(record_property(r, "PortGID"), Value(std::string("fe80::10:3")));
    EXPECT_EQ(record_property(r, "MLID"), Value(std::uint16_t{0xc001}));
    EXPECT_EQ(record_property(r, "QKey"), Value(std::uint32_t{0x12345678}));
    EXPECT_EQ(record_property(r, "PKey"), Value(std::uint16_t{0xffff}));
    EXPECT_EQ(record_property(r, "SL"), Value(std::uint8_t{3}));
    EXPECT_EQ(record_property(r, "MTU"), Value(std::uint32_t{2048}));
    EXPECT_EQ(record_property(r, "Rate"), Value(std::uint8_t{3}));
    EXPECT_EQ(record_property(r, "RateGbps"), Value(10.0));
    EXPECT_EQ(record_property(r, "FlowLabel"), Value(std::uint32_t{0xabcde}));
    EXPECT_EQ(record_property(r, "TrafficClass"), Value(std::uint8_t{7}));
    EXPECT_EQ(record_property(r, "HopLimit"), Value(std::uint8_t{9}));
    EXPECT_EQ(record_property(r, "Scope"), Value(std::uint8_t{5}));
    EXPECT_EQ(record_property(r, "JoinState"), Value(std::string("full+sendonly-full")));
    EXPECT_EQ(record_property(r, "LinkLayer"), Value(std::string("InfiniBand")));
    EXPECT_EQ(record_property(r, "Netdev"), Value(std::string())) << "every membership has the property";
    EXPECT_EQ(record_property(r, "IP"), Value(std::string()));
    EXPECT_EQ(record_property(r, "Nope"), std::nullopt);
}

// A RoCE record has RoCE's keys too, as the socket protocol's RECORD: the link layer, the source
// GID's type and index, its netdev, and the IP group and destination MAC the MGID stands for.
TEST(DbusRecord, ARoceRecordCarriesItsSourceItsIpGroupAndItsMac) {
    McRecord r;
    r.mgid = *parse_gid("::ffff:239.1.2.3");
    r.port_gid = *parse_gid("::ffff:10.77.0.1");
    r.link_layer = LinkLayer::ethernet;
    r.gid_type = GidType::roce_v2;
    r.sgid_index = 3;
    r.netdev = "veth1";
    std::vector<std::string> keys;
    for (const auto &e : record_entries(r))
        keys.emplace_back(e.key);
    EXPECT_EQ(std::vector<std::string>(keys.end() - 6, keys.end()),
              (std::vector<std::string>{"link_layer", "gid_type", "sgid_index", "netdev", "ip", "dmac"}));
    EXPECT_EQ(record_property(r, "LinkLayer"), Value(std::string("Ethernet")));
    EXPECT_EQ(record_property(r, "GidType"), Value(std::string("roce_v2")));
    EXPECT_EQ(record_property(r, "SgidIndex"), Value(std::uint8_t{3}));
    EXPECT_EQ(record_property(r, "Netdev"), Value(std::string("veth1")));
    EXPECT_EQ(record_property(r, "IP"), Value(std::string("239.1.2.3")));
    EXPECT_EQ(record_property(r, "DMAC"), Value(std::string("01:00:5e:01:02:03")));
}

JoinArgs args(std::string mgid, Options options = {}) {
    return JoinArgs{"mlx5_0", 1, std::move(mgid), "", std::move(options)};
}

std::string rejected(const JoinArgs &a) {
    auto r = decode_join_args(a);
    if (auto *e = std::get_if<Error>(&r)) {
        EXPECT_EQ(e->code, Errc::invalid_argument);
        return e->message;
    }
    ADD_FAILURE() << "accepted";
    return {};
}

TEST(DbusJoinArgs, ArgumentsAndOptionsBecomeTheRequest) {
    auto r = decode_join_args(JoinArgs{"mlx5_0", 2, "ff15::7", "sendonly-full",
                                       {{"qkey", std::uint64_t{0x11}},
                                        {"pkey", std::int64_t{0x7fff}},
                                        {"sl", std::uint64_t{3}},
                                        {"mtu", std::uint64_t{2048}},
                                        {"mtu_selector", std::string("greater")},
                                        {"hop_limit", std::uint64_t{4}}}});
    ASSERT_TRUE(std::holds_alternative<JoinRequest>(r)) << std::get<Error>(r).message;
    const auto &j = std::get<JoinRequest>(r);
    EXPECT_EQ(j.device, "mlx5_0");
    EXPECT_EQ(j.port, 2);
    EXPECT_EQ(j.mgid, parse_gid("ff15::7"));
    EXPECT_EQ(j.join_state, join::send_only_full);
    EXPECT_EQ(j.params.qkey, 0x11u);
    EXPECT_EQ(j.params.pkey, 0x7fff);
    EXPECT_EQ(j.params.sl, 3);
    EXPECT_EQ(j.params.mtu, (Selected{Selector::greater, 4}));
    EXPECT_EQ(j.params.hop_limit, 4);
}

TEST(DbusJoinArgs, EmptyMgidCreatesAndEmptyStateIsFull) {
    auto r = decode_join_args(args("", {{"scope", std::uint64_t{2}}}));
    ASSERT_TRUE(std::holds_alternative<JoinRequest>(r)) << std::get<Error>(r).message;
    const auto &j = std::get<JoinRequest>(r);
    EXPECT_TRUE(is_zero(j.mgid));
    EXPECT_EQ(j.scope, 2);
    EXPECT_EQ(j.join_state, join::full);
}

TEST(DbusJoinArgs, TheOptionNameWithAnEmptyMgidJoinsANamedGroup) {
    auto r = decode_join_args(args("", {{"name", std::string("job-42")}, {"qkey", std::uint64_t{7}}}));
    ASSERT_TRUE(std::holds_alternative<JoinRequest>(r)) << std::get<Error>(r).message;
    const auto &j = std::get<JoinRequest>(r);
    EXPECT_EQ(j.name, "job-42");
    EXPECT_TRUE(is_zero(j.mgid)) << "the daemon maps it";
    EXPECT_EQ(j.params.qkey, 7u);
    EXPECT_EQ(rejected(args("ff15::1", {{"name", std::string("job-42")}})),
              "/name: name and mgid exclude each other (the daemon maps the name to its mgid)");
    EXPECT_EQ(rejected(args("", {{"name", std::string("")}})), "/name: the group name is empty");
    EXPECT_EQ(rejected(args("", {{"name", std::uint64_t{42}}})).rfind("/name: expected a string", 0), 0u);
    EXPECT_EQ(rejected(args("", {{"name", std::string("a")}, {"scope", std::uint64_t{2}}})),
              "/scope: needs create: an existing group's scope is part of its mgid");
}

TEST(DbusJoinArgs, MistakesGetTheSocketProtocolsSentence) {
    EXPECT_EQ(rejected(args("ff15::1", {{"qkey", std::uint64_t{1} << 32}})),
              "/qkey: 4294967296 out of range [0, 4294967295]");
    EXPECT_EQ(rejected(args("ff15::1", {{"sl", std::int64_t{-1}}})), "/sl: -1 out of range [0, 15]");
    EXPECT_EQ(rejected(args("ff15::1", {{"qkey", std::string("5")}})).rfind("/qkey: ", 0), 0u);
    EXPECT_EQ(rejected(args("ff15::1", {{"colour", true}})), "/colour: unknown key");
    EXPECT_EQ(rejected(args("ff15::1", {{"scope", std::uint64_t{2}}})),
              "/scope: needs create: an existing group's scope is part of its mgid");
    EXPECT_EQ(rejected(args("fe80::1")),
              "/mgid: \"fe80::1\" is not a multicast GID (those begin with ff, or are RoCE v2's ::ffff:a.b.c.d of "
              "an IPv4 multicast group)") << "the socket's join decoder, RoCE's MGIDs included";
    EXPECT_EQ(rejected(JoinArgs{"mlx5_0", 0, "ff15::1", "", {}}), "/port: 0 out of range [1, 254]");
}

// The device argument lives by the socket's rule, and a bad one is quoted escaped: the error
// message goes back on the bus, which takes only valid UTF-8, and into the log.
TEST(DbusJoinArgs, TheDeviceIsAnRdmaDeviceNameAndABadOneIsQuotedEscaped) {
    EXPECT_EQ(rejected(JoinArgs{"mlx5\x1b[2J", 1, "ff15::1", "", {}}),
              "/device: \"mlx5\\x1b[2J\" is not an RDMA device name: byte 4 is not printable ASCII (a device name "
              "is 1..63 printable ASCII characters without '/' or spaces, as in sysfs)");
    EXPECT_EQ(rejected(JoinArgs{"ml\xc3\xa9", 1, "ff15::1", "", {}}).rfind("/device: \"ml\\xc3\\xa9\" is not", 0), 0u);
    EXPECT_EQ(rejected(JoinArgs{"../x", 1, "ff15::1", "", {}}).rfind("/device: \"../x\" is not", 0), 0u);
    EXPECT_TRUE(std::holds_alternative<JoinRequest>(decode_join_args(JoinArgs{std::string(63, 'd'), 1, "ff15::1", "", {}})));
}

// RoCE's options as on the socket: an IP group (with an empty MGID: not a create), a GID type,
// and the caller's own socket, which the request gets a copy of (and the interface it names).
TEST(DbusJoinArgs, AnIpGroupAGidTypeAndTheCallersSocket) {
    const int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(sock, 0);
    JoinArgs a = args("", {{"ip", std::string("239.1.2.3")},
                           {"gid_type", std::string("roce_v1")},
                           {"ifname", std::string("eth0")}});
    a.socket = sock;
    auto r = decode_join_args(a);
    ASSERT_TRUE(std::holds_alternative<JoinRequest>(r)) << std::get<Error>(r).message;
    const auto &j = std::get<JoinRequest>(r);
    EXPECT_TRUE(is_zero(j.mgid)) << "the daemon maps the IP group to its MGID";
    ASSERT_TRUE(j.roce);
    EXPECT_EQ(j.roce->group, parse_ip("239.1.2.3"));
    EXPECT_EQ(j.roce->gid_type, GidType::roce_v1);
    EXPECT_EQ(j.roce->ifname, "eth0") << "the interface of the caller's namespace, kept with the socket";
    ASSERT_GE(j.roce->fd, 0);
    EXPECT_NE(j.roce->fd, sock) << "a copy: the message's descriptor goes with the message";
    struct stat mine {}, theirs {};
    ASSERT_EQ(::fstat(sock, &mine), 0);
    ASSERT_EQ(::fstat(j.roce->fd, &theirs), 0);
    EXPECT_EQ(mine.st_ino, theirs.st_ino);
    ::close(sock);

    // A socket alone (a join by MGID on a RoCE port) rides along too.
    JoinArgs by_mgid = args("::ffff:239.1.2.3");
    by_mgid.socket = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    auto r2 = decode_join_args(by_mgid);
    ASSERT_TRUE(std::holds_alternative<JoinRequest>(r2)) << std::get<Error>(r2).message;
    ASSERT_TRUE(std::get<JoinRequest>(r2).roce);
    EXPECT_GE(std::get<JoinRequest>(r2).roce->fd, 0);
    EXPECT_FALSE(std::get<JoinRequest>(r2).roce->group);
    ::close(by_mgid.socket);

    EXPECT_EQ(rejected(args("ff15::1", {{"ip", std::string("239.1.2.3")}})).rfind("/ip: ", 0), 0u);
    EXPECT_EQ(rejected(args("", {{"ip", std::string("10.0.0.1")}})).rfind("/ip: ", 0), 0u);
    EXPECT_EQ(rejected(args("", {{"ip", std::string("239.1.2.3")}, {"gid_type", std::string("ib")}})),
              "/gid_type: \"ib\" is not a RoCE GID type (roce_v1 or roce_v2)");
    EXPECT_EQ(rejected(args("ff15::1", {{"socket", std::uint64_t{3}}})),
              "/socket: expected a Unix fd (D-Bus type 'h')") << "only as a Unix fd, which read_options takes";
}

// What a caller passes is made safe to close on the loop, as on the socket: a socket's linger
// is turned off (its close never waits), and anything but a socket is refused.
TEST(DbusJoinArgs, ThePassedSocketsLingerIsTurnedOffAndANonSocketIsRefused) {
    const int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(sock, 0);
    const linger on{1, 30};
    ASSERT_EQ(::setsockopt(sock, SOL_SOCKET, SO_LINGER, &on, sizeof on), 0);
    JoinArgs a = args("", {{"ip", std::string("239.1.2.3")}});
    a.socket = sock;
    ASSERT_TRUE(std::holds_alternative<JoinRequest>(decode_join_args(a)));
    linger now{};
    socklen_t len = sizeof now;
    ASSERT_EQ(::getsockopt(sock, SOL_SOCKET, SO_LINGER, &now, &len), 0);
    EXPECT_EQ(now.l_linger, 0) << "an abortive close";
    ::close(sock);

    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    JoinArgs p = args("", {{"ip", std::string("239.1.2.3")}});
    p.socket = pipe_fds[0];
    EXPECT_EQ(rejected(p), "/socket: the UDP socket the join holds its group on; this Unix fd is not a socket");
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
}

TEST(DbusJoinArgs, OptionsCannotRestateArgumentsOrRepeat) {
    EXPECT_EQ(rejected(args("ff15::1", {{"device", std::string("mlx5_1")}})),
              "/device: is an argument of Join, not an option");
    EXPECT_EQ(rejected(args("ff15::1", {{"create", true}})), "/create: is an argument of Join, not an option");
    EXPECT_EQ(rejected(args("ff15::1", {{"sl", std::uint64_t{1}}, {"sl", std::uint64_t{2}}})), "/sl: given twice");
}

// A key is quoted cut short (and escaped), so no message grows with what the caller sent: one of
// 16 MiB of '/' was answered with 32 MiB of "~1", past the bus's limit on a message. The
// decoder, which quotes a key whole, never sees a long one.
TEST(DbusJoinArgs, AKeyIsQuotedCutShort) {
    std::string slashes;
    for (int i = 0; i < 32; ++i)
        slashes += "~1";
    EXPECT_EQ(rejected(args("ff15::1", {{std::string(1 << 20, '/'), std::uint64_t{1}}})),
              "/" + slashes + "...: unknown key");
    EXPECT_EQ(rejected(args("ff15::1", {{std::string(33, 'k'), std::uint64_t{1}}})),
              "/" + std::string(32, 'k') + "...: unknown key");
    EXPECT_EQ(rejected(args("ff15::1", {{"a\x1b", std::uint64_t{1}}, {"a\x1b", std::uint64_t{2}}})),
              "/a\\x1b: given twice")
        << "a control character escaped";
}

} // namespace
} // namespace mcastd::dbus
