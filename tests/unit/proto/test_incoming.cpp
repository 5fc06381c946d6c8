// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The client's decoders: tolerant of keys they do not know, strict about the ones they do,
// and never throwing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "proto_testing.hpp"

namespace mcastd::proto {
namespace {

using nlohmann::json;
using namespace testing_support::from_nlohmann;
using testing_support::sample_record;

std::string error_of(const std::variant<Incoming, Error> &v) {
    if (auto *e = std::get_if<Error>(&v)) {
        EXPECT_EQ(e->code, Errc::invalid_argument);
        return e->message;
    }
    ADD_FAILURE() << "accepted";
    return {};
}

TEST(ProtoIncoming, IgnoresKeysItDoesNotKnow) {
    json reply = json::parse(encode_reply(2, JoinResult{7, sample_record()}));
    reply["trace"] = "abc";
    reply["result"]["since"] = 12;
    reply["result"]["record"]["packet_life"] = 18;
    auto in = decode_incoming(reply.dump());
    ASSERT_TRUE(std::holds_alternative<Incoming>(in)) << error_of(in);
    const auto &r = std::get<Reply>(std::get<Incoming>(in));
    auto result = decode_join_result(std::get<json_check::OwnedValue>(r.body).get());
    ASSERT_TRUE(std::holds_alternative<JoinResult>(result));
    EXPECT_EQ(std::get<JoinResult>(result).record, sample_record());

    json event = json::parse(encode_event(LostEvent{1, Failure{Error{Errc::sa_timeout, "t",
                                                                     std::nullopt},
                                                               "", {}}}));
    event["error"]["retry_in_s"] = 5;
    event["seq"] = 1;
    EXPECT_TRUE(std::holds_alternative<Incoming>(decode_incoming(event.dump())));
}

TEST(ProtoIncoming, AnErrorCodeItDoesNotKnowKeepsTheDaemonsWords) {
    auto in = decode_incoming(
        R"({"id":1,"ok":false,"error":{"code":"quota-exceeded","message":"too many"}})");
    const auto &f = std::get<Failure>(std::get<Reply>(std::get<Incoming>(in)).body);
    EXPECT_EQ(f.error.code, Errc::internal);
    EXPECT_EQ(f.error.message, "(quota-exceeded) too many");
}

// A newer daemon may add events (PROTOCOL.md, "Versioning"): the client is told its name and
// nothing fails.
TEST(ProtoIncoming, AnEventItDoesNotKnowIsNamedNotRefused) {
    auto in = decode_incoming(R"({"event":"exploded","membership":"x","extra":[1]})");
    ASSERT_TRUE(std::holds_alternative<Incoming>(in)) << error_of(in);
    const auto *e = std::get_if<UnknownEvent>(&std::get<Incoming>(in));
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->name, "exploded");
    // A known event is still checked as strictly as before.
    EXPECT_TRUE(std::holds_alternative<Error>(decode_incoming(R"({"event":"lost"})")));
}

TEST(ProtoIncoming, AReplyCarriesItsResultObjectAsParsed) {
    auto in = decode_incoming(R"({"id":4,"ok":true,"result":{"x":[1,2]}})");
    const auto &r = std::get<Reply>(std::get<Incoming>(in));
    EXPECT_EQ(r.id, 4u);
    EXPECT_EQ(testing_support::result_json(r), json::parse(R"({"x":[1,2]})"));
}

struct Malformed {
    const char *rule;
    std::string message;
    std::string says; // in the error's message: the pointer and the cause
};
std::ostream &operator<<(std::ostream &os, const Malformed &m) { return os << m.rule; }

class ProtoIncomingRejects : public ::testing::TestWithParam<Malformed> {};

TEST_P(ProtoIncomingRejects, NamesTheField) {
    const auto msg = error_of(decode_incoming(GetParam().message));
    EXPECT_NE(msg.find(GetParam().says), std::string::npos) << msg;
}

std::string join_reply_with(const std::string &key, const json &value) {
    json j = json::parse(encode_reply(2, JoinResult{7, sample_record()}));
    j["result"]["record"][key] = value;
    return j.dump();
}

const Malformed kMalformed[] = {
    {"not JSON", "{", "not valid JSON"},
    {"not an object", "[]", "expected an object, got an array"},
    {"duplicate key", R"({"id":1,"id":1,"ok":true,"result":{}})", "/id: duplicate key"},
    {"no ok", R"({"id":1,"result":{}})", "/ok: required"},
    {"ok not a bool", R"({"id":1,"ok":1,"result":{}})", "/ok: expected true or false"},
    {"no id", R"({"ok":true,"result":{}})", "/id: required"},
    {"id string", R"({"id":"1","ok":true,"result":{}})", "/id: expected an integer"},
    {"id too large", R"({"id":9007199254740992,"ok":true,"result":{}})", "/id: "},
    {"result missing", R"({"id":1,"ok":true})", "/result: required"},
    {"result not an object", R"({"id":1,"ok":true,"result":[]})", "/result: expected an object"},
    {"error missing", R"({"id":1,"ok":false})", "/error: required"},
    {"error without message", R"({"id":1,"ok":false,"error":{"code":"limit"}})",
     "/error/message: required"},
    {"sa_status out of range",
     R"({"id":1,"ok":false,"error":{"code":"sa-error","message":"m","sa_status":65536}})",
     "/error/sa_status: 65536 out of range"},
    {"versions element", R"({"id":1,"ok":false,"error":{"code":"limit","message":"m",
                             "versions":[1,true]}})",
     "/error/versions/1: expected an integer"},
    {"event not a string", R"({"event":1,"id":1,"ok":true,"result":{}})", "/event"},
    {"restored without record", R"({"event":"restored","membership":1,"changed":[]})",
     "/record: required"},
    {"changed not strings",
     R"({"event":"restored","membership":1,"changed":[1],"record":)" +
         json::parse(encode_reply(1, JoinResult{1, sample_record()}))["result"]["record"].dump() +
         "}",
     "/changed/0: expected a string"},
    {"monitor pid negative",
     R"({"event":"monitor","kind":"joined","device":"d","port":1,"mgid":"ff15::1","mlid":1,
         "join_state":"full","pid":-1,"uid":0,"comm":"","message":""})",
     "/pid: -1 out of range"},
};

