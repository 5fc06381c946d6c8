// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Byte-exact tests of the SA MAD codec against doc/sa-multicast.md §2-§7, §16 and §19.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "common/gid.hpp"
#include "common/record.hpp"
#include "common/sa_status.hpp"
#include "sa/mad_codec.hpp"

namespace mcastd::sa {
namespace {

// "01 03 02 ..." -> bytes, zero-padded to a full MAD.
MadBuf mad_from_hex(std::string_view hex) {
    MadBuf buf{};
    std::size_t n = 0;
    int hi = -1;
    for (char c : hex) {
        if (std::isspace(static_cast<unsigned char>(c)))
            continue;
        const int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                                                                  : std::tolower(c) - 'a' + 10;
        if (hi < 0) {
            hi = v;
        } else {
            buf.at(n++) = static_cast<std::uint8_t>(hi << 4 | v);
            hi = -1;
        }
    }
    return buf;
}

void put16(MadBuf &b, std::size_t off, std::uint16_t v) {
    b[off] = static_cast<std::uint8_t>(v >> 8);
    b[off + 1] = static_cast<std::uint8_t>(v);
}
void put32(MadBuf &b, std::size_t off, std::uint32_t v) {
    for (std::size_t i = 0; i < 4; ++i)
        b[off + i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}
void put64(MadBuf &b, std::size_t off, std::uint64_t v) {
    for (std::size_t i = 0; i < 8; ++i)
        b[off + i] = static_cast<std::uint8_t>(v >> (56 - 8 * i));
}

// The create request of doc/sa-multicast.md §19, bytes 0-111 (the rest are zero).
const MadBuf kCreateRequest = mad_from_hex(R"(
    01 03 02 02 00 00 00 00 5a 5a 00 00 00 00 00 01
    00 38 00 00 00 00 00 00 00 00 00 00 00 00 00 00
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
    00 00 00 00 00 01 30 c7 ff 12 12 34 00 00 00 00
    00 00 00 00 00 00 00 01 fe 80 00 00 00 00 00 00
    00 00 00 00 00 10 00 03 00 00 12 34 00 00 00 00
    ff ff 00 00 00 00 00 00 01 00 00 00 00 00 00 00
)");

// MAD offsets of MCMemberRecord fields (doc/sa-multicast.md §4).
constexpr std::size_t kMethod = 3, kStatus = 4, kTid = 8, kAttr = 16, kMask = 48, kMlid = 92,
                      kMtu = 94, kTclass = 95, kPkey = 96, kRate = 98, kLife = 99, kSlFlowHop = 100,
                      kScopeState = 104, kProxy = 105;

McRecord create_record() {
    McRecord r;
    r.mgid = *parse_gid("ff12:1234::1");
    r.port_gid = make_gid(0xfe80000000000000ULL, 0x100003);
    r.qkey = 0x1234;
    r.pkey = 0xffff;
    r.join_state = join::full;
    return r;
}

// The §19 response as OpenSM sends it, built byte by byte from the request (not by the
// encoder): GetResp, the transport-rewritten TID, MLID 0xC001, MTU 0x84, rate 0x83, life 0x80.
MadBuf create_response() {
    MadBuf b = kCreateRequest;
    b[kMethod] = 0x81;
    put64(b, kTid, 0x0000000000000001ULL);
    put16(b, kMlid, 0xc001);
    b[kMtu] = 0x84;
    b[kRate] = 0x83;
    b[kLife] = 0x80;
    return b;
}

TEST(MadCodec, MaskConstantsMatchTheReference) {
    EXPECT_EQ(field::create_mask, 0x130c7u);
    EXPECT_EQ(field::join_mask, 0x10003u);
}

TEST(MadCodec, CreateRequestIsByteExact) {
    const MadBuf got = encode_mcmember_request(SaMethod::set, create_record(), field::create_mask,
                                               0x5a5a000000000001ULL);
    EXPECT_EQ(got, kCreateRequest);
}

TEST(MadCodec, DecodesTheWorkedCreateResponse) {
    const MadBuf resp = create_response();
    const auto d = decode_mcmember_response(resp, SaMethod::set);
    ASSERT_TRUE(d) << d.error().message();
    EXPECT_EQ(d->method, 0x81);
    EXPECT_EQ(d->status, sa_status::success);
    EXPECT_EQ(d->tid, 1u);
    EXPECT_EQ(d->comp_mask, 0x130c7u);
    const McRecord &r = d->record;
    EXPECT_EQ(format_gid(r.mgid), "ff12:1234::1");
    EXPECT_EQ(format_gid(r.port_gid), "fe80::10:3");
    EXPECT_EQ(r.mlid, 0xc001);
    EXPECT_EQ(r.qkey, 0x1234u);
    EXPECT_EQ(r.pkey, 0xffff);
    EXPECT_EQ(r.mtu_selector, Selector::exactly);
    EXPECT_EQ(r.mtu, 4);
    EXPECT_EQ(mtu_bytes(r.mtu), 2048u);
    EXPECT_EQ(r.rate_selector, Selector::exactly);
    EXPECT_EQ(r.rate, 3);
    EXPECT_EQ(rate_mbps(r.rate), 10000u);
    EXPECT_EQ(r.life_selector, Selector::exactly);
    EXPECT_EQ(r.packet_life, 0);
    EXPECT_EQ(r.sl, 0);
    EXPECT_EQ(r.flow_label, 0u);
    EXPECT_EQ(r.hop_limit, 0);
    EXPECT_EQ(r.tclass, 0);
    EXPECT_EQ(r.scope, 0);
    EXPECT_EQ(r.join_state, join::full);
    EXPECT_FALSE(r.proxy_join);
}

TEST(MadCodec, ResponseRoundTripsThroughTheEncoder) {
    const auto d = decode_mcmember_response(create_response(), SaMethod::set);
    ASSERT_TRUE(d);
    EXPECT_EQ(encode_mcmember_mad(d.value()), create_response());
}

// Every status the SA can return reaches the caller, with the echoed record.
class StatusPath : public ::testing::TestWithParam<std::uint16_t> {};

TEST_P(StatusPath, SetErrorDecodesWithStatusAndEcho) {
    MadBuf b = kCreateRequest;
    b[kMethod] = 0x81; // OpenSM answers a failed Set with GetResp
    put16(b, kStatus, GetParam());
    const auto d = decode_mcmember_response(b, SaMethod::set);
    ASSERT_TRUE(d) << d.error().message();
    EXPECT_EQ(d->status, GetParam());
    EXPECT_EQ(d->record, create_record());
}

TEST_P(StatusPath, DeleteErrorDecodes) {
    MadBuf b = kCreateRequest;
    b[kMethod] = 0x95;
    put16(b, kStatus, GetParam());
    const auto d = decode_mcmember_response(b, SaMethod::del);
    ASSERT_TRUE(d) << d.error().message();
    EXPECT_EQ(d->status, GetParam());
}

TEST_P(StatusPath, GetErrorDecodes) {
    MadBuf b = kCreateRequest;
    b[kMethod] = 0x81;
    put16(b, kStatus, GetParam());
    const auto d = decode_mcmember_response(b, SaMethod::get);
    ASSERT_TRUE(d) << d.error().message();
    EXPECT_EQ(d->status, GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    AllStatuses, StatusPath,
    ::testing::Values(sa_status::success, std::uint16_t{0x0001}, std::uint16_t{0x0004},
                      std::uint16_t{0x0008}, std::uint16_t{0x000c}, std::uint16_t{0x001c},
                      sa_status::no_resources, sa_status::req_invalid, sa_status::no_records,
                      sa_status::too_many_records, sa_status::invalid_gid,
                      sa_status::insufficient_components, sa_status::denied,
                      sa_status::prio_suggested));

TEST(MadCodec, FailedSetWithSetOrResponseBitIsAccepted) {
    MadBuf b = kCreateRequest;
    b[kMethod] = 0x82;
    put16(b, kStatus, sa_status::req_invalid);
    const auto d = decode_mcmember_response(b, SaMethod::set);
    ASSERT_TRUE(d) << d.error().message();
    EXPECT_EQ(d->method, 0x82);
    EXPECT_EQ(d->status, sa_status::req_invalid);
}

TEST(MadCodec, SetOrResponseBitWithSuccessIsNotAnAnswer) {
    MadBuf b = kCreateRequest;
    b[kMethod] = 0x82;
    const auto d = decode_mcmember_response(b, SaMethod::set);
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error(), (CodecError{CodecError::Code::unexpected_method, 0x82, 0x81}));
}

TEST(MadCodec, ResponseMethodMustMatchTheRequest) {
    MadBuf b = kCreateRequest;
    b[kMethod] = 0x95;
    EXPECT_EQ(decode_mcmember_response(b, SaMethod::get).error().code,
              CodecError::Code::unexpected_method);
    EXPECT_EQ(decode_mcmember_response(b, SaMethod::set).error().code,
              CodecError::Code::unexpected_method);
    b[kMethod] = 0x81;
    EXPECT_EQ(decode_mcmember_response(b, SaMethod::del).error().code,
              CodecError::Code::unexpected_method);
    b[kMethod] = 0x92; // GetTableResp is not an answer to Get
    EXPECT_EQ(decode_mcmember_response(b, SaMethod::get).error().code,
              CodecError::Code::unexpected_method);
}

TEST(MadCodec, LeaveRequestIsTheCreateHeaderWithDeleteAndJoinMask) {
    // §19: the leave is the same header with method 0x15, mask 0x10003, JoinState 0x1.
    MadBuf want = kCreateRequest;
    want[kMethod] = 0x15;
    put64(want, kMask, 0x10003);
    const MadBuf got = encode_mcmember_request(SaMethod::del, create_record(), field::join_mask,
                                               0x5a5a000000000001ULL);
    EXPECT_EQ(got, want);
}

TEST(MadCodec, DecodesDeleteResponse) {
    MadBuf b = kCreateRequest;
    b[kMethod] = 0x95;
    put64(b, kMask, 0x10003);
    b[kScopeState] = 0x00; // JoinState = the remaining bits: none
    const auto d = decode_mcmember_response(b, SaMethod::del);
    ASSERT_TRUE(d) << d.error().message();
    EXPECT_EQ(d->method, 0x95);
    EXPECT_EQ(d->status, 0);
    EXPECT_EQ(d->comp_mask, field::join_mask);
    EXPECT_EQ(d->record.join_state, 0);
}

TEST(MadCodec, MembershipProbeGet) {
    const MadBuf got = encode_mcmember_request(
        SaMethod::get, create_record(), field::mgid | field::port_gid, 0x77);
    MadBuf want = kCreateRequest;
    want[kMethod] = 0x01;
    put64(want, kTid, 0x77);
    put64(want, kMask, 0x3);
    EXPECT_EQ(got, want);

    MadBuf resp = want;
    resp[kMethod] = 0x81;
    put16(resp, kStatus, sa_status::no_records);
    const auto d = decode_mcmember_response(resp, SaMethod::get);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->status, sa_status::no_records);
}

TEST(MadCodec, SmKeyAndReservedFieldsAreZero) {
    McRecord r = create_record();
    r.mlid = 0xffff;
    const MadBuf b = encode_mcmember_request(SaMethod::set, r, ~0ULL, ~0ULL);
    for (std::size_t i = 18; i < 48; ++i) // reserved, attr mod, RMPP, SM_Key, attr offset
        EXPECT_EQ(b[i], 0) << "byte " << i;
    EXPECT_EQ(b[106], 0);
    EXPECT_EQ(b[107], 0);
    for (std::size_t i = 108; i < b.size(); ++i)
        EXPECT_EQ(b[i], 0) << "byte " << i;
}

TEST(MadCodec, AllFieldsAtTheirOffsets) {
    McRecord r = create_record();
    r.qkey = 0x80010203;
    r.mlid = 0xc123;
    r.tclass = 0x5a;
    r.pkey = 0x8001;
    const MadBuf b = encode_mcmember_request(SaMethod::set, r, field::create_mask, 0);
    EXPECT_EQ(b[88], 0x80);
    EXPECT_EQ(b[91], 0x03);
    EXPECT_EQ(b[kMlid], 0xc1);
    EXPECT_EQ(b[kMlid + 1], 0x23);
    EXPECT_EQ(b[kTclass], 0x5a);
    EXPECT_EQ(b[kPkey], 0x80);
    EXPECT_EQ(b[kPkey + 1], 0x01);
    EXPECT_EQ(b[kAttr + 1], 0x38);
}

TEST(MadCodec, SelectorBytes) {
    McRecord r = create_record();
    r.mtu_selector = Selector::less;
    r.mtu = 5;
    r.rate_selector = Selector::best;
    r.rate = 7;
    r.life_selector = Selector::greater;
    r.packet_life = 0x12;
    const MadBuf b = encode_mcmember_request(SaMethod::set, r, field::create_mask, 0);
    EXPECT_EQ(b[kMtu], 0x45);
    EXPECT_EQ(b[kRate], 0xc7);
    EXPECT_EQ(b[kLife], 0x12);

    for (std::uint8_t sel = 0; sel < 4; ++sel) {
        MadBuf resp = create_response();
        resp[kMtu] = static_cast<std::uint8_t>(sel << 6 | 0x3f);
        resp[kRate] = static_cast<std::uint8_t>(sel << 6 | 0x01);
        resp[kLife] = static_cast<std::uint8_t>(sel << 6);
        const auto d = decode_mcmember_response(resp, SaMethod::set);
        ASSERT_TRUE(d);
        EXPECT_EQ(static_cast<unsigned>(d->record.mtu_selector), sel);
        EXPECT_EQ(d->record.mtu, 0x3f);
        EXPECT_EQ(static_cast<unsigned>(d->record.rate_selector), sel);
        EXPECT_EQ(d->record.rate, 1);
        EXPECT_EQ(static_cast<unsigned>(d->record.life_selector), sel);
        EXPECT_EQ(d->record.packet_life, 0);
    }
}

TEST(MadCodec, SlFlowHopPacking) {
    McRecord r = create_record();
    r.sl = 0xa;
    r.flow_label = 0xabcde;
    r.hop_limit = 0x3f;
    const MadBuf b = encode_mcmember_request(SaMethod::set, r, field::create_mask, 0);
    EXPECT_EQ(b[kSlFlowHop + 0], 0xaa);
    EXPECT_EQ(b[kSlFlowHop + 1], 0xbc);
    EXPECT_EQ(b[kSlFlowHop + 2], 0xde);
    EXPECT_EQ(b[kSlFlowHop + 3], 0x3f);

    MadBuf resp = create_response();
    put32(resp, kSlFlowHop, 0xf12345ff);
    const auto d = decode_mcmember_response(resp, SaMethod::set);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->record.sl, 0xf);
    EXPECT_EQ(d->record.flow_label, 0x12345u);
    EXPECT_EQ(d->record.hop_limit, 0xff);
}

TEST(MadCodec, ScopeAndJoinStateNibbles) {
    McRecord r = create_record();
    r.scope = 0x5;
    r.join_state = join::send_only_full;
    const MadBuf b = encode_mcmember_request(SaMethod::set, r, field::create_mask, 0);
    EXPECT_EQ(b[kScopeState], 0x58);

    MadBuf resp = create_response();
    resp[kScopeState] = 0xe9;
    const auto d = decode_mcmember_response(resp, SaMethod::set);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->record.scope, 0xe);
    EXPECT_EQ(d->record.join_state, join::full | join::send_only_full);
}

