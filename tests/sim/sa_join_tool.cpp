// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-sim-join: sends one SA MCMemberRecord Set (join/create) or Delete (leave) from the
// node it runs on, and prints the SA's answer. A test tool for the sim tier: it gives the
// harness's SA assertions (Fabric::sa_join_state, sa_group) a positive path that does not
// depend on the daemon's own SA client. infiniband-diags has no join tool.
//
//   mcastd-sim-join join  MGID JOINSTATE [qkey=N] [pkey=N] [sl=N] [flow_label=N] [tclass=N]
//                                        [hop_limit=N]
//   mcastd-sim-join leave MGID JOINSTATE [timeout_ms=N]
//   mcastd-sim-join get   MGID PORTGID [MGID PORTGID ...]
//
// `get` asks the SA, per pair, for that port's membership (a trusted Get with mask
// MGID|PortGID, SM_Key 1: the per-port Get of doc/testbed.md §9, exact and never cut short like
// saquery's GetTable). All Gets are in flight together; one line per pair, in argument order:
// "MGID PORTGID join_state=0x1 mlid=0xc001", "MGID PORTGID none" (status 0x0300), or
// "MGID PORTGID status=0x...." / "... unanswered". Exit 0 when every pair got an answer of
// status 0 or 0x0300, 3 when some did not.
//
// join and leave wait timeout_ms (3000) for the answer.
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

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/gid.hpp"

namespace {

constexpr std::uint32_t kQp1Qkey = 0x80010000;
constexpr int kTimeoutMs = 3000;

int usage(const char *argv0) {
    std::fprintf(stderr,
                 "usage: %s join|leave MGID JOINSTATE [qkey=N] [pkey=N] [sl=N] [flow_label=N]"
                 " [tclass=N] [hop_limit=N] [timeout_ms=N]\n       %s get MGID PORTGID [MGID PORTGID ...]\n",
                 argv0, argv0);
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


// The node's port with an SA agent registered on it, released on every return path
// (umad_get_port allocates the P_Key table; LeakSanitizer would turn a leak into exit 1
// and drop the unflushed tail of stdout).
struct SaPort {
    umad_port_t port{};
    int fd = -1;
    int agent = -1;

    SaPort() = default;
    SaPort(const SaPort &) = delete;
    SaPort &operator=(const SaPort &) = delete;
    ~SaPort() {
        if (agent >= 0)
            umad_unregister(fd, agent);
        if (fd >= 0)
            umad_close_port(fd);
        umad_release_port(&port);
    }
};

// 0, or the exit code after printing why it failed.
int open_sa(SaPort &sp) {
    if (int rc = umad_init(); rc < 0)
        return fail("umad_init", rc);
    // The simulated node has one CA with one port; NULL/0 picks it (on hardware: the first
    // active port).
    if (int rc = umad_get_port(nullptr, 0, &sp.port); rc < 0)
        return fail("umad_get_port", rc);
    sp.fd = umad_open_port(sp.port.ca_name, sp.port.portnum);
    if (sp.fd < 0)
        return fail("umad_open_port", sp.fd);
    sp.agent = umad_register(sp.fd, UMAD_CLASS_SUBN_ADM, UMAD_SA_CLASS_VERSION, 0, nullptr);
    if (sp.agent < 0)
        return fail("umad_register", sp.agent);
    return 0;
}

void mcmr_header(umad_sa_packet *sa, int method, std::uint32_t tid) {
    sa->mad_hdr.base_version = UMAD_BASE_VERSION;
    sa->mad_hdr.mgmt_class = UMAD_CLASS_SUBN_ADM;
    sa->mad_hdr.class_version = UMAD_SA_CLASS_VERSION;
    sa->mad_hdr.method = static_cast<std::uint8_t>(method);
    sa->mad_hdr.tid = htobe64(tid);
    sa->mad_hdr.attr_id = htobe16(UMAD_SA_ATTR_MCMEMBER_REC);
}

// SA MADs go to the SM's LID on QP1. The P_Key index and Q_Key are not simulated, but are
// what hardware needs: index 0 (holding 0xFFFF on a default port) and the QP1 Q_Key.
void address_sa(void *umad, const umad_port_t &port) {
    umad_set_addr(umad, static_cast<int>(port.sm_lid), 1, static_cast<int>(port.sm_sl), kQp1Qkey);
    umad_set_pkey(umad, 0);
}

// Low 32 bits of a TID are ours (the transport rewrites the upper ones): distinct per run.
std::uint32_t tid_base() {
    return (static_cast<std::uint32_t>(::getpid()) << 12) ^
           static_cast<std::uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

// `get MGID PORTGID ...`: every per-port Get in flight at once, answers in argument order.
int run_get(int argc, char **argv) {
    if (argc < 4 || (argc - 2) % 2 != 0)
        return usage(argv[0]);
    std::vector<std::pair<mcastd::Gid, mcastd::Gid>> pairs;
    for (int i = 2; i + 1 < argc; i += 2) {
        auto m = mcastd::parse_gid(argv[i]), g = mcastd::parse_gid(argv[i + 1]);
        if (!m || !g)
            return usage(argv[0]);
        pairs.emplace_back(*m, *g);
    }
    SaPort sp;
    if (int rc = open_sa(sp); rc != 0)
        return rc;
    // Low TID bits: the pair's index, so answers map back without a table.
    const std::uint32_t base = tid_base() & ~0xfffffu;
    std::vector<std::uint8_t> buf(umad_size() + 256);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        std::memset(buf.data(), 0, buf.size());
        auto *sa = static_cast<umad_sa_packet *>(umad_get_mad(buf.data()));
        mcmr_header(sa, UMAD_METHOD_GET, base | static_cast<std::uint32_t>(i));
        // OpenSM's default SM_Key: trusted, so PortGID and JoinState are not zeroed.
        const std::uint64_t sm_key = htobe64(1);
        std::memcpy(sa->sm_key, &sm_key, sizeof sm_key);
        sa->comp_mask = htobe64(UMAD_SA_MCM_COMP_MASK_MGID | UMAD_SA_MCM_COMP_MASK_PORT_GID);
        auto *rec = reinterpret_cast<umad_sa_mcmember_record *>(sa->data);
        std::memcpy(rec->mgid, pairs[i].first.data(), 16);
        std::memcpy(rec->portgid, pairs[i].second.data(), 16);
        address_sa(buf.data(), sp.port);
        if (int rc = umad_send(sp.fd, sp.agent, buf.data(), 256, kTimeoutMs, 0); rc < 0)
            return fail("umad_send", rc);
    }
    std::vector<std::string> answer(pairs.size());
    std::size_t answered = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
    while (answered < pairs.size()) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            break;
        int len = 256;
        int rc = umad_recv(sp.fd, buf.data(), &len, static_cast<int>(left.count()));
        if (rc < 0) {
            if (rc == -ETIMEDOUT || rc == -EAGAIN || rc == -EINTR)
                continue;
            return fail("umad_recv", rc);
        }
        const auto *resp = static_cast<const umad_sa_packet *>(umad_get_mad(buf.data()));
        const auto tid = static_cast<std::uint32_t>(be64toh(resp->mad_hdr.tid));
        const std::size_t i = tid & 0xfffffu;
        if ((tid & ~0xfffffu) != base || i >= pairs.size() || !answer[i].empty() ||
            umad_status(buf.data()) != 0)
            continue; // not ours, a duplicate, or a bounce: it stays unanswered
        const auto *r = reinterpret_cast<const umad_sa_mcmember_record *>(resp->data);
        const std::uint16_t status = be16toh(resp->mad_hdr.status);
        char text[64];
        if (status == 0) {
            std::uint8_t scope = 0, state = 0;
            umad_sa_mcm_get_scope_state(r->scope_state, &scope, &state);
            std::snprintf(text, sizeof text, "join_state=0x%x mlid=0x%04x", state, be16toh(r->mlid));
        } else {
            std::snprintf(text, sizeof text, status == (UMAD_SA_STATUS_NO_RECORDS << 8) ? "none" : "status=0x%04x",
                          status);
        }
        answer[i] = text;
        ++answered;
    }
    for (std::size_t i = 0; i < pairs.size(); ++i)
        std::printf("%s %s %s\n", mcastd::format_gid(pairs[i].first).c_str(),
                    mcastd::format_gid(pairs[i].second).c_str(),
                    answer[i].empty() ? "unanswered" : answer[i].c_str());
    const bool all = std::all_of(answer.begin(), answer.end(), [](const std::string &a) {
        return !a.empty() && !a.starts_with("status=");
    });
    return all ? 0 : 3;
}

} // namespace

