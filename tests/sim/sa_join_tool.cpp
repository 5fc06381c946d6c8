// mcastd-sim-join: sends one SA MCMemberRecord Set (join/create) or Delete (leave) from the
// node it runs on, and prints the SA's answer. A test tool for the sim tier: it gives the
// harness's SA assertions (Fabric::sa_join_state, sa_group) a positive path that does not
// depend on the daemon's own SA client. infiniband-diags has no join tool.
//
//   mcastd-sim-join join  MGID JOINSTATE [qkey=N] [pkey=N] [sl=N] [flow_label=N] [tclass=N]
//                                        [hop_limit=N]
//   mcastd-sim-join leave MGID JOINSTATE
//
// A join uses the create mask (0x130C7, plus HopLimit when given), so it creates the group
// when it does not exist; a leave uses 0x10003. Output: "key=value" lines of the response
// record plus "status=0x....". Exit 0 on SA status 0, 1 on another status, 3 when the SA did
// not answer (timeout or bounce), 2 on bad usage or a local failure.
#include <arpa/inet.h>
#include <endian.h>
#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_sa_mcm.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/gid.hpp"

namespace {

constexpr std::uint32_t kQp1Qkey = 0x80010000;
constexpr int kTimeoutMs = 3000;

int usage(const char *argv0) {
    std::fprintf(stderr,
                 "usage: %s join|leave MGID JOINSTATE [qkey=N] [pkey=N] [sl=N] [flow_label=N]"
                 " [tclass=N] [hop_limit=N]\n",
                 argv0);
    return 2;
}

int fail(const char *what, int rc) {
    std::fprintf(stderr, "error: %s: %s\n", what, std::strerror(rc < 0 ? -rc : rc));
    return 2;
}

bool parse_uint(const char *s, unsigned long max, unsigned long &out) {
    char *end = nullptr;
    errno = 0;
    out = std::strtoul(s, &end, 0);
    return *s && !*end && errno == 0 && out <= max;
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 4)
        return usage(argv[0]);
    std::string op = argv[1];
    if (op != "join" && op != "leave")
        return usage(argv[0]);
    auto mgid = mcastd::parse_gid(argv[2]);
    unsigned long join_state = 0;
    if (!mgid || !parse_uint(argv[3], 0xf, join_state))
        return usage(argv[0]);
    std::map<std::string, unsigned long> opt{{"qkey", 0}, {"pkey", 0xffff}, {"sl", 0},
                                             {"flow_label", 0}, {"tclass", 0}};
    const std::map<std::string, unsigned long> max{{"qkey", 0xffffffff}, {"pkey", 0xffff},
                                                   {"sl", 0xf},           {"flow_label", 0xfffff},
                                                   {"tclass", 0xff},      {"hop_limit", 0xff}};
    for (int i = 4; i < argc; ++i) {
        std::string kv = argv[i];
        auto eq = kv.find('=');
        unsigned long v = 0;
        if (eq == std::string::npos || !max.count(kv.substr(0, eq)) ||
            !parse_uint(kv.c_str() + eq + 1, max.at(kv.substr(0, eq)), v))
            return usage(argv[0]);
        opt[kv.substr(0, eq)] = v;
    }

    if (int rc = umad_init(); rc < 0)
        return fail("umad_init", rc);
    // The simulated node has one CA with one port; NULL/0 picks it (on hardware: the first
    // active port).
    umad_port_t port{};
    if (int rc = umad_get_port(nullptr, 0, &port); rc < 0)
        return fail("umad_get_port", rc);
    int fd = umad_open_port(port.ca_name, port.portnum);
    if (fd < 0)
        return fail("umad_open_port", fd);
    int agent = umad_register(fd, UMAD_CLASS_SUBN_ADM, UMAD_SA_CLASS_VERSION, 0, nullptr);
    if (agent < 0)
        return fail("umad_register", agent);

