// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SaClient: SaService over MadTransactions and the codec, on a fake transport and clock.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "common/gid.hpp"
#include "common/sa_status.hpp"
#include "sa/mad_codec.hpp"
#include "sa/sa_client.hpp"
#include "sa/transactions.hpp"
#include "unit/fakes/fake_mad_transport.hpp"
#include "unit/fakes/fake_timers.hpp"
#include "unit/fakes/sa_routes.hpp"

namespace mcastd::sa {
namespace {

using namespace std::chrono_literals;
using test::FakeMadTransport;
using test::FakeTimers;
using Sent = FakeMadTransport::Sent;

constexpr MadAddress kSa{.dlid = 1, .dqp = 1, .sl = 0, .qkey = 0x80010000, .pkey_index = 0};

McRecord create_record() {
    McRecord r;
    r.mgid = *parse_gid("ff12:1234::1");
    r.port_gid = make_gid(0xfe80000000000000ULL, 0x100003);
    r.qkey = 0x1234;
    r.pkey = 0xffff;
    r.join_state = join::full;
    return r;
}

class SaClientTest : public ::testing::Test {
protected:
    SaClientTest() {
        TransactionConfig cfg;
        cfg.first_tid = 0x5a5a0001;
        txns = std::make_unique<MadTransactions>(net, timers, cfg);
        routes = std::make_unique<test::SaRoutes>(*txns);
        routes->set(0, kSa);
        client = std::make_unique<SaClient>(*txns);
        t0 = timers.now();
    }

    SaService::TxnId submit(SaMethod method, McRecord rec, std::uint64_t mask) {
        SaService &svc = *client; // used through the core's interface
        return svc.submit(SaRequest{.port = 0, .method = method, .record = rec, .comp_mask = mask},
                          [this](const SaResult &r) { results.push_back(r); });
    }

    // The SA's answer to the last MCMemberRecord request: the echoed record, changed by `edit`.
    template <class Edit> void answer_mcm(std::uint8_t method, std::uint16_t status, Edit edit) {
        const Sent &s = net.last();
        auto req = McMemberMad{};
        req.method = method;
        req.status = status;
        req.tid = s.tid();
        // Decode the request's record by pretending it is an answer.
        MadBuf as_resp = s.mad;
        as_resp[3] = mad::method_get_resp;
        as_resp[4] = as_resp[5] = 0;
        const auto d = decode_mcmember_response(as_resp, SaMethod::get);
        ASSERT_TRUE(d) << d.error().message();
        req.comp_mask = d->comp_mask;
        req.record = d->record;
        edit(req.record);
        net.deliver(0, encode_mcmember_mad(req));
    }

    FakeTimers timers;
    FakeMadTransport net;
    std::unique_ptr<MadTransactions> txns;
    std::unique_ptr<test::SaRoutes> routes; // what the port registry would answer
    std::unique_ptr<SaClient> client;
    std::vector<SaResult> results;
    TimePoint t0;
};

TEST_F(SaClientTest, SetSendsTheEncodedRequestAndReturnsTheGroupRecord) {
    submit(SaMethod::set, create_record(), field::create_mask);
    ASSERT_EQ(net.sent().size(), 1u);
    EXPECT_EQ(net.last().mad, encode_mcmember_request(SaMethod::set, create_record(),
                                                      field::create_mask, 0x5a5a0001));
    EXPECT_EQ(net.last().addr, kSa);
    EXPECT_TRUE(results.empty()) << "never called from inside submit()";

    answer_mcm(mad::method_get_resp, 0, [](McRecord &r) {
        r.mlid = 0xc001;
        r.mtu_selector = r.rate_selector = r.life_selector = Selector::exactly;
        r.mtu = 4;
        r.rate = 3;
    });
    ASSERT_EQ(results.size(), 1u);
    const SaResult &res = results[0];
    EXPECT_TRUE(res.ok());
    EXPECT_EQ(res.kind, SaResult::Kind::response);
    EXPECT_EQ(res.tries, 1u);
    EXPECT_FALSE(res.bounced);
    McRecord want = create_record();
    want.mlid = 0xc001;
    want.mtu_selector = want.rate_selector = want.life_selector = Selector::exactly;
    want.mtu = 4;
    want.rate = 3;
    EXPECT_EQ(res.record, want);
}

TEST_F(SaClientTest, SaErrorReachesTheCoreWithItsStatusAndEcho) {
    McRecord rec = create_record();
    rec.qkey = 0x4321;
    submit(SaMethod::set, rec, field::join_mask | field::qkey);
    answer_mcm(mad::method_get_resp, sa_status::req_invalid, [](McRecord &) {});
    ASSERT_EQ(results.size(), 1u);
    EXPECT_FALSE(results[0].ok());
    EXPECT_EQ(results[0].kind, SaResult::Kind::response);
    EXPECT_EQ(results[0].status, sa_status::req_invalid);
    EXPECT_EQ(results[0].record, rec);
}

TEST_F(SaClientTest, DeleteIsAnsweredByDeleteResp) {
    submit(SaMethod::del, create_record(), field::join_mask);
    EXPECT_EQ(net.last().method(), mad::method_delete);
    answer_mcm(mad::method_delete_resp, 0, [](McRecord &r) { r.join_state = 0; });
    ASSERT_EQ(results.size(), 1u);
    EXPECT_TRUE(results[0].ok());
    EXPECT_EQ(results[0].record.join_state, 0);
}

TEST_F(SaClientTest, MembershipProbeNoRecords) {
    submit(SaMethod::get, create_record(), field::mgid | field::port_gid);
    EXPECT_EQ(net.last().method(), mad::method_get);
    answer_mcm(mad::method_get_resp, sa_status::no_records, [](McRecord &) {});
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].status, sa_status::no_records);
}

