// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Every request, reply and event through its encoder and back through the other side's
// decoder; and the exact wire form of the messages PROTOCOL.md shows.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "proto_testing.hpp"

namespace mcastd::proto {
namespace {

using nlohmann::json;
using namespace testing_support::from_nlohmann;
using testing_support::gid;
using testing_support::same_failure;
using testing_support::same_request;
using testing_support::sample_record;

// ---- requests: client encoder -> daemon decoder ----

void expect_request_round_trip(std::uint64_t id, const Request &req) {
    const std::string text = encode_request(id, req);
    auto decoded = decode_request(text);
    ASSERT_TRUE(std::holds_alternative<RequestEnvelope>(decoded))
        << text << "\n  " << std::get<BadRequest>(decoded).failure.error.message;
    const auto &env = std::get<RequestEnvelope>(decoded);
    EXPECT_EQ(env.id, id);
    EXPECT_TRUE(same_request(env.request, req)) << text;
}

TEST(ProtoRoundTrip, Hello) {
    expect_request_round_trip(1, Hello{{1}, "my-app"});
    expect_request_round_trip(2, Hello{{3, 1, 2}, ""});
    expect_request_round_trip(3, Hello{{2}, "holder", SessionTicket{7, std::string(32, 'a')}});
    EXPECT_EQ(encode_request(3, Hello{{2}, "", SessionTicket{7, "0123456789abcdef0123456789abcdef"}}),
              R"({"id":3,"op":"hello","versions":[2],"resume":{"session":7,"token":"0123456789abcdef0123456789abcdef"}})");
}

TEST(ProtoRoundTrip, HelloResumeTokenIsChecked) {
    const std::string good(32, 'f');
    for (const auto &[token, why] : std::vector<std::pair<std::string, std::string>>{
             {std::string(31, 'f'), "short"}, {std::string(33, 'f'), "long"},
             {std::string(31, 'f') + "F", "upper case"}, {std::string(31, 'f') + "g", "not hex"}}) {
        auto d = decode_request(R"({"id":1,"op":"hello","versions":[2],"resume":{"session":1,"token":")" + token +
                                R"("}})");
        ASSERT_TRUE(std::holds_alternative<BadRequest>(d)) << why;
        EXPECT_EQ(std::get<BadRequest>(d).failure.field, "/resume/token") << why;
    }
    auto zero = decode_request(R"({"id":1,"op":"hello","versions":[2],"resume":{"session":0,"token":")" + good +
                               R"("}})");
    ASSERT_TRUE(std::holds_alternative<BadRequest>(zero));
    EXPECT_EQ(std::get<BadRequest>(zero).failure.field, "/resume/session");
    auto extra = decode_request(R"({"id":1,"op":"hello","versions":[2],"resume":{"session":1,"token":")" + good +
                                R"(","x":1}})");
    ASSERT_TRUE(std::holds_alternative<BadRequest>(extra));
    EXPECT_EQ(std::get<BadRequest>(extra).failure.field, "/resume/x");
}

TEST(ProtoRoundTrip, JoinByMgidWithEverything) {
    JoinRequest r;
    r.device = "mlx5_0";
    r.port = 2;
    r.mgid = gid("ff12:601b:ffff::1");
    r.join_state = join::non_member;
    r.params.qkey = 0xffffffff;
    r.params.pkey = 0x7fff;
    r.params.sl = 0;
    r.params.tclass = 0;
    r.params.flow_label = 0xfffff;
    r.params.hop_limit = 255;
    r.params.mtu = Selected{Selector::less, 5};
    r.params.rate = Selected{Selector::exactly, 22};
    expect_request_round_trip(kMaxId, Join{r});
}

TEST(ProtoRoundTrip, JoinCreateWithScopeAndEveryJoinState) {
    for (std::uint8_t js : {join::full, join::non_member, join::send_only_non_member,
                            join::send_only_full}) {
        JoinRequest r;
        r.device = "ib0dev";
        r.port = 254;
        r.join_state = js;
        r.scope = 14;
        r.params.mtu = Selected{Selector::best, 1};
        r.params.rate = Selected{Selector::greater, 2};
        expect_request_round_trip(0, Join{r});
    }
}

TEST(ProtoRoundTrip, JoinByName) {
    JoinRequest r;
    r.device = "mlx5_0";
    r.port = 1;
    r.name = "ucc/team/7 \xe2\x82\xac";
    r.join_state = join::send_only_non_member;
    r.params.qkey = 0x1234;
    expect_request_round_trip(4, Join{r});
    EXPECT_EQ(encode_request(4, Join{r}),
              R"({"id":4,"op":"join","device":"mlx5_0","port":1,"name":"ucc/team/7 )" "\xe2\x82\xac" R"(",)"
              R"("join_state":"sendonly-nonmember","qkey":4660})");
}

TEST(ProtoRoundTrip, JoinByIpWithAGidType) {
    JoinRequest r;
    r.device = "rxe0";
    r.port = 1;
    r.join_state = join::non_member;
    r.params.qkey = 0x01234567;
    Join j{r, parse_ip("239.1.2.3"), GidType::roce_v2};
    expect_request_round_trip(5, j);
    EXPECT_EQ(encode_request(5, j),
              R"({"id":5,"op":"join","device":"rxe0","port":1,"ip":"239.1.2.3","gid_type":"roce_v2",)"
              R"("join_state":"nonmember","qkey":19088743})");
    expect_request_round_trip(6, Join{r, parse_ip("ff0e::1:2"), std::nullopt});
    // By MGID, with the GID type only.
    r.mgid = gid("ff0e::ffff:239.1.2.3");
    expect_request_round_trip(7, Join{r, std::nullopt, GidType::roce_v1});
    // With the interface of the client's namespace.
    expect_request_round_trip(8, Join{r, std::nullopt, std::nullopt, "eth0"});
    EXPECT_NE(encode_request(8, Join{r, std::nullopt, std::nullopt, "eth0"}).find(R"("ifname":"eth0")"),
              std::string::npos);
}

TEST(ProtoRoundTrip, LeaveListStatusMonitor) {
    expect_request_round_trip(3, Leave{7, std::nullopt});
    expect_request_round_trip(4, Leave{std::nullopt, 2});
    expect_request_round_trip(5, Leave{UINT64_MAX, std::nullopt});
    expect_request_round_trip(6, List{});
    expect_request_round_trip(7, Status{});
    expect_request_round_trip(8, Monitor{true});
    expect_request_round_trip(9, Monitor{false});
}