int main(int argc, char **argv) {
    if (argc >= 2 && std::string(argv[1]) == "get")
        return run_get(argc, argv);
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
                                                   {"tclass", 0xff},      {"hop_limit", 0xff},
                                                   {"timeout_ms", 60000}};
    for (int i = 4; i < argc; ++i) {
        std::string kv = argv[i];
        auto eq = kv.find('=');
        unsigned long v = 0;
        if (eq == std::string::npos || !max.count(kv.substr(0, eq)) ||
            !parse_uint(kv.c_str() + eq + 1, max.at(kv.substr(0, eq)), v))
            return usage(argv[0]);
        opt[kv.substr(0, eq)] = v;
    }

    SaPort sp;
    if (int rc = open_sa(sp); rc != 0)
        return rc;
    umad_port_t &port = sp.port;
    const int fd = sp.fd, agent = sp.agent;

    std::vector<std::uint8_t> send_buf(umad_size() + 256);
    auto *sa = static_cast<umad_sa_packet *>(umad_get_mad(send_buf.data()));
    std::memset(sa, 0, sizeof *sa);
    const std::uint32_t tid = tid_base();
    mcmr_header(sa, op == "join" ? int{UMAD_METHOD_SET} : int{UMAD_SA_METHOD_DELETE}, tid);
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

    address_sa(send_buf.data(), port);
    if (int rc = umad_send(fd, agent, send_buf.data(), 256, kTimeoutMs, 0); rc < 0)
        return fail("umad_send", rc);

    std::vector<std::uint8_t> recv_buf(send_buf.size());
    const auto timeout = std::chrono::milliseconds(opt.count("timeout_ms") ? opt["timeout_ms"] : kTimeoutMs);
    auto deadline = std::chrono::steady_clock::now() + timeout;
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
        return status == 0 ? 0 : 1;
    }
}
