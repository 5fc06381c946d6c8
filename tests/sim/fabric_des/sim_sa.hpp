// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// SimSa: the subnet administrator of the fabric simulation, as a queueing model of OpenSM's SA
// behind the daemon's own transport interface (sa::MadTransport), one endpoint per host.
//
// What it models (README.md in this directory says why):
//  - Sets and Deletes wait in one FIFO served by one server, a fixed service time each (OpenSM
//    hands them to a dispatcher of its own with a single thread). They are never dropped.
//    Every copy is served, retransmits included (each try has its own TID, so to the SA they
//    are different requests), and each gets its answer.
//  - Gets wait in a second FIFO with its own server (OpenSM's general SA dispatcher). When a
//    Get arrives while more than one message waits there and the last one taken from that
//    queue had waited longer than `get_drop_after` (OpenSM's max_msg_fifo_timeout, 10 s), the
//    Get is dropped without an answer, as OpenSM does.
//  - The wire takes `wire_delay` each way; nothing is lost on it.
//  - Directed-route SMPs to the local port (the daemon's PortInfo polls) never reach the SA:
//    the host's own HCA answers them after `smp_delay`, ACTIVE with the SM at LID 1.
//  - Optionally, the kernel's MAD layer: ib_umad matches an answer to its send only while the
//    send's timeout_ms has not passed, so an answer later than that never reaches the daemon
//    (`kernel_drops_late`). umad2sim, which the ibsim test bed uses, ignores timeout_ms and
//    delivers every answer; that is the default here.
//
// Answers are real MADs: the request is read with the daemon's MAD codec, applied to a
// FakeSaState (the unit tests' model of OpenSM's MCMemberRecord rules), and the answer is
// encoded with the codec, so the real transaction layer and SaClient's validators see exactly
// what they would see from OpenSM. SMInfoRecord Gets are answered with one master SM.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/timers.hpp"
#include "fakes/fake_sa.hpp"
#include "sa/mad_transport.hpp"

namespace mcastd::des {

struct SimSaConfig {
    Duration set_service = std::chrono::microseconds(143); // 1/7000 s
    Duration get_service = std::chrono::microseconds(143);
    Duration wire_delay{0};                                    // each way
    Duration get_drop_after = std::chrono::seconds(10);        // 0: never drop Gets
    bool kernel_drops_late = false;
    Duration smp_delay{0}; // the local HCA's answer to a PortInfo SMP
    // Each host handles the MADs it receives (SA answers, its HCA's PortInfo answers) one at a
    // time, this long each: the daemon's own work per answer. 0: none, at once.
    Duration host_cost{0};
};

// What the SA saw, since the last reset_stats().
struct SimSaStats {
    std::uint64_t sets = 0, deletes = 0, gets = 0; // received
    std::uint64_t other = 0;                       // received, not an SA request it serves
    std::uint64_t smps = 0;                        // local PortInfo SMPs (answered by the HCA)
    std::uint64_t gets_dropped = 0;                // by the overload rule
    std::uint64_t served_sets = 0, served_gets = 0; // Sets and Deletes / Gets answered
    std::uint64_t answers_dropped_late = 0;         // by the kernel model (kernel_drops_late)
    std::uint64_t answers_after_timeout = 0;        // answers later than their try's timeout_ms
    std::size_t max_set_queue = 0, max_get_queue = 0;
    // Queue delay (arrival to start of service) of every served Set/Delete and Get, seconds.
    std::vector<float> set_delays, get_delays;
    // Arrivals of Sets/Deletes per whole second since the reset.
    std::vector<std::uint32_t> set_arrivals_per_s;
    // When the SA first held watch_memberships()'s count of memberships, if it has.
    std::optional<TimePoint> target_reached;
};

class SimSa {
public:
    SimSa(Timers &timers, SimSaConfig cfg);
    ~SimSa();
    SimSa(const SimSa &) = delete;
    SimSa &operator=(const SimSa &) = delete;