TEST(ProtoRoundTrip, ListPagesAndOwn) {
    expect_request_round_trip(20, List{true, std::nullopt});
    expect_request_round_trip(21, List{false, "0,ff15::1:2,0,17"});
    expect_request_round_trip(22, List{true, std::string(kMaxCursorBytes, 'c')});
    EXPECT_EQ(encode_request(23, List{}), R"({"id":23,"op":"list"})") << "an older daemon takes it";
    EXPECT_EQ(encode_request(24, List{true, "x"}), R"({"id":24,"op":"list","own":true,"after":"x"})");
    const auto decoded = decode_request(R"({"id":25,"op":"list","own":false,"after":""})");
    ASSERT_TRUE(std::holds_alternative<RequestEnvelope>(decoded));
    const auto &l = std::get<List>(std::get<RequestEnvelope>(decoded).request);
    EXPECT_FALSE(l.own);
    EXPECT_EQ(l.after, "") << "what a cursor says is the daemon's to judge";
}

TEST(ProtoRoundTrip, Evict) {
    expect_request_round_trip(10, Evict{1001, std::nullopt});
    expect_request_round_trip(11, Evict{0, std::nullopt});
    expect_request_round_trip(12, Evict{std::nullopt, UINT64_MAX});
    EXPECT_EQ(encode_request(13, Evict{1001, std::nullopt}), R"({"id":13,"op":"evict","uid":1001})");
    EXPECT_EQ(encode_request(14, Evict{std::nullopt, 7}),
              R"({"id":14,"op":"evict","membership":7})");
}

TEST(ProtoRoundTrip, RequestWireFormIsWhatTheProtocolShows) {
    JoinRequest r;
    r.device = "mlx5_0";
    r.port = 1;
    r.mgid = gid("ff15::1:2");
    r.params.qkey = 305419896;
    EXPECT_EQ(encode_request(2, Join{r}),
              R"({"id":2,"op":"join","device":"mlx5_0","port":1,"mgid":"ff15::1:2",)"
              R"("join_state":"full","qkey":305419896})");
    EXPECT_EQ(encode_request(1, Hello{{1}, "my-app"}),
              R"({"id":1,"op":"hello","versions":[1],"client":"my-app"})");
    EXPECT_EQ(encode_request(4, Leave{std::nullopt, 2}), R"({"id":4,"op":"leave","join":2})");
}

// ---- replies: daemon encoder -> client decoders ----

Reply decode_reply(const std::string &text) {
    auto in = decode_incoming(text);
    if (auto *err = std::get_if<Error>(&in)) {
        ADD_FAILURE() << text << "\n  " << err->message;
        return {};
    }
    const auto &incoming = std::get<Incoming>(in);
    if (!std::holds_alternative<Reply>(incoming)) {
        ADD_FAILURE() << text << " decoded as an event";
        return {};
    }
    return std::get<Reply>(incoming);
}

template <class T> T value_of(const std::variant<T, Error> &v) {
    if (auto *err = std::get_if<Error>(&v)) {
        ADD_FAILURE() << err->message;
        return T{};
    }
    return std::get<T>(v);
}

const json_check::Value &result_of(const Reply &r) {
    static const json_check::Document none;
    auto *s = std::get_if<json_check::OwnedValue>(&r.body);
    if (!s)
        ADD_FAILURE() << "reply is an error: " << std::get<Failure>(r.body).error.message;
    return s ? s->get() : none.root();
}

TEST(ProtoRoundTrip, JoinResult) {
    JoinResult in{7, sample_record()};
    const auto reply = decode_reply(encode_reply(2, in));
    EXPECT_EQ(reply.id, 2u);
    const auto out = value_of(decode_join_result(result_of(reply)));
    EXPECT_EQ(out.membership, 7u);
    EXPECT_EQ(out.record, in.record);
}

// A RoCE port's record: 239.1.2.3 on RoCE v2 from GID index 3 of eth7.
McRecord roce_record() {
    McRecord r = sample_record();
    r.mgid = gid("::ffff:239.1.2.3");
    r.port_gid = gid("::ffff:192.168.7.1");
    r.mlid = 0;
    r.qkey = kRoceDefaultQkey;
    r.pkey = kRocePkey;
    r.rate = 0;
    r.hop_limit = 64;
    r.scope = 0;
    r.link_layer = LinkLayer::ethernet;
    r.gid_type = GidType::roce_v2;
    r.sgid_index = 3;
    r.netdev = "eth7";
    return r;
}

TEST(ProtoRoundTrip, RoceRecords) {
    for (GidType type : {GidType::roce_v1, GidType::roce_v2})
        for (const char *group : {"239.1.2.3", "ff0e::1:2"}) {
            JoinResult in{9, roce_record()};
            in.record.gid_type = type;
            in.record.mgid = roce_mgid(*parse_ip(group), type);
            in.record.sgid_index = 255;
            const auto out = value_of(decode_join_result(result_of(decode_reply(encode_reply(1, in)))));
            EXPECT_EQ(out.record, in.record) << gid_type_name(type) << " " << group;
        }
}

TEST(ProtoRoundTrip, RoceRecordWireForm) {
    const json rec = json::parse(encode_reply(2, JoinResult{7, roce_record()})).at("result").at("record");
    EXPECT_EQ(rec.at("mgid"), "::ffff:239.1.2.3");
    EXPECT_EQ(rec.at("mlid"), 0);
    EXPECT_EQ(rec.at("link_layer"), "Ethernet");
    EXPECT_EQ(rec.at("gid_type"), "roce_v2");
    EXPECT_EQ(rec.at("sgid_index"), 3);
    EXPECT_EQ(rec.at("netdev"), "eth7");
    EXPECT_EQ(rec.at("ip"), "239.1.2.3");
    EXPECT_EQ(rec.at("dmac"), "01:00:5e:01:02:03");
    // RoCE v1's MGID for the same group, and its MAC (33:33 and the MGID's low 32 bits).
    McRecord v1 = roce_record();
    v1.gid_type = GidType::roce_v1;
    v1.mgid = gid("ff0e::ffff:239.1.2.3");
    const json rec1 = json::parse(encode_reply(2, JoinResult{7, v1})).at("result").at("record");
    EXPECT_EQ(rec1.at("ip"), "239.1.2.3");
    EXPECT_EQ(rec1.at("dmac"), "33:33:ef:01:02:03");
    EXPECT_EQ(rec1.at("gid_type"), "roce_v1");
    // On InfiniBand, the link layer and nothing else of RoCE's.
    const json ib = json::parse(encode_reply(2, JoinResult{7, sample_record()})).at("result").at("record");
    EXPECT_EQ(ib.at("link_layer"), "InfiniBand");
    for (const char *key : {"gid_type", "sgid_index", "netdev", "ip", "dmac"})
        EXPECT_FALSE(ib.contains(key)) << key;
}