INSTANTIATE_TEST_SUITE_P(Table, ProtoIncomingRejects, ::testing::ValuesIn(kMalformed),
                         [](const auto &param_info) {
                             std::string name;
                             for (const char *p = param_info.param.rule; *p; ++p)
                                 name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
                             return name;
                         });

TEST(ProtoIncoming, RecordFieldsAreCheckedWithTheirPointers) {
    struct Case {
        const char *key;
        json value;
        const char *says;
    } cases[] = {
        {"mlid", "1", "/record/mlid: expected an integer"},
        {"mlid", 65536, "/record/mlid: 65536 out of range"},
        {"qkey", -1, "/record/qkey: -1 out of range"},
        {"sl", 16, "/record/sl: 16 out of range"},
        {"mtu", 300, "/record/mtu: 300 is not an MTU"},
        {"rate", 64, "/record/rate: 64 out of range"},
        {"rate_gbps", "fast", "/record/rate_gbps: expected a number"},
        {"flow_label", 1.5, "/record/flow_label: expected an integer"},
        {"scope", 16, "/record/scope: 16 out of range"},
        {"mgid", "nope", "/record/mgid: \"nope\" is not a GID"},
        {"port_gid", 1, "/record/port_gid: expected a string"},
        {"join_state", "all", "/record/join_state: \"all\" is not a join state"},
        {"join_state", "full+full", "/record/join_state"},
    };
    for (const auto &c : cases) {
        auto r = decode_join_result(json::parse(join_reply_with(c.key, c.value)).at("result"));
        ASSERT_TRUE(std::holds_alternative<Error>(r)) << c.key;
        EXPECT_NE(std::get<Error>(r).message.find(c.says), std::string::npos)
            << std::get<Error>(r).message;
    }
}

