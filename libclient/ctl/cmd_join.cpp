// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// rdma-mcastctl join: join a group through the daemon, print its record, optionally hold it.
#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <system_error>
#include <vector>
#include <optional>
#include <string>
#include <variant>

#include "commands.hpp"
#include "events.hpp"
#include "format.hpp"

namespace ctl {

namespace {

constexpr const char *kHelp =
    "Usage: rdma-mcastctl join --device DEV --port N (--mgid MGID... | --mgid-file FILE | --create [--scope S] |\n"
    "                          --name NAME | --ip ADDR...) [--gid-type roce_v1|roce_v2] [--ifname IF]\n"
    "                          [--join-state STATE] [--qkey Q] [--pkey P] [--sl S]\n"
    "                          [--mtu BYTES [--mtu-selector SEL]] [--rate RATE [--rate-selector SEL]]\n"
    "                          [--traffic-class T] [--flow-label F] [--hop-limit H] [--hold]\n"
    "\n"
    "Joins a multicast group through rdma-mcastd and prints its record. The membership lasts\n"
    "until rdma-mcastctl exits; with --hold it is kept, and events about it printed, until\n"
    "SIGINT or SIGTERM, then left. If rdma-mcastd restarts meanwhile, the membership is taken\n"
    "back (or, if the daemon lost it, joined again and its new record printed), and a line on\n"
    "stderr says so; with --no-reconnect the command ends there, with exit status 3. A\n"
    "membership the daemon released as it restarted (event lost, cancelled) is joined again\n"
    "the same way. If root evicts the membership (rdma-mcastctl evict), the command ends with\n"
    "exit status 4.\n"
    "\n"
    "On a RoCE port (link layer Ethernet) a group is an IP multicast group: --ip names it, and\n"
    "the daemon maps it to the MGID of the port's GID type (--gid-type, or the daemon's choice).\n"
    "\n"
    "Several --mgid or --ip, or --mgid-file, join many groups at once: every join is sent at once\n"
    "(pipelined; the library keeps at most 64 waiting at the daemon) and each record printed in\n"
    "the order given (with --json, one object per line). If any join fails, each failure is\n"
    "reported, the groups joined are left, and the command exits with the first failure's status.\n"
    "\n"
    "  --device DEV          the RDMA device, e.g. mlx5_0\n"
    "  --port N              its port (1..254)\n"
    "  --mgid MGID           the group, in IPv6 form (ff15::1:2); may be given several times\n"
    "  --mgid-file FILE      MGIDs to join, one per line (blank lines and # comments skipped;\n"
    "                        - is standard input)\n"
    "  --create              create a group with an MGID the SA assigns\n"
    "  --scope S             with --create: the MGID's scope (1..15; daemon default 5)\n"
    "  --name NAME           the named group NAME: the daemon maps it to an MGID, the same on\n"
    "                        every host configured alike (config groups.names)\n"
    "  --ip ADDR             on a RoCE port, the IP multicast group (239.1.2.3, ff0e::1:2); may\n"
    "                        be given several times\n"
    "  --gid-type TYPE       on a RoCE port, join with a GID of this type: roce_v1 or roce_v2\n"
    "  --ifname IF           on a RoCE port, hold the IP membership on interface IF of this\n"
    "                        network namespace (a container's), not the port's netdev by name\n"
    "  --join-state STATE    full (default), nonmember, sendonly-nonmember, sendonly-full\n"
    "  --qkey Q              assert the group's Q_Key (decimal or 0x hex)\n"
    "  --pkey P              assert its P_Key (0..0xffff)\n"
    "  --sl S                assert its service level (0..15)\n"
    "  --mtu BYTES           assert its MTU: 256, 512, 1024, 2048 or 4096\n"
    "  --mtu-selector SEL    how --mtu compares: exactly (default), greater, less, best\n"
    "  --rate RATE           assert its static rate, as enum ibv_rate (2..22; 3 = 10 Gb/s)\n"
    "  --rate-selector SEL   how --rate compares, as --mtu-selector\n"
    "  --traffic-class T     assert its traffic class (0..255)\n"
    "  --flow-label F        assert its flow label (0..0xfffff)\n"
    "  --hop-limit H         assert its hop limit (0..255)\n"
    "  --hold                keep the membership until interrupted; print events meanwhile\n"
    "  --json                print the record (and each event) as one JSON object per line\n"
    "  --socket PATH         the daemon's socket\n"
    "  --no-reconnect        a lost connection ends --hold, even across a daemon restart\n"
    "  -h, --help            this help\n";

enum : int {
    o_device = 1,
    o_port,
    o_mgid,
    o_mgid_file,
    o_create,
    o_scope,
    o_join_state,
    o_qkey,
    o_pkey,
    o_sl,
    o_mtu,
    o_mtu_selector,
    o_rate,
    o_rate_selector,
    o_tclass,
    o_flow_label,
    o_hop_limit,
    o_hold,
    o_name,
    o_ip,
    o_gid_type,
    o_ifname,
};

rdmamcast::Selector parse_selector(const std::string &text, const char *what) {
    if (text == "exactly")
        return rdmamcast::Selector::exactly;
    if (text == "greater")
        return rdmamcast::Selector::greater;
    if (text == "less")
        return rdmamcast::Selector::less;
    if (text == "best")
        return rdmamcast::Selector::best;
    throw UsageError(std::string(what) + " \"" + text +
                     "\" is not one of exactly, greater, less, best");
}

template <class T> T narrow(std::uint64_t v) { return static_cast<T>(v); }

// What the command line asked for, checked before anything is sent.
struct JoinArgs {
    std::optional<std::string> device, name, mgid_file, ifname;
    std::vector<std::string> mgids, ips;
    std::optional<rdmamcast::GidType> gid_type;
    std::optional<std::uint8_t> port, scope, sl, tclass, hop_limit, rate;
    std::optional<std::uint32_t> qkey, flow_label, mtu;
    std::optional<std::uint16_t> pkey;
    rdmamcast::JoinState join_state = rdmamcast::JoinState::full;
    rdmamcast::Selector mtu_sel = rdmamcast::Selector::exactly;
    rdmamcast::Selector rate_sel = rdmamcast::Selector::exactly;
    bool create = false, hold = false, mtu_sel_given = false, rate_sel_given = false;