// The client's decoder: an older daemon's record (no link_layer) is InfiniBand's; an Ethernet
// one must say what RoCE needs, and the derived keys must at least be what they claim.
TEST(ProtoRoundTrip, RoceRecordDecoding) {
    json ib = json::parse(encode_reply(2, JoinResult{7, sample_record()}));
    ib["result"]["record"].erase("link_layer");
    const auto older = value_of(decode_join_result(ib.at("result")));
    EXPECT_EQ(older.record.link_layer, LinkLayer::infiniband);
    EXPECT_EQ(older.record, sample_record());

    const json roce = json::parse(encode_reply(2, JoinResult{7, roce_record()})).at("result");
    // Derived keys may be absent (they are the MGID's): nothing is lost.
    json bare = roce;
    bare["record"].erase("ip");
    bare["record"].erase("dmac");
    EXPECT_EQ(value_of(decode_join_result(bare)).record, roce_record());
    const std::pair<const char *, json> broken[] = {
        {"link_layer", "IB"},     {"gid_type", "RoCE v2"}, {"gid_type", nullptr}, {"sgid_index", 256},
        {"sgid_index", "3"},      {"netdev", 7},           {"ip", "239.1.2"},     {"dmac", "01:00:5e:01:02"},
    };
    for (const auto &[key, value] : broken) {
        json bad = roce;
        bad["record"][key] = value;
        auto r = decode_join_result(bad);
        ASSERT_TRUE(std::holds_alternative<Error>(r)) << key << " = " << value.dump();
        EXPECT_NE(std::get<Error>(r).message.find(std::string("/record/") + key), std::string::npos)
            << std::get<Error>(r).message;
    }
    for (const char *required : {"gid_type", "sgid_index", "netdev"}) {
        json bad = roce;
        bad["record"].erase(required);
        EXPECT_TRUE(std::holds_alternative<Error>(decode_join_result(bad))) << required;
    }
}

TEST(ProtoRoundTrip, RecordWithEveryJoinStateAndRate) {
    for (std::uint8_t rate = 2; rate <= 22; ++rate)
        for (std::uint8_t js : {join::full, join::non_member, join::send_only_non_member,
                                join::send_only_full}) {
            JoinResult in{rate, sample_record()};
            in.record.rate = rate;
            in.record.join_state = js;
            in.record.mtu = static_cast<std::uint8_t>(1 + rate % 5);
            const auto out =
                value_of(decode_join_result(result_of(decode_reply(encode_reply(1, in)))));
            EXPECT_EQ(out.record, in.record) << int(rate) << " " << int(js);
        }
}

TEST(ProtoRoundTrip, HelloAndEmptyResults) {
    const auto hello = value_of(decode_hello_result(
        result_of(decode_reply(encode_reply(1, HelloResult{1, "rdma-mcastd 0.1.0"})))));
    EXPECT_EQ(hello.version, 1u);
    EXPECT_EQ(hello.daemon, "rdma-mcastd 0.1.0");
    EXPECT_FALSE(hello.session);
    EXPECT_FALSE(hello.resumed);
    HelloResult v2{2, "rdma-mcastd 0.1.0", SessionTicket{9, std::string(32, '1')}, true, {4, 5}};
    const auto back = value_of(decode_hello_result(result_of(decode_reply(encode_reply(2, v2)))));
    EXPECT_EQ(back.session, v2.session);
    EXPECT_EQ(back.resumed, std::optional<bool>(true));
    EXPECT_EQ(back.memberships, (std::vector<std::uint64_t>{4, 5}));
    const auto empty = decode_reply(encode_reply(3, Empty{}));
    EXPECT_EQ(empty.id, 3u);
    EXPECT_EQ(testing_support::result_json(empty).dump(), "{}");
}

ListResult sample_list() {
    GroupInfo g;
    g.mgid = gid("ff15::1:2");
    g.mlid = 49153;
    g.qkey = 305419896;
    g.busy = true;
    g.held = join::full | join::send_only_non_member;
    g.foreign = join::non_member;
    g.counts = {2, 0, 1, 4000000000u};
    g.members.push_back(MemberInfo{7, join::full, "active", 4242, 1000, "my-app", "hpc", true, ""});
    g.members.push_back(MemberInfo{8, join::send_only_non_member, "pending", 1, 0, "x\ny\"z",
                                   "root", false, "", "job-42"});
    GroupInfo pending; // a create still waiting for its MGID
    pending.members.push_back(MemberInfo{9, join::full, "lost", 2, 3, "", "access.rules[2]", true,
                                         "the rules in force now refuse it (no rule admits it)"});
    ListResult l;
    l.ports.push_back(PortGroups{"mlx5_0", 1, gid("fe80::10:3"), {g, pending}});
    l.ports.push_back(PortGroups{"mlx5_1", 2, gid("fe80::10:4"), {}});
    GroupInfo roce; // a RoCE group says where it is sent from
    roce.mgid = gid("::ffff:239.1.2.3");
    roce.qkey = 0x01234567;
    roce.counts = {1, 0, 0, 0};
    roce.roce = RoceSource{GidType::roce_v2, 3, "veth1"};
    roce.members.push_back(MemberInfo{10, join::full, "active", 5, 1000, "app", "video", false, ""});
    l.ports.push_back(PortGroups{"rxe0", 1, gid("::ffff:192.168.7.1"), {roce}, LinkLayer::ethernet});
    return l;
}