TEST_F(SaClientTest, SilentSaTimesOut) {
    submit(SaMethod::set, create_record(), field::create_mask);
    timers.run_until_idle();
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].kind, SaResult::Kind::timeout);
    EXPECT_FALSE(results[0].ok());
    EXPECT_EQ(results[0].tries, 6u);
    EXPECT_FALSE(results[0].bounced);
    EXPECT_EQ(timers.now() - t0, timeout_bound(txns->config()));
}

TEST_F(SaClientTest, UnreachableSaTimesOutBounced) {
    submit(SaMethod::set, create_record(), field::create_mask);
    std::size_t bounced = 0;
    while (results.empty()) {
        while (bounced < net.sent().size())
            net.bounce(net.sent()[bounced++]);
        ASSERT_TRUE(timers.step());
    }
    EXPECT_EQ(results[0].kind, SaResult::Kind::timeout);
    EXPECT_TRUE(results[0].bounced);
    EXPECT_EQ(results[0].tries, 6u);
}

TEST_F(SaClientTest, NoSmAndSendErrorsCountAsUnreachable) {
    routes->clear(0);
    submit(SaMethod::set, create_record(), field::create_mask);
    timers.run_until_idle();
    ASSERT_EQ(results.size(), 1u);
    EXPECT_TRUE(results[0].bounced);

    routes->set(0, kSa);
    net.fail_next_sends({-5, -5, -5, -5, -5, -5});
    submit(SaMethod::set, create_record(), field::create_mask);
    timers.run_until_idle();
    ASSERT_EQ(results.size(), 2u);
    EXPECT_TRUE(results[1].bounced);
}

TEST_F(SaClientTest, UndecodableAnswerIsTreatedAsNoAnswer) {
    submit(SaMethod::set, create_record(), field::create_mask);
    // Right TID, class and method, but the wrong attribute: not a usable answer.
    MadBuf wrong = net.last().mad;
    wrong[3] = mad::method_get_resp;
    wrong[17] = 0x11;
    net.deliver(0, wrong);
    EXPECT_TRUE(results.empty());
    EXPECT_EQ(txns->stats(0).rejected, 1u);
    EXPECT_EQ(net.sent().size(), 1u);

    timers.advance(300ms); // the try's deadline: a retransmit, as if nothing had come
    ASSERT_EQ(net.sent().size(), 2u);
    answer_mcm(mad::method_get_resp, 0, [](McRecord &r) { r.mlid = 0xc002; });
    ASSERT_EQ(results.size(), 1u);
    EXPECT_TRUE(results[0].ok());
    EXPECT_EQ(results[0].tries, 2u);
    EXPECT_EQ(results[0].record.mlid, 0xc002);
}

TEST_F(SaClientTest, OnlyUndecodableAnswersEndInATimeoutThatDidNotBounce) {
    submit(SaMethod::del, create_record(), field::join_mask);
    std::size_t answered = 0;
    while (results.empty()) {
        while (answered < net.sent().size()) {
            MadBuf bad = net.sent()[answered++].mad;
            bad[3] = mad::method_delete_resp;
            bad[2] = 1; // wrong class version
            net.deliver(0, bad);
        }
        ASSERT_TRUE(timers.step());
    }
    EXPECT_EQ(results[0].kind, SaResult::Kind::timeout);
    EXPECT_FALSE(results[0].bounced);
    EXPECT_EQ(txns->stats(0).rejected, 6u);
}

TEST_F(SaClientTest, CancelRunsNoCallback) {
    const auto id = submit(SaMethod::set, create_record(), field::create_mask);
    client->cancel(id);
    answer_mcm(mad::method_get_resp, 0, [](McRecord &) {});
    timers.run_until_idle();
    EXPECT_TRUE(results.empty());
    EXPECT_EQ(txns->stats(0).late, 1u);
}

