// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "port/portinfo_smp.hpp"

#include <infiniband/umad_sm.h>
#include <infiniband/umad_types.h>

#include <cstddef>
#include <cstdio>

namespace mcastd::port {

namespace {

// DR SMP header offsets (IBA 14.2.1.2; doc/sa-multicast.md §17).
constexpr std::size_t kOffBaseVersion = 0;
constexpr std::size_t kOffMgmtClass = 1;
constexpr std::size_t kOffClassVersion = 2;
constexpr std::size_t kOffMethod = 3;
constexpr std::size_t kOffStatus = 4; // bit 15: D (direction), bits 14:0: status
constexpr std::size_t kOffHopPointer = 6;
constexpr std::size_t kOffHopCount = 7;
constexpr std::size_t kOffTid = 8;
constexpr std::size_t kOffAttrId = 16;
constexpr std::size_t kOffAttrMod = 20;
constexpr std::size_t kOffMkey = 24;
constexpr std::size_t kOffDrSlid = 32;
constexpr std::size_t kOffDrDlid = 34;
constexpr std::size_t kOffData = 64;

// The same layout as rdma-core's struct, so a mistake here cannot go unnoticed.
static_assert(sizeof(umad_smp) == kSmpSize);
static_assert(offsetof(umad_smp, status) == kOffStatus);
static_assert(offsetof(umad_smp, hop_ptr) == kOffHopPointer);
static_assert(offsetof(umad_smp, hop_cnt) == kOffHopCount);
static_assert(offsetof(umad_smp, tid) == kOffTid);
static_assert(offsetof(umad_smp, attr_id) == kOffAttrId);
static_assert(offsetof(umad_smp, attr_mod) == kOffAttrMod);
static_assert(offsetof(umad_smp, mkey) == kOffMkey);
static_assert(offsetof(umad_smp, dr_slid) == kOffDrSlid);
static_assert(offsetof(umad_smp, dr_dlid) == kOffDrDlid);
static_assert(offsetof(umad_smp, data) == kOffData);
static_assert(UMAD_SM_ATTR_PORT_INFO == kAttrPortInfo);
static_assert(UMAD_CLASS_SUBN_DIRECTED_ROUTE == kSmpClassDirectedRoute);

constexpr std::uint8_t kBaseVersion = 1;
constexpr std::uint8_t kMethodGet = 0x01;
constexpr std::uint8_t kMethodGetResp = 0x81;
constexpr std::uint16_t kStatusDirection = 0x8000;

// PortInfo offsets within the data area (IBA 14.2.5.6; libibmad fields.c IB_PORT_*_F,
// OpenSM ib_port_info_t).
constexpr std::size_t kPiGidPrefix = 8;
constexpr std::size_t kPiLid = 16;
constexpr std::size_t kPiMasterSmLid = 18;
constexpr std::size_t kPiCapMask = 20;
constexpr std::size_t kPiLocalPort = 28;
constexpr std::size_t kPiLinkWidthActive = 31;
constexpr std::size_t kPiSpeedSupportedState = 32; // LinkSpeedSupported 7:4 | PortState 3:0
constexpr std::size_t kPiPhysDownDefault = 33;     // PortPhysicalState 7:4 | LinkDownDefault 3:0
constexpr std::size_t kPiMkeyProtectLmc = 34;      // M_KeyProtectBits 7:6 | LMC 2:0
constexpr std::size_t kPiSpeedActiveEnabled = 35;  // LinkSpeedActive 7:4 | LinkSpeedEnabled 3:0
constexpr std::size_t kPiNeighborMtuSmSl = 36;     // NeighborMTU 7:4 | MasterSMSL 3:0
constexpr std::size_t kPiInitReplyMtuCap = 41;     // InitTypeReply 7:4 | MTUCap 3:0
constexpr std::size_t kPiReregTimeout = 51;        // ClientReregister 7 | ... | SubnetTimeOut 4:0
constexpr std::size_t kPiCapMask2 = 60;
constexpr std::size_t kPiSpeedExt = 62; // LinkSpeedExtActive 7:4 | LinkSpeedExtSupported 3:0

std::uint16_t get16(std::span<const std::uint8_t> b, std::size_t off) {
    return static_cast<std::uint16_t>(b[off] << 8 | b[off + 1]);
}
std::uint32_t get32(std::span<const std::uint8_t> b, std::size_t off) {
    return static_cast<std::uint32_t>(get16(b, off)) << 16 | get16(b, off + 2);
}
std::uint64_t get64(std::span<const std::uint8_t> b, std::size_t off) {
    return static_cast<std::uint64_t>(get32(b, off)) << 32 | get32(b, off + 4);
}
void put16(SmpBuf &b, std::size_t off, std::uint16_t v) {
    b[off] = static_cast<std::uint8_t>(v >> 8);
    b[off + 1] = static_cast<std::uint8_t>(v);
}
void put32(SmpBuf &b, std::size_t off, std::uint32_t v) {
    put16(b, off, static_cast<std::uint16_t>(v >> 16));
    put16(b, off + 2, static_cast<std::uint16_t>(v));
}
void put64(SmpBuf &b, std::size_t off, std::uint64_t v) {
    put32(b, off, static_cast<std::uint32_t>(v >> 32));
    put32(b, off + 4, static_cast<std::uint32_t>(v));
}

std::uint8_t hi4(std::uint8_t v) { return static_cast<std::uint8_t>(v >> 4); }
std::uint8_t lo4(std::uint8_t v) { return static_cast<std::uint8_t>(v & 0x0f); }

std::string hex(unsigned v, int width) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*x", width, v);
    return buf;
}

SmpError malformed(std::string what) { return SmpError{0, "PortInfo SMP: " + std::move(what)}; }

} // namespace

