// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "sim_sa.hpp"

#include <cstring>
#include <stdexcept>

#include "sa/mad_codec.hpp"

namespace mcastd::des {

namespace {

constexpr std::size_t kTidOffset = 8; // bytes 8-15 of the common MAD header, big-endian

std::uint16_t load_be16(const std::uint8_t *p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }

std::uint32_t low_tid(const sa::MadBuf &m) {
    std::uint32_t v = 0;
    for (std::size_t i = kTidOffset + 4; i < kTidOffset + 8; ++i)
        v = v << 8 | m[i];
    return v;
}

// The SM: LID 1 (every host's SA address), this port GUID.
constexpr std::uint16_t kSmLid = 1;
constexpr std::uint64_t kSmGuid = 0x0002c90300000001ULL;
constexpr std::uint64_t kSubnetPrefix = 0xfe80000000000000ULL;

void put16(sa::MadBuf &b, std::size_t off, std::uint16_t v) {
    b[off] = static_cast<std::uint8_t>(v >> 8);
    b[off + 1] = static_cast<std::uint8_t>(v);
}

// The local HCA's answer to a directed-route Get(PortInfo) (IBA 14.2.5.6; the offsets are the
// ones port/portinfo_smp.cpp decodes): the request turned into a GetResp with the direction
// bit set, and a PortInfo of an ACTIVE 4x port with LID `lid` and the SM at kSmLid.
sa::MadBuf portinfo_answer(const sa::MadBuf &req, std::uint16_t lid) {
    sa::MadBuf b = req;
    b[3] = 0x81;          // GetResp
    put16(b, 4, 0x8000); // status 0, D bit: a response on a directed route
    constexpr std::size_t d = 64; // the SMP data area
    for (int i = 0; i < 8; ++i)
        b[d + 8 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(kSubnetPrefix >> (56 - 8 * i));
    put16(b, d + 16, lid);
    put16(b, d + 18, kSmLid);
    b[d + 28] = req[23];  // LocalPortNum: the port asked about (AttributeModifier)
    b[d + 31] = 2;        // LinkWidthActive 4x
    b[d + 32] = 0x10 | 4; // LinkSpeedSupported 2.5 Gb/s, PortState ACTIVE
    b[d + 33] = 5 << 4;   // PortPhysicalState LinkUp
    b[d + 35] = 1 << 4;   // LinkSpeedActive 2.5 Gb/s
    b[d + 36] = 4 << 4;   // NeighborMTU 2048, MasterSMSL 0
    b[d + 41] = 4;        // MTUCap 2048
    b[d + 51] = 18;       // ClientReregister clear, SubnetTimeOut 18
    return b;
}

} // namespace

class SimSa::Endpoint final : public sa::MadTransport {
public:
    Endpoint(SimSa &sa, std::uint32_t host) : sa_(sa), host_(host) {}

    int send(PortIndex, std::span<const std::uint8_t> mad, const sa::MadAddress &,
             unsigned timeout_ms) override {
        return sa_.send(host_, mad, timeout_ms);
    }
    void set_receiver(Receiver r) override { rx_ = std::move(r); }

