// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// mcastd-bench-json: the protocol's JSON both ways.
//
// Encoding: what the daemon's hand-written writer (common/json_writer.hpp) buys over
// nlohmann-json, on the replies it sends most and largest:
//
//  1. a join reply: {"id":..,"ok":true,"result":{"membership":..,"record":{...}}};
//  2. a list reply with 1,000 groups (two ports of 500, two members each).
//
// Each is encoded by proto::encode_reply (JsonWriter) and by an equivalent encoder built on
// nlohmann::ordered_json and dump(..., error_handler_t::replace) (bench_json_nlohmann.hpp),
// first checked to write the same bytes, then timed for at least half a second each.
//
// Decoding: what a held join's round trip spends reading JSON. The client's decode of a join
// reply (decode_incoming, then decode_join_result on the result it carries), the daemon's
// decode of a join request, and json_check::parse (common/json_parse.cpp) against
// nlohmann's json::parse on the same reply text.
//
// It prints figures; it does not pass or fail on them.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_args.hpp"
#include "bench_json_nlohmann.hpp"
#include "common/gid.hpp"
#include "common/json_check.hpp"
#include "protocol.hpp"

using namespace mcastd;
using namespace mcastd::proto;
using Clock = std::chrono::steady_clock;
namespace nl = bench_nlohmann;

namespace {

constexpr double kMinSeconds = 0.5;

Gid gid(const char *text) { return parse_gid(text).value(); }

JoinResult join_result() {
    JoinResult r;
    r.membership = 7;
    McRecord &rec = r.record;
    rec.mgid = gid("ff15:a01b::1:2");
    rec.port_gid = gid("fe80::2:c903:10:3");
    rec.qkey = 0x12345678;
    rec.mlid = 0xc001;
    rec.mtu = 5; // 4096
    rec.tclass = 0;
    rec.pkey = 0xffff;
    rec.rate = 16; // 100 Gb/s
    rec.sl = 0;
    rec.flow_label = 0;
    rec.hop_limit = 0;
    rec.scope = 5;
    rec.join_state = join::full;
    return r;
}

// Process names as /proc/<pid>/comm shows them: at most 15 bytes, cut where the kernel cut
// them, so one of them ends in half a UTF-8 sequence (written as U+FFFD).
constexpr const char *kComms[] = {
    "ib_send_bw",     "market-feed",   "mpirun",          "python3",
    "java",           "orted",         "md_handler#3",    "feed-données-r",
    "ptp-mcast-rx",   "kafka-broker",  "réseau-mcast-\xc3", "srp_daemon",
};

ListResult list_result(std::size_t groups_total) {
    ListResult r;
    std::uint64_t membership = 1000;
    for (unsigned port = 0; port < 2; ++port) {
        PortGroups pg;
        pg.device = port == 0 ? "mlx5_0" : "mlx5_1";
        pg.port = 1;
        pg.port_gid = make_gid(0xfe80000000000000ULL, 0x0002c90300a1b2c0ULL + port);
        for (std::size_t i = 0; i < groups_total / 2; ++i) {
            GroupInfo g;
            g.mgid = make_gid(0xff15a01b00000000ULL, 0x0000000100000000ULL + i);
            g.mlid = static_cast<std::uint16_t>(0xc000 + i);
            g.qkey = i % 3 == 0 ? 0x80010000u : 0x12345678u;
            g.busy = i % 97 == 0;
            g.held = i % 5 == 4 ? join::send_only_full : join::full;
            g.foreign = i % 50 == 0 ? join::full : 0;
            g.counts = {2, 0, 0, 0};
            for (unsigned k = 0; k < 2; ++k) {
                MemberInfo m;
                m.membership = membership++;
                m.join_state = g.held;
                m.state = (i + k) % 41 == 0 ? "pending" : "active";
                m.pid = static_cast<pid_t>(4000 + (i * 7 + k * 13) % 30000);
                m.uid = (i + k) % 4 == 0 ? 0 : 1000 + static_cast<uid_t>(i % 8);
                m.comm = kComms[(i + 5 * k) % std::size(kComms)];
                g.members.push_back(std::move(m));
            }
            pg.groups.push_back(std::move(g));
        }
        r.ports.push_back(std::move(pg));
    }
    return r;
}

// Prints where `a` and `b` first differ; true when they are the same.
bool same(const char *what, const std::string &a, const std::string &b) {
    if (a == b) {
        std::printf("  %-44s byte-identical (%zu bytes)\n", what, a.size());
        return true;
    }
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i])
        ++i;
    const std::size_t from = i < 40 ? 0 : i - 40;
    std::printf("  %-44s DIFFER at byte %zu (sizes %zu and %zu)\n", what, i, a.size(), b.size());
    std::printf("    JsonWriter: ...%s...\n", a.substr(from, 80).c_str());
    std::printf("    nlohmann:   ...%s...\n", b.substr(from, 80).c_str());
    return false;
}