TEST(ProtoIncoming, ResultDecodersRejectWhatIsNotTheirs) {
    EXPECT_TRUE(std::holds_alternative<Error>(decode_hello_result(json::object())));
    EXPECT_TRUE(std::holds_alternative<Error>(decode_join_result(json::parse(R"({"membership":1})"))));
    EXPECT_TRUE(std::holds_alternative<Error>(decode_list_result(json::parse(R"({"ports":{}})"))));
    EXPECT_TRUE(std::holds_alternative<Error>(decode_status_result(json::array())));
    EXPECT_TRUE(std::holds_alternative<Error>(decode_hello_result(json("{}"))));
    auto ok = decode_list_result(json::parse(R"({"ports":[]})"));
    ASSERT_TRUE(std::holds_alternative<ListResult>(ok));
    EXPECT_TRUE(std::get<ListResult>(ok).ports.empty());
}

TEST(ProtoIncoming, ListNextIsACursorOfAtMost128Bytes) {
    const auto with_next = [](const json &next) {
        json r = json::parse(R"({"ports":[]})");
        r["next"] = next;
        return decode_list_result(r);
    };
    const auto most = with_next(std::string(kMaxCursorBytes, 'c'));
    ASSERT_TRUE(std::holds_alternative<ListResult>(most));
    EXPECT_EQ(std::get<ListResult>(most).next, std::string(kMaxCursorBytes, 'c'));
    for (const auto &[next, says] : std::vector<std::pair<json, std::string>>{
             {17, "/next: expected a string"},
             {std::string(kMaxCursorBytes + 1, 'c'), "/next: a cursor of 129 bytes; at most 128"}}) {
        const auto r = with_next(next);
        ASSERT_TRUE(std::holds_alternative<Error>(r)) << says;
        EXPECT_NE(std::get<Error>(r).message.find(says), std::string::npos) << std::get<Error>(r).message;
    }
}

// A status result with one port, whose `key` is `value` (erased when `value` is discarded).
json status_with(const std::string &key, const json &value) {
    StatusResult st;
    PortStatus p;
    p.device = "mlx5_0";
    p.port = 1;
    p.state = "ACTIVE";
    p.sm_guid = 1;
    p.sm_act_count = 2;
    p.last_rejoin = RejoinStatus{"SM changed", 3, 0.25, 4};
    p.sa = SaCongestion{3.5, true, 0.41, 300};
    st.ports.push_back(p);
    json j = json::parse(encode_reply(1, st)).at("result");
    json &port = j["ports"][0];
    json &target = key.rfind("last_rejoin/", 0) == 0 ? port["last_rejoin"]
                   : key.rfind("sa/", 0) == 0        ? port["sa"]
                                                      : port;
    const std::string k = key.substr(key.find('/') == std::string::npos ? 0 : key.find('/') + 1);
    if (value.is_discarded())
        target.erase(k);
    else
        target[k] = value;
    return j;
}

