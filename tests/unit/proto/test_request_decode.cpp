// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The daemon's request decoder: what it accepts and how it maps to the core's JoinRequest, and
// a table of every rule PROTOCOL.md states, each rejection checked for its field pointer, its
// id, and a message that names the cause.
#include <gtest/gtest.h>

#include <string>

#include "join_decoder.hpp"
#include "proto_testing.hpp"

namespace mcastd::proto {
namespace {

using testing_support::gid;

RequestEnvelope accept(const std::string &text) {
    auto r = decode_request(text);
    if (auto *bad = std::get_if<BadRequest>(&r))
        ADD_FAILURE() << text << "\n  rejected: " << bad->failure.error.message;
    return std::holds_alternative<RequestEnvelope>(r) ? std::get<RequestEnvelope>(r)
                                                      : RequestEnvelope{};
}

TEST(ProtoRequest, DecodesAJoinByMgidWithEveryAssertedField) {
    auto env = accept(R"({"id": 2, "op": "join", "device": "mlx5_0", "port": 1,
        "mgid": "ff15::1:2", "join_state": "sendonly-full", "qkey": 305419896, "pkey": 32769,
        "sl": 15, "traffic_class": 255, "flow_label": 1048575, "hop_limit": 64, "mtu": 2048,
        "mtu_selector": "greater", "rate": 16, "rate_selector": "best"})");
    EXPECT_EQ(env.id, 2u);
    const auto &r = std::get<Join>(env.request).request;
    EXPECT_EQ(r.device, "mlx5_0");
    EXPECT_EQ(r.port, 1);
    EXPECT_EQ(r.mgid, gid("ff15::1:2"));
    EXPECT_EQ(r.join_state, join::send_only_full);
    EXPECT_FALSE(r.scope);
    EXPECT_EQ(r.params.qkey, 305419896u);
    EXPECT_EQ(r.params.pkey, 32769);
    EXPECT_EQ(r.params.sl, 15);
    EXPECT_EQ(r.params.tclass, 255); // traffic_class -> tclass
    EXPECT_EQ(r.params.flow_label, 1048575u);
    EXPECT_EQ(r.params.hop_limit, 64);
    // MTU in bytes on the wire, the IBA enum in the core.
    EXPECT_EQ(r.params.mtu, (Selected{Selector::greater, 4}));
    EXPECT_EQ(r.params.rate, (Selected{Selector::best, 16}));
}

TEST(ProtoRequest, JoinDefaultsToFullMemberAndAssertsNothing) {
    auto env = accept(R"({"id":0,"op":"join","device":"d","port":254,"mgid":"ff12::9"})");
    const auto &r = std::get<Join>(env.request).request;
    EXPECT_EQ(r.join_state, join::full);
    EXPECT_EQ(r.params, GroupParams{});
    EXPECT_EQ(r.port, 254);
}

TEST(ProtoRequest, CreateMeansAZeroMgidWithOptionalScope) {
    auto env = accept(R"({"id":3,"op":"join","device":"d","port":1,"create":true,"scope":2})");
    const auto &r = std::get<Join>(env.request).request;
    EXPECT_TRUE(is_zero(r.mgid));
    EXPECT_EQ(r.scope, 2);
    auto plain = accept(R"({"id":3,"op":"join","device":"d","port":1,"create":true})");
    EXPECT_FALSE(std::get<Join>(plain.request).request.scope);
}

TEST(ProtoRequest, NameLeavesTheMgidToTheDaemon) {
    auto env = accept(R"({"id":3,"op":"join","device":"d","port":1,"name":"job-42","qkey":7})");
    const auto &r = std::get<Join>(env.request).request;
    EXPECT_EQ(r.name, "job-42");
    EXPECT_TRUE(is_zero(r.mgid));
    EXPECT_FALSE(r.scope);
    EXPECT_EQ(r.params.qkey, 7u);
    auto utf8 = accept(R"({"id":3,"op":"join","device":"d","port":1,"name":"gr\u00f6\u00dfe"})");
    EXPECT_EQ(std::get<Join>(utf8.request).request.name, "gr\xc3\xb6\xc3\x9f" "e");
}

TEST(ProtoRequest, IpNamesAnIpGroupAndLeavesTheMgidToTheDaemon) {
    auto env = accept(R"({"id":3,"op":"join","device":"rxe0","port":1,"ip":"239.1.2.3","gid_type":"roce_v1",
                          "join_state":"sendonly-full","qkey":19088743})");
    const auto &j = std::get<Join>(env.request);
    ASSERT_TRUE(j.ip);
    EXPECT_EQ(format_ip(*j.ip), "239.1.2.3");
    EXPECT_TRUE(j.ip->is_v4());
    EXPECT_EQ(j.gid_type, GidType::roce_v1);
    EXPECT_TRUE(is_zero(j.request.mgid));
    EXPECT_TRUE(j.request.name.empty());
    EXPECT_FALSE(j.request.scope);
    EXPECT_EQ(j.request.join_state, join::send_only_full);
    EXPECT_EQ(j.request.params.qkey, 0x01234567u);