void expect_same_list(const ListResult &a, const ListResult &b) {
    ASSERT_EQ(a.ports.size(), b.ports.size());
    for (std::size_t p = 0; p < a.ports.size(); ++p) {
        const auto &pa = a.ports[p], &pb = b.ports[p];
        EXPECT_EQ(pa.device, pb.device);
        EXPECT_EQ(pa.port, pb.port);
        EXPECT_EQ(pa.port_gid, pb.port_gid);
        EXPECT_EQ(pa.link_layer, pb.link_layer);
        ASSERT_EQ(pa.groups.size(), pb.groups.size());
        for (std::size_t g = 0; g < pa.groups.size(); ++g) {
            const auto &ga = pa.groups[g], &gb = pb.groups[g];
            EXPECT_EQ(ga.mgid, gb.mgid);
            EXPECT_EQ(ga.mlid, gb.mlid);
            EXPECT_EQ(ga.qkey, gb.qkey);
            EXPECT_EQ(ga.busy, gb.busy);
            EXPECT_EQ(ga.held, gb.held);
            EXPECT_EQ(ga.foreign, gb.foreign);
            EXPECT_EQ(ga.counts, gb.counts);
            EXPECT_EQ(ga.roce, gb.roce);
            ASSERT_EQ(ga.members.size(), gb.members.size());
            for (std::size_t m = 0; m < ga.members.size(); ++m) {
                const auto &ma = ga.members[m], &mb = gb.members[m];
                EXPECT_EQ(ma.membership, mb.membership);
                EXPECT_EQ(ma.join_state, mb.join_state);
                EXPECT_EQ(ma.state, mb.state);
                EXPECT_EQ(ma.pid, mb.pid);
                EXPECT_EQ(ma.uid, mb.uid);
                EXPECT_EQ(ma.comm, mb.comm);
                EXPECT_EQ(ma.rule, mb.rule);
                EXPECT_EQ(ma.created, mb.created);
                EXPECT_EQ(ma.flagged, mb.flagged);
                EXPECT_EQ(ma.name, mb.name);
            }
        }
    }
}

TEST(ProtoRoundTrip, ListResult) {
    const auto in = sample_list();
    const auto out =
        value_of(decode_list_result(result_of(decode_reply(encode_reply(5, in)))));
    expect_same_list(out, in);
}

TEST(ProtoRoundTrip, ListResultNextCursor) {
    auto in = sample_list();
    in.next = "0,ff15::1:2,0,8";
    const std::string text = encode_reply(5, in);
    EXPECT_NE(text.find(R"(}]}]}],"next":"0,ff15::1:2,0,8"}})"), std::string::npos) << text;
    const auto out = value_of(decode_list_result(result_of(decode_reply(text))));
    expect_same_list(out, in);
    EXPECT_EQ(out.next, in.next);
    const auto last = value_of(decode_list_result(result_of(decode_reply(encode_reply(5, sample_list())))));
    EXPECT_FALSE(last.next) << "the last page has none";
}

// The parts ListReplySize measures add up to the reply encode_reply() writes: the daemon cuts
// its pages by them, so they must be exact.
TEST(ProtoListReplySize, PartsAddUpToTheEncodedReply) {
    ListResult l = sample_list();
    l.ports.push_back(PortGroups{"mlx5_2", 1, gid("fe80::10:5"), {l.ports[0].groups[0]}});
    l.next = std::string(kMaxCursorBytes, 'n');
    ListReplySize size;
    std::size_t total = size.envelope();
    for (std::size_t p = 0; p < l.ports.size(); ++p) {
        const PortGroups &port = l.ports[p];
        total += size.port(port) + (p > 0);
        for (std::size_t g = 0; g < port.groups.size(); ++g) {
            const GroupInfo &group = port.groups[g];
            total += size.group(group) + (g > 0);
            for (std::size_t m = 0; m < group.members.size(); ++m)
                total += size.member(group.members[m]) + (m > 0);
        }
    }
    EXPECT_EQ(total, encode_reply(kMaxId, l).size());
    // With a shorter id and cursor the reply is smaller than measured, never larger.
    l.next = "0,ff15::1,0,-";
    EXPECT_LT(encode_reply(1, l).size(), total);
}

// Pages put together: a group cut between two pages is one group again, ports keep their
// order, and groups the SA has not named (MGID 0) are never taken for one another.
TEST(ProtoListPages, AppendJoinsTheGroupAPageBoundaryCut) {
    auto member = [](std::uint64_t id) { return MemberInfo{id, join::full, "active", 1, 2, "c"}; };
    GroupInfo a;
    a.mgid = gid("ff15::a");
    a.counts = {4, 0, 0, 0};
    a.members = {member(1), member(2)};
    GroupInfo a_rest = a;
    a_rest.members = {member(3), member(4)};
    GroupInfo b;
    b.mgid = gid("ff15::b");
    b.members = {member(5)};
    GroupInfo unnamed1, unnamed2; // two creates in flight
    unnamed1.members = {member(6)};
    unnamed2.members = {member(7)};

    ListResult all;
    append_list_page(all, ListResult{{PortGroups{"mlx5_0", 1, {}, {unnamed1, a}}, PortGroups{"mlx5_0", 2, {}, {}}},
                                     "p1"});
    EXPECT_EQ(all.next, "p1");
    append_list_page(all, ListResult{{PortGroups{"mlx5_0", 1, {}, {a_rest}}, PortGroups{"mlx5_0", 2, {}, {unnamed2}}},
                                     "p2"});
    append_list_page(all, ListResult{{PortGroups{"mlx5_0", 1, {}, {}}, PortGroups{"mlx5_0", 2, {}, {unnamed1, b}}},
                                     std::nullopt});
    EXPECT_FALSE(all.next);
    ASSERT_EQ(all.ports.size(), 2u);
    const auto &p1 = all.ports[0].groups;
    ASSERT_EQ(p1.size(), 2u);
    EXPECT_TRUE(is_zero(p1[0].mgid));
    ASSERT_EQ(p1[1].members.size(), 4u) << "ff15::a went on on the second page";
    for (std::uint64_t i = 0; i < 4; ++i)
        EXPECT_EQ(p1[1].members[i].membership, i + 1);
    const auto &p2 = all.ports[1].groups;
    ASSERT_EQ(p2.size(), 3u) << "the unnamed groups are two, not one";
    EXPECT_EQ(p2[0].members.at(0).membership, 7u);
    EXPECT_EQ(p2[1].members.at(0).membership, 6u);
    EXPECT_EQ(p2[2].mgid, gid("ff15::b"));
}