TEST(MadCodec, OversizedValuesAreTruncatedToTheirFields) {
    McRecord r = create_record();
    r.sl = 0x1f;
    r.flow_label = 0x1fffff;
    r.scope = 0x12;
    r.join_state = 0x13;
    r.mtu = 0x41;
    const MadBuf b = encode_mcmember_request(SaMethod::set, r, field::create_mask, 0);
    EXPECT_EQ(b[kSlFlowHop], 0xff); // SL 0xf, flow label's top nibble
    EXPECT_EQ(b[kScopeState], 0x23);
    EXPECT_EQ(b[kMtu], 0x01); // selector greater (0), MTU 0x41 & 0x3f
}

TEST(MadCodec, ProxyJoinBit) {
    McRecord r = create_record();
    r.proxy_join = true;
    EXPECT_EQ(encode_mcmember_request(SaMethod::set, r, field::create_mask, 0)[kProxy], 0x80);

    MadBuf resp = create_response();
    resp[kProxy] = 0x80;
    EXPECT_TRUE(decode_mcmember_response(resp, SaMethod::set)->record.proxy_join);
    resp[kProxy] = 0x7f; // reserved bits only
    EXPECT_FALSE(decode_mcmember_response(resp, SaMethod::set)->record.proxy_join);
}

TEST(MadCodec, StrictHeaderChecks) {
    using C = CodecError::Code;
    const MadBuf good = create_response();
    auto with = [&](std::size_t off, std::uint8_t v) {
        MadBuf b = good;
        b[off] = v;
        return decode_mcmember_response(b, SaMethod::set);
    };
    EXPECT_EQ(with(0, 2).error(), (CodecError{C::bad_base_version, 2, 1}));
    EXPECT_EQ(with(1, 0x81).error(), (CodecError{C::wrong_class, 0x81, 0x03}));
    EXPECT_EQ(with(2, 1).error(), (CodecError{C::bad_class_version, 1, 2}));
    EXPECT_EQ(with(3, 0x02).error().code, C::not_a_response);
    EXPECT_EQ(with(17, 0x18).error(), (CodecError{C::wrong_attribute, 0x18, 0x38}));

    const std::span<const std::uint8_t> all(good);
    EXPECT_EQ(decode_mcmember_response(all.first(255), SaMethod::set).error(),
              (CodecError{C::bad_length, 255, 256}));
    EXPECT_EQ(decode_mcmember_response(all.first(0), SaMethod::set).error(),
              (CodecError{C::bad_length, 0, 256}));
    std::vector<std::uint8_t> longer(good.begin(), good.end());
    longer.push_back(0);
    EXPECT_EQ(decode_mcmember_response(longer, SaMethod::set).error(),
              (CodecError{C::bad_length, 257, 256}));
}