    const auto v6 = std::get<Join>(accept(R"({"id":3,"op":"join","device":"d","port":1,"ip":"FF0E::1:2"})").request);
    EXPECT_EQ(format_ip(*v6.ip), "ff0e::1:2");
    EXPECT_FALSE(v6.gid_type) << "the daemon's choice";
    // The IPv4-mapped spelling is the IPv4 group.
    const auto mapped = std::get<Join>(accept(R"({"id":3,"op":"join","device":"d","port":1,"ip":"::ffff:224.0.0.251"})").request);
    EXPECT_EQ(format_ip(*mapped.ip), "224.0.0.251");
    // gid_type goes with any group, an MGID too (it picks the source GID's type).
    const auto by_mgid = std::get<Join>(accept(R"({"id":3,"op":"join","device":"d","port":1,"mgid":"::ffff:239.1.2.3","gid_type":"roce_v2"})").request);
    EXPECT_FALSE(by_mgid.ip);
    EXPECT_EQ(by_mgid.gid_type, GidType::roce_v2);
    EXPECT_EQ(by_mgid.request.mgid, gid("::ffff:239.1.2.3"));
    // An InfiniBand join says neither.
    const auto ib = std::get<Join>(accept(R"({"id":3,"op":"join","device":"d","port":1,"mgid":"ff15::1"})").request);
    EXPECT_FALSE(ib.ip);
    EXPECT_FALSE(ib.gid_type);
    EXPECT_TRUE(ib.ifname.empty());
    EXPECT_FALSE(ib.request.roce);
    // ifname: the interface of the client's namespace, passed on to the RoCE backend.
    const auto named = std::get<Join>(
        accept(R"({"id":3,"op":"join","device":"d","port":1,"ip":"239.1.2.3","ifname":"eth0"})").request);
    EXPECT_EQ(named.ifname, "eth0");
    ASSERT_TRUE(named.request.roce);
    EXPECT_EQ(named.request.roce->ifname, "eth0");
}

// The config's static groups and D-Bus's Join read joins into a JoinRequest, which has no room
// for an IP group: there the RoCE keys are unknown, not silently dropped.
TEST(ProtoRequest, TheJoinRequestDecoderRefusesTheRoceKeys) {
    for (const char *text : {R"({"device":"d","port":1,"ip":"239.1.2.3"})",
                             R"({"device":"d","port":1,"mgid":"ff15::1","gid_type":"roce_v2"})",
                             R"({"device":"d","port":1,"mgid":"ff15::1","ifname":"eth0"})"}) {
        const auto j = testing_json::Parsed::from_text(text);
        try {
            (void)decode_join(json_check::ObjectReader(j, ""));
            ADD_FAILURE() << text << " was accepted";
        } catch (const json_check::FieldError &e) {
            EXPECT_NE(e.describe().find("unknown key"), std::string::npos) << e.describe();
        }
        EXPECT_NO_THROW((void)decode_join_with_ip(json_check::ObjectReader(j, ""))) << text;
    }
    // And RoCE v2's MGID of an IPv4 group is no InfiniBand MGID.
    const auto v2 = testing_json::Parsed::from_text(R"({"device":"d","port":1,"mgid":"::ffff:239.1.2.3"})");
    EXPECT_THROW((void)decode_join(json_check::ObjectReader(v2, "")), json_check::FieldError);
    EXPECT_EQ(decode_join_with_ip(json_check::ObjectReader(v2, "")).request.mgid, gid("::ffff:239.1.2.3"));
}

TEST(ProtoRequest, SelectorsDefaultToExactly) {
    auto env = accept(R"({"id":1,"op":"join","device":"d","port":1,"mgid":"ff12::1",
                          "mtu":256,"rate":2})");
    const auto &p = std::get<Join>(env.request).request.params;
    EXPECT_EQ(p.mtu, (Selected{Selector::exactly, 1}));
    EXPECT_EQ(p.rate, (Selected{Selector::exactly, 2}));
}

TEST(ProtoRequest, EveryMtuAndRateEnumIsAccepted) {
    for (unsigned bytes : {256u, 512u, 1024u, 2048u, 4096u}) {
        auto env = accept(R"({"id":1,"op":"join","device":"d","port":1,"mgid":"ff12::1","mtu":)" +
                          std::to_string(bytes) + "}");
        EXPECT_EQ(mtu_bytes(std::get<Join>(env.request).request.params.mtu->value), bytes);
    }
    for (unsigned rate = 2; rate <= 22; ++rate) {
        auto env = accept(R"({"id":1,"op":"join","device":"d","port":1,"mgid":"ff12::1","rate":)" +
                          std::to_string(rate) + "}");
        EXPECT_EQ(std::get<Join>(env.request).request.params.rate->value, rate);
    }
}