StatusResult sample_status() {
    StatusResult s;
    s.daemon = "rdma-mcastd 0.1.0";
    s.protocol = 1;
    s.uptime_s = 12.5;
    s.clients = 3;
    s.ports.push_back(PortStatus{"mlx5_0", 1, "ACTIVE", 3, 1, 0, gid("fe80::10:3"),
                                 "InfiniBand", 100, 4});
    s.ports.push_back(PortStatus{"mlx5_0", 2, "DOWN", 0, 0, 15, gid("fe80::10:4"),
                                 "InfiniBand", 2.5, 0});
    // Port 1 knows its SM, its MTU and a finished re-join; port 2 is mid re-join.
    s.ports[0].mtu = 4096;
    s.ports[0].sm_guid = 0x0002c90300000001;
    s.ports[0].sm_act_count = UINT32_MAX;
    s.ports[0].last_rejoin = RejoinStatus{"SM changed", 310.25, 0.5, 4};
    s.ports[1].rejoining = true;
    s.ports[1].last_rejoin = RejoinStatus{"port active again", 1.5, std::nullopt, 0};
    s.counters = Counters{10, 1, 2, 3, 12, 8, 1, UINT64_MAX, 4, 5, 6, 9, 2, 1.25};
    s.ports[0].max_groups = 1024;
    s.ports[0].sa = SaCongestion{2.5, false, 0.75, 300};
    s.users.push_back(UserUsage{0, "root", 2, 0, 1, 0, 0});
    s.users.push_back(UserUsage{1001, "bob", 3, 4096, 1, 64, 0});
    s.users.push_back(UserUsage{4294967294u, "", UINT64_MAX, UINT64_MAX, 0, 1, UINT64_MAX});
    s.ports[0].memberships = {3, 1, 0, UINT64_MAX};
    s.ports[0].rejoins = 2;
    s.counters.restored = 7;
    s.counters.lost = UINT64_MAX;
    s.refused = {{"access.rules", 2}, {"limits.hello_timeout_ms", 0}, {"access.quotas.creates_per_uid", UINT64_MAX}};
    return s;
}

TEST(ProtoRoundTrip, StatusResult) {
    const auto in = sample_status();
    const auto out =
        value_of(decode_status_result(result_of(decode_reply(encode_reply(6, in)))));
    EXPECT_EQ(out.daemon, in.daemon);
    EXPECT_EQ(out.protocol, in.protocol);
    EXPECT_EQ(out.uptime_s, in.uptime_s);
    EXPECT_EQ(out.clients, in.clients);
    ASSERT_EQ(out.ports.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(out.ports[i].device, in.ports[i].device);
        EXPECT_EQ(out.ports[i].port, in.ports[i].port);
        EXPECT_EQ(out.ports[i].state, in.ports[i].state);
        EXPECT_EQ(out.ports[i].lid, in.ports[i].lid);
        EXPECT_EQ(out.ports[i].sm_lid, in.ports[i].sm_lid);
        EXPECT_EQ(out.ports[i].sm_sl, in.ports[i].sm_sl);
        EXPECT_EQ(out.ports[i].port_gid, in.ports[i].port_gid);
        EXPECT_EQ(out.ports[i].link_layer, in.ports[i].link_layer);
        EXPECT_EQ(out.ports[i].rate_gbps, in.ports[i].rate_gbps);
        EXPECT_EQ(out.ports[i].groups, in.ports[i].groups);
        EXPECT_EQ(out.ports[i].mtu, in.ports[i].mtu);
        EXPECT_EQ(out.ports[i].sm_guid, in.ports[i].sm_guid);
        EXPECT_EQ(out.ports[i].sm_act_count, in.ports[i].sm_act_count);
        EXPECT_EQ(out.ports[i].rejoining, in.ports[i].rejoining);
        EXPECT_EQ(out.ports[i].max_groups, in.ports[i].max_groups);
        ASSERT_TRUE(out.ports[i].last_rejoin);
        const RejoinStatus &a = *out.ports[i].last_rejoin, &b = *in.ports[i].last_rejoin;
        EXPECT_EQ(a.reason, b.reason);
        EXPECT_EQ(a.started_ago_s, b.started_ago_s);
        EXPECT_EQ(a.duration_s, b.duration_s);
        EXPECT_EQ(a.groups, b.groups);
        EXPECT_EQ(out.ports[i].memberships, in.ports[i].memberships);
        EXPECT_EQ(out.ports[i].rejoins, in.ports[i].rejoins);
    }
    const Counters &a = out.counters, &b = in.counters;
    EXPECT_EQ(a.sa_mads_sent, b.sa_mads_sent);
    EXPECT_EQ(a.sa_retransmits, b.sa_retransmits);
    EXPECT_EQ(a.sa_timeouts, b.sa_timeouts);
    EXPECT_EQ(a.sa_bounces, b.sa_bounces);
    EXPECT_EQ(a.joins, b.joins);
    EXPECT_EQ(a.joins_local, b.joins_local);
    EXPECT_EQ(a.joins_failed, b.joins_failed);
    EXPECT_EQ(a.leaves, b.leaves);
    EXPECT_EQ(a.sa_sets, b.sa_sets);
    EXPECT_EQ(a.sa_deletes, b.sa_deletes);
    EXPECT_EQ(a.sa_gets, b.sa_gets);
    EXPECT_EQ(a.restored, b.restored);
    EXPECT_EQ(a.lost, b.lost);
    // An object on the wire: the client reads its reasons in key order.
    EXPECT_EQ(out.refused, (std::vector<RefusalCount>{{"access.quotas.creates_per_uid", UINT64_MAX},
                                                      {"access.rules", 2}, {"limits.hello_timeout_ms", 0}}));
    ASSERT_EQ(out.users.size(), in.users.size());
    for (std::size_t i = 0; i < in.users.size(); ++i) {
        const UserUsage &ua = out.users[i], &ub = in.users[i];
        EXPECT_EQ(ua.uid, ub.uid);
        EXPECT_EQ(ua.user, ub.user);
        EXPECT_EQ(ua.memberships, ub.memberships);
        EXPECT_EQ(ua.memberships_quota, ub.memberships_quota);
        EXPECT_EQ(ua.creates, ub.creates);
        EXPECT_EQ(ua.creates_quota, ub.creates_quota);
        EXPECT_EQ(ua.flagged, ub.flagged);
    }
}

