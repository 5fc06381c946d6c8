// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The DR SMP Get(PortInfo) codec: byte-exact request, decoding of real ibsim answers, every
// field's bit position, and rejection of anything that is not a valid answer.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "port/portinfo_smp.hpp"

namespace mcastd::port {
namespace {

using Bytes = std::vector<std::uint8_t>;

// PortInfo of H2 (LID 3, SM LID 1, Active/LinkUp) on a 4-HCA ibsim fabric, as
// `smpdump -D 0 0x15 1` printed it; smpquery decoded the same answer as: GidPrefix
// 0xfe80000000000000, Lid 3, SMLid 1, CapMask 0x50c048, LocalPort 1, LinkWidthActive 4X,
// LinkState Active, PhysLinkState LinkUp, LMC 0, LinkSpeedActive 2.5 Gbps, NeighborMTU 2048,
// SMSL 0, MtuCap 2048, ClientReregister 0, SubnetTimeout 31, CapabilityMask2 0x30.
const Bytes kH2Active = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x03, 0x00, 0x01, 0x00, 0x50, 0xc0, 0x48, 0x00, 0x00, 0x0f, 0xf9, 0x01, 0x02, 0x1f, 0x02,
    0x74, 0x52, 0x00, 0x11, 0x40, 0x40, 0x00, 0x08, 0x08, 0x04, 0xe0, 0x40, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x20, 0x1f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00,
};
// H3 after `Unlink "H3"` on the ibsim console: LinkState Down, PhysLinkState Polling, LID 4.
const Bytes kH3Down = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x04, 0x00, 0x01, 0x00, 0x50, 0xc0, 0x48, 0x00, 0x00, 0x0f, 0xf9, 0x01, 0x02, 0x1f, 0x02,
    0x71, 0x22, 0x00, 0x11, 0x40, 0x40, 0x00, 0x08, 0x08, 0x04, 0xe0, 0x40, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x20, 0x1f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00,
};