TEST(MadCodec, ErrorMessagesNameTheValues) {
    using C = CodecError::Code;
    EXPECT_EQ((CodecError{C::wrong_attribute, 0x11, 0x38}).message(),
              "attribute 0x0011, expected 0x0038");
    EXPECT_EQ((CodecError{C::bad_length, 10, 256}).message(), "MAD of 10 bytes, expected 256");
    EXPECT_EQ((CodecError{C::unexpected_method, 0x95, 0x81}).message(),
              "response method 0x95, expected 0x81");
    EXPECT_EQ((CodecError{C::not_a_response, 0x02, 0}).message(),
              "method 0x02 is a request, not a response");
}

TEST(MadCodec, HeaderAndTid) {
    MadBuf b = kCreateRequest;
    set_mad_tid(b, 0x0102030405060708ULL);
    for (std::size_t i = 0; i < 8; ++i)
        EXPECT_EQ(b[kTid + i], i + 1);
    const auto h = decode_mad_header(b);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->tid, 0x0102030405060708ULL);
    EXPECT_EQ(h->mgmt_class, 0x03);
    EXPECT_EQ(h->method, 0x02);
    EXPECT_EQ(h->attr_id, 0x0038);
    EXPECT_EQ(decode_mad_header(std::span<const std::uint8_t>(b).first(23)).error().code,
              CodecError::Code::bad_length);
    EXPECT_TRUE(decode_mad_header(std::span<const std::uint8_t>(b).first(24)));
}