TEST(ProtoRoundTrip, EvictResult) {
    const std::string text = encode_reply(3, EvictResult{5});
    EXPECT_EQ(text, R"({"id":3,"ok":true,"result":{"released":5,"disconnected":0}})");
    EXPECT_EQ(value_of(decode_evict_result(result_of(decode_reply(text)))).released, 5u);
    EXPECT_EQ(value_of(decode_evict_result(nlohmann::json::parse(R"({"released":0})"))).released, 0u);
    EXPECT_TRUE(std::holds_alternative<Error>(decode_evict_result(nlohmann::json::object())));
    EXPECT_TRUE(std::holds_alternative<Error>(decode_evict_result(nlohmann::json::parse(R"({"released":-1})"))));
}

TEST(ProtoRoundTrip, ErrorsOfEveryCode) {
    for (std::uint8_t c = 0; c <= static_cast<std::uint8_t>(Errc::internal); ++c) {
        Failure f{Error{static_cast<Errc>(c), "because " + std::to_string(c), std::nullopt},
                  "", {}};
        const auto reply = decode_reply(encode_error(c, f));
        EXPECT_EQ(reply.id, c);
        ASSERT_TRUE(std::holds_alternative<Failure>(reply.body));
        EXPECT_TRUE(same_failure(std::get<Failure>(reply.body), f));
    }
}

TEST(ProtoRoundTrip, ErrorWithFieldSaStatusAndVersions) {
    const Failure sa{Error::sa(0x0200, "join of group ff15::1 on mlx5_0/1"), "", {}};
    const Failure field{Error{Errc::invalid_argument, "/qkey: bad", std::nullopt}, "/qkey", {}};
    const Failure version{Error{Errc::unsupported_version, "no common version", std::nullopt},
                          "", {1}};
    for (const Failure &f : {sa, field, version}) {
        const auto reply = decode_reply(encode_error(std::nullopt, f));
        EXPECT_FALSE(reply.id);
        ASSERT_TRUE(std::holds_alternative<Failure>(reply.body));
        EXPECT_TRUE(same_failure(std::get<Failure>(reply.body), f));
    }
}

Event decode_event(const std::string &text); // with the events, below

TEST(ProtoRoundTrip, ErrorWithPolicyRef) {
    const Failure rule{Error{Errc::denied, "no rule admits uid 1001 to ff15::1", std::nullopt,
                             PolicyRef{"hpc", "", 0}},
                       "", {}};
    const Failure quota{Error{Errc::limit, "uid 1001 holds 4096 memberships", std::nullopt,
                              PolicyRef{"", "memberships_per_uid", 4096}},
                        "", {}};
    const Failure zero{Error{Errc::limit, "no creates", std::nullopt,
                             PolicyRef{"", "creates_per_uid", 0}},
                       "", {}};
    for (const Failure &f : {rule, quota, zero}) {
        const auto reply = decode_reply(encode_error(4, f));
        ASSERT_TRUE(std::holds_alternative<Failure>(reply.body));
        EXPECT_TRUE(same_failure(std::get<Failure>(reply.body), f)) << f.error.message;
    }
    EXPECT_EQ(json::parse(encode_error(4, rule)).at("error"),
              json::parse(R"({"code":"denied","message":"no rule admits uid 1001 to ff15::1",
                              "rule":"hpc"})"));
    EXPECT_EQ(json::parse(encode_error(4, quota)).at("error"),
              json::parse(R"({"code":"limit","message":"uid 1001 holds 4096 memberships",
                              "quota":"memberships_per_uid","limit":4096})"));
    // A lost event carries the same ERROR object.
    const LostEvent lost{9, rule};
    const auto back = std::get<LostEvent>(decode_event(encode_event(lost)));
    EXPECT_TRUE(same_failure(back.why, rule));
    // Without a policy ref nothing is written, and nothing read back.
    const json plain = json::parse(
        encode_error(4, Failure{Error{Errc::denied, "m", std::nullopt}, "", {}}));
    EXPECT_FALSE(plain.at("error").contains("rule"));
    EXPECT_FALSE(plain.at("error").contains("quota"));
    EXPECT_FALSE(plain.at("error").contains("limit"));
}

TEST(ProtoRoundTrip, ErrorWireForm) {
    const Failure sa{Error{Errc::sa_error, "it failed", 0x0200}, "", {}};
    const json j = json::parse(encode_error(2, sa));
    EXPECT_EQ(j, json::parse(R"({"id": 2, "ok": false, "error": {"code": "sa-error",
        "message": "it failed", "sa_status": 512, "sa_status_name": "ERR_REQ_INVALID"}})"));
    // Too large: the message was never parsed, so the reply cannot name an id.
    const json big = json::parse(encode_too_large(70000, 65536));
    EXPECT_TRUE(big.at("id").is_null());
    EXPECT_EQ(big.at("ok"), false);
    EXPECT_EQ(big.at("error").at("code"), "too-large");
    EXPECT_NE(big.at("error").at("message").get<std::string>().find("70000 bytes"),
              std::string::npos);
    EXPECT_EQ(too_large(1, 2).error.code, Errc::too_large);
    // unsupported-version always lists the versions, even none.
    const json uv = json::parse(encode_error(
        1, Failure{Error{Errc::unsupported_version, "m", std::nullopt}, "", {}}));
    EXPECT_EQ(uv.at("error").at("versions"), json::array());
}

TEST(ProtoRoundTrip, JoinReplyWireFormIsExactlyTheProtocols) {
    const std::string text = encode_reply(2, JoinResult{7, sample_record()});
    EXPECT_EQ(text,
              R"({"id":2,"ok":true,"result":{"membership":7,"record":{"mgid":"ff15:401b::1:2",)"
              R"("port_gid":"fe80::2:c903:10:3","mlid":49153,"qkey":305419896,"pkey":65535,)"
              R"("sl":3,"mtu":2048,"rate":16,"rate_gbps":100,"flow_label":74565,)"
              R"("traffic_class":7,"hop_limit":9,"scope":5,"join_state":"full","link_layer":"InfiniBand"}}})");
}