TEST(ProtoRequest, DecodesHelloLeaveListStatusMonitor) {
    auto hello = accept(R"({"id":1,"op":"hello","versions":[1,2],"client":"my-app"})");
    EXPECT_EQ(std::get<Hello>(hello.request).versions, (std::vector<unsigned>{1, 2}));
    EXPECT_EQ(std::get<Hello>(hello.request).client, "my-app");
    auto bare = accept(R"({"id":1,"op":"hello","versions":[1]})");
    EXPECT_EQ(std::get<Hello>(bare.request).client, "");

    auto by_membership = accept(R"({"id":3,"op":"leave","membership":7})");
    EXPECT_EQ(std::get<Leave>(by_membership.request).membership, 7u);
    EXPECT_FALSE(std::get<Leave>(by_membership.request).join);
    auto by_join = accept(R"({"id":4,"op":"leave","join":2})");
    EXPECT_EQ(std::get<Leave>(by_join.request).join, 2u);
    EXPECT_FALSE(std::get<Leave>(by_join.request).membership);

    EXPECT_TRUE(std::holds_alternative<List>(accept(R"({"id":5,"op":"list"})").request));
    EXPECT_TRUE(std::holds_alternative<Status>(accept(R"({"op":"status","id":6})").request));
    EXPECT_TRUE(std::get<Monitor>(accept(R"({"id":7,"op":"monitor"})").request).enable);
    EXPECT_FALSE(
        std::get<Monitor>(accept(R"({"id":7,"op":"monitor","enable":false})").request).enable);
}

TEST(ProtoRequest, DecodesEvictByUidOrMembership) {
    const auto by_uid = std::get<Evict>(accept(R"({"id":8,"op":"evict","uid":1001})").request);
    EXPECT_EQ(by_uid.uid, 1001u);
    EXPECT_FALSE(by_uid.membership);
    // uid 0 is a uid like any other (root's memberships).
    EXPECT_EQ(std::get<Evict>(accept(R"({"id":8,"op":"evict","uid":0})").request).uid, 0u);
    EXPECT_FALSE(by_uid.disconnect) << "not unless asked";
    const auto closing = std::get<Evict>(accept(R"({"id":8,"op":"evict","uid":1001,"disconnect":true})").request);
    EXPECT_EQ(closing.uid, 1001u);
    EXPECT_TRUE(closing.disconnect);
    EXPECT_EQ(
        std::get<Evict>(accept(R"({"id":8,"op":"evict","uid":4294967294})").request).uid,
        4294967294u);
    const auto by_membership =
        std::get<Evict>(accept(R"({"id":9,"op":"evict","membership":7})").request);
    EXPECT_EQ(by_membership.membership, 7u);
    EXPECT_FALSE(by_membership.uid);
}

TEST(ProtoRequest, IdSpansZeroTo2Pow53Minus1) {
    EXPECT_EQ(accept(R"({"id":0,"op":"list"})").id, 0u);
    EXPECT_EQ(accept(R"({"id":9007199254740991,"op":"list"})").id, kMaxId);
}

TEST(ProtoRequest, ClientNameLimitCountsCharactersNotBytes) {
    std::string name;
    for (int i = 0; i < 64; ++i)
        name += "\xc3\xa9"; // é: 64 characters, 128 bytes
    auto env = accept(R"({"id":1,"op":"hello","versions":[1],"client":")" + name + "\"}");
    EXPECT_EQ(std::get<Hello>(env.request).client, name);
}

// A device name is what sysfs allows: up to 63 bytes of printable ASCII, any but '/'.
TEST(ProtoRequest, DeviceNamesAreUpTo63PrintableAsciiBytes) {
    const std::string longest(63, 'm');
    EXPECT_EQ(std::get<Join>(accept(R"({"id":1,"op":"join","port":1,"mgid":"ff15::1","device":")" + longest +
                                    "\"}")
                                 .request)
                  .request.device,
              longest);
    for (const char *name : {"mlx5_0", "rxe-eth0", "hfi1_0", "a", "...", "!~#"})
        EXPECT_EQ(std::get<Join>(
                      accept(std::string(R"({"id":1,"op":"join","port":1,"mgid":"ff15::1","device":")") + name + "\"}")
                          .request)
                      .request.device,
                  name);
}

// The bad value is quoted escaped, never raw: the message goes to the log and to the client.
TEST(ProtoRequest, ABadDeviceIsQuotedWithoutItsControlBytes) {
    auto r = decode_request(R"({"id":9,"op":"join","device":"a\u001b\u0085\r\n\"b","port":1,"mgid":"ff15::1"})");
    ASSERT_TRUE(std::holds_alternative<BadRequest>(r));
    const std::string &msg = std::get<BadRequest>(r).failure.error.message;
    EXPECT_NE(msg.find("\"a\\x1b\\xc2\\x85\\x0d\\x0a\\x22b\""), std::string::npos) << msg;
    for (char raw : {'\x1b', '\r', '\n'})
        EXPECT_EQ(msg.find(raw), std::string::npos) << msg;
    EXPECT_EQ(msg.find("\xc2\x85"), std::string::npos) << msg;
}