TEST(MadCodec, RequestMethods) {
    EXPECT_EQ(request_method(SaMethod::get), 0x01);
    EXPECT_EQ(request_method(SaMethod::set), 0x02);
    EXPECT_EQ(request_method(SaMethod::del), 0x15);
}

// --- SMInfoRecord ---------------------------------------------------------------------------

constexpr std::size_t kData = 56;

TEST(SmInfoCodec, GetByLidIsByteExact) {
    SmInfoRecord match;
    match.lid = 0x0001;
    const MadBuf got = encode_sminfo_get(match, sminfo_field::lid, 0x5a5a000000000002ULL);
    const MadBuf want = mad_from_hex(R"(
        01 03 02 01 00 00 00 00 5a 5a 00 00 00 00 00 02
        00 18 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
        00 00 00 00 00 00 00 01 00 01 00 00 00 00 00 00
    )");
    EXPECT_EQ(got, want);
}

TEST(SmInfoCodec, GetMasterSetsStateNibble) {
    SmInfoRecord match;
    match.sm_state = sm_state::master;
    const MadBuf got = encode_sminfo_get(match, sminfo_field::sm_state, 3);
    EXPECT_EQ(got[kMask + 7], 0x40);
    EXPECT_EQ(got[kData + 24], 0x03);
}