    std::vector<std::uint8_t> send_buf(umad_size() + 256);
    auto *sa = static_cast<umad_sa_packet *>(umad_get_mad(send_buf.data()));
    std::memset(sa, 0, sizeof *sa);
    // Low 32 bits of the TID are ours; the transport rewrites the upper ones.
    auto tid = static_cast<std::uint32_t>(
        (static_cast<std::uint32_t>(::getpid()) << 12) ^
        static_cast<std::uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
    sa->mad_hdr.base_version = UMAD_BASE_VERSION;
    sa->mad_hdr.mgmt_class = UMAD_CLASS_SUBN_ADM;
    sa->mad_hdr.class_version = UMAD_SA_CLASS_VERSION;
    sa->mad_hdr.method = static_cast<std::uint8_t>(op == "join" ? int{UMAD_METHOD_SET}
                                                                 : int{UMAD_SA_METHOD_DELETE});
    sa->mad_hdr.tid = htobe64(tid);
    sa->mad_hdr.attr_id = htobe16(UMAD_SA_ATTR_MCMEMBER_REC);
    std::uint64_t mask = UMAD_SA_MCM_COMP_MASK_MGID | UMAD_SA_MCM_COMP_MASK_PORT_GID |
                         UMAD_SA_MCM_COMP_MASK_JOIN_STATE;
    auto *rec = reinterpret_cast<umad_sa_mcmember_record *>(sa->data);
    std::memcpy(rec->mgid, mgid->data(), 16);
    std::memcpy(rec->portgid, &port.gid_prefix, 8); // both already big-endian
    std::memcpy(rec->portgid + 8, &port.port_guid, 8);
    rec->scope_state = umad_sa_mcm_set_scope_state(0, static_cast<std::uint8_t>(join_state));
    if (op == "join") {
        mask |= UMAD_SA_MCM_COMP_MASK_QKEY | UMAD_SA_MCM_COMP_MASK_TCLASS |
                UMAD_SA_MCM_COMP_MASK_PKEY | UMAD_SA_MCM_COMP_MASK_SL |
                UMAD_SA_MCM_COMP_MASK_FLOW_LABEL;
        rec->qkey = htobe32(static_cast<std::uint32_t>(opt["qkey"]));
        rec->pkey = htobe16(static_cast<std::uint16_t>(opt["pkey"]));
        rec->tclass = static_cast<std::uint8_t>(opt["tclass"]);
        std::uint8_t hop = 0;
        if (opt.count("hop_limit")) {
            mask |= UMAD_SA_MCM_COMP_MASK_HOP_LIMIT;
            hop = static_cast<std::uint8_t>(opt["hop_limit"]);
        }
        rec->sl_flow_hop = umad_sa_mcm_set_sl_flow_hop(static_cast<std::uint8_t>(opt["sl"]),
                                                       static_cast<std::uint32_t>(opt["flow_label"]),
                                                       hop);
    }
    sa->comp_mask = htobe64(mask);

    // SA MADs go to the SM's LID on QP1. The P_Key index and Q_Key are not simulated, but
    // are what hardware needs: index 0 (holding 0xFFFF on a default port) and the QP1 Q_Key.
    umad_set_addr(send_buf.data(), static_cast<int>(port.sm_lid), 1, static_cast<int>(port.sm_sl),
                  kQp1Qkey);
    umad_set_pkey(send_buf.data(), 0);
    if (int rc = umad_send(fd, agent, send_buf.data(), 256, kTimeoutMs, 0); rc < 0)
        return fail("umad_send", rc);

    std::vector<std::uint8_t> recv_buf(send_buf.size());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
    while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            std::printf("status=timeout\n");
            return 3;
        }
        int len = 256;
        int rc = umad_recv(fd, recv_buf.data(), &len, static_cast<int>(left.count()));
        if (rc < 0) {
            if (rc == -ETIMEDOUT || rc == -EAGAIN || rc == -EINTR)
                continue;
            return fail("umad_recv", rc);
        }
        auto *resp = static_cast<umad_sa_packet *>(umad_get_mad(recv_buf.data()));
        if (static_cast<std::uint32_t>(be64toh(resp->mad_hdr.tid)) != tid)
            continue; // not ours
        if (umad_status(recv_buf.data()) != 0) {
            std::printf("status=bounced umad_status=%d\n", umad_status(recv_buf.data()));
            return 3;
        }
        const auto *r = reinterpret_cast<const umad_sa_mcmember_record *>(resp->data);
        std::uint8_t sl = 0, hop = 0, scope = 0, state = 0;
        std::uint32_t flow = 0;
        umad_sa_mcm_get_sl_flow_hop(r->sl_flow_hop, &sl, &flow, &hop);
        umad_sa_mcm_get_scope_state(r->scope_state, &scope, &state);
        mcastd::Gid m{}, g{};
        std::memcpy(m.data(), r->mgid, 16);
        std::memcpy(g.data(), r->portgid, 16);
        std::uint16_t status = be16toh(resp->mad_hdr.status);
        std::printf("status=0x%04x\nmethod=0x%02x\nmgid=%s\nport_gid=%s\nmlid=0x%04x\n"
                    "qkey=0x%08x\npkey=0x%04x\nmtu=0x%02x\nrate=0x%02x\npkt_life=0x%02x\n"
                    "sl=%u\nflow_label=0x%x\nhop_limit=%u\ntclass=%u\nscope=0x%x\n"
                    "join_state=0x%x\nproxy_join=%u\n",
                    status, resp->mad_hdr.method, mcastd::format_gid(m).c_str(),
                    mcastd::format_gid(g).c_str(), be16toh(r->mlid), be32toh(r->qkey),
                    be16toh(r->pkey), r->mtu, r->rate, r->pkt_life, sl, flow, hop, r->tclass,
                    scope, state, (r->proxy_join & 0x80) ? 1u : 0u);
        umad_unregister(fd, agent);
        umad_close_port(fd);
        umad_release_port(&port);
        return status == 0 ? 0 : 1;
    }
}