    void set(int opt, const char *arg) {
        const std::string a = arg ? arg : "";
        switch (opt) {
        case o_device: device = a; break;
        case o_port: port = narrow<std::uint8_t>(parse_uint(a, 1, 254, "--port")); break;
        case o_mgid: mgids.push_back(a); break;
        case o_mgid_file: mgid_file = a; break;
        case o_create: create = true; break;
        case o_name: name = a; break;
        case o_ip: ips.push_back(a); break;
        case o_ifname: ifname = a; break; // the library checks it (and names what is wrong)
        case o_gid_type:
            gid_type = rdmamcast::roce_gid_type_from_string(a);
            if (!gid_type)
                throw UsageError("--gid-type \"" + a + "\" is not one of roce_v1, roce_v2");
            break;
        case o_scope: scope = narrow<std::uint8_t>(parse_uint(a, 1, 15, "--scope")); break;
        case o_join_state: {
            std::uint8_t bits = 0;
            if (rdmamcast_join_state_parse(a.c_str(), &bits) < 0)
                throw UsageError("--join-state \"" + a +
                                 "\" is not one of full, nonmember, sendonly-nonmember, "
                                 "sendonly-full");
            join_state = static_cast<rdmamcast::JoinState>(bits);
            break;
        }
        case o_qkey: qkey = narrow<std::uint32_t>(parse_uint(a, 0, 0xffffffff, "--qkey")); break;
        case o_pkey: pkey = narrow<std::uint16_t>(parse_uint(a, 0, 0xffff, "--pkey")); break;
        case o_sl: sl = narrow<std::uint8_t>(parse_uint(a, 0, 15, "--sl")); break;
        case o_mtu: {
            auto v = parse_uint(a, 256, 4096, "--mtu");
            if (v != 256 && v != 512 && v != 1024 && v != 2048 && v != 4096)
                throw UsageError("--mtu \"" + a + "\" is not one of 256, 512, 1024, 2048, 4096");
            mtu = narrow<std::uint32_t>(v);
            break;
        }
        case o_mtu_selector:
            mtu_sel = parse_selector(a, "--mtu-selector");
            mtu_sel_given = true;
            break;
        case o_rate: rate = narrow<std::uint8_t>(parse_uint(a, 2, 22, "--rate")); break;
        case o_rate_selector:
            rate_sel = parse_selector(a, "--rate-selector");
            rate_sel_given = true;
            break;
        case o_tclass: tclass = narrow<std::uint8_t>(parse_uint(a, 0, 255, "--traffic-class")); break;
        case o_flow_label:
            flow_label = narrow<std::uint32_t>(parse_uint(a, 0, 0xfffff, "--flow-label"));
            break;
        case o_hop_limit: hop_limit = narrow<std::uint8_t>(parse_uint(a, 0, 255, "--hop-limit")); break;
        case o_hold: hold = true; break;
        }
    }