TEST(ProtoRequest, WhitespaceAroundTheObjectIsFine) {
    accept(" \n\t{\"id\":1,\"op\":\"list\"}\n ");
}

// ---- the rejection table ----

struct Rejection {
    const char *rule;
    std::string message;
    std::optional<std::uint64_t> id; // the id the error reply must carry
    std::string field;               // the JSON pointer; "" = no field at fault
    std::string says;                // a phrase the message must contain
};

std::ostream &operator<<(std::ostream &os, const Rejection &r) { return os << r.rule; }

std::string join_with(const std::string &extra) {
    return R"({"id":9,"op":"join","device":"mlx5_0","port":1,)" + extra + "}";
}
std::string join_by_mgid(const std::string &extra) {
    return join_with(R"("mgid":"ff15::1",)" + extra);
}

class ProtoRejection : public ::testing::TestWithParam<Rejection> {};

TEST_P(ProtoRejection, NamesTheField) {
    const Rejection &want = GetParam();
    auto r = decode_request(want.message);
    ASSERT_TRUE(std::holds_alternative<BadRequest>(r)) << want.message << " was accepted";
    const auto &bad = std::get<BadRequest>(r);
    EXPECT_EQ(bad.failure.error.code, Errc::invalid_argument);
    EXPECT_EQ(bad.id, want.id);
    EXPECT_EQ(bad.failure.field, want.field) << bad.failure.error.message;
    EXPECT_FALSE(bad.failure.error.sa_status);
    const std::string &msg = bad.failure.error.message;
    if (!want.field.empty()) {
        EXPECT_TRUE(msg.starts_with(want.field + ": ")) << msg;
    }
    EXPECT_NE(msg.find(want.says), std::string::npos) << msg;
}