TEST(SmInfoCodec, DecodesResponse) {
    MadBuf b{};
    b[0] = 1;
    b[1] = 0x03;
    b[2] = 2;
    b[3] = 0x81;
    put64(b, kTid, 0xdeadbeef00000042ULL);
    put16(b, kAttr, 0x0018);
    put64(b, kMask, 0x1);
    put16(b, kData + 0, 0x0001);
    put64(b, kData + 4, 0x0002c90300001234ULL);
    put64(b, kData + 12, 0);
    put32(b, kData + 20, 84);
    b[kData + 24] = 0xd3; // priority 13, MASTER
    const auto d = decode_sminfo_response(b);
    ASSERT_TRUE(d) << d.error().message();
    EXPECT_EQ(d->status, 0);
    EXPECT_EQ(d->tid, 0xdeadbeef00000042ULL);
    EXPECT_EQ(d->comp_mask, 1u);
    EXPECT_EQ(d->record.lid, 1);
    EXPECT_EQ(d->record.guid, 0x0002c90300001234ULL);
    EXPECT_EQ(d->record.sm_key, 0u);
    EXPECT_EQ(d->record.act_count, 84u);
    EXPECT_EQ(d->record.priority, 13);
    EXPECT_EQ(d->record.sm_state, sm_state::master);
    EXPECT_EQ(encode_sminfo_mad(d.value()), b);
}