TEST(ProtoIncoming, StatusPortFieldsAreCheckedWithTheirPointers) {
    const json gone = json::value_t::discarded;
    struct Case {
        std::string key;
        json value;
        const char *says;
    } cases[] = {
        {"sm_guid", "0x1", "/ports/0/sm_guid: \"0x1\" is not a GUID"},
        {"sm_guid", "0x0002c9030000000g", "/ports/0/sm_guid"},
        {"sm_guid", 1, "/ports/0/sm_guid: expected a string"},
        {"sm_guid", gone, "/ports/0/sm_guid: required"},
        {"sm_act_count", 4294967296, "/ports/0/sm_act_count: 4294967296 out of range"},
        {"mtu", 8192, "/ports/0/mtu: 8192 out of range"},
        {"rejoining", gone, "/ports/0/rejoining: required"},
        {"last_rejoin", gone, "/ports/0/last_rejoin: required"},
        {"last_rejoin", 5, "/ports/0/last_rejoin: expected an object"},
        {"last_rejoin/reason", gone, "/ports/0/last_rejoin/reason: required"},
        {"last_rejoin/duration_s", "long", "/ports/0/last_rejoin/duration_s: expected a number"},
        {"last_rejoin/groups", -1, "/ports/0/last_rejoin/groups: -1 out of range"},
    };
    for (const auto &c : cases) {
        auto r = decode_status_result(status_with(c.key, c.value));
        ASSERT_TRUE(std::holds_alternative<Error>(r)) << c.key;
        EXPECT_NE(std::get<Error>(r).message.find(c.says), std::string::npos)
            << std::get<Error>(r).message;
    }
    // Null: not known (SM), never happened (re-join), still running (duration).
    for (const char *key : {"sm_guid", "sm_act_count", "last_rejoin", "last_rejoin/duration_s"}) {
        auto r = decode_status_result(status_with(key, nullptr));
        EXPECT_TRUE(std::holds_alternative<StatusResult>(r)) << key;
    }
    auto r = decode_status_result(status_with("sm_guid", "0x0002C90300000001"));
    ASSERT_TRUE(std::holds_alternative<StatusResult>(r));
    EXPECT_EQ(std::get<StatusResult>(r).ports.at(0).sm_guid, 0x0002c90300000001u);
    r = decode_status_result(status_with("last_rejoin", nullptr));
    ASSERT_TRUE(std::holds_alternative<StatusResult>(r));
    EXPECT_FALSE(std::get<StatusResult>(r).ports.at(0).last_rejoin);
}

TEST(ProtoIncoming, StatusSaWindowIsCheckedWithItsPointers) {
    const json gone = json::value_t::discarded;
    auto ok = decode_status_result(status_with("max_groups", 0));
    ASSERT_TRUE(std::holds_alternative<StatusResult>(ok)) << std::get<Error>(ok).message;
    const auto &sa = std::get<StatusResult>(ok).ports.at(0).sa;
    ASSERT_TRUE(sa);
    EXPECT_EQ(sa->window, 3.5);
    EXPECT_TRUE(sa->slow_start);
    EXPECT_EQ(sa->srtt_ms, 0.41);
    EXPECT_EQ(sa->timeout_ms, 300);
    struct Case {
        std::string key;
        json value;
        const char *says;
    } cases[] = {
        {"sa", 5, "/ports/0/sa: expected an object"},
        {"sa", nullptr, "/ports/0/sa: expected an object"},
        {"sa/window", "wide", "/ports/0/sa/window: expected a number"},
        {"sa/window", gone, "/ports/0/sa/window: required"},
        {"sa/slow_start", 1, "/ports/0/sa/slow_start: expected true or false"},
        {"sa/slow_start", gone, "/ports/0/sa/slow_start: required"},
        {"sa/srtt_ms", "0.4", "/ports/0/sa/srtt_ms: expected a number"},
        {"sa/srtt_ms", gone, "/ports/0/sa/srtt_ms: required"},
        {"sa/timeout_ms", true, "/ports/0/sa/timeout_ms: expected a number"},
        {"sa/timeout_ms", gone, "/ports/0/sa/timeout_ms: required"},
    };
    for (const auto &c : cases) {
        auto r = decode_status_result(status_with(c.key, c.value));
        ASSERT_TRUE(std::holds_alternative<Error>(r)) << c.key;
        EXPECT_NE(std::get<Error>(r).message.find(c.says), std::string::npos)
            << std::get<Error>(r).message;
    }
    // Null: no answer yet, so no round trip and the configured timeout.
    for (const char *key : {"sa/srtt_ms", "sa/timeout_ms"}) {
        auto r = decode_status_result(status_with(key, nullptr));
        ASSERT_TRUE(std::holds_alternative<StatusResult>(r)) << key;
        const auto &w = std::get<StatusResult>(r).ports.at(0).sa;
        ASSERT_TRUE(w) << key;
        EXPECT_EQ(w->srtt_ms.has_value(), std::string(key) != "sa/srtt_ms") << key;
        EXPECT_EQ(w->timeout_ms.has_value(), std::string(key) != "sa/timeout_ms") << key;
    }
    // Absent: congestion control off.
    auto off = decode_status_result(status_with("sa", gone));
    ASSERT_TRUE(std::holds_alternative<StatusResult>(off)) << std::get<Error>(off).message;
    EXPECT_FALSE(std::get<StatusResult>(off).ports.at(0).sa);
}