const Rejection kRejections[] = {
    // Not a request at all: no id to answer to.
    {"empty message", "", std::nullopt, "", "not valid JSON"},
    {"truncated JSON", R"({"id":1,"op":"list")", std::nullopt, "", "not valid JSON"},
    {"syntax error has a position", R"({"id":1,})", std::nullopt, "", "line 1, column 9"},
    {"trailing garbage", R"({"id":1,"op":"list"} x)", std::nullopt, "", "not valid JSON"},
    {"two objects", R"({"id":1,"op":"list"}{"id":2,"op":"list"})", std::nullopt, "",
     "not valid JSON"},
    {"comments are not JSON", R"({"id":1,"op":"list"/* no */})", std::nullopt, "",
     "not valid JSON"},
    {"invalid UTF-8", "{\"id\":1,\"op\":\"li\xffst\"}", std::nullopt, "", "not valid JSON"},
    {"array", R"([{"id":1,"op":"list"}])", std::nullopt, "", "a request is a JSON object"},
    {"number", "42", std::nullopt, "", "not 42"},
    {"string", R"("list")", std::nullopt, "", "JSON object"},
    {"null", "null", std::nullopt, "", "JSON object"},
    {"too deep", std::string(100, '[') + std::string(100, ']'), std::nullopt, "",
     "nested deeper"},

    // The id.
    {"missing id", R"({"op":"list"})", std::nullopt, "/id", "required key is missing"},
    {"null id", R"({"id":null,"op":"list"})", std::nullopt, "/id", "got null"},
    {"string id", R"({"id":"1","op":"list"})", std::nullopt, "/id", "expected an integer"},
    {"float id", R"({"id":1.0,"op":"list"})", std::nullopt, "/id", "got 1.0"},
    {"bool id", R"({"id":true,"op":"list"})", std::nullopt, "/id", "got true"},
    {"negative id", R"({"id":-1,"op":"list"})", std::nullopt, "/id", "-1 out of range"},
    {"id 2^53", R"({"id":9007199254740992,"op":"list"})", std::nullopt, "/id",
     "out of range [0, 9007199254740991]"},
    {"id beyond uint64", R"({"id":18446744073709551616,"op":"list"})", std::nullopt, "/id",
     "expected an integer"},
    {"duplicate id", R"({"id":1,"id":2,"op":"list"})", std::nullopt, "/id", "duplicate key"},

    // The op. From here on the id was readable and is echoed.
    {"duplicate op", R"({"id":1,"op":"list","op":"status"})", 1, "/op", "duplicate key"},
    {"duplicate after the id", R"({"id":5,"op":"leave","join":1,"join":2})", 5, "/join",
     "duplicate key"},
    {"missing op", R"({"id":1})", 1, "/op", "required key is missing"},
    {"op not a string", R"({"id":1,"op":7})", 1, "/op", "expected a string"},
    {"unknown op", R"({"id":1,"op":"frobnicate"})", 1, "/op", "\"frobnicate\" is not an op"},
    {"op is case sensitive", R"({"id":1,"op":"LIST"})", 1, "/op", "is not an op"},

    // Unknown keys, per op.
    {"unknown key in list", R"({"id":1,"op":"list","verbose":true})", 1, "/verbose",
     "unknown key"},
    {"unknown key in status", R"({"id":1,"op":"status","x":1})", 1, "/x", "unknown key"},
    {"unknown key in hello", R"({"id":1,"op":"hello","versions":[1],"name":"x"})", 1, "/name",
     "unknown key"},
    {"unknown key in join", join_by_mgid(R"("qkeys":1)"), 9, "/qkeys", "unknown key"},
    {"unknown key in leave", R"({"id":1,"op":"leave","membership":1,"force":true})", 1, "/force",
     "unknown key"},
    {"unknown key in monitor", R"({"id":1,"op":"monitor","level":"debug"})", 1, "/level",
     "unknown key"},
    {"key with a slash is escaped", R"({"id":1,"op":"list","a/b~c":1})", 1, "/a~1b~0c",
     "unknown key"},
    {"a join key in another op", R"({"id":1,"op":"list","device":"mlx5_0"})", 1, "/device",
     "unknown key"},

    // hello.
    {"versions missing", R"({"id":1,"op":"hello"})", 1, "/versions", "required key is missing"},
    {"versions not an array", R"({"id":1,"op":"hello","versions":1})", 1, "/versions",
     "expected an array"},
    {"versions empty", R"({"id":1,"op":"hello","versions":[]})", 1, "/versions",
     "at least one version"},
    {"version not an integer", R"({"id":1,"op":"hello","versions":[1,"2"]})", 1, "/versions/1",
     "expected an integer"},
    {"version negative", R"({"id":1,"op":"hello","versions":[-1]})", 1, "/versions/0",
     "out of range"},
    {"version float", R"({"id":1,"op":"hello","versions":[1.5]})", 1, "/versions/0",
     "expected an integer"},
    {"version too large", R"({"id":1,"op":"hello","versions":[4294967296]})", 1, "/versions/0",
     "out of range"},
    {"client not a string", R"({"id":1,"op":"hello","versions":[1],"client":5})", 1, "/client",
     "expected a string"},
    {"client too long", R"({"id":1,"op":"hello","versions":[1],"client":")" +
                            std::string(65, 'a') + "\"}",
     1, "/client", "longer than 64 characters"},
    {"client with a C0 control", R"({"id":1,"op":"hello","versions":[1],"client":"app\u001b[2J"})", 1,
     "/client", "the client name has a control character at byte 3"},
    {"client with DEL", R"({"id":1,"op":"hello","versions":[1],"client":"app\u007f"})", 1, "/client",
     "has a control character at byte 3"},
    {"client with a C1 control", R"({"id":1,"op":"hello","versions":[1],"client":"\u0085app"})", 1,
     "/client", "has a control character at byte 0"},

    // join: device and port.
    {"device missing", R"({"id":9,"op":"join","port":1,"mgid":"ff15::1"})", 9, "/device",
     "required key is missing"},
    {"device not a string", R"({"id":9,"op":"join","device":0,"port":1,"mgid":"ff15::1"})", 9,
     "/device", "expected a string"},
    {"device empty", R"({"id":9,"op":"join","device":"","port":1,"mgid":"ff15::1"})", 9,
     "/device", "\"\" is not an RDMA device name: it is empty"},
    {"device too long", R"({"id":9,"op":"join","device":")" + std::string(64, 'm') +
                            R"(","port":1,"mgid":"ff15::1"})",
     9, "/device", "it is 64 bytes long"},
    {"device with an escape sequence", R"({"id":9,"op":"join","device":"mlx5\u001b[2J","port":1,"mgid":"ff15::1"})",
     9, "/device", "\"mlx5\\x1b[2J\" is not an RDMA device name: byte 4 is not printable ASCII"},
    {"device with a newline", R"({"id":9,"op":"join","device":"mlx5_0\nfake line","port":1,"mgid":"ff15::1"})",
     9, "/device", "\"mlx5_0\\x0afake line\""},
    {"device not ASCII", R"({"id":9,"op":"join","device":"ml\u00e9","port":1,"mgid":"ff15::1"})", 9,
     "/device", "\"ml\\xc3\\xa9\" is not an RDMA device name"},
    {"device with a space", R"({"id":9,"op":"join","device":"mlx5 0","port":1,"mgid":"ff15::1"})", 9,
     "/device", "byte 4 is not printable ASCII"},
    {"device with a slash", R"({"id":9,"op":"join","device":"../mlx5_0","port":1,"mgid":"ff15::1"})", 9,
     "/device", "byte 2 is '/'"},
    {"device dot", R"({"id":9,"op":"join","device":".","port":1,"mgid":"ff15::1"})", 9, "/device",
     "it names a directory"},
    {"device dot dot", R"({"id":9,"op":"join","device":"..","port":1,"mgid":"ff15::1"})", 9, "/device",
     "it names a directory"},
    {"port missing", R"({"id":9,"op":"join","device":"d","mgid":"ff15::1"})", 9, "/port",
     "required key is missing"},
    {"port 0", R"({"id":9,"op":"join","device":"d","port":0,"mgid":"ff15::1"})", 9, "/port",
     "0 out of range [1, 254]"},
    {"port 255", R"({"id":9,"op":"join","device":"d","port":255,"mgid":"ff15::1"})", 9, "/port",
     "255 out of range [1, 254]"},
    {"port as string", R"({"id":9,"op":"join","device":"d","port":"1","mgid":"ff15::1"})", 9,
     "/port", "expected an integer in [1, 254], got \"1\""},
    {"port as float", R"({"id":9,"op":"join","device":"d","port":1.0,"mgid":"ff15::1"})", 9,
     "/port", "got 1.0"},
    {"port as bool", R"({"id":9,"op":"join","device":"d","port":true,"mgid":"ff15::1"})", 9,
     "/port", "got true"},

    // join: mgid and create.
    {"neither mgid nor create", join_with(R"("qkey":1)"), 9, "/mgid", "create: true"},
    {"neither mgid nor name", join_with(R"("qkey":1)"), 9, "/mgid", "name for a named group"},
    {"neither mgid nor ip", join_with(R"("qkey":1)"), 9, "/mgid", "or ip for an IP multicast group"},

    // join: RoCE's ip and gid_type.
    {"ip and mgid", join_with(R"("mgid":"ff15::1","ip":"239.1.2.3")"), 9, "/ip", "ip and mgid exclude each other"},
    {"ip and name", join_with(R"("name":"a","ip":"239.1.2.3")"), 9, "/ip", "ip and name exclude each other"},
    {"ip and create", join_with(R"("create":true,"ip":"239.1.2.3")"), 9, "/ip",
     "ip and create exclude each other"},
    {"ip with scope", join_with(R"("ip":"239.1.2.3","scope":5)"), 9, "/scope", "needs create"},
    {"ip not a string", join_with(R"("ip":4009820675)"), 9, "/ip", "expected a string"},
    {"ip not an address", join_with(R"("ip":"239.1.2")"), 9, "/ip", "\"239.1.2\" is not an IPv4 or IPv6 address"},
    {"ip a MAC", join_with(R"("ip":"01:00:5e:01:02:03")"), 9, "/ip", "is not an IPv4 or IPv6 address"},
    {"ip empty", join_with(R"("ip":"")"), 9, "/ip", "is not an IPv4 or IPv6 address"},
    {"ip unicast IPv4", join_with(R"("ip":"10.1.2.3")"), 9, "/ip",
     "\"10.1.2.3\" is not an IP multicast group (224.0.0.0/4 or ff00::/8)"},
    {"ip class E", join_with(R"("ip":"240.0.0.1")"), 9, "/ip", "is not an IP multicast group"},
    {"ip unicast IPv6", join_with(R"("ip":"fe80::1")"), 9, "/ip", "is not an IP multicast group"},
    {"gid_type unknown", join_with(R"("ip":"239.1.2.3","gid_type":"roce_v3")"), 9, "/gid_type",
     "\"roce_v3\" is not a RoCE GID type (roce_v1 or roce_v2)"},
    {"gid_type ib", join_with(R"("ip":"239.1.2.3","gid_type":"ib")"), 9, "/gid_type", "is not a RoCE GID type"},
    {"gid_type as sysfs spells it", join_by_mgid(R"("gid_type":"RoCE v2")"), 9, "/gid_type",
     "is not a RoCE GID type"},
    {"gid_type as a number", join_by_mgid(R"("gid_type":2)"), 9, "/gid_type", "expected a string"},
    {"ifname empty", join_with(R"("ip":"239.1.2.3","ifname":"")"), 9, "/ifname",
     "\"\" is not a network interface name: it is empty"},
    {"ifname too long", join_with(R"("ip":"239.1.2.3","ifname":"abcdefghijklmnop")"), 9, "/ifname",
     "\"abcdefghijklmnop\" is not a network interface name: it is 16 bytes long (an interface name is 1..15 "
     "printable ASCII characters without '/', ':' or spaces, as the kernel allows)"},
    {"ifname with a colon", join_with(R"("ip":"239.1.2.3","ifname":"eth0:1")"), 9, "/ifname", "byte 4 is ':'"},
    {"ifname with a slash", join_with(R"("ip":"239.1.2.3","ifname":"a/b")"), 9, "/ifname", "byte 1 is '/'"},
    {"ifname with a space", join_with(R"("ip":"239.1.2.3","ifname":"a b")"), 9, "/ifname",
     "byte 1 is not printable ASCII"},
    {"both name and mgid", join_with(R"("mgid":"ff15::1","name":"a")"), 9, "/name",
     "name and mgid exclude each other"},
    {"both name and create", join_with(R"("create":true,"name":"a")"), 9, "/name",
     "name and create exclude each other"},
    {"name not a string", join_with(R"("name":42)"), 9, "/name", "expected a string"},
    {"name empty", join_with(R"("name":"")"), 9, "/name", "the group name is empty"},
    {"name too long", join_with(R"("name":")" + std::string(256, 'n') + R"(")"), 9, "/name",
     "is 256 bytes long, more than 255"},
    {"name with a newline", join_with(R"("name":"a\nb")"), 9, "/name",
     "has a control character at byte 1"},
    {"name with scope", join_with(R"("name":"a","scope":5)"), 9, "/scope", "needs create"},
    {"both mgid and create", join_with(R"("mgid":"ff15::1","create":true)"), 9, "/create",
     "exclude each other"},
    {"create false", join_with(R"("create":false)"), 9, "/create", "must be true"},
    {"create as string", join_with(R"("create":"true")"), 9, "/create", "expected true or false"},
    {"create as number", join_with(R"("create":1)"), 9, "/create", "got 1"},
    {"mgid not a string", join_with(R"("mgid":65297)"), 9, "/mgid", "expected a string"},
    {"mgid not a GID", join_with(R"("mgid":"ff15::1::2")"), 9, "/mgid",
     "\"ff15::1::2\" is not a GID"},
    {"mgid IPv4", join_with(R"("mgid":"224.0.0.1")"), 9, "/mgid", "is not a GID"},
    {"mgid empty", join_with(R"("mgid":"")"), 9, "/mgid", "is not a GID"},
    {"mgid with spaces", join_with(R"("mgid":" ff15::1")"), 9, "/mgid", "is not a GID"},
    {"mgid unicast", join_with(R"("mgid":"fe80::1")"), 9, "/mgid", "not a multicast GID"},
    {"mgid zero", join_with(R"("mgid":"::")"), 9, "/mgid", "not a multicast GID"},
    {"mgid IPv4-mapped unicast", join_with(R"("mgid":"::ffff:10.1.2.3")"), 9, "/mgid",
     "not a multicast GID (those begin with ff, or are RoCE v2's ::ffff:a.b.c.d"},
    {"scope without create", join_by_mgid(R"("scope":5)"), 9, "/scope", "needs create"},
    {"scope 0", join_with(R"("create":true,"scope":0)"), 9, "/scope", "0 out of range [1, 15]"},
    {"scope 16", join_with(R"("create":true,"scope":16)"), 9, "/scope", "16 out of range"},
    {"scope as string", join_with(R"("create":true,"scope":"5")"), 9, "/scope",
     "expected an integer"},

    // join: join_state.
    {"unknown join_state", join_by_mgid(R"("join_state":"member")"), 9, "/join_state",
     "\"member\" is not a join state"},
    {"join_state is one name", join_by_mgid(R"("join_state":"full+nonmember")"), 9,
     "/join_state", "is not a join state"},
    {"join_state as bits", join_by_mgid(R"("join_state":1)"), 9, "/join_state",
     "expected a string"},

    // join: asserted fields, their types and ranges.
    {"qkey 2^32", join_by_mgid(R"("qkey":4294967296)"), 9, "/qkey",
     "4294967296 out of range [0, 4294967295]"},
    {"qkey negative", join_by_mgid(R"("qkey":-1)"), 9, "/qkey", "-1 out of range"},
    {"qkey float", join_by_mgid(R"("qkey":1.5)"), 9, "/qkey", "got 1.5"},
    {"qkey exponent", join_by_mgid(R"("qkey":1e3)"), 9, "/qkey", "expected an integer"},
    {"qkey bool", join_by_mgid(R"("qkey":true)"), 9, "/qkey", "got true"},
    {"qkey hex string", join_by_mgid(R"("qkey":"0x1")"), 9, "/qkey", "got \"0x1\""},
    {"qkey null", join_by_mgid(R"("qkey":null)"), 9, "/qkey", "got null"},
    {"pkey 65536", join_by_mgid(R"("pkey":65536)"), 9, "/pkey", "out of range [0, 65535]"},
    {"sl 16", join_by_mgid(R"("sl":16)"), 9, "/sl", "16 out of range [0, 15]"},
    {"traffic_class 256", join_by_mgid(R"("traffic_class":256)"), 9, "/traffic_class",
     "out of range [0, 255]"},
    {"flow_label 2^20", join_by_mgid(R"("flow_label":1048576)"), 9, "/flow_label",
     "out of range [0, 1048575]"},
    {"hop_limit 256", join_by_mgid(R"("hop_limit":256)"), 9, "/hop_limit",
     "out of range [0, 255]"},
    {"tclass is not the key", join_by_mgid(R"("tclass":1)"), 9, "/tclass", "unknown key"},
    {"mtu not a power of two", join_by_mgid(R"("mtu":300)"), 9, "/mtu", "300 is not an MTU"},
    {"mtu below 256", join_by_mgid(R"("mtu":128)"), 9, "/mtu", "out of range [256, 4096]"},
    {"mtu enum instead of bytes", join_by_mgid(R"("mtu":4)"), 9, "/mtu", "out of range"},
    {"mtu 8192", join_by_mgid(R"("mtu":8192)"), 9, "/mtu", "out of range"},
    {"mtu as string", join_by_mgid(R"("mtu":"2048")"), 9, "/mtu", "expected an integer"},
    {"mtu_selector without mtu", join_by_mgid(R"("mtu_selector":"greater")"), 9,
     "/mtu_selector", "needs mtu"},
    {"unknown mtu_selector", join_by_mgid(R"("mtu":2048,"mtu_selector":"more")"), 9,
     "/mtu_selector", "\"more\" is not a selector"},
    {"mtu_selector as number", join_by_mgid(R"("mtu":2048,"mtu_selector":0)"), 9,
     "/mtu_selector", "expected a string"},
    {"rate 1", join_by_mgid(R"("rate":1)"), 9, "/rate", "1 out of range [2, 22]"},
    {"rate 23", join_by_mgid(R"("rate":23)"), 9, "/rate", "23 out of range [2, 22]"},
    {"rate in Gb/s", join_by_mgid(R"("rate":100)"), 9, "/rate", "out of range"},
    {"rate float", join_by_mgid(R"("rate":2.5)"), 9, "/rate", "expected an integer"},
    {"rate_selector without rate", join_by_mgid(R"("rate_selector":"less")"), 9,
     "/rate_selector", "needs rate"},
    {"unknown rate_selector", join_by_mgid(R"("rate":3,"rate_selector":"LESS")"), 9,
     "/rate_selector", "is not a selector"},

    // leave.
    {"leave with neither", R"({"id":3,"op":"leave"})", 3, "/membership",
     "required key is missing"},
    {"leave with both", R"({"id":3,"op":"leave","membership":7,"join":2})", 3, "/join",
     "exclude each other"},
    {"membership negative", R"({"id":3,"op":"leave","membership":-7})", 3, "/membership",
     "out of range"},
    {"membership as string", R"({"id":3,"op":"leave","membership":"7"})", 3, "/membership",
     "expected an integer"},
    {"join id 2^53", R"({"id":3,"op":"leave","join":9007199254740992})", 3, "/join",
     "out of range"},

    // list.
    {"own as string", R"({"id":6,"op":"list","own":"yes"})", 6, "/own", "expected true or false"},
    {"own as number", R"({"id":6,"op":"list","own":1})", 6, "/own", "got 1"},
    {"after as number", R"({"id":6,"op":"list","after":17})", 6, "/after", "expected a string"},
    {"after as null", R"({"id":6,"op":"list","after":null})", 6, "/after", "got null"},
    {"after too long", R"({"id":6,"op":"list","after":")" + std::string(kMaxCursorBytes + 1, 'c') + R"("})", 6,
     "/after", "a cursor of 129 bytes; at most 128"},

    // monitor.
    {"enable as string", R"({"id":4,"op":"monitor","enable":"yes"})", 4, "/enable",
     "expected true or false"},
    {"enable as number", R"({"id":4,"op":"monitor","enable":1})", 4, "/enable", "got 1"},

    // evict.
    {"evict with neither", R"({"id":5,"op":"evict"})", 5, "/uid", "required key is missing"},
    {"evict with both", R"({"id":5,"op":"evict","uid":1001,"membership":7})", 5, "/membership",
     "exclude each other"},
    {"evict uid -1 as unsigned", R"({"id":5,"op":"evict","uid":4294967295})", 5, "/uid",
     "out of range [0, 4294967294]"},
    {"evict uid negative", R"({"id":5,"op":"evict","uid":-1})", 5, "/uid", "out of range"},
    {"evict uid as string", R"({"id":5,"op":"evict","uid":"bob"})", 5, "/uid",
     "expected an integer"},
    {"evict membership negative", R"({"id":5,"op":"evict","membership":-7})", 5, "/membership",
     "out of range"},
    {"disconnect without a uid", R"({"id":5,"op":"evict","membership":7,"disconnect":true})", 5, "/disconnect",
     "goes with uid"},
    {"disconnect not a boolean", R"({"id":5,"op":"evict","uid":1,"disconnect":1})", 5, "/disconnect",
     "expected true or false, got 1"},
    {"unknown key in evict", R"({"id":5,"op":"evict","uid":1,"all":true})", 5, "/all",
     "unknown key"},
};

INSTANTIATE_TEST_SUITE_P(Table, ProtoRejection, ::testing::ValuesIn(kRejections),
                         [](const auto &param_info) {
                             std::string name;
                             for (const char *p = param_info.param.rule; *p; ++p)
                                 name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
                             return name;
                         });

} // namespace
} // namespace mcastd::proto
