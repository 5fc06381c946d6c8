// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Shared by the protocol tests: sample values and field-by-field comparisons that name the
// field that differs (the core's request types have no operator==).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "common/gid.hpp"
#include "json_dom_nlohmann.hpp"
#include "protocol.hpp"

namespace mcastd::proto::testing_support {

inline Gid gid(const char *text) { return parse_gid(text).value(); }

// A record with every field distinct from its neighbours, so a swapped key shows.
inline McRecord sample_record() {
    McRecord r;
    r.mgid = gid("ff15:401b::1:2");
    r.port_gid = gid("fe80::2:c903:10:3");
    r.qkey = 0x12345678;
    r.mlid = 0xc001;
    r.mtu = 4; // 2048
    r.tclass = 7;
    r.pkey = 0xffff;
    r.rate = 16; // 100 Gb/s
    r.sl = 3;
    r.flow_label = 0x12345;
    r.hop_limit = 9;
    r.scope = 5;
    r.join_state = join::full;
    return r;
}

#define PROTO_SAME(field)                                                                          \
    if (!(a.field == b.field))                                                                     \
        return ::testing::AssertionFailure() << #field " differs";

inline ::testing::AssertionResult same_join(const JoinRequest &a, const JoinRequest &b) {
    PROTO_SAME(device)
    PROTO_SAME(port)
    PROTO_SAME(mgid)
    PROTO_SAME(join_state)
    PROTO_SAME(scope)
    PROTO_SAME(name)
    PROTO_SAME(params.qkey)
    PROTO_SAME(params.pkey)
    PROTO_SAME(params.sl)
    PROTO_SAME(params.tclass)
    PROTO_SAME(params.flow_label)
    PROTO_SAME(params.hop_limit)
    PROTO_SAME(params.mtu)
    PROTO_SAME(params.rate)
    return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult same_failure(const Failure &a, const Failure &b) {
    PROTO_SAME(error.code)
    PROTO_SAME(error.message)
    PROTO_SAME(error.sa_status)
    PROTO_SAME(error.policy)
    PROTO_SAME(field)
    PROTO_SAME(versions)
    return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult same_request(const Request &a, const Request &b) {
    if (a.index() != b.index())
        return ::testing::AssertionFailure() << "op " << op_name(a) << " vs " << op_name(b);
    if (auto *ha = std::get_if<Hello>(&a)) {
        const auto &hb = std::get<Hello>(b);
        if (ha->versions != hb.versions || ha->client != hb.client || ha->resume != hb.resume)
            return ::testing::AssertionFailure() << "hello differs";
    } else if (auto *ja = std::get_if<Join>(&a)) {
        const auto &jb = std::get<Join>(b);
        if (ja->ip != jb.ip || ja->gid_type != jb.gid_type || ja->ifname != jb.ifname)
            return ::testing::AssertionFailure() << "join's ip, gid_type or ifname differs";
        return same_join(ja->request, jb.request);
    } else if (auto *la = std::get_if<Leave>(&a)) {
        const auto &lb = std::get<Leave>(b);
        if (la->membership != lb.membership || la->join != lb.join)
            return ::testing::AssertionFailure() << "leave differs";
    } else if (auto *lia = std::get_if<List>(&a)) {
        const auto &lib = std::get<List>(b);
        if (lia->own != lib.own || lia->after != lib.after)
            return ::testing::AssertionFailure() << "list differs";
    } else if (auto *ma = std::get_if<Monitor>(&a)) {
        if (ma->enable != std::get<Monitor>(b).enable)
            return ::testing::AssertionFailure() << "monitor.enable differs";
    } else if (auto *ea = std::get_if<Evict>(&a)) {
        const auto &eb = std::get<Evict>(b);
        if (ea->uid != eb.uid || ea->membership != eb.membership)
            return ::testing::AssertionFailure() << "evict differs";
    }
    return ::testing::AssertionSuccess();
}

#undef PROTO_SAME

// The client's result decoders on a document built with nlohmann-json: written out and parsed,
// as a reply's result reaches them. `using namespace testing_support::from_nlohmann;` makes them
// overloads of proto's own.
namespace from_nlohmann {
inline auto decode_hello_result(const nlohmann::json &j) {
    return proto::decode_hello_result(testing_json::Parsed::from(j));
}
inline auto decode_join_result(const nlohmann::json &j) {
    return proto::decode_join_result(testing_json::Parsed::from(j));
}
inline auto decode_list_result(const nlohmann::json &j) {
    return proto::decode_list_result(testing_json::Parsed::from(j));
}
inline auto decode_status_result(const nlohmann::json &j) {
    return proto::decode_status_result(testing_json::Parsed::from(j));
}
inline auto decode_evict_result(const nlohmann::json &j) {
    return proto::decode_evict_result(testing_json::Parsed::from(j));
}
} // namespace from_nlohmann

// A reply's result as nlohmann's DOM (null when the reply is an error).
inline nlohmann::json result_json(const Reply &r) {
    const auto *s = std::get_if<json_check::OwnedValue>(&r.body);
    return s ? testing_json::to_nlohmann(s->get()) : nlohmann::json();
}

} // namespace mcastd::proto::testing_support