TEST(ProtoRoundTrip, ListWireFormHasTheProtocolsKeys) {
    const json j = json::parse(encode_reply(5, sample_list()));
    const json &g = j.at("result").at("ports").at(0).at("groups").at(0);
    EXPECT_EQ(g.at("held"), json::parse(R"(["full","sendonly-nonmember"])"));
    EXPECT_EQ(g.at("foreign"), json::parse(R"(["nonmember"])"));
    EXPECT_EQ(g.at("counts"), json::parse(R"({"full":2,"nonmember":0,"sendonly-nonmember":1,
                                               "sendonly-full":4000000000})"));
    EXPECT_EQ(g.at("members").at(0), json::parse(R"({"membership":7,"join_state":"full",
        "state":"active","pid":4242,"uid":1000,"comm":"my-app","rule":"hpc","created":true})"));
    // flagged only when the rules in force would refuse the membership now.
    EXPECT_FALSE(g.at("members").at(1).contains("flagged"));
    // name only for a membership that joined by name.
    EXPECT_EQ(g.at("members").at(1).at("name"), "job-42");
    EXPECT_FALSE(g.at("members").at(0).contains("name"));
    EXPECT_EQ(j.at("result").at("ports").at(0).at("groups").at(1).at("members").at(0).at("flagged"),
              "the rules in force now refuse it (no rule admits it)");
    EXPECT_EQ(j.at("result").at("ports").at(0).at("port_gid"), "fe80::10:3");
    EXPECT_EQ(j.at("result").at("ports").at(0).at("link_layer"), "InfiniBand");
    EXPECT_EQ(j.at("result").at("ports").at(2).at("link_layer"), "Ethernet");
    // A port from an older daemon, which says nothing, is InfiniBand's.
    json older = j.at("result");
    older["ports"][2].erase("link_layer");
    EXPECT_EQ(value_of(decode_list_result(older)).ports[2].link_layer, LinkLayer::infiniband);
}

TEST(ProtoRoundTrip, StatusWireFormHasTheProtocolsKeys) {
    const json j = json::parse(encode_reply(6, sample_status())).at("result");
    std::vector<std::string> keys;
    for (const auto &[k, v] : j.items())
        keys.push_back(k);
    EXPECT_EQ(keys, (std::vector<std::string>{"clients", "counters", "daemon", "ports",
                                              "protocol", "refused", "uptime_s", "users"}));
    EXPECT_EQ(j.at("uptime_s"), 12.5);
    EXPECT_EQ(j.at("ports").at(0), json::parse(R"({"device":"mlx5_0","port":1,
        "state":"ACTIVE","lid":3,"sm_lid":1,"sm_sl":0,"port_gid":"fe80::10:3",
        "link_layer":"InfiniBand","rate_gbps":100,"groups":4,"mtu":4096,
        "sm_guid":"0x0002c90300000001","sm_act_count":4294967295,"rejoining":false,
        "last_rejoin":{"reason":"SM changed","started_ago_s":310.25,"duration_s":0.5,
                       "groups":4},"max_groups":1024,
        "sa":{"window":2.5,"slow_start":false,"srtt_ms":0.75,"timeout_ms":300},
        "memberships":{"full":3,"nonmember":1,"sendonly-nonmember":0,"sendonly-full":18446744073709551615},
        "rejoins":2})"));
    EXPECT_EQ(j.at("refused"), json::parse(R"({"access.rules":2,"limits.hello_timeout_ms":0,
        "access.quotas.creates_per_uid":18446744073709551615})"));
    EXPECT_EQ(j.at("ports").at(1).at("max_groups"), 0); // no cap: 0, not absent
    EXPECT_EQ(j.at("users").at(1), json::parse(R"({"uid":1001,"user":"bob","memberships":3,
        "memberships_quota":4096,"creates":1,"creates_quota":64,"flagged":0,"clients":0,"clients_quota":0,
        "monitors":0,"monitors_quota":0,"queued_bytes":0,"queued_bytes_quota":0,"groups_per_port":0,
        "groups_per_port_quota":0,"sa_tokens":0,"sa_mads_per_second":0})"));
    // Not known yet, still running, never happened: null, not absent.
    const json &p2 = j.at("ports").at(1);
    EXPECT_TRUE(p2.at("sm_guid").is_null());
    EXPECT_TRUE(p2.at("sm_act_count").is_null());
    EXPECT_EQ(p2.at("rejoining"), true);
    EXPECT_TRUE(p2.at("last_rejoin").at("duration_s").is_null());
    auto s = sample_status();
    s.ports[1].last_rejoin.reset();
    EXPECT_TRUE(json::parse(encode_reply(6, s)).at("result").at("ports").at(1).at("last_rejoin").is_null());
    EXPECT_EQ(j.at("counters").size(), 16u);
    EXPECT_EQ(j.at("counters").at("restored"), 7);
    EXPECT_EQ(j.at("counters").at("sa_amplification"), 1.25);
    // No congestion control on a port (or a daemon without it): no "sa" object.
    EXPECT_FALSE(j.at("ports").at(1).contains("sa"));
}

// ---- events ----

Event decode_event(const std::string &text) {
    auto in = decode_incoming(text);
    if (auto *err = std::get_if<Error>(&in)) {
        ADD_FAILURE() << text << "\n  " << err->message;
        return {};
    }
    const auto &incoming = std::get<Incoming>(in);
    if (!std::holds_alternative<Event>(incoming)) {
        ADD_FAILURE() << text << " decoded as a reply";
        return {};
    }
    return std::get<Event>(incoming);
}

TEST(ProtoRoundTrip, RestoredEvent) {
    RestoredEvent in{7, sample_record(),
                     field::mlid | field::qkey | field::mtu | field::rate | field::tclass};
    const auto out = std::get<RestoredEvent>(decode_event(encode_event(in)));
    EXPECT_EQ(out.membership, 7u);
    EXPECT_EQ(out.record, in.record);
    EXPECT_EQ(out.changed, in.changed);
}

