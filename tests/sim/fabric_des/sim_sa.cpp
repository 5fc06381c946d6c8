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

// The SM that answers SMInfoRecord Gets: the master at LID 1 (every host's SA address).
constexpr sa::SmInfoRecord kMasterSm{
    .lid = 1, .guid = 0x0002c90300000001ULL, .sm_key = 0, .act_count = 100, .priority = 0,
    .sm_state = sa::sm_state::master};

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
    return index;
}

sa::MadTransport &SimSa::endpoint(std::uint32_t host) { return *hosts_.at(host); }

void SimSa::forget_all() {
    state_ = test::FakeSaState{};
    memberships_ = 0;
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
    if (cfg_.wire_delay <= Duration::zero()) {
        arrive(host, mad, timeout_ms);
    } else {
        timers_.start(cfg_.wire_delay, [this, host, mad, timeout_ms] { arrive(host, mad, timeout_ms); });
    }
    return 0;
}

void SimSa::arrive(std::uint32_t host, const sa::MadBuf &mad, unsigned timeout_ms) {
    const std::uint8_t mgmt_class = mad[1];
    const std::uint8_t method = mad[3];
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
        resp = sa::encode_sminfo_mad(sa::SmInfoMad{.method = sa::mad::method_get_resp,
                                                   .status = 0,
                                                   .tid = p.tid,
                                                   .comp_mask = 0,
                                                   .record = kMasterSm});
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

void SimSa::deliver(std::uint32_t host, const sa::MadBuf &mad) {
    if (cfg_.wire_delay <= Duration::zero()) {
        hosts_.at(host)->receive(mad);
        return;
    }
    timers_.start(cfg_.wire_delay, [this, host, mad] { hosts_.at(host)->receive(mad); });
}

} // namespace mcastd::des