// Seconds per call of f, over enough calls to take kMinSeconds.
template <class F> double seconds_per_call(F f) {
    std::size_t sink = f().size(); // warm-up
    std::size_t n = 1;
    while (true) {
        const auto t0 = Clock::now();
        for (std::size_t i = 0; i < n; ++i)
            sink += f().size();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (s >= kMinSeconds) {
            if (sink == 0)
                std::printf("(empty output)\n"); // keeps `sink`, and so the calls, alive
            return s / static_cast<double>(n);
        }
        // Aim 20% past the minimum once the estimate means something, else grow fast.
        n = s > 0.01 ? static_cast<std::size_t>(static_cast<double>(n) * kMinSeconds * 1.2 / s) + 1
                     : n * 8;
    }
}

struct Figures {
    double writer, nlohmann;
};

Figures time_both(const char *unit, double scale, auto writer, auto nlohmann) {
    Figures f{seconds_per_call(writer), seconds_per_call(nlohmann)};
    std::printf("  %-44s %10.1f %s\n", "proto::encode_reply (JsonWriter)", f.writer * scale, unit);
    std::printf("  %-44s %10.1f %s  (%.2fx JsonWriter's time)\n", "nlohmann ordered_json + dump",
                f.nlohmann * scale, unit, f.nlohmann / f.writer);
    return f;
}

// Figures of the decoders, per call, in ns.
void time_decoders(const std::string &join_reply, const std::string &join_request) {
    // Each call returns something of the decoded value, so that nothing is optimised away.
    const auto client = [&] {
        auto in = decode_incoming(join_reply);
        const auto &reply = std::get<Reply>(std::get<Incoming>(in));
        auto r = decode_join_result(std::get<mcastd::json_check::OwnedValue>(reply.body).get());
        return std::to_string(std::get<JoinResult>(r).record.mlid);
    };
    const auto daemon = [&] {
        auto r = decode_request(join_request);
        return std::to_string(std::get<RequestEnvelope>(r).id);
    };
    // Each parse returns the size of its top object, read from the value it built.
    const auto ours = [&] { return std::to_string(json_check::parse(join_reply).value().size()); };
    const auto library = [&] { return std::to_string(nlohmann::json::parse(join_reply).size()); };
    std::printf("  %-52s %8.0f ns\n", "client: decode_incoming + decode_join_result",
                seconds_per_call(client) * 1e9);
    std::printf("  %-52s %8.0f ns  (%zu-byte request)\n", "daemon: decode_request (join)",
                seconds_per_call(daemon) * 1e9, join_request.size());
    const double o = seconds_per_call(ours), l = seconds_per_call(library);
    std::printf("  %-52s %8.0f ns\n", "json_check::parse of the reply", o * 1e9);
    std::printf("  %-52s %8.0f ns  (%.2fx json_check::parse's time)\n",
                "nlohmann json::parse of the reply", l * 1e9, l / o);
}

} // namespace

int main(int argc, char **argv) {
    mcastd::bench::CommandLine(argc, argv, "mcastd-bench-json", "\nThe protocol's JSON encoders and decoders beside nlohmann-json.\n").none();
    const std::uint64_t id = 123456;
    const JoinResult join = join_result();
    const ListResult list = list_result(1000);
    const Result join_variant = join, list_variant = list;

    std::printf("output check\n");
    const std::string join_w = encode_reply(id, join_variant);
    const std::string list_w = encode_reply(id, list_variant);
    same("join reply", join_w, nl::encode_join_reply(id, join));
    same("list reply", list_w, nl::encode_list_reply(id, list));
    std::printf("  (the nlohmann encoder writes an integral double as an integer, as JsonWriter "
                "does; with\n   doubles passed through as doubles it differs only there:)\n");
    same("join reply, doubles as nlohmann writes them", join_w,
         nl::encode_join_reply_plain_doubles(id, join));
    {
        // Not in the timed data: half a 3-byte sequence. JsonWriter replaces each bad byte,
        // nlohmann the maximal invalid subpart (Unicode's recommended practice).
        ListResult edge = list_result(2);
        edge.ports.resize(1);
        edge.ports[0].groups[0].members[0].comm = "feed-\xe2\x82-x";
        same("edge case: comm with half of a 3-byte UTF-8", encode_reply(id, Result{edge}),
             nl::encode_list_reply(id, edge));
    }

    std::printf("\nencoding a join reply (%zu bytes), per reply\n", join_w.size());
    const Figures j = time_both(
        "ns", 1e9, [&] { return encode_reply(id, join_variant); },
        [&] { return nl::encode_join_reply(id, join); });

    std::printf("\nencoding a list reply, 1,000 groups, 2,000 members (%zu bytes), per reply\n",
                list_w.size());
    const Figures l = time_both(
        "us", 1e6, [&] { return encode_reply(id, list_variant); },
        [&] { return nl::encode_list_reply(id, list); });
    std::printf("\nJsonWriter speed-up over ordered_json: join %.2fx, list %.2fx\n",
                j.nlohmann / j.writer, l.nlohmann / l.writer);

    JoinRequest request;
    request.device = "ibsim0";
    request.port = 1;
    request.mgid = gid("ff15:a01b::1:2");
    std::printf("\ndecoding (each parse returns the size of what it built, to keep its result)\n");
    time_decoders(join_w, encode_request(42, Request{Join{request}}));
    return 0;
}