// A GetResp to a 0-hop DR Get(PortInfo) carrying `data`, as the local port returns it.
Bytes reply(const Bytes &data, std::uint64_t tid = 0x0000000100000042) {
    Bytes m(256, 0);
    m[0] = 0x01;                     // base version
    m[1] = 0x81;                     // class: directed route
    m[2] = 0x01;                     // class version
    m[3] = 0x81;                     // GetResp
    m[4] = 0x80;                     // status: D bit (returning), code 0
    for (int i = 0; i < 8; ++i)      // TID
        m[8 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(tid >> (56 - 8 * i));
    m[16] = 0x00, m[17] = 0x15;      // PortInfo
    m[23] = 0x01;                    // attribute modifier: port 1
    m[32] = m[33] = m[34] = m[35] = 0xff; // DrSLID, DrDLID
    std::copy(data.begin(), data.end(), m.begin() + 64);
    return m;
}

PortInfo decoded(const Bytes &data) {
    auto r = decode_portinfo(data);
    if (auto *e = std::get_if<SmpError>(&r))
        ADD_FAILURE() << e->message;
    return std::get<PortInfo>(r);
}

SmpError reply_error(const Bytes &mad) {
    auto r = decode_portinfo_reply(mad);
    if (!std::holds_alternative<SmpError>(r)) {
        ADD_FAILURE() << "decoded a MAD that should have been rejected";
        return {};
    }
    return std::get<SmpError>(r);
}

TEST(PortInfoSmp, EncodesGetPortInfoToSelfByteExact) {
    SmpBuf b = encode_portinfo_get(0x1122334455667788, 1);
    const std::uint8_t head[36] = {
        0x01, 0x81, 0x01, 0x01,                         // base 1, class 0x81, version 1, Get
        0x00, 0x00, 0x00, 0x00,                         // status 0 (D clear), hop ptr 0, count 0
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // TID
        0x00, 0x15, 0x00, 0x00,                         // PortInfo, reserved
        0x00, 0x00, 0x00, 0x01,                         // attribute modifier: port 1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // M_Key
        0xff, 0xff, 0xff, 0xff,                         // DrSLID, DrDLID: permissive
    };
    for (std::size_t i = 0; i < sizeof head; ++i)
        EXPECT_EQ(b[i], head[i]) << "byte " << i;
    for (std::size_t i = sizeof head; i < b.size(); ++i)
        EXPECT_EQ(b[i], 0) << "byte " << i; // reserved, data, initial and return paths
    EXPECT_EQ(encode_portinfo_get(0, 0)[23], 0);
    EXPECT_EQ(encode_portinfo_get(0, 2)[23], 2);
}

TEST(PortInfoSmp, DecodesAnActivePortFromIbsim) {
    PortInfo pi = decoded(kH2Active);
    EXPECT_EQ(pi.gid_prefix, 0xfe80000000000000u);
    EXPECT_EQ(pi.lid, 3);
    EXPECT_EQ(pi.master_sm_lid, 1);
    EXPECT_EQ(pi.capability_mask, 0x0050c048u);
    EXPECT_EQ(pi.local_port_num, 1);
    EXPECT_EQ(pi.link_width_active, 2); // 4X
    EXPECT_EQ(pi.port_state, 4);        // Active
    EXPECT_EQ(pi.phys_state, 5);        // LinkUp
    EXPECT_EQ(pi.lmc, 0);
    EXPECT_EQ(pi.link_speed_active, 1); // 2.5 Gb/s
    EXPECT_EQ(pi.neighbor_mtu, 4);      // 2048
    EXPECT_EQ(pi.master_sm_sl, 0);
    EXPECT_EQ(pi.mtu_cap, 4);           // 2048
    EXPECT_FALSE(pi.client_reregister);
    EXPECT_EQ(pi.subnet_timeout, 31);
    EXPECT_EQ(pi.capability_mask2, 0x30);
    EXPECT_EQ(pi.link_speed_ext_active, 0);
}

TEST(PortInfoSmp, DecodesADownPortFromIbsim) {
    PortInfo pi = decoded(kH3Down);
    EXPECT_EQ(pi.lid, 4);
    EXPECT_EQ(pi.port_state, 1); // Down
    EXPECT_EQ(pi.phys_state, 2); // Polling
}

TEST(PortInfoSmp, EveryFieldComesFromItsOwnBits) {
    // Distinct values in every field, and the neighbouring bits of shared bytes set, so a
    // wrong shift or mask shows.
    Bytes d = kH2Active;
    for (int i = 0; i < 8; ++i)
        d[8 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(0xa1 + i);
    d[16] = 0x12, d[17] = 0x34; // LID
    d[18] = 0x56, d[19] = 0x78; // MasterSMLID
    d[20] = 0x02, d[21] = 0x00, d[22] = 0x00, d[23] = 0x02; // CapabilityMask
    d[28] = 0x07;               // LocalPortNum
    d[31] = 0x10;               // LinkWidthActive 2X
    d[32] = 0xf3;               // LinkSpeedSupported 0xf | PortState 3 (Armed)
    d[33] = 0x7f;               // PhysState 7 | LinkDownDefault 0xf
    d[34] = 0xfd;               // ProtectBits 3 | reserved 0x7 | LMC 5
    d[35] = 0x4f;               // LinkSpeedActive 4 | LinkSpeedEnabled 0xf
    d[36] = 0x53;               // NeighborMTU 5 | MasterSMSL 3
    d[41] = 0xa2;               // InitTypeReply 0xa | MTUCap 2
    d[51] = 0xea;               // ClientReregister | McastPkeyTrapSuppr 3 | SubnetTimeOut 10
    d[60] = 0x12, d[61] = 0x34; // CapabilityMask2
    d[62] = 0x2f;               // LinkSpeedExtActive 2 | LinkSpeedExtSupported 0xf
    PortInfo pi = decoded(d);
    EXPECT_EQ(pi.gid_prefix, 0xa1a2a3a4a5a6a7a8u);
    EXPECT_EQ(pi.lid, 0x1234);
    EXPECT_EQ(pi.master_sm_lid, 0x5678);
    EXPECT_EQ(pi.capability_mask, 0x02000002u);
    EXPECT_EQ(pi.local_port_num, 7);
    EXPECT_EQ(pi.link_width_active, 0x10);
    EXPECT_EQ(pi.port_state, 3);
    EXPECT_EQ(pi.phys_state, 7);
    EXPECT_EQ(pi.lmc, 5);
    EXPECT_EQ(pi.link_speed_active, 4);
    EXPECT_EQ(pi.neighbor_mtu, 5);
    EXPECT_EQ(pi.master_sm_sl, 3);
    EXPECT_EQ(pi.mtu_cap, 2);
    EXPECT_TRUE(pi.client_reregister);
    EXPECT_EQ(pi.subnet_timeout, 10);
    EXPECT_EQ(pi.capability_mask2, 0x1234);
    EXPECT_EQ(pi.link_speed_ext_active, 2);
}

TEST(PortInfoSmp, DecodesAReplyAndKeepsItsTid) {
    auto r = decode_portinfo_reply(reply(kH2Active, 0xabcd000012345678));
    ASSERT_TRUE(std::holds_alternative<PortInfoReply>(r)) << std::get<SmpError>(r).message;
    EXPECT_EQ(std::get<PortInfoReply>(r).tid, 0xabcd000012345678u);
    EXPECT_EQ(std::get<PortInfoReply>(r).info, decoded(kH2Active));
}

TEST(PortInfoSmp, TheRequestTurnedIntoAReplyDecodes) {
    // What a responder does to our request: set method GetResp and the D bit, fill the data.
    SmpBuf req = encode_portinfo_get(77, 1);
    Bytes m(req.begin(), req.end());
    m[3] = 0x81;
    m[4] |= 0x80;
    std::copy(kH3Down.begin(), kH3Down.end(), m.begin() + 64);
    auto r = decode_portinfo_reply(m);
    ASSERT_TRUE(std::holds_alternative<PortInfoReply>(r)) << std::get<SmpError>(r).message;
    EXPECT_EQ(std::get<PortInfoReply>(r).tid, 77u);
    EXPECT_EQ(std::get<PortInfoReply>(r).info.port_state, 1);
}

TEST(PortInfoSmp, RejectsMalformedHeaders) {
    const Bytes good = reply(kH2Active);
    auto with = [&](std::size_t off, std::uint8_t v) {
        Bytes m = good;
        m[off] = v;
        return m;
    };
    EXPECT_EQ(reply_error(Bytes(good.begin(), good.end() - 1)).status, 0); // 255 bytes
    Bytes longer = good;
    longer.push_back(0);
    reply_error(longer);
    reply_error({});
    reply_error(with(0, 2));    // base version
    reply_error(with(1, 0x01)); // LID-routed SMP class
    reply_error(with(1, 0x03)); // SA class
    reply_error(with(2, 2));    // class version
    reply_error(with(3, 0x01)); // Get: our own request, bounced
    reply_error(with(3, 0x82)); // not GetResp
    reply_error(with(17, 0x11)); // NodeInfo, not PortInfo
    reply_error(with(4, 0x00)); // direction bit clear
    reply_error(with(7, 1));    // hop count 1: not the local port's answer
    EXPECT_NE(reply_error(with(3, 0x01)).message.find("undelivered"), std::string::npos);
}

TEST(PortInfoSmp, ReportsTheResponderStatus) {
    Bytes m = reply(kH2Active);
    m[4] = 0x80, m[5] = 0x1c; // D | "invalid attribute or modifier"
    SmpError e = reply_error(m);
    EXPECT_EQ(e.status, 0x001c);
    EXPECT_NE(e.message.find("0x001c"), std::string::npos) << e.message;
}

TEST(PortInfoSmp, RejectsReservedStates) {
    for (int state : {0, 5, 15}) {
        Bytes d = kH2Active;
        d[32] = static_cast<std::uint8_t>(0x70 | state);
        EXPECT_TRUE(std::holds_alternative<SmpError>(decode_portinfo(d))) << state;
        EXPECT_TRUE(std::holds_alternative<SmpError>(decode_portinfo_reply(reply(d))));
    }
    for (int phys : {0, 8, 15}) {
        Bytes d = kH2Active;
        d[33] = static_cast<std::uint8_t>(phys << 4 | 0x2);
        EXPECT_TRUE(std::holds_alternative<SmpError>(decode_portinfo(d))) << phys;
    }
    EXPECT_TRUE(std::holds_alternative<SmpError>(decode_portinfo(Bytes(63, 0))));
    EXPECT_TRUE(std::holds_alternative<SmpError>(decode_portinfo(Bytes(65, 0))));
}

TEST(PortInfoSmp, ArbitraryBytesNeverBreakTheDecoder) {
    // Every single-byte change of a valid reply, then random MADs of random sizes: the
    // decoder answers each with a value or an error, and every value it accepts is sane.
    auto check = [](const Bytes &m) {
        auto r = decode_portinfo_reply(m);
        if (auto *ok = std::get_if<PortInfoReply>(&r)) {
            EXPECT_GE(ok->info.port_state, 1);
            EXPECT_LE(ok->info.port_state, 4);
            EXPECT_LE(ok->info.lmc, 7);
            EXPECT_LE(ok->info.subnet_timeout, 31);
        } else {
            EXPECT_FALSE(std::get<SmpError>(r).message.empty());
        }
    };
    const Bytes good = reply(kH2Active);
    for (std::size_t i = 0; i < good.size(); ++i)
        for (int v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
            Bytes m = good;
            m[i] = static_cast<std::uint8_t>(v);
            check(m);
        }
    std::mt19937 rng(20261122);
    for (int n = 0; n < 20000; ++n) {
        Bytes m(n % 10 == 0 ? rng() % 300 : 256);
        for (auto &b : m)
            b = static_cast<std::uint8_t>(rng());
        if (m.size() == 256 && n % 2 == 0) {
            // A valid header and valid states around random PortInfo bits: these decode.
            std::copy(good.begin(), good.begin() + 36, m.begin());
            m[64 + 32] = static_cast<std::uint8_t>((m[64 + 32] & 0xf0) | (1 + rng() % 4));
            m[64 + 33] = static_cast<std::uint8_t>((m[64 + 33] & 0x0f) | (1 + rng() % 7) << 4);
            EXPECT_TRUE(std::holds_alternative<PortInfoReply>(decode_portinfo_reply(m)));
        }
        check(m);
    }
}

} // namespace
} // namespace mcastd::port