TEST_F(SaClientTest, CallbacksRunExactlyOnce) {
    for (int i = 0; i < 3; ++i)
        submit(SaMethod::set, create_record(), field::create_mask);
    const std::vector<Sent> sent = net.sent();
    for (const Sent &s : sent)
        net.deliver(0, [&] {
            MadBuf m = s.mad;
            m[3] = mad::method_get_resp;
            return m;
        }());
    for (const Sent &s : sent) { // duplicates
        MadBuf m = s.mad;
        m[3] = mad::method_get_resp;
        net.deliver(0, m);
    }
    timers.run_until_idle();
    EXPECT_EQ(results.size(), 3u);
}

// --- SMInfoRecord ---------------------------------------------------------------------------

TEST_F(SaClientTest, SmInfoByLid) {
    std::vector<SmInfoResult> got;
    client->get_sm_info(0, SmInfoQuery::by_lid(1), [&](const SmInfoResult &r) { got.push_back(r); });
    ASSERT_EQ(net.sent().size(), 1u);
    SmInfoRecord match;
    match.lid = 1;
    EXPECT_EQ(net.last().mad, encode_sminfo_get(match, sminfo_field::lid, 0x5a5a0001));
    EXPECT_TRUE(got.empty());

    SmInfoMad resp;
    resp.method = mad::method_get_resp;
    resp.tid = net.last().tid();
    resp.comp_mask = sminfo_field::lid;
    resp.record = {.lid = 1, .guid = 0x0002c90300001234ULL, .sm_key = 0, .act_count = 84,
                   .priority = 0, .sm_state = sm_state::master};
    net.deliver(0, encode_sminfo_mad(resp));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(got[0].ok());
    EXPECT_EQ(got[0].record, resp.record);
    EXPECT_EQ(got[0].tries, 1u);
}

TEST_F(SaClientTest, SmInfoMasterQueryAndErrors) {
    std::vector<SmInfoResult> got;
    client->get_sm_info(0, SmInfoQuery::master(), [&](const SmInfoResult &r) { got.push_back(r); });
    const MadBuf req = net.last().mad;
    EXPECT_EQ(req[55], sminfo_field::sm_state);
    EXPECT_EQ(req[56 + 24], sm_state::master);

    // An MCMemberRecord answer with our TID is refused; the SA's 0x0400 is delivered.
    McMemberMad wrong;
    wrong.method = mad::method_get_resp;
    wrong.tid = net.last().tid();
    net.deliver(0, encode_mcmember_mad(wrong));
    EXPECT_TRUE(got.empty());
    SmInfoMad resp;
    resp.method = mad::method_get_resp;
    resp.status = sa_status::too_many_records;
    resp.tid = net.last().tid();
    resp.record.guid = 77; // ignored for an error
    net.deliver(0, encode_sminfo_mad(resp));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_FALSE(got[0].ok());
    EXPECT_EQ(got[0].kind, SmInfoResult::Kind::response);
    EXPECT_EQ(got[0].status, sa_status::too_many_records);
    EXPECT_EQ(got[0].record, SmInfoRecord{});
}

TEST_F(SaClientTest, SmInfoTimeoutAndCancel) {
    std::vector<SmInfoResult> got;
    const auto a = client->get_sm_info(0, SmInfoQuery::master(),
                                       [&](const SmInfoResult &r) { got.push_back(r); });
    client->get_sm_info(0, SmInfoQuery::master(), [&](const SmInfoResult &r) { got.push_back(r); });
    client->cancel(a);
    timers.run_until_idle();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].kind, SmInfoResult::Kind::timeout);
    EXPECT_EQ(got[0].tries, 6u);
    EXPECT_FALSE(got[0].bounced);
}

TEST_F(SaClientTest, SmInfoWithItsOwnTryPolicy) {
    std::vector<SmInfoResult> got;
    client->get_sm_info(0, SmInfoQuery::by_lid(1), TryPolicy::single(1000ms),
                        [&](const SmInfoResult &r) { got.push_back(r); });
    ASSERT_EQ(net.sent().size(), 1u);
    EXPECT_EQ(net.last().timeout_ms, 1000u);
    SmInfoRecord match;
    match.lid = 1;
    EXPECT_EQ(net.last().mad, encode_sminfo_get(match, sminfo_field::lid, 0x5a5a0001))
        << "the same Get, only the tries differ";
    net.bounce(net.last());
    timers.run_until_idle();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].kind, SmInfoResult::Kind::timeout);
    EXPECT_EQ(got[0].tries, 1u);
    EXPECT_TRUE(got[0].bounced);
    EXPECT_EQ(timers.now() - t0, 1000ms);
    EXPECT_EQ(net.sent().size(), 1u) << "no retransmit";

    // The config's policy still applies to a Get without one.
    client->get_sm_info(0, SmInfoQuery::by_lid(1), [&](const SmInfoResult &r) { got.push_back(r); });
    EXPECT_EQ(net.last().timeout_ms, 300u);
    EXPECT_THROW(client->get_sm_info(0, SmInfoQuery::master(), TryPolicy{1000ms, 1000ms, 0}, {}),
                 std::invalid_argument);
}

} // namespace
} // namespace mcastd::sa