TEST(ProtoRoundTrip, ChangedListsRecordKeysMlidFirst) {
    const std::uint64_t all = field::mgid | field::port_gid | field::qkey | field::mlid |
                              field::mtu | field::tclass | field::pkey | field::rate | field::sl |
                              field::flow_label | field::hop_limit | field::scope |
                              field::join_state;
    const json j = json::parse(encode_event(RestoredEvent{1, sample_record(), all}));
    EXPECT_EQ(j.at("changed"), json::parse(R"(["mlid","mgid","port_gid","qkey","pkey","sl",
        "mtu","rate","rate_gbps","flow_label","traffic_class","hop_limit","scope",
        "join_state"])"));
    EXPECT_EQ(changed_field_names(field::sl | field::mlid),
              (std::vector<std::string>{"mlid", "sl"}));
    // Selector bits show as their value's key; bits no record key shows are left out.
    EXPECT_EQ(changed_field_names(field::mtu_selector | field::packet_life | field::proxy_join),
              (std::vector<std::string>{"mtu"}));
    EXPECT_EQ(changed_fields_from_names(changed_field_names(all)), all);
    // RoCE's fields, after the record's own.
    EXPECT_EQ(changed_field_names(field::netdev | field::sgid_index | field::mlid),
              (std::vector<std::string>{"mlid", "sgid_index", "netdev"}));
    EXPECT_EQ(changed_fields_from_names({"netdev", "sgid_index"}), field::netdev | field::sgid_index);
    EXPECT_EQ(changed_fields_from_names({"mlid", "from-the-future"}), field::mlid);
    EXPECT_TRUE(json::parse(encode_event(RestoredEvent{1, sample_record(), 0}))
                    .at("changed")
                    .empty());
}

TEST(ProtoRoundTrip, LostEvent) {
    LostEvent in{9, Failure{Error::sa(0x0300, "re-join after SM change"), "", {}}};
    const json j = json::parse(encode_event(in));
    EXPECT_EQ(j.at("event"), "lost");
    EXPECT_FALSE(j.contains("id"));
    const auto out = std::get<LostEvent>(decode_event(encode_event(in)));
    EXPECT_EQ(out.membership, 9u);
    EXPECT_TRUE(same_failure(out.why, in.why));
}

TEST(ProtoRoundTrip, StoppingEvent) {
    const std::string text = encode_event(StoppingEvent{"rdma-mcastd is stopping"});
    EXPECT_EQ(text, R"({"event":"stopping","message":"rdma-mcastd is stopping"})");
    EXPECT_EQ(std::get<StoppingEvent>(decode_event(text)).message, "rdma-mcastd is stopping");
}

TEST(ProtoRoundTrip, MonitorEvent) {
    MonitorEvent in{"join-failed", "mlx5_0", 1, gid("ff15::1"), 0xc000,
                    join::full | join::send_only_full, 4242, 1000, "my-app",
                    "SA status 0x0200", 0x0200, std::nullopt, std::nullopt};
    const auto out = std::get<MonitorEvent>(decode_event(encode_event(in)));
    EXPECT_EQ(out.kind, in.kind);
    EXPECT_EQ(out.device, in.device);
    EXPECT_EQ(out.port, in.port);
    EXPECT_EQ(out.mgid, in.mgid);
    EXPECT_EQ(out.mlid, in.mlid);
    EXPECT_EQ(out.join_state, in.join_state);
    EXPECT_EQ(out.pid, in.pid);
    EXPECT_EQ(out.uid, in.uid);
    EXPECT_EQ(out.comm, in.comm);
    EXPECT_EQ(out.message, in.message);
    EXPECT_EQ(out.sa_status, in.sa_status);
    const json j = json::parse(encode_event(in));
    EXPECT_EQ(j.at("join_state"), "full+sendonly-full");

    MonitorEvent warning{"warning", "mlx5_0", 1, {}, 0, 0, 0, 0, "", "SM moved", std::nullopt, std::nullopt, std::nullopt};
    const json w = json::parse(encode_event(warning));
    EXPECT_FALSE(w.contains("sa_status"));
    EXPECT_EQ(w.at("mgid"), "::");
    EXPECT_EQ(w.at("join_state"), "none");
    const auto back = std::get<MonitorEvent>(decode_event(encode_event(warning)));
    EXPECT_EQ(back.join_state, 0);
    EXPECT_FALSE(back.sa_status);
    EXPECT_FALSE(w.contains("netdev")) << "an InfiniBand group's entry has none of RoCE's keys";
    EXPECT_FALSE(back.roce);
}

// An entry about a RoCE group says where the group is sent from.
TEST(ProtoRoundTrip, MonitorEventOfARoceGroup) {
    MonitorEvent in{"joined", "rxe0", 1, gid("::ffff:239.1.2.3"), 0, join::full, 5, 1000, "app", "joined", std::nullopt, std::nullopt, std::nullopt};
    in.roce = RoceSource{GidType::roce_v1, 4, "veth1"};
    const json j = json::parse(encode_event(in));
    EXPECT_EQ(j.at("gid_type"), "roce_v1");
    EXPECT_EQ(j.at("sgid_index"), 4);
    EXPECT_EQ(j.at("netdev"), "veth1");
    EXPECT_EQ(std::get<MonitorEvent>(decode_event(encode_event(in))).roce, in.roce);
    json partial = j;
    partial.erase("netdev");
    const auto refused = decode_incoming(partial.dump());
    ASSERT_TRUE(std::holds_alternative<Error>(refused)) << "the three come together";
    EXPECT_NE(std::get<Error>(refused).message.find("netdev"), std::string::npos) << std::get<Error>(refused).message;
}

TEST(ProtoRoundTrip, BytesThatAreNotUtf8StillMakeValidJson) {
    // A process name is whatever prctl(PR_SET_NAME) was given.
    MonitorEvent in{"joined", "mlx5_0", 1, gid("ff15::1"), 1, join::full, 1, 0,
                    std::string("a\xff\xc3(b\x01"), "m", std::nullopt, std::nullopt, std::nullopt};
    const std::string text = encode_event(in);
    EXPECT_TRUE(json::accept(text));
    const auto out = std::get<MonitorEvent>(decode_event(text));
    EXPECT_EQ(out.comm, "a\xEF\xBF\xBD\xEF\xBF\xBD(b\x01");
}

} // namespace
} // namespace mcastd::proto