TEST(SmInfoCodec, TooManyRecordsStatus) {
    SmInfoMad m;
    m.method = 0x81;
    m.status = sa_status::too_many_records;
    const auto d = decode_sminfo_response(encode_sminfo_mad(m));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->status, sa_status::too_many_records);
}

TEST(SmInfoCodec, StrictChecks) {
    using C = CodecError::Code;
    SmInfoMad m;
    m.method = 0x81;
    const MadBuf good = encode_sminfo_mad(m);
    ASSERT_TRUE(decode_sminfo_response(good));
    MadBuf b = good;
    b[17] = 0x38;
    EXPECT_EQ(decode_sminfo_response(b).error(), (CodecError{C::wrong_attribute, 0x38, 0x18}));
    b = good;
    b[3] = 0x95;
    EXPECT_EQ(decode_sminfo_response(b).error(), (CodecError{C::unexpected_method, 0x95, 0x81}));
    b = good;
    b[3] = 0x01;
    EXPECT_EQ(decode_sminfo_response(b).error().code, C::not_a_response);
    // An MCMemberRecord response is not an SMInfoRecord one, and vice versa.
    EXPECT_EQ(decode_sminfo_response(create_response()).error().code, C::wrong_attribute);
    EXPECT_EQ(decode_mcmember_response(good, SaMethod::get).error().code, C::wrong_attribute);
    EXPECT_EQ(decode_sminfo_response(std::span<const std::uint8_t>(good).first(100)).error(),
              (CodecError{C::bad_length, 100, 256}));
}

// --- robustness (the fuzzer does this at scale) ---------------------------------------------

TEST(MadCodec, ArbitraryBytesNeverCrash) {
    std::mt19937 rng(12345);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<int> len(0, 300);
    std::vector<std::uint8_t> buf;
    int decoded = 0;
    for (int i = 0; i < 20000; ++i) {
        buf.resize(static_cast<std::size_t>(len(rng)));
        for (auto &c : buf)
            c = static_cast<std::uint8_t>(byte(rng));
        // Half the time make the header plausible so the deeper paths run too.
        if (buf.size() >= 24 && i % 2) {
            buf[0] = 1;
            buf[1] = 3;
            buf[2] = 2;
            buf[3] = (i % 4 == 1) ? 0x81 : 0x95;
            buf[16] = 0;
            buf[17] = (i % 8 < 4) ? 0x38 : 0x18;
        }
        for (SaMethod m : {SaMethod::get, SaMethod::set, SaMethod::del})
            decoded += decode_mcmember_response(buf, m).ok();
        decoded += decode_sminfo_response(buf).ok();
        (void)decode_mad_header(buf);
    }
    EXPECT_GT(decoded, 0); // the plausible headers did reach the record decoders
}

TEST(MadCodec, EveryHeaderByteMutationIsHandled) {
    const MadBuf good = create_response();
    for (std::size_t off = 0; off < 56; ++off) {
        for (int v = 0; v < 256; ++v) {
            MadBuf b = good;
            b[off] = static_cast<std::uint8_t>(v);
            const auto d = decode_mcmember_response(b, SaMethod::set);
            if (d) { // whatever was accepted decodes the same record as the original
                EXPECT_EQ(d->record, decode_mcmember_response(good, SaMethod::set)->record);
            }
        }
    }
}

} // namespace
} // namespace mcastd::sa