    // A host whose one port has `port_gid`; its transport is endpoint(index). Indexes count
    // from 0 in the order added. The endpoint stays valid as long as the SimSa.
    std::uint32_t add_host(const Gid &port_gid);
    sa::MadTransport &endpoint(std::uint32_t host);

    void set_config(const SimSaConfig &cfg) { cfg_ = cfg; }
    const SimSaConfig &config() const { return cfg_; }

    // Memberships (port, group) the SA holds now, and the count whose first arrival
    // stats().target_reached records.
    std::uint64_t memberships() const { return memberships_; }
    void watch_memberships(std::uint64_t target) { target_ = target; }

    // The SM restarts: every group and membership is gone (queued requests stay queued; they
    // are served by the new SM, as if they had arrived after the restart). With
    // `visible_in_sminfo`, SMInfoRecord answers show it as OpenSM's would: a new SM whose
    // ActCount starts low again; otherwise they go on as before.
    void forget_all(bool visible_in_sminfo = false);

    void reset_stats();
    const SimSaStats &stats() const { return stats_; }
    test::FakeSaState &state() { return state_; }
    std::size_t set_queue() const { return set_server_.queue.size(); }
    std::size_t get_queue() const { return get_server_.queue.size(); }
    // Nothing queued, in service, or on its way to or from a host.
    bool idle() const {
        return set_server_.queue.empty() && get_server_.queue.empty() && !set_server_.busy && !get_server_.busy &&
               on_wire_ == 0;
    }

private:
    class Endpoint;
    // Requests are queued by reference to one copy of each distinct body (the MAD with its TID
    // zeroed), counted by the queued requests that use it: a host resends the same request
    // under a new TID, and a deep queue would otherwise hold a 256-byte copy of every try.
    // Bodies no request uses any more are swept out in bulk (sweep_bodies), not one by one: a
    // body served now is often sent again soon.
    struct BodyHash {
        std::size_t operator()(const sa::MadBuf &b) const;
    };
    using Bodies = std::unordered_map<sa::MadBuf, std::uint32_t, BodyHash>; // body -> uses
    using Body = Bodies::value_type;
    struct Pending {
        TimePoint arrival;
        Body *body;
        std::uint32_t tid; // the low 32 TID bits (the daemon sends the upper 32 as 0)
        std::uint32_t host;
        std::uint32_t timeout_ms; // what the host handed its transport with this send
    };
    struct Server {
        std::deque<Pending> queue;
        bool busy = false;
        Pending current{};
        Duration last_wait{0}; // how long the last request taken from the queue had waited
    };

    int send(std::uint32_t host, std::span<const std::uint8_t> mad, unsigned timeout_ms);
    void arrive(std::uint32_t host, const sa::MadBuf &mad, unsigned timeout_ms);
    Body *acquire(const sa::MadBuf &mad);
    void sweep_bodies();
    void start_service(Server &s, bool sets);
    void on_served(bool sets);
    void answer(const Pending &p);
    void deliver(std::uint32_t host, const sa::MadBuf &mad);
    // To `host` in `after`, behind what it is still handling (host_cost); at once, from inside
    // the caller, only when `now_ok` and nothing delays it.
    void to_host(std::uint32_t host, const sa::MadBuf &mad, Duration after, bool now_ok);
    void answer_smp(std::uint32_t host, const sa::MadBuf &mad);
    std::size_t members_of(const Gid &mgid) const;

    Timers &timers_;
    SimSaConfig cfg_;
    TimePoint epoch_; // of the per-second arrival counts
    test::FakeSaState state_;
    std::vector<std::unique_ptr<Endpoint>> hosts_;
    std::vector<Gid> gids_;
    Bodies bodies_;
    std::size_t sweep_at_ = 1 << 16;
    Server set_server_, get_server_;
    std::uint64_t memberships_ = 0, target_ = 0;
    std::uint64_t on_wire_ = 0;           // MADs (and HCA answers) not yet delivered
    std::uint32_t sm_act_count_ = 500000; // the SM's ActCount as SMInfoRecord shows it
    std::vector<TimePoint> host_free_;    // per host: when it has handled what it received
    SimSaStats stats_;
};

} // namespace mcastd::des