    // The groups given: the IP groups of --ip, or the MGIDs of --mgid and --mgid-file, in the
    // order given, checked.
    std::vector<std::string> targets() const {
        for (const std::string &ip : ips) {
            const auto bytes = rdmamcast::ip_from_string(ip);
            if (!bytes)
                throw UsageError("--ip \"" + ip + "\" is not an IPv4 or IPv6 address");
            if (!rdmamcast::is_multicast_ip(*bytes))
                throw UsageError("--ip \"" + ip + "\" is not an IP multicast group (224.0.0.0/4 or ff00::/8)");
        }
        if (!ips.empty())
            return ips;
        std::vector<std::string> out = mgids;
        if (mgid_file) {
            std::ifstream file;
            if (*mgid_file != "-") {
                file.open(*mgid_file);
                if (!file)
                    throw UsageError("--mgid-file " + *mgid_file + ": " + std::strerror(errno));
            }
            std::istream &in = *mgid_file == "-" ? std::cin : file;
            for (std::string line; std::getline(in, line);) {
                line = line.substr(0, line.find('#'));
                const auto first = line.find_first_not_of(" \t\r"), last = line.find_last_not_of(" \t\r");
                if (first != std::string::npos)
                    out.push_back(line.substr(first, last - first + 1));
            }
            if (out.size() == mgids.size())
                throw UsageError("--mgid-file " + *mgid_file + " lists no MGID");
        }
        for (const std::string &m : out)
            if (!rdmamcast::gid_from_string(m))
                throw UsageError("--mgid \"" + m + "\" is not a GID in IPv6 form (ff15::1:2)");
        return out;
    }