SmpBuf encode_portinfo_get(std::uint64_t tid, std::uint8_t port_num) {
    SmpBuf b{};
    b[kOffBaseVersion] = kBaseVersion;
    b[kOffMgmtClass] = kSmpClassDirectedRoute;
    b[kOffClassVersion] = kSmpClassVersion;
    b[kOffMethod] = kMethodGet;
    // Status 0 (D clear: outbound), hop pointer 0, hop count 0: the local port answers.
    put64(b, kOffTid, tid);
    put16(b, kOffAttrId, kAttrPortInfo);
    put32(b, kOffAttrMod, port_num);
    // M_Key 0. With a hop count of 0 the LID fields are the permissive LID at both ends.
    put16(b, kOffDrSlid, kPermissiveLid);
    put16(b, kOffDrDlid, kPermissiveLid);
    return b;
}

std::variant<PortInfo, SmpError> decode_portinfo(std::span<const std::uint8_t> d) {
    if (d.size() != kPortInfoSize)
        return malformed("attribute is " + std::to_string(d.size()) + " bytes, expected " +
                         std::to_string(kPortInfoSize));
    PortInfo pi;
    pi.gid_prefix = get64(d, kPiGidPrefix);
    pi.lid = get16(d, kPiLid);
    pi.master_sm_lid = get16(d, kPiMasterSmLid);
    pi.capability_mask = get32(d, kPiCapMask);
    pi.local_port_num = d[kPiLocalPort];
    pi.link_width_active = d[kPiLinkWidthActive];
    pi.port_state = lo4(d[kPiSpeedSupportedState]);
    pi.phys_state = hi4(d[kPiPhysDownDefault]);
    pi.lmc = static_cast<std::uint8_t>(d[kPiMkeyProtectLmc] & 0x07);
    pi.link_speed_active = hi4(d[kPiSpeedActiveEnabled]);
    pi.neighbor_mtu = hi4(d[kPiNeighborMtuSmSl]);
    pi.master_sm_sl = lo4(d[kPiNeighborMtuSmSl]);
    pi.mtu_cap = lo4(d[kPiInitReplyMtuCap]);
    pi.client_reregister = (d[kPiReregTimeout] & 0x80) != 0;
    pi.subnet_timeout = static_cast<std::uint8_t>(d[kPiReregTimeout] & 0x1f);
    pi.capability_mask2 = get16(d, kPiCapMask2);
    pi.link_speed_ext_active = hi4(d[kPiSpeedExt]);
    // 0 ("no state change") is only meaningful in a Set; 5..15 are reserved.
    if (pi.port_state < 1 || pi.port_state > 4)
        return malformed("PortState " + std::to_string(pi.port_state) + " is not 1..4");
    if (pi.phys_state < 1 || pi.phys_state > 7)
        return malformed("PortPhysicalState " + std::to_string(pi.phys_state) + " is not 1..7");
    return pi;
}

std::variant<PortInfoReply, SmpError> decode_portinfo_reply(std::span<const std::uint8_t> m) {
    if (m.size() != kSmpSize)
        return malformed("MAD is " + std::to_string(m.size()) + " bytes, expected " +
                         std::to_string(kSmpSize));
    if (m[kOffBaseVersion] != kBaseVersion)
        return malformed("base version " + std::to_string(m[kOffBaseVersion]) + ", expected 1");
    if (m[kOffMgmtClass] != kSmpClassDirectedRoute)
        return malformed("management class " + hex(m[kOffMgmtClass], 2) + ", expected 0x81");
    if (m[kOffClassVersion] != kSmpClassVersion)
        return malformed("class version " + std::to_string(m[kOffClassVersion]) +
                         ", expected 1");
    if (m[kOffMethod] != kMethodGetResp)
        return malformed("method " + hex(m[kOffMethod], 2) + ", expected GetResp 0x81" +
                         (m[kOffMethod] == kMethodGet ? " (our request came back undelivered?)"
                                                      : ""));
    if (get16(m, kOffAttrId) != kAttrPortInfo)
        return malformed("attribute " + hex(get16(m, kOffAttrId), 4) + ", expected PortInfo " +
                         hex(kAttrPortInfo, 4));
    std::uint16_t status = get16(m, kOffStatus);
    if (!(status & kStatusDirection))
        return malformed("direction bit clear in a response");
    if (m[kOffHopCount] != 0)
        return malformed("hop count " + std::to_string(m[kOffHopCount]) +
                         ", expected 0 (a query of the local port)");
    // The hop pointer is not checked: with a hop count of 0 there is no path to walk, and
    // responders differ in what they leave there.
    if (std::uint16_t code = status & static_cast<std::uint16_t>(~kStatusDirection); code != 0)
        return SmpError{code, "PortInfo SMP: the port answered with status " + hex(code, 4)};
    auto info = decode_portinfo(m.subspan(kOffData, kPortInfoSize));
    if (auto *e = std::get_if<SmpError>(&info))
        return std::move(*e);
    return PortInfoReply{get64(m, kOffTid), std::get<PortInfo>(info)};
}

} // namespace mcastd::port