    void receive(std::span<const std::uint8_t> mad) {
        if (rx_)
            rx_(0, mad, 0);
    }

private:
    SimSa &sa_;
    std::uint32_t host_;
    Receiver rx_;
};

std::size_t SimSa::BodyHash::operator()(const sa::MadBuf &b) const {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (std::size_t i = 0; i < b.size(); i += 8) {
        std::uint64_t w;
        std::memcpy(&w, b.data() + i, sizeof w);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 29;
    }
    return static_cast<std::size_t>(h);
}

SimSa::SimSa(Timers &timers, SimSaConfig cfg) : timers_(timers), cfg_(cfg), epoch_(timers.now()) {}

SimSa::~SimSa() = default;

std::uint32_t SimSa::add_host(const Gid &port_gid) {
    const auto index = static_cast<std::uint32_t>(hosts_.size());
    hosts_.push_back(std::make_unique<Endpoint>(*this, index));
    gids_.push_back(port_gid);
    host_free_.push_back(TimePoint{});
    return index;
}

sa::MadTransport &SimSa::endpoint(std::uint32_t host) { return *hosts_.at(host); }

void SimSa::forget_all(bool visible_in_sminfo) {
    state_ = test::FakeSaState{};
    memberships_ = 0;
    if (visible_in_sminfo)
        sm_act_count_ = 1000; // a new SM has sent only its first sweep's SMPs
}

std::size_t SimSa::members_of(const Gid &mgid) const {
    auto it = state_.groups.find(mgid);
    return it == state_.groups.end() ? 0 : it->second.members.size();
}

void SimSa::reset_stats() {
    stats_ = SimSaStats{};
    epoch_ = timers_.now();
}

SimSa::Body *SimSa::acquire(const sa::MadBuf &mad) {
    if (bodies_.size() >= sweep_at_)
        sweep_bodies();
    auto it = bodies_.try_emplace(mad, 0).first;
    ++it->second;
    return &*it;
}

void SimSa::sweep_bodies() {
    std::erase_if(bodies_, [](const Body &b) { return b.second == 0; });
    sweep_at_ = std::max<std::size_t>(1 << 16, 2 * bodies_.size());
}

int SimSa::send(std::uint32_t host, std::span<const std::uint8_t> bytes, unsigned timeout_ms) {
    if (bytes.size() != sa::kMadSize)
        throw std::logic_error("SimSa: a send of a MAD that is not 256 bytes");
    sa::MadBuf mad;
    std::memcpy(mad.data(), bytes.data(), mad.size());
    if (mad[1] == sa::mad::class_smp_directed || cfg_.wire_delay <= Duration::zero()) {
        arrive(host, mad, timeout_ms);
    } else {
        ++on_wire_;
        timers_.start(cfg_.wire_delay, [this, host, mad, timeout_ms] {
            --on_wire_;
            arrive(host, mad, timeout_ms);
        });
    }
    return 0;
}

void SimSa::arrive(std::uint32_t host, const sa::MadBuf &mad, unsigned timeout_ms) {
    const std::uint8_t mgmt_class = mad[1];
    const std::uint8_t method = mad[3];
    if (mgmt_class == sa::mad::class_smp_directed) {
        ++stats_.smps;
        answer_smp(host, mad);
        return;
    }
    if (mgmt_class != sa::mad::class_subn_adm) {
        ++stats_.other;
        return;
    }
    const bool is_set = method == sa::mad::method_set || method == sa::mad::method_delete;
    if (!is_set && method != sa::mad::method_get) {
        ++stats_.other;
        return;
    }
    Server &s = is_set ? set_server_ : get_server_;
    if (is_set) {
        (method == sa::mad::method_set ? stats_.sets : stats_.deletes) += 1;
        const auto second = static_cast<std::size_t>((timers_.now() - epoch_) / std::chrono::seconds(1));
        if (stats_.set_arrivals_per_s.size() <= second)
            stats_.set_arrivals_per_s.resize(second + 1, 0);
        ++stats_.set_arrivals_per_s[second];
    } else {
        ++stats_.gets;
        // OpenSM's check on its general SA dispatcher, made as a Get comes in.
        if (cfg_.get_drop_after > Duration::zero() && s.queue.size() > 1 && s.last_wait > cfg_.get_drop_after) {
            ++stats_.gets_dropped;
            return;
        }
    }
    sa::MadBuf body = mad;
    std::memset(body.data() + kTidOffset, 0, 8);
    s.queue.push_back(Pending{timers_.now(), acquire(body), low_tid(mad), host, timeout_ms});
    if (is_set)
        stats_.max_set_queue = std::max(stats_.max_set_queue, s.queue.size());
    else
        stats_.max_get_queue = std::max(stats_.max_get_queue, s.queue.size());
    start_service(s, is_set);
}

void SimSa::start_service(Server &s, bool sets) {
    if (s.busy || s.queue.empty())
        return;
    s.current = s.queue.front();
    s.queue.pop_front();
    s.busy = true;
    s.last_wait = std::chrono::duration_cast<Duration>(timers_.now() - s.current.arrival);
    const float wait_s = std::chrono::duration<float>(s.last_wait).count();
    (sets ? stats_.set_delays : stats_.get_delays).push_back(wait_s);
    timers_.start(sets ? cfg_.set_service : cfg_.get_service, [this, sets] { on_served(sets); });
}

void SimSa::on_served(bool sets) {
    Server &s = sets ? set_server_ : get_server_;
    s.busy = false;
    const Pending p = s.current;
    ++(sets ? stats_.served_sets : stats_.served_gets);
    answer(p);
    --p.body->second;
    start_service(s, sets);
}

void SimSa::answer(const Pending &p) {
    const sa::MadBuf &req = p.body->first;
    const std::uint8_t method = req[3];
    const std::uint16_t attr = load_be16(req.data() + 16);
    sa::MadBuf resp;
    if (attr == sa::mad::attr_mcmember_record) {
        const SaMethod m = method == sa::mad::method_set      ? SaMethod::set
                           : method == sa::mad::method_delete ? SaMethod::del
                                                              : SaMethod::get;
        // The codec reads MCMemberRecords from answers only; a request has the same layout, so
        // it is read as the answer it would be (the method byte set to the response's).
        sa::MadBuf as_answer = req;
        as_answer[3] = m == SaMethod::del ? sa::mad::method_delete_resp : sa::mad::method_get_resp;
        const auto d = sa::decode_mcmember_response(as_answer, m);
        if (!d) {
            ++stats_.other;
            return;
        }
        const SaRequest r{0, m, d->record, d->comp_mask};
        const std::size_t before = m == SaMethod::get ? 0 : members_of(r.record.mgid);
        const auto [status, record] = state_.handle(r, gids_.at(p.host));
        if (m != SaMethod::get) {
            // An MGID-0 create names its group only in the answer; a Delete may remove it.
            const Gid &mgid = is_zero(r.record.mgid) ? record.mgid : r.record.mgid;
            memberships_ = memberships_ - before + members_of(mgid);
            if (target_ && !stats_.target_reached && memberships_ >= target_)
                stats_.target_reached = timers_.now();
        }
        resp = sa::encode_mcmember_mad(sa::McMemberMad{.method = as_answer[3],
                                                       .status = status,
                                                       .tid = p.tid,
                                                       .comp_mask = d->comp_mask,
                                                       .record = record});
    } else if (attr == sa::mad::attr_sm_info_record && method == sa::mad::method_get) {
        const sa::SmInfoRecord sm{.lid = kSmLid,
                                  .guid = kSmGuid,
                                  .sm_key = 0,
                                  .act_count = sm_act_count_++,
                                  .priority = 0,
                                  .sm_state = sa::sm_state::master};
        resp = sa::encode_sminfo_mad(
            sa::SmInfoMad{.method = sa::mad::method_get_resp, .status = 0, .tid = p.tid, .comp_mask = 0, .record = sm});
    } else {
        ++stats_.other;
        return;
    }
    // When the answer reaches the host, measured from the try's send.
    const auto sent = p.arrival - cfg_.wire_delay;
    const auto lands = timers_.now() + cfg_.wire_delay;
    if (lands - sent >= std::chrono::milliseconds(p.timeout_ms)) {
        ++stats_.answers_after_timeout;
        if (cfg_.kernel_drops_late) {
            ++stats_.answers_dropped_late;
            return;
        }
    }
    deliver(p.host, resp);
}

void SimSa::answer_smp(std::uint32_t host, const sa::MadBuf &req) {
    // Never from inside send(): the answer comes from the loop, as the HCA's would.
    to_host(host, portinfo_answer(req, static_cast<std::uint16_t>(host + 2)), cfg_.smp_delay, false);
}

void SimSa::deliver(std::uint32_t host, const sa::MadBuf &mad) { to_host(host, mad, cfg_.wire_delay, true); }

void SimSa::to_host(std::uint32_t host, const sa::MadBuf &mad, Duration after, bool now_ok) {
    if (cfg_.host_cost > Duration::zero()) {
        // The host takes the MAD up once it has handled those before it, and its daemon acts on
        // it host_cost later.
        TimePoint &free = host_free_.at(host);
        free = std::max(timers_.now() + after, free) + cfg_.host_cost;
        after = std::chrono::duration_cast<Duration>(free - timers_.now());
    }
    if (now_ok && after <= Duration::zero()) {
        hosts_.at(host)->receive(mad);
        return;
    }
    ++on_wire_;
    timers_.start(after, [this, host, mad] {
        --on_wire_;
        hosts_.at(host)->receive(mad);
    });
}

} // namespace mcastd::des