    // The parameters of a join of `group` (an MGID, or with --ip an IP group), or (empty) of
    // --create or --name.
    rdmamcast::JoinParams params(const std::string &group = {}) const {
        if (!device)
            throw UsageError("--device is required");
        if (!port)
            throw UsageError("--port is required");
        if ((!mgids.empty() || mgid_file.has_value()) + create + name.has_value() + !ips.empty() != 1)
            throw UsageError("give exactly one of --mgid (or --mgid-file), --create, --name and --ip");
        if (scope && !create)
            throw UsageError("--scope applies only with --create");
        if (mtu_sel_given && !mtu)
            throw UsageError("--mtu-selector needs --mtu");
        if (rate_sel_given && !rate)
            throw UsageError("--rate-selector needs --rate");

        rdmamcast::JoinParams p(*device, *port);
        if (create)
            p.create(scope);
        else if (name)
            p.name(*name); // the daemon checks it (and names what is wrong with it)
        else if (!ips.empty())
            p.ip(group); // checked by targets()
        else
            p.mgid(group); // checked by targets()
        if (gid_type)
            p.gid_type(*gid_type);
        if (ifname)
            p.ifname(*ifname);
        p.join_state(join_state);
        if (qkey)
            p.qkey(*qkey);
        if (pkey)
            p.pkey(*pkey);
        if (sl)
            p.sl(*sl);
        if (tclass)
            p.traffic_class(*tclass);
        if (flow_label)
            p.flow_label(*flow_label);
        if (hop_limit)
            p.hop_limit(*hop_limit);
        if (mtu)
            p.mtu(*mtu, mtu_sel);
        if (rate)
            p.rate(*rate, rate_sel);
        return p;
    }
};

// Joins every group of `params` at once (asynchronous joins, pipelined by the library) and
// fills `held` in the same order. When any fails, each failure is reported on stderr, the
// groups joined are left (`held` is emptied), and the first failure is thrown.
void join_all(rdmamcast::Client &client, const std::vector<rdmamcast::JoinParams> &params,
              const std::vector<std::string> &mgids, std::vector<rdmamcast::Membership> &held) {
    std::vector<std::optional<rdmamcast::Error>> failed(params.size());
    std::size_t left = params.size();
    for (std::size_t i = 0; i < params.size(); ++i)
        client.join_async(params[i], [&, i](rdmamcast::JoinOutcome out) {
            if (auto *m = std::get_if<rdmamcast::Membership>(&out))
                held[i] = std::move(*m);
            else
                failed[i] = std::get<rdmamcast::Error>(std::move(out));
            --left;
        });
    while (left) {
        pollfd fd{client.event_fd(), POLLIN, 0};
        if (poll(&fd, 1, -1) < 0 && errno != EINTR)
            throw std::system_error(errno, std::generic_category(), "poll");
        while (auto ev = client.next_event()) // runs the callbacks; a restore may come first
            for (auto &m : held)
                m.update(*ev);
    }
    // The first failure is what the command ends with (its line comes from the caller); the
    // others are reported here, each with its MGID.
    std::optional<std::size_t> first;
    for (std::size_t i = 0; i < params.size(); ++i) {
        if (!failed[i])
            continue;
        if (!first)
            first = i;
        else
            std::fprintf(stderr, "rdma-mcastctl: join: %s: %s: %s\n", failed[i]->code_name().c_str(),
                         mgids[i].c_str(), failed[i]->what());
    }
    if (!first)
        return;
    for (auto &m : held)
        m.leave();
    const rdmamcast::Error &e = *failed[*first];
    throw rdmamcast::Error(e.result(), e.code(), mgids[*first] + ": " + e.what());
}

} // namespace

int cmd_join(Options &opts, int argc, char **argv) {
    JoinArgs args;
    const std::vector<option> longopts = {
        {"device", required_argument, nullptr, o_device},
        {"port", required_argument, nullptr, o_port},
        {"mgid", required_argument, nullptr, o_mgid},
        {"mgid-file", required_argument, nullptr, o_mgid_file},
        {"create", no_argument, nullptr, o_create},
        {"name", required_argument, nullptr, o_name},
        {"scope", required_argument, nullptr, o_scope},
        {"join-state", required_argument, nullptr, o_join_state},
        {"qkey", required_argument, nullptr, o_qkey},
        {"pkey", required_argument, nullptr, o_pkey},
        {"sl", required_argument, nullptr, o_sl},
        {"mtu", required_argument, nullptr, o_mtu},
        {"mtu-selector", required_argument, nullptr, o_mtu_selector},
        {"rate", required_argument, nullptr, o_rate},
        {"rate-selector", required_argument, nullptr, o_rate_selector},
        {"traffic-class", required_argument, nullptr, o_tclass},
        {"flow-label", required_argument, nullptr, o_flow_label},
        {"hop-limit", required_argument, nullptr, o_hop_limit},
        {"hold", no_argument, nullptr, o_hold},
        {"ip", required_argument, nullptr, o_ip},
        {"gid-type", required_argument, nullptr, o_gid_type},
        {"ifname", required_argument, nullptr, o_ifname},
    };
    if (!parse_options(opts, argc, argv, longopts,
                       [&](int opt, const char *arg) { args.set(opt, arg); })) {
        std::fputs(kHelp, stdout);
        return exit_ok;
    }
    // One join per MGID or IP group given (or the one of --create or --name), each with its
    // record.
    const std::vector<std::string> targets =
        args.mgids.empty() && !args.mgid_file && args.ips.empty() ? std::vector<std::string>{} : args.targets();
    std::vector<rdmamcast::JoinParams> params;
    if (targets.empty())
        params.push_back(args.params());
    for (const std::string &m : targets)
        params.push_back(args.params(m));

    std::optional<Signals> signals;
    if (args.hold)
        signals.emplace(); // before joining: see Signals
    auto client = connect(opts);
    std::vector<rdmamcast::Membership> held(params.size());
    auto print = [&](const rdmamcast::Membership &m) {
        if (opts.json)
            emit(membership_json(m.record(), m.id(), m.netdev()));
        else
            emit(record_text(m.record(), m.id(), m.netdev()));
    };
    if (params.size() == 1) {
        held[0] = client.join(params[0]);
        print(held[0]);
    } else {
        join_all(client, params, targets, held);
        for (const auto &m : held)
            print(m);
    }

    if (args.hold)
        pump_events(
            client, *signals,
            [&](const rdmamcast::Event &ev) {
                std::string netdev; // a restored RoCE membership's
                for (auto &m : held)
                    if (m.update(ev) && std::holds_alternative<rdmamcast::RestoredEvent>(ev))
                        netdev = m.netdev();
                if (opts.json)
                    emit(event_json(ev, netdev));
                else
                    emit(event_text(ev, netdev) + "\n");
                // Lost with `denied`: an administrator evicted it (rdma-mcastctl evict), and
                // it will not come back. Holding on would hold nothing.
                const auto *lost = std::get_if<rdmamcast::LostEvent>(&ev);
                if (lost && lost->code == RDMAMCAST_E_DENIED)
                    throw rdmamcast::Error(-EACCES, lost->code, lost->message);
                // Lost with `cancelled`: the daemon restarted and could not keep it (a RoCE
                // membership whose socket it could not keep); it will not come back by itself,
                // so it is joined again, as one the restart lost.
                if (lost && lost->code == RDMAMCAST_E_CANCELLED)
                    for (std::size_t i = 0; i < held.size(); ++i)
                        if (held[i] && held[i].id() == lost->membership) {
                            held[i] = client.join(params[i]);
                            std::fprintf(stderr, "rdma-mcastctl: %s: joining membership %llu again\n", argv[0],
                                         static_cast<unsigned long long>(lost->membership));
                            print(held[i]);
                        }
            },
            [&](const rdmamcast::ReconnectedEvent &r) {
                std::string again;
                for (std::size_t i = 0; i < held.size(); ++i) {
                    const std::uint64_t old = held[i].id();
                    held[i].update(r); // empties it when it was lost
                    if (held[i])
                        continue;
                    held[i] = client.join(params[i]);
                    again += (again.empty() ? "" : ", ") + std::to_string(old);
                    print(held[i]);
                }
                if (again.empty())
                    report_reconnect(argv[0], r);
                else
                    report_reconnect(argv[0], r, "; joining membership " + again + " again");
            });
    for (auto &m : held)
        m.leave();
    return exit_ok;
}

} // namespace ctl