TEST(ProtoIncoming, StatusSaCountersAreCheckedAndMayBeAbsent) {
    json j = status_with("max_groups", 0);
    j["counters"]["sa_responses"] = 10;
    j["counters"]["sa_late"] = 2;
    j["counters"]["sa_amplification"] = 1.25;
    auto ok = decode_status_result(j);
    ASSERT_TRUE(std::holds_alternative<StatusResult>(ok)) << std::get<Error>(ok).message;
    EXPECT_EQ(std::get<StatusResult>(ok).counters.sa_responses, 10u);
    EXPECT_EQ(std::get<StatusResult>(ok).counters.sa_late, 2u);
    EXPECT_EQ(std::get<StatusResult>(ok).counters.sa_amplification, 1.25);
    struct Case {
        const char *key;
        json value;
        const char *says;
    } cases[] = {
        {"sa_responses", -1, "/counters/sa_responses: -1 out of range"},
        {"sa_late", "2", "/counters/sa_late: expected an integer"},
        {"sa_amplification", "1.25", "/counters/sa_amplification: expected a number"},
        {"sa_amplification", nullptr, "/counters/sa_amplification: expected a number"},
    };
    for (const auto &c : cases) {
        json bad = j;
        bad["counters"][c.key] = c.value;
        auto r = decode_status_result(bad);
        ASSERT_TRUE(std::holds_alternative<Error>(r)) << c.key;
        EXPECT_NE(std::get<Error>(r).message.find(c.says), std::string::npos)
            << std::get<Error>(r).message;
    }
    // A daemon older than them: 0.
    for (const char *key : {"sa_responses", "sa_late", "sa_amplification"})
        j["counters"].erase(key);
    auto old = decode_status_result(j);
    ASSERT_TRUE(std::holds_alternative<StatusResult>(old)) << std::get<Error>(old).message;
    EXPECT_EQ(std::get<StatusResult>(old).counters.sa_responses, 0u);
    EXPECT_EQ(std::get<StatusResult>(old).counters.sa_late, 0u);
    EXPECT_EQ(std::get<StatusResult>(old).counters.sa_amplification, 0);
}

TEST(ProtoIncoming, ListMembersAreChecked) {
    json j = json::parse(R"({"ports":[{"device":"d","port":1,"port_gid":"fe80::1","groups":[
        {"mgid":"ff15::1","mlid":1,"qkey":1,"busy":false,"held":["full","bogus"],"foreign":[],
         "counts":{"full":1,"nonmember":0,"sendonly-nonmember":0,"sendonly-full":0},
         "members":[]}]}]})");
    auto r = decode_list_result(j);
    ASSERT_TRUE(std::holds_alternative<Error>(r));
    EXPECT_NE(std::get<Error>(r).message.find("/ports/0/groups/0/held/1"), std::string::npos)
        << std::get<Error>(r).message;
    j["ports"][0]["groups"][0]["held"] = json::array({"full"});
    j["ports"][0]["groups"][0]["counts"].erase("sendonly-full");
    r = decode_list_result(j);
    ASSERT_TRUE(std::holds_alternative<Error>(r));
    EXPECT_NE(std::get<Error>(r).message.find("/ports/0/groups/0/counts/sendonly-full: required"),
              std::string::npos)
        << std::get<Error>(r).message;
}

// ---- a daemon older than the access policy (issue 15) sends none of its keys ----

