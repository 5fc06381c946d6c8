// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// Writes the seed corpora of the binary fuzz targets (SA MADs and the PortInfo SMP) with the
// project's own encoders, so the seeds are valid answers the fuzzer mutates from, not bytes
// nobody can explain. The JSON seeds are written by hand in corpus/.
//
//   cmake --build build --target fuzz_make_seeds && build/bin/fuzz_make_seeds tests/fuzz/corpus
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

#include "common/gid.hpp"
#include "common/sa_status.hpp"
#include "port/portinfo_smp.hpp"
#include "sa/mad_codec.hpp"

using namespace mcastd;
namespace fs = std::filesystem;

namespace {

void write(const fs::path &dir, const std::string &name, std::span<const std::uint8_t> bytes) {
    fs::create_directories(dir);
    std::ofstream(dir / name, std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
}

McRecord record() {
    McRecord r;
    r.mgid = parse_gid("ff15:a01b::1:2").value();
    r.port_gid = parse_gid("fe80::2:c903:10:3").value();
    r.qkey = 0x01234567;
    r.mlid = 0xc001;
    r.mtu_selector = Selector::exactly;
    r.mtu = 4;
    r.pkey = 0xffff;
    r.rate_selector = Selector::exactly;
    r.rate = 3;
    r.packet_life = 18;
    r.scope = 5;
    r.join_state = join::full;
    return r;
}

void mcmember_seeds(const fs::path &dir) {
    using sa::McMemberMad;
    // The normal answers: GetResp to Get and Set, DeleteResp to Delete.
    write(dir, "getresp-ok", sa::encode_mcmember_mad(McMemberMad{0x81, 0, 0x1234, 0x130c7, record()}));
    write(dir, "deleteresp-ok",
          sa::encode_mcmember_mad(McMemberMad{0x95, 0, 0x1235, 0x10003, record()}));
    // Errors echo the request: ERR_REQ_INVALID, ERR_NO_RECORDS (the audit's "lost").
    write(dir, "getresp-req-invalid",
          sa::encode_mcmember_mad(McMemberMad{0x81, sa_status::req_invalid, 7, 0x130c7, record()}));
    write(dir, "getresp-no-records",
          sa::encode_mcmember_mad(McMemberMad{0x81, sa_status::no_records, 8, 0x10003, record()}));
    // A failed Set returned as Set|0x80.
    write(dir, "setresp-denied",
          sa::encode_mcmember_mad(McMemberMad{0x82, sa_status::denied, 9, 0x130c7, record()}));
    // A request, not a response, and a truncated MAD.
    const auto req = sa::encode_mcmember_request(SaMethod::set, record(), 0x130c7, 10);
    write(dir, "set-request", req);
    write(dir, "truncated-header", std::span(req).first(20));
}

void sminfo_seeds(const fs::path &dir) {
    using sa::SmInfoMad;
    sa::SmInfoRecord master{1, 0x0002c90300001234, 0, 1234, 15, sa::sm_state::master};
    write(dir, "master", sa::encode_sminfo_mad(SmInfoMad{0x81, 0, 1, 0, master}));
    sa::SmInfoRecord standby{5, 0x0002c90300005678, 0, 99, 3, sa::sm_state::standby};
    write(dir, "standby", sa::encode_sminfo_mad(SmInfoMad{0x81, 0, 2, 0x5, standby}));
    write(dir, "no-records",
          sa::encode_sminfo_mad(SmInfoMad{0x81, sa_status::no_records, 3, 0x1, {}}));
    write(dir, "get-request", sa::encode_sminfo_get(master, sa::sminfo_field::lid, 4));
}

void portinfo_seeds(const fs::path &dir) {
    // PortInfo of an active port (LID 3, SM LID 1) on ibsim, as smpdump printed it; the same
    // bytes as tests/unit/port/test_portinfo_smp.cpp's kH2Active.
    const std::uint8_t active[64] = {
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x50, 0xc0, 0x48, 0x00, 0x00,
        0x0f, 0xf9, 0x01, 0x02, 0x1f, 0x02, 0x74, 0x52, 0x00, 0x11, 0x40, 0x40, 0x00,
        0x08, 0x08, 0x04, 0xe0, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x1f,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00};
    port::SmpBuf m = port::encode_portinfo_get(0x0000000100000042, 1);
    m[3] = 0x81; // GetResp
    m[4] = 0x80; // D bit: the SMP is returning
    std::copy(std::begin(active), std::end(active), m.begin() + 64);
    write(dir, "getresp-active", m);
    write(dir, "portinfo-attribute", active);
    port::SmpBuf refused = m;
    refused[5] = 0x1c; // status: invalid attribute or modifier
    write(dir, "getresp-refused", refused);
    write(dir, "get-request", port::encode_portinfo_get(7, 1));
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    const fs::path root = argv[1];
    mcmember_seeds(root / "sa_mcmember");
    sminfo_seeds(root / "sa_sminfo");
    portinfo_seeds(root / "portinfo");
    return 0;
}
