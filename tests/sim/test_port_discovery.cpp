// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// daemon/port against the simulated port: discovery (through mcastd-port-probe, run attached
// to a node) compared with what infiniband-diags report, and the PortInfo decoder fed with
// the raw attribute `smpdump` reads, compared with smpquery's own decoding of it.
#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "common/record.hpp"
#include "port/portinfo_smp.hpp"
#include "sim/fabric.hpp"
#include "sim/tool_output.hpp"

namespace mcastd::sim {
namespace {

using namespace std::chrono_literals;
using Fields = std::map<std::string, std::string>;

// One "k=v k=v ..." line per port, as mcastd-port-probe prints.
std::vector<Fields> probe(Fabric &f, const std::string &node, std::vector<std::string> args = {},
                          int want_exit = 0, std::string *err = nullptr) {
    args.insert(args.begin(), MCASTD_PORT_PROBE);
    auto r = f.run_on(node, args);
    EXPECT_EQ(r.exit_code, want_exit) << r.err;
    if (err)
        *err = r.err;
    std::vector<Fields> ports;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        Fields kv;
        std::istringstream words(line);
        for (std::string w; words >> w;)
            if (auto eq = w.find('='); eq != std::string::npos)
                kv[w.substr(0, eq)] = w.substr(eq + 1);
        ports.push_back(kv);
    }
    return ports;
}

std::uint64_t num(const Fields &kv, const std::string &key) {
    auto it = kv.find(key);
    if (it == kv.end())
        throw std::runtime_error("no " + key);
    auto v = parse_number(it->second);
    if (!v)
        throw std::runtime_error(key + "=" + it->second);
    return *v;
}

// `ibstat ibsim0 1` prints "Key: value" lines (no dot leaders).
Fields ibstat_port(Fabric &f, const std::string &node) {
    auto r = f.run_on(node, {"ibstat", "ibsim0", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Fields kv;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
        if (auto colon = line.find(": "); colon != std::string::npos)
            kv[line.substr(0, colon)] = line.substr(colon + 2);
    return kv;
}

ToolRecord smpquery_portinfo(Fabric &f, const std::string &node) {
    auto r = f.run_on(node, {"smpquery", "-D", "portinfo", "0", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return parse_fields(r.out);
}

// `smpdump -D 0 0x15 1`: the 64-byte PortInfo as rows of 16-bit hex words, then a status line.
std::vector<std::uint8_t> smpdump_portinfo(Fabric &f, const std::string &node) {
    auto r = f.run_on(node, {"smpdump", "-D", "0", "0x15", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::uint8_t> bytes;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("SMP status", 0) == 0)
            break;
        std::istringstream words(line);
        for (std::string w; words >> w;) {
            auto v = parse_number("0x" + w, 0xffff);
            if (!v || w.size() != 4)
                throw std::runtime_error("smpdump word '" + w + "' in: " + r.out);
            bytes.push_back(static_cast<std::uint8_t>(*v >> 8));
            bytes.push_back(static_cast<std::uint8_t>(*v));
        }
    }
    return bytes;
}

TEST(PortDiscovery, ProbeOnH2MatchesTheDiagTools) {
    Fabric f;
    auto ports = probe(f, "H2");
    ASSERT_EQ(ports.size(), 1u); // umad2sim shows one device with the node's port 1
    const auto &p = ports[0];
    EXPECT_EQ(p.at("device"), "ibsim0");
    EXPECT_EQ(num(p, "port"), 1u);

    // Identity as the port itself answers SMPs.
    EXPECT_EQ(num(p, "port_guid"), f.port_guid("H2"));
    EXPECT_EQ(parse_gid(p.at("port_gid")), f.port_gid("H2"));
    EXPECT_EQ(num(p, "lid"), f.lid("H2"));

    // Live PortInfo (nothing changed since the probe's snapshot was taken).
    auto pi = smpquery_portinfo(f, "H2");
    EXPECT_EQ(num(p, "sm_lid"), field_number(pi, "smlid"));
    EXPECT_EQ(num(p, "sm_sl"), field_number(pi, "smsl"));
    EXPECT_EQ(num(p, "lmc"), field_number(pi, "lmc"));
    EXPECT_EQ(num(p, "gid_prefix"), field_number(pi, "gidprefix"));
    EXPECT_EQ(num(p, "capability_mask"), field_number(pi, "capmask"));
    EXPECT_EQ(pi.at("linkstate"), "Active");
    EXPECT_EQ(num(p, "state"), 4u);

    // ibstat reads the same sysfs snapshot through libibumad.
    auto st = ibstat_port(f, "H2");
    EXPECT_EQ(num(p, "lid"), *parse_number(st.at("Base lid")));
    EXPECT_EQ(num(p, "sm_lid"), *parse_number(st.at("SM lid")));
    EXPECT_EQ(num(p, "port_guid"), *parse_number(st.at("Port GUID")));
    EXPECT_EQ(num(p, "rate"), *parse_number(st.at("Rate")));
    EXPECT_EQ(num(p, "capability_mask"), *parse_number(st.at("Capability mask")));
    EXPECT_EQ(p.at("link_layer"), st.at("Link layer"));

    // The P_Key table: what smpquery reads starts with what sysfs shows, and the SA P_Key
    // index points at the default full-member P_Key.
    auto pk = f.run_on("H2", {"smpquery", "-D", "pkeys", "0", "1"});
    ASSERT_EQ(pk.exit_code, 0) << pk.err;
    std::string keys = p.at("pkeys");
    std::vector<std::uint64_t> table;
    for (std::size_t pos = 0; pos <= keys.size();) {
        auto comma = std::min(keys.find(',', pos), keys.size());
        table.push_back(*parse_number(keys.substr(pos, comma - pos), 0xffff));
        pos = comma + 1;
    }
    ASSERT_FALSE(table.empty());
    std::istringstream pk_words(pk.out);
    std::vector<std::uint64_t> smp_table;
    for (std::string w; pk_words >> w;)
        if (w.rfind("0x", 0) == 0)
            smp_table.push_back(*parse_number(w, 0xffff));
    ASSERT_GE(smp_table.size(), table.size()) << pk.out;
    EXPECT_TRUE(std::equal(table.begin(), table.end(), smp_table.begin()));
    EXPECT_EQ(table.at(num(p, "sa_pkey_index")), 0xffffu);
}

TEST(PortDiscovery, SinglePortLookupAndErrors) {
    Fabric f;
    auto all = probe(f, "H3");
    auto one = probe(f, "H3", {"ibsim0", "1"});
    ASSERT_EQ(all.size(), 1u);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0], all[0]);
    EXPECT_EQ(num(one[0], "port_guid"), f.port_guid("H3"));

    std::string err;
    EXPECT_TRUE(probe(f, "H3", {"ibsim0", "2"}, 1, &err).empty());
    EXPECT_NE(err.find("error: no-such-port: cannot read ibsim0 port 2"), std::string::npos) << err;
    EXPECT_TRUE(probe(f, "H3", {"mlx5_0", "1"}, 1, &err).empty());
    EXPECT_NE(err.find("error: no-such-device"), std::string::npos) << err;
}

TEST(PortDiscovery, ReportsAPortThatIsDown) {
    Fabric f;
    f.console("Unlink \"H3\"");
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (smpquery_portinfo(f, "H3").at("linkstate") != "Down") {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "H3 never went down";
        std::this_thread::sleep_for(50ms);
    }
    // A process started now takes its sysfs snapshot with the port down.
    auto ports = probe(f, "H3");
    ASSERT_EQ(ports.size(), 1u);
    EXPECT_EQ(num(ports[0], "state"), 1u);      // DOWN
    EXPECT_EQ(num(ports[0], "phys_state"), 2u); // Polling
}

// Decodes the attribute smpdump read and compares each field with smpquery's decoding.
void expect_decoder_matches_smpquery(Fabric &f, const std::string &node) {
    auto bytes = smpdump_portinfo(f, node);
    ASSERT_EQ(bytes.size(), port::kPortInfoSize);
    auto decoded = port::decode_portinfo(bytes);
    ASSERT_TRUE(std::holds_alternative<port::PortInfo>(decoded))
        << std::get<port::SmpError>(decoded).message;
    const auto &pi = std::get<port::PortInfo>(decoded);
    auto q = smpquery_portinfo(f, node);

    EXPECT_EQ(pi.gid_prefix, field_number(q, "gidprefix"));
    EXPECT_EQ(pi.lid, field_number(q, "lid"));
    EXPECT_EQ(pi.master_sm_lid, field_number(q, "smlid"));
    EXPECT_EQ(pi.capability_mask, field_number(q, "capmask"));
    EXPECT_EQ(pi.local_port_num, field_number(q, "localport"));
    EXPECT_EQ(pi.lmc, field_number(q, "lmc"));
    EXPECT_EQ(pi.master_sm_sl, field_number(q, "smsl"));
    EXPECT_EQ(pi.client_reregister, field_number(q, "clientreregister") != 0);
    EXPECT_EQ(pi.subnet_timeout, field_number(q, "subnettimeout"));
    EXPECT_EQ(pi.capability_mask2, field_number(q, "capabilitymask2"));
    // smpquery prints MTUs in bytes and states by name.
    EXPECT_EQ(std::to_string(mtu_bytes(pi.neighbor_mtu)), q.at("neighbormtu"));
    EXPECT_EQ(std::to_string(mtu_bytes(pi.mtu_cap)), q.at("mtucap"));
    const std::map<std::string, std::uint8_t> link_state{
        {"Down", 1}, {"Initialize", 2}, {"Armed", 3}, {"Active", 4}};
    const std::map<std::string, std::uint8_t> phys_state{
        {"Sleep", 1}, {"Polling", 2}, {"Disabled", 3}, {"PortConfigurationTraining", 4},
        {"LinkUp", 5}, {"LinkErrorRecovery", 6}, {"PhyTest", 7}};
    ASSERT_TRUE(link_state.count(q.at("linkstate"))) << q.at("linkstate");
    ASSERT_TRUE(phys_state.count(q.at("physlinkstate"))) << q.at("physlinkstate");
    EXPECT_EQ(pi.port_state, link_state.at(q.at("linkstate")));
    EXPECT_EQ(pi.phys_state, phys_state.at(q.at("physlinkstate")));
}

TEST(PortInfoDecoder, MatchesSmpqueryOnTheSimulatedPort) {
    Fabric f;
    expect_decoder_matches_smpquery(f, "H2");
    expect_decoder_matches_smpquery(f, "H1"); // the SM's own port: SMLid is its own LID
    f.console("Unlink \"H3\"");
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (smpquery_portinfo(f, "H3").at("linkstate") != "Down") {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "H3 never went down";
        std::this_thread::sleep_for(50ms);
    }
    expect_decoder_matches_smpquery(f, "H3");
}

} // namespace
} // namespace mcastd::sim