TEST(ProtoIncoming, AnOlderDaemonsErrorHasNoPolicyRef) {
    auto in = decode_incoming(R"({"id":1,"ok":false,"error":{"code":"denied","message":"no"}})");
    const auto &f = std::get<Failure>(std::get<Reply>(std::get<Incoming>(in)).body);
    EXPECT_EQ(f.error.code, Errc::denied);
    EXPECT_FALSE(f.error.policy);
    // Any one of the keys makes a policy ref; the others stay empty.
    in = decode_incoming(R"({"id":1,"ok":false,"error":{"code":"limit","message":"m","limit":3}})");
    const auto &l = std::get<Failure>(std::get<Reply>(std::get<Incoming>(in)).body);
    EXPECT_EQ(l.error.policy, (PolicyRef{"", "", 3}));
}

TEST(ProtoIncoming, PolicyKeysOfAnErrorAreChecked) {
    EXPECT_NE(error_of(decode_incoming(
                           R"({"id":1,"ok":false,"error":{"code":"denied","message":"m","rule":1}})"))
                  .find("/error/rule: expected a string"),
              std::string::npos);
    EXPECT_NE(error_of(decode_incoming(R"({"id":1,"ok":false,"error":{"code":"limit",
                                          "message":"m","quota":"q","limit":-1}})"))
                  .find("/error/limit: -1 out of range"),
              std::string::npos);
}

TEST(ProtoIncoming, AnOlderDaemonsListMembersHaveNoRule) {
    const auto r = decode_list_result(json::parse(R"({"ports":[{"device":"d","port":1,"port_gid":"fe80::1",
        "groups":[{"mgid":"ff15::1","mlid":1,"qkey":1,"busy":false,"held":["full"],"foreign":[],
         "counts":{"full":1,"nonmember":0,"sendonly-nonmember":0,"sendonly-full":0},
         "members":[{"membership":7,"join_state":"full","state":"active","pid":1,"uid":2,
                     "comm":"a"}]}]}]})"));
    ASSERT_TRUE(std::holds_alternative<ListResult>(r)) << std::get<Error>(r).message;
    const MemberInfo &m = std::get<ListResult>(r).ports.at(0).groups.at(0).members.at(0);
    EXPECT_EQ(m.membership, 7u);
    EXPECT_EQ(m.rule, "");
    EXPECT_FALSE(m.created);
    EXPECT_EQ(m.flagged, "");
}

TEST(ProtoIncoming, AnOlderDaemonsStatusHasNoUsersNorMaxGroups) {
    json j = status_with("max_groups", json(json::value_t::discarded));
    j.erase("users");
    auto r = decode_status_result(j);
    ASSERT_TRUE(std::holds_alternative<StatusResult>(r)) << std::get<Error>(r).message;
    EXPECT_EQ(std::get<StatusResult>(r).ports.at(0).max_groups, 0u);
    EXPECT_TRUE(std::get<StatusResult>(r).users.empty());
}

TEST(ProtoIncoming, AnOlderDaemonsStatusHasNoMembershipsRejoinsEventCountsNorRefusals) {
    json j = status_with("memberships", json(json::value_t::discarded));
    j["ports"][0].erase("rejoins");
    j["counters"].erase("restored");
    j["counters"].erase("lost");
    j.erase("refused");
    auto r = decode_status_result(j);
    ASSERT_TRUE(std::holds_alternative<StatusResult>(r)) << std::get<Error>(r).message;
    const StatusResult &st = std::get<StatusResult>(r);
    EXPECT_EQ(st.ports.at(0).memberships, (std::array<std::uint64_t, 4>{}));
    EXPECT_EQ(st.ports.at(0).rejoins, 0u);
    EXPECT_EQ(st.counters.restored, 0u);
    EXPECT_EQ(st.counters.lost, 0u);
    EXPECT_TRUE(st.refused.empty());
}

TEST(ProtoIncoming, StatusMembershipsAndRefusalsAreCheckedWithTheirPointers) {
    const auto fails_with = [](const json &j, const std::string &says) {
        auto r = decode_status_result(j);
        ASSERT_TRUE(std::holds_alternative<Error>(r)) << says;
        EXPECT_NE(std::get<Error>(r).message.find(says), std::string::npos) << std::get<Error>(r).message;
    };
    json j = status_with("memberships", json::parse(R"({"full":1,"nonmember":0,"sendonly-nonmember":0})"));
    fails_with(j, "/ports/0/memberships/sendonly-full: required");
    fails_with(status_with("rejoins", -1), "/ports/0/rejoins: -1 out of range");
    j = status_with("rejoins", 1);
    j["refused"] = json::parse(R"({"access.rules": "many"})");
    fails_with(j, "/refused/access.rules: expected an integer");
    j["refused"] = json::array();
    fails_with(j, "/refused");
}

