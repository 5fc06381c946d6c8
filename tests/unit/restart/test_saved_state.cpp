// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include <gtest/gtest.h>

#include <random>

#include "restart/saved_state.hpp"

namespace mcastd::restart {
namespace {

Gid gid(const char *text) { return *parse_gid(text); }

SavedState sample() {
    SavedState st;
    st.boot_id = "3f1c0d0e-9b6e-4c2a-8d5e-0123456789ab";
    st.daemon = "rdma-mcastd 0.1.0";
    st.clean = true;
    st.next_session = 9;
    st.generation = 7;
    st.bus_id = "0123456789abcdef0123456789abcdef";
    McRecord rec;
    rec.mgid = gid("ff15::1");
    rec.port_gid = gid("fe80::2");
    rec.qkey = 0x80010000;
    rec.mlid = 0xc001;
    rec.mtu_selector = Selector::exactly;
    rec.mtu = 4;
    rec.pkey = 0xffff;
    rec.rate = 7;
    rec.sl = 3;
    rec.flow_label = 0xfffff;
    rec.hop_limit = 0xff;
    rec.scope = 5;
    rec.join_state = join::full;
    st.ports.push_back(SavedPort{"mlx5_0", 1, gid("fe80::2"),
                                 {SavedGroup{gid("ff15::1"), join::full, 0, rec},
                                  SavedGroup{gid("ff15::2"), 0, join::send_only_non_member, std::nullopt}}});
    st.ports.push_back(SavedPort{"mlx5_1", 2, gid("fe80::3"), {}});
    // A RoCE port's group: its record names the GID it is sent from, and where (the keys a new
    // member of the group gets after a restart as before it).
    McRecord roce_rec;
    roce_rec.mgid = gid("::ffff:239.1.2.3");
    roce_rec.port_gid = gid("::ffff:10.77.0.1");
    roce_rec.qkey = 0x1;
    roce_rec.mtu_selector = Selector::exactly;
    roce_rec.mtu = 3;
    roce_rec.rate_selector = Selector::exactly;
    roce_rec.hop_limit = 1;
    roce_rec.join_state = join::full;
    roce_rec.link_layer = LinkLayer::ethernet;
    roce_rec.gid_type = GidType::roce_v2;
    roce_rec.sgid_index = 1;
    roce_rec.netdev = "veth1";
    st.ports.push_back(SavedPort{"rxe0", 1, gid("fe80::4dff:fe00:1"),
                                 {SavedGroup{gid("::ffff:239.1.2.3"), join::full, 0, roce_rec}}});
    SavedSession s;
    s.id = 4;
    s.token = std::string(32, 'a');
    s.who = ClientInfo{1234, 65534, 100, "holder"};
    s.start_time = 987654;
    s.version = 2;
    s.monitor = true;
    s.inode = 4242;
    GroupParams p;
    p.qkey = 7;
    p.mtu = Selected{Selector::greater, 3};
    p.rate = Selected{Selector::best, 6};
    s.memberships.push_back(SavedMembership{11, "mlx5_0", 1, gid("ff15::1"), join::full, p});
    s.memberships.push_back(SavedMembership{12, "mlx5_0", 1, gid("ff15::1"), join::non_member, {}});
    SavedMembership named{13, "mlx5_0", 1, gid("ff15:6e61:6d65:0:6636:89a9:7bcf:99db"), join::full, {}};
    named.rule = "hpc";
    named.name = "job-42";
    s.memberships.push_back(named);
    st.sessions.push_back(s);
    SavedSession bus;
    bus.id = 8;
    bus.token = std::string(32, '0');
    bus.door = SavedDoor::dbus;
    bus.bus_name = ":1.42";
    bus.cgroup_unattested = "its bus connection is older than this daemon; reconnect to the bus";
    bus.version = 2;
    st.sessions.push_back(bus);
    // A RoCE port's groups (the first as an older daemon wrote it, with no source; the second
    // with the GID entry it is sent from) and the kernel memberships its members hold
    // (roce/kept_state.hpp).
    st.roce.groups.push_back(roce::KeptGroup{"rxe0", 1, *parse_gid("ff0e::1:2"), GidType::roce_v1});
    st.roce.groups.push_back(roce::KeptGroup{"rxe0", 1, *parse_gid("::ffff:239.1.2.3"), GidType::roce_v2,
                                             roce::KeptSource{1, *parse_gid("::ffff:10.77.0.1"), "veth1", 9, 1500}});
    st.roce.sockets.push_back(roce::KeptSocket{
        3, 4026531840, false, {roce::KeptMembership{*parse_ip("239.1.2.3"), 7, "veth1", {5, 6}}}});
    st.roce.sockets.push_back(
        roce::KeptSocket{4, 4026532999, true, {roce::KeptMembership{*parse_ip("ff0e::1:2"), 3, "eth0", {}}}});
    return st;
}

TEST(SavedState, RoundTrip) {
    const SavedState st = sample();
    auto back = decode(encode(st));
    ASSERT_TRUE(std::holds_alternative<SavedState>(back)) << std::get<std::string>(back);
    EXPECT_EQ(std::get<SavedState>(back), st);
}

TEST(SavedState, AFileWithoutRoceIsAnOlderDaemonsAndHasNone) {
    SavedState st = sample();
    st.roce = {};
    const std::string text = encode(st);
    EXPECT_EQ(text.find("\"roce\""), std::string::npos) << "nothing written when there is nothing";
    auto back = decode(text);
    ASSERT_TRUE(std::holds_alternative<SavedState>(back)) << std::get<std::string>(back);
    EXPECT_TRUE(std::get<SavedState>(back).roce.empty());
}

TEST(SavedState, RoundTripOfRandomStates) {
    std::mt19937 rng(7); // 32-bit results
    auto r32 = [&rng] { return static_cast<std::uint32_t>(rng()); };
    for (int round = 0; round < 200; ++round) {
        SavedState st;
        st.boot_id = std::to_string(r32());
        st.next_session = 1 + r32() % 1000;
        for (unsigned p = 0, np = r32() % 3; p < np; ++p) {
            SavedPort port{"dev" + std::to_string(p), static_cast<std::uint8_t>(1 + p), make_gid(0xfe80ull << 48, r32()), {}};
            for (unsigned g = 0, ng = r32() % 5; g < ng; ++g) {
                SavedGroup grp{make_gid(0xff15ull << 48, 1 + r32()), static_cast<std::uint8_t>(r32() & 0xf),
                               static_cast<std::uint8_t>(r32() & 0xf), std::nullopt};
                if (r32() & 1) {
                    McRecord r;
                    r.mgid = grp.mgid;
                    r.mlid = static_cast<std::uint16_t>(r32());
                    r.qkey = r32();
                    grp.record = r;
                }
                port.groups.push_back(grp);
            }
            st.ports.push_back(port);
        }
        for (unsigned s = 0, ns = r32() % 4; s < ns && s + 1 < st.next_session; ++s) {
            SavedSession sess;
            sess.id = s + 1;
            sess.token = std::string(32, "0123456789abcdef"[r32() % 16]);
            sess.who = ClientInfo{static_cast<pid_t>(r32() % 100000), r32() % 70000, r32() % 70000, "c" + std::to_string(s)};
            if (r32() & 1) {
                sess.door = SavedDoor::dbus;
                sess.bus_name = ":1." + std::to_string(r32());
            }
            for (unsigned m = 0, nm = r32() % 4; m < nm; ++m) {
                GroupParams params;
                if (r32() & 1)
                    params.pkey = static_cast<std::uint16_t>(r32());
                sess.memberships.push_back(SavedMembership{100 + m, "dev0", 1, make_gid(0xff15ull << 48, 1 + m),
                                                           static_cast<std::uint8_t>(1 + r32() % 15), params});
            }
            st.sessions.push_back(sess);
        }
        auto back = decode(encode(st));
        ASSERT_TRUE(std::holds_alternative<SavedState>(back)) << std::get<std::string>(back);
        ASSERT_EQ(std::get<SavedState>(back), st) << "round " << round;
    }
}

std::string reason_for(const std::string &text) {
    auto d = decode(text);
    if (std::holds_alternative<SavedState>(d))
        return "(accepted)";
    return std::get<std::string>(d);
}

// Edits the sample's JSON text: replaces the first `from` with `to`.
std::string edited(const std::string &from, const std::string &to) {
    std::string text = encode(sample());
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos)
        text.replace(at, from.size(), to);
    return text;
}

// The release before wrote format version 1, without a generation (nor a change log): the first
// start after the upgrade reads it as generation 0.
TEST(SavedState, AFileOfFormatVersion1IsReadAsGeneration0) {
    SavedState st = sample();
    std::string text = encode(st);
    const std::string from = R"("version":2)", generation = R"("generation":7,)";
    text.replace(text.find(from), from.size(), R"("version":1)");
    text.erase(text.find(generation), generation.size());
    auto back = decode(text);
    ASSERT_TRUE(std::holds_alternative<SavedState>(back)) << std::get<std::string>(back);
    st.generation = 0;
    EXPECT_EQ(std::get<SavedState>(back), st);
}

TEST(SavedState, EveryCorruptionIsRejectedWithANamedReason) {
    const std::string full = encode(sample());
    struct Case {
        std::string text;
        std::string reason; // a substring of the reason
    };
    const std::vector<Case> cases{
        {"", "empty"},
        {full.substr(0, full.size() / 2), "not JSON"},
        {"[1,2]", "expected an object"},
        {R"({"format":"something-else","version":1})", "/format: not an rdma-mcastd state file"},
        {edited(R"("version":2)", R"("version":3)"), "/version: format version 3 is not 2"},
        {edited(R"("version":2)", R"("version":2,"extra":true)"), "/extra: unknown key"},
        {edited(R"("generation":7)", R"("generation":-1)"), "/generation"},
        {edited(R"("version":2)", R"("version":1)"), "/generation: is not in format version 1"},
        {edited(R"("clean":true)", R"("clean":true,"clean":false)"), "clean"},
        {edited(R"("token":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")", R"("token":"AAAA")"), "/sessions/0/token: must be 32 lowercase hex digits"},
        {edited(R"("session":4)", R"("session":99)"), "/sessions/0/session: is not below next_session"},
        {edited(R"("door":"socket")", R"("door":"tcp")"), "/sessions/0/door"},
        {edited(R"("mgid":"ff15::1","held")", R"("mgid":"zz","held")"), "/ports/0/groups/0/mgid: not a GID"},
        {edited(R"("mgid":"ff15::1","held")", R"("mgid":"::","held")"), "/ports/0/groups/0/mgid: is zero"},
        {edited(R"("held":1)", R"("held":16)"), "/ports/0/groups/0/held"},
        {edited(R"("port":1,"port_gid")", R"("port":0,"port_gid")"), "/ports/0/port"},
        {edited(R"("mlid":49153)", R"("mlid":70000)"), "/ports/0/groups/0/record/mlid"},
        {edited(R"("join_state":1,"params")", R"("join_state":0,"params")"), "/sessions/0/memberships/0/join_state: is zero"},
        {edited(R"("groups":[])", R"("groups":{})"), "/ports/1/groups"},
        {edited(R"("name":"job-42")", R"("name":"")"), "/sessions/0/memberships/2/name: the group name is empty"},
        {edited(R"("name":"job-42")", R"("name":7)"), "/sessions/0/memberships/2/name"},
        {edited(R"("memberships":[])", R"("memberships":7)"), "/sessions/1/memberships"},
        {edited(R"("bus_id":"0123456789abcdef0123456789abcdef")", R"("bus_id":"0123456789ABCDEF0123456789abcdef")"),
         "/bus_id: must be 32 lowercase hex digits"},
        {edited(R"("bus_name":":1.42")", R"("bus_name":"1.42")"), "/sessions/1/bus_name: must be a unique bus name"},
        {edited(R"("bus_name":":1.42")", R"("bus_name":":1..42")"), "/sessions/1/bus_name: must be a unique bus name"},
        {edited(R"("bus_name":":1.42")", R"("bus_name":":142")"), "/sessions/1/bus_name: must be a unique bus name"},
        {edited(R"("inode":4242)", R"("inode":4242,"bus_name":":1.7")"),
         "/sessions/0/bus_name: is for a D-Bus session only"},
        {edited(R"("cgroup_unattested":"its bus)", R"("cgroup":"/a.slice","cgroup_unattested":"its bus)"),
         "/sessions/1/cgroup_unattested: is given with a cgroup"},
        {edited(R"("cgroup_unattested":"its bus connection is older than this daemon; reconnect to the bus")",
                R"("cgroup_unattested":"")"),
         "/sessions/1/cgroup_unattested: is empty"},
        {edited(R"("gid_type":"roce_v1")", R"("gid_type":"ib")"), "/roce/groups/0/gid_type: must be \"roce_v1\""},
        {edited(R"("mtu":1500)", R"("mtu":1500,"type":"roce_v2")"), "/roce/groups/1/source/type: unknown key"},
        {edited(R"("link_layer":"Ethernet")", R"("link_layer":"InfiniBand")"),
         "/ports/2/groups/0/record/link_layer: must be \"Ethernet\""},
        {edited(R"("link_layer":"Ethernet",)", ""),
         "/ports/2/groups/0/record/gid_type: is a RoCE record's key, and this record has no link_layer"},
        {edited(R"("sgid_index":1,)", ""), "/ports/2/groups/0/record/sgid_index"},
        {edited(R"("netdev":"veth1","ifindex":9)", R"("ifindex":9)"), "/roce/groups/1/source/netdev"},
        {edited(R"("gid":"::ffff:10.77.0.1")", R"("gid":"10.77.0.1")"), "/roce/groups/1/source/gid"},
        {edited(R"("family":"ipv4")", R"("family":"ipv6")"), "/roce/sockets/0/memberships/0/group: not an IPv6 multicast group"},
        {edited(R"("group":"239.1.2.3")", R"("group":"10.1.2.3")"), "/roce/sockets/0/memberships/0/group"},
        {edited(R"("ifindex":7)", R"("ifindex":0)"), "/roce/sockets/0/memberships/0/ifindex"},
        {edited(R"("members":[5,6])", R"("members":[0])"), "/roce/sockets/0/memberships/0/members/0"},
        {edited(R"("socket":3)", R"("socket":3,"fd":9)"), "/roce/sockets/0/fd: unknown key"},
    };
    for (const auto &c : cases) {
        const std::string why = reason_for(c.text);
        EXPECT_NE(why.find(c.reason), std::string::npos) << "expected '" << c.reason << "', got '" << why << "'";
    }
}

TEST(SetsLog, RoundTrip) {
    const SavedSet a{"mlx5_0", 1, *parse_gid("fe80::1"), *parse_gid("ff15::7"), 0x3};
    const SavedSet b{"ibsim0", 2, *parse_gid("fe80::2"), *parse_gid("ff12:601b::1"), 0x8};
    auto back = decode_sets(encode_sets_header("boot-a", "rdma-mcastd 1") + encode_set(a) + encode_set(b));
    ASSERT_TRUE(std::holds_alternative<SetsLog>(back)) << std::get<std::string>(back);
    const SetsLog &log = std::get<SetsLog>(back);
    EXPECT_EQ(log.boot_id, "boot-a");
    EXPECT_EQ(log.daemon, "rdma-mcastd 1");
    EXPECT_EQ(log.sets, (std::vector<SavedSet>{a, b}));
    EXPECT_TRUE(log.skipped.empty());
}

// A header that cannot be trusted sets the whole log aside; a later line is skipped, named.
TEST(SetsLog, EveryCorruptionIsNamedByItsLine) {
    const std::string header = encode_sets_header("boot-a", "d");
    const std::string good = encode_set(SavedSet{"mlx5_0", 1, *parse_gid("fe80::1"), *parse_gid("ff15::7"), 1});
    auto whole = [](const std::string &text) {
        auto d = decode_sets(text);
        return std::holds_alternative<std::string>(d) ? std::get<std::string>(d) : "(accepted)";
    };
    EXPECT_EQ(whole(""), "the file is empty");
    EXPECT_NE(whole("{\n").find("line 1: not JSON"), std::string::npos);
    EXPECT_EQ(whole(R"({"format":"rdma-mcastd-state","version":1})" "\n"),
              "line 1: /format: not an rdma-mcastd sets log");
    EXPECT_NE(whole(R"({"format":"rdma-mcastd-sets","version":2,"boot_id":"b","daemon":"d"})" "\n")
                  .find("line 1: /version: format version 2 is not 1"),
              std::string::npos);
    EXPECT_EQ(whole(header), "(accepted)");

    auto skipped = [&](const std::string &line) {
        auto d = decode_sets(header + good + line);
        if (!std::holds_alternative<SetsLog>(d))
            return "(set aside: " + std::get<std::string>(d) + ")";
        const SetsLog &log = std::get<SetsLog>(d);
        EXPECT_EQ(log.sets.size(), 1u);
        return log.skipped.empty() ? std::string("(accepted)") : log.skipped.front();
    };
    EXPECT_EQ(skipped(R"({"device":"mlx5_0","port":1,"port_gid":"fe80::1","mgid":"::","bits":1})" "\n"),
              "line 3: /mgid: is zero");
    EXPECT_NE(skipped(R"({"device":"mlx5_0","port":1,"port_gid":"fe80::1","mgid":"ff15::1","bits":16})" "\n")
                  .find("line 3: /bits"),
              std::string::npos);
    EXPECT_EQ(skipped(R"({"device":"mlx5_0","port":1,"port_gid":"fe80::1","mgid":"ff15::1","bits":1,"x":1})" "\n"),
              "line 3: /x: unknown key");
    const std::string second_header = skipped(header);
    EXPECT_EQ(second_header.rfind("line 3: /", 0), 0u) << second_header;
    EXPECT_NE(second_header.find(": unknown key"), std::string::npos) << second_header;
    EXPECT_EQ(skipped(R"({"device":"mlx5_0")"), "line 3: torn (no end of line)");
}

TEST(SetsLog, AddUncertainKeepsHeldBitsAndAddsWhatIsMissing) {
    SavedState st;
    st.ports.push_back(SavedPort{"mlx5_0", 1, *parse_gid("fe80::1"), {SavedGroup{*parse_gid("ff15::7"), 0x1, 0, {}}}});
    const std::vector<SavedSet> sets{
        {"mlx5_0", 1, *parse_gid("fe80::1"), *parse_gid("ff15::7"), 0x3},
        {"mlx5_0", 1, *parse_gid("fe80::1"), *parse_gid("ff15::8"), 0x8},
        {"mlx5_0", 1, *parse_gid("fe80::9"), *parse_gid("ff15::7"), 0x1}, // the port's GID changed
        {"mlx5_0", 1, *parse_gid("fe80::9"), *parse_gid("ff15::7"), 0x2}, // the same new port and group
    };
    add_uncertain(st, sets);
    ASSERT_EQ(st.ports.size(), 2u);
    ASSERT_EQ(st.ports[0].groups.size(), 2u);
    EXPECT_EQ(st.ports[0].groups[0], (SavedGroup{*parse_gid("ff15::7"), 0x1, 0x2, {}}));
    EXPECT_EQ(st.ports[0].groups[1], (SavedGroup{*parse_gid("ff15::8"), 0, 0x8, {}}));
    EXPECT_EQ(st.ports[1], (SavedPort{"mlx5_0", 1, *parse_gid("fe80::9"), {SavedGroup{*parse_gid("ff15::7"), 0, 0x3, {}}}}));
}

} // namespace
} // namespace mcastd::restart