TEST(ProtoIncoming, StatusUsersAreCheckedWithTheirPointers) {
    const json user = json::parse(R"({"uid":1001,"user":"bob","memberships":3,
        "memberships_quota":4096,"creates":1,"creates_quota":64,"flagged":0})");
    const auto with_user = [](const json &u) {
        json j = status_with("max_groups", 8);
        j["users"] = json::array({u});
        return j;
    };
    auto ok = decode_status_result(with_user(user));
    ASSERT_TRUE(std::holds_alternative<StatusResult>(ok)) << std::get<Error>(ok).message;
    EXPECT_EQ(std::get<StatusResult>(ok).ports.at(0).max_groups, 8u);
    EXPECT_EQ(std::get<StatusResult>(ok).users.at(0).memberships_quota, 4096u);
    struct Case {
        const char *key;
        json value;
        const char *says;
    } cases[] = {
        {"uid", 4294967296, "/users/0/uid: 4294967296 out of range"},
        {"user", nullptr, "/users/0/user: expected a string"},
        {"memberships", -1, "/users/0/memberships: -1 out of range"},
        {"flagged", json(json::value_t::discarded), "/users/0/flagged: required"},
    };
    for (const auto &c : cases) {
        json u = user;
        if (c.value.is_discarded())
            u.erase(c.key);
        else
            u[c.key] = c.value;
        auto r = decode_status_result(with_user(u));
        ASSERT_TRUE(std::holds_alternative<Error>(r)) << c.key;
        EXPECT_NE(std::get<Error>(r).message.find(c.says), std::string::npos)
            << std::get<Error>(r).message;
    }
    json j = with_user(user);
    j["users"] = json::object();
    EXPECT_TRUE(std::holds_alternative<Error>(decode_status_result(j)));
    j = status_with("max_groups", "many");
    auto r = decode_status_result(j);
    ASSERT_TRUE(std::holds_alternative<Error>(r));
    EXPECT_NE(std::get<Error>(r).message.find("/ports/0/max_groups: expected an integer"),
              std::string::npos);
}

TEST(ProtoVocabulary, NamesAndEnums) {
    EXPECT_EQ(join_state_from_name("sendonly-nonmember"), join::send_only_non_member);
    EXPECT_FALSE(join_state_from_name("none"));
    EXPECT_EQ(join_state_bits_from_name("none"), 0);
    EXPECT_EQ(join_state_bits_from_name("full+sendonly-full"), join::full | join::send_only_full);
    EXPECT_FALSE(join_state_bits_from_name("full+"));
    EXPECT_FALSE(join_state_bits_from_name(""));
    for (std::uint8_t bits = 0; bits <= join::all; ++bits)
        EXPECT_EQ(join_state_bits_from_name(join_state_name(bits)), bits);
    for (auto s : {Selector::greater, Selector::less, Selector::exactly, Selector::best})
        EXPECT_EQ(selector_from_name(selector_name(s)), s);
    EXPECT_FALSE(selector_from_name("Exactly"));
    EXPECT_EQ(mtu_enum_from_bytes(256), 1);
    EXPECT_EQ(mtu_enum_from_bytes(4096), 5);
    EXPECT_FALSE(mtu_enum_from_bytes(0));
    EXPECT_FALSE(mtu_enum_from_bytes(8192));
    EXPECT_EQ(op_name(Request{Monitor{}}), "monitor");
    EXPECT_EQ(op_name(Request{Hello{}}), "hello");
    EXPECT_EQ(op_name(Request{Evict{}}), "evict");
}

} // namespace
} // namespace mcastd::proto
