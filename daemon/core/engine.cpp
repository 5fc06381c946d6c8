// The membership engine. See engine.hpp for the contract and DESIGN.md §5 for the semantics.
//
// Per group the engine keeps three bit sets about this port's SA membership:
//   held      bits the daemon set and believes the SA holds;
//   foreign   bits the port held before the daemon's first Set (another agent, e.g. the
//             kernel): never deleted, but they do serve members;
//   uncertain bits whose fate is unknown (a Set or Delete went unanswered); a re-sync probe
//             learns the truth before anything is deleted.
// Members queue per group; at most one SA transaction per group is in flight. After every
// answer the group is "pumped": queued joins are answered locally or get one Set, then the
// held bits are reconciled with what the members need (Deletes, repairs).
#include "core/engine.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <random>
#include <string_view>
#include <unordered_set>

#include "common/sa_status.hpp"

namespace mcastd {

namespace {

using GroupId = std::uint64_t;

constexpr std::uint8_t kFull = join::full;
constexpr std::uint8_t kSendOnlyFull = join::send_only_full;

// Bits effectively present at the SA: a FullMember also serves send-only-full members.
std::uint8_t cover(std::uint8_t bits) {
    return (bits & kFull) ? static_cast<std::uint8_t>(bits | kSendOnlyFull) : bits;
}

// What the port should hold for the bits its members need: 0x1 or 0x8, never both
// (sa-multicast.md §13, the OpenSM MLID leak).
std::uint8_t normalize(std::uint8_t bits) {
    return (bits & kFull) ? static_cast<std::uint8_t>(bits & ~kSendOnlyFull) : bits;
}

struct GidHash {
    std::size_t operator()(const Gid &g) const noexcept {
        return std::hash<std::string_view>{}(
            std::string_view(reinterpret_cast<const char *>(g.data()), g.size()));
    }
};

std::string hex(std::uint64_t v, int width) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%0*llx", width, static_cast<unsigned long long>(v));
    return buf;
}

// Writes the asserted fields into `r` and returns their component-mask bits.
std::uint64_t apply_params(McRecord &r, const GroupParams &p) {
    std::uint64_t mask = 0;
    if (p.qkey) { r.qkey = *p.qkey; mask |= field::qkey; }
    if (p.pkey) { r.pkey = *p.pkey; mask |= field::pkey; }
    if (p.sl) { r.sl = *p.sl; mask |= field::sl; }
    if (p.tclass) { r.tclass = *p.tclass; mask |= field::tclass; }
    if (p.flow_label) { r.flow_label = *p.flow_label; mask |= field::flow_label; }
    if (p.hop_limit) { r.hop_limit = *p.hop_limit; mask |= field::hop_limit; }
    if (p.mtu) {
        r.mtu_selector = p.mtu->selector;
        r.mtu = p.mtu->value;
        mask |= field::mtu_selector | field::mtu;
    }
    if (p.rate) {
        r.rate_selector = p.rate->selector;
        r.rate = p.rate->value;
        mask |= field::rate_selector | field::rate;
    }
    return mask;
}

std::string rate_text(std::uint8_t rate) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%g Gb/s (enum %u)", rate_mbps(rate) / 1000.0, rate);
    return buf;
}

const char *selector_text(Selector s) {
    switch (s) {
    case Selector::greater: return "greater than ";
    case Selector::less: return "less than ";
    case Selector::exactly: return "";
    case Selector::best: return "the best ";
    }
    return "";
}

// Compares asserted fields with an existing group the way OpenSM and the kernel's cmp_rec do.
// Returns a sentence naming the group's value on the first mismatch.
std::optional<std::string> mismatch(const GroupParams &p, const McRecord &g) {
    auto differs = [](const char *name, std::uint64_t group, std::uint64_t want, int width) {
        return std::string("the group has ") + name + " " + hex(group, width) + ", not " +
               hex(want, width);
    };
    if (p.qkey && *p.qkey != g.qkey) return differs("Q_Key", g.qkey, *p.qkey, 8);
    // P_Keys match on their 15-bit base; the top bit is the membership type.
    if (p.pkey && (*p.pkey & 0x7fff) != (g.pkey & 0x7fff))
        return differs("P_Key", g.pkey, *p.pkey, 4);
    if (p.sl && *p.sl != g.sl) return "the group has SL " + std::to_string(g.sl) + ", not " + std::to_string(*p.sl);
    if (p.tclass && *p.tclass != g.tclass) return differs("TClass", g.tclass, *p.tclass, 2);
    if (p.flow_label && *p.flow_label != g.flow_label)
        return differs("FlowLabel", g.flow_label, *p.flow_label, 5);
    if (p.hop_limit && *p.hop_limit != g.hop_limit)
        return "the group has HopLimit " + std::to_string(g.hop_limit) + ", not " + std::to_string(*p.hop_limit);
    if (p.mtu && !selector_matches(p.mtu->selector, p.mtu->value, g.mtu))
        return "the group has MTU " + std::to_string(mtu_bytes(g.mtu)) + ", not " +
               selector_text(p.mtu->selector) + std::to_string(mtu_bytes(p.mtu->value));
    if (p.rate && !selector_matches(p.rate->selector, p.rate->value, g.rate))
        return "the group has rate " + rate_text(g.rate) + ", not " + selector_text(p.rate->selector) +
               rate_text(p.rate->value);
    return std::nullopt;
}

// Group-level fields that differ between two records (what a member must react to).
std::uint64_t record_diff(const McRecord &a, const McRecord &b) {
    std::uint64_t d = 0;
    if (a.mgid != b.mgid) d |= field::mgid;
    if (a.mlid != b.mlid) d |= field::mlid;
    if (a.qkey != b.qkey) d |= field::qkey;
    if (a.pkey != b.pkey) d |= field::pkey;
    if (a.mtu != b.mtu || a.mtu_selector != b.mtu_selector) d |= field::mtu;
    if (a.rate != b.rate || a.rate_selector != b.rate_selector) d |= field::rate;
    if (a.sl != b.sl) d |= field::sl;
    if (a.flow_label != b.flow_label) d |= field::flow_label;
    if (a.tclass != b.tclass) d |= field::tclass;
    if (a.hop_limit != b.hop_limit) d |= field::hop_limit;
    if (a.scope != b.scope) d |= field::scope;
    return d;
}

std::optional<Error> validate_request(const JoinRequest &r, const EngineConfig &cfg) {
    auto invalid = [](std::string m) { return Error{Errc::invalid_argument, std::move(m), {}}; };
    if (r.join_state == 0 || (r.join_state & ~join::all))
        return invalid("join_state " + hex(r.join_state, 1) + " is not a non-empty set of the bits 0x1-0x8");
    const auto &p = r.params;
    if (p.sl && *p.sl > 15) return invalid("sl " + std::to_string(*p.sl) + " is out of range [0, 15]");
    if (p.flow_label && *p.flow_label > 0xfffff)
        return invalid("flow_label " + hex(*p.flow_label, 5) + " is out of range [0, 0xfffff]");
    if (p.mtu && (p.mtu->value < 1 || p.mtu->value > 5))
        return invalid("mtu enum " + std::to_string(p.mtu->value) + " is out of range [1 (256), 5 (4096)]");
    if (p.rate && rate_mbps(p.rate->value) == 0)
        return invalid("rate enum " + std::to_string(p.rate->value) + " is not a valid IB rate");
    if (is_zero(r.mgid)) {
        if (!(r.join_state & (join::full | join::send_only_full)))
            return invalid("creating a group needs the full or sendonly-full join state");
        if (r.scope && (*r.scope == 0 || *r.scope > 15))
            return invalid("scope " + std::to_string(*r.scope) + " is out of range [1, 15]");
        return std::nullopt;
    }
    if (r.scope)
        return invalid("scope applies only when creating a group (MGID 0); an explicit MGID carries its own scope");
    if (r.mgid[0] != 0xff)
        return invalid("MGID " + format_gid(r.mgid) + " is not a multicast GID (it must start with ff)");
    const std::uint16_t sig = mgid_signature(r.mgid);
    if ((sig == 0x401b || sig == 0x601b) && !cfg.allow_ipoib_mgids)
        return Error{Errc::denied,
                     "MGID " + format_gid(r.mgid) +
                         " has the IPoIB signature " + hex(sig, 4) +
                         "; the kernel shares these groups and a leave from this daemon would cut "
                         "its members off (allowed only with allow_ipoib_mgids)",
                     {}};
    if ((sig == 0x4001 || sig == 0x6001) && !cfg.allow_rdma_cm_mgids)
        return Error{Errc::denied,
                     "MGID " + format_gid(r.mgid) + " has the rdma_cm signature " + hex(sig, 4) +
                         "; the kernel shares these groups and a leave from this daemon would cut "
                         "its members off (allowed only with allow_rdma_cm_mgids)",
                     {}};
    return std::nullopt;
}

} // namespace

struct Engine::Impl {
    enum class MState : std::uint8_t { queued, active, lost };

    struct Member {
        ClientId client = 0;
        GroupId group = 0;
        std::uint8_t bits = 0;
        GroupParams params;
        MState state = MState::queued;
        bool sent = false; // an SA Set went out for this member (so it is not a local answer)
        bool suspended = false; // told `lost` while its port is down or re-joining; restored later
        JoinCallback done;
    };

    enum class OpKind : std::uint8_t {
        probe_group,  // Get(MGID): does the group exist, and its record
        probe_member, // Get(MGID|PortGID): is this port a member
        probe_exact,  // Get(MGID|PortGID|JoinState): is the port's JoinState exactly `bits`
        join_set,     // Set for the member at the head of the queue
        repair_set,   // Set of bits active members need but the SA no longer holds
        del,          // Delete of bits nobody needs
        audit,        // Get(MGID|PortGID): does the SA still hold this port's membership
        refresh,      // Get(MGID): the group's record now, for a re-join that needs no Set
    };

    struct Op {
        OpKind kind = OpKind::probe_group;
        SaService::TxnId txn = 0;
        std::uint8_t bits = 0;
        MembershipId member = 0; // join_set only
        bool create = false;     // join_set: the create mask was used
        bool resync = false;     // probes: learning `held` (true) or `foreign` (false)
        std::uint64_t epoch = 0; // the port's epoch when sent: an answer from before an
                                 // invalidation says nothing about the SA's state now
        std::vector<std::uint8_t> candidates; // probe_exact: JoinStates still to try
    };

    struct Group {
        GroupId id = 0;
        PortIndex port = 0;
        Gid mgid{};
        bool sa_assigned = false; // created with MGID 0; mgid is zero until the SA answers
        std::uint8_t create_scope = 0;
        McRecord rec;
        bool have_rec = false;
        bool absent = false; // the SA said the group does not exist: the next Set creates it
        bool probed = false; // foreign bits are known
        std::uint8_t held = 0, foreign = 0, uncertain = 0;
        bool warned_leak_hazard = false;
        bool rejoin = false; // the SA may have lost our bits: re-set them when the port allows
        std::uint64_t rec_epoch = 0; // the port's epoch when `rec` was last confirmed
        bool rec_doubt = false;      // a Set went unanswered: it may have (re)created the group
        std::array<std::uint32_t, 4> count{};
        std::deque<MembershipId> queue;            // joins waiting, in arrival order
        std::unordered_set<MembershipId> settled;  // active and lost members
        std::optional<Op> op;
        Timers::Id retry_timer = 0;
        Duration backoff{0};
    };

    struct Port {
        std::string device;
        std::uint8_t num = 0;
        Gid gid{};
        bool active = false;
        std::unordered_map<Gid, GroupId, GidHash> by_mgid;
        std::uint64_t epoch = 0;   // bumped by every invalidation and by going down
        Timers::Id rejoin_timer = 0; // the jitter before a re-join starts
        bool rejoining = false;
        std::string rejoin_reason;
        std::optional<TimePoint> rejoin_started, rejoin_finished;
        std::size_t rejoin_groups = 0;
        Gid audit_cursor{}; // the audit goes round the port's groups in MGID order
    };

    struct Client {
        ClientInfo info;
        std::unordered_set<MembershipId> members;
    };

    EngineConfig cfg;
    SaService &sa;
    Timers &timers;
    MembershipEventSink *sink = nullptr;
    EngineObserver observer;
    EngineStats st;

    std::vector<Port> ports;
    std::unordered_map<ClientId, Client> clients;
    std::unordered_map<MembershipId, Member> members;
    std::unordered_map<GroupId, Group> groups;
    ClientId next_client = 1;
    MembershipId next_member = 1;
    GroupId next_group = 1;

    // Callbacks and events run only once the engine's state is consistent, at the end of the
    // outermost entry point, so they may call back into the engine.
    std::vector<std::function<void()>> deferred;
    std::vector<std::function<void()>> idle_waiters;
    int depth = 0;

    struct Entry {
        Impl &e;
        explicit Entry(Impl &impl) : e(impl) { ++e.depth; }
        ~Entry() {
            if (--e.depth == 0)
                e.flush();
        }
    };

    std::mt19937_64 rng;

    Impl(EngineConfig c, SaService &s, Timers &t) : cfg(std::move(c)), sa(s), timers(t), rng(cfg.seed) {}

    ~Impl() {
        for (auto &[id, g] : groups) {
            if (g.op) sa.cancel(g.op->txn);
            timers.cancel(g.retry_timer);
        }
        for (Port &p : ports)
            timers.cancel(p.rejoin_timer);
    }

    void flush() {
        ++depth; // callbacks that re-enter must not flush recursively
        for (std::size_t i = 0; i < deferred.size(); ++i) {
            auto fn = std::move(deferred[i]);
            fn();
        }
        deferred.clear();
        --depth;
        if (!idle_waiters.empty() && is_idle()) {
            auto waiters = std::move(idle_waiters);
            idle_waiters.clear();
            for (auto &fn : waiters)
                fn();
        }
    }

    bool is_idle() const {
        for (const auto &[id, g] : groups)
            if (g.op || g.retry_timer)
                return false;
        for (const Port &p : ports)
            if (p.rejoin_timer)
                return false;
        return true;
    }

    void note(EngineNote n) {
        if (auto c = n.client ? clients.find(n.client) : clients.end(); c != clients.end())
            n.client_info = c->second.info;
        if (observer)
            deferred.push_back([this, n = std::move(n)] { if (observer) observer(n); });
    }

    void note_group(EngineNote::Kind kind, const Group &g, std::uint8_t bits, ClientId client,
                    std::string msg, std::optional<std::uint16_t> status = {}) {
        note(EngineNote{kind, g.port, g.mgid, g.rec.mlid, bits, client, status, std::move(msg)});
    }

    std::string where(const Group &g) const {
        const Port &p = ports[g.port];
        return (g.sa_assigned && is_zero(g.mgid) ? std::string("new group") : "group " + format_gid(g.mgid)) +
               " on " + p.device + "/" + std::to_string(p.num);
    }

    McRecord member_record(const Group &g, const Member &m) const {
        McRecord r = g.rec;
        r.port_gid = ports[g.port].gid;
        r.join_state = m.bits;
        r.proxy_join = false;
        return r;
    }

    // ---- member bookkeeping ----

    void reply(Member &m, MembershipId id, std::optional<Error> err, const McRecord &rec) {
        if (!m.done)
            return;
        JoinResult res{id, std::move(err), rec};
        deferred.push_back([cb = std::move(m.done), res = std::move(res)] { cb(res); });
        m.done = nullptr;
    }

    void count(Group &g, std::uint8_t bits, int delta) {
        for (unsigned i = 0; i < 4; ++i)
            if (bits & (1u << i))
                g.count[i] = static_cast<std::uint32_t>(static_cast<int>(g.count[i]) + delta);
    }

    std::uint8_t wanted(const Group &g) const {
        std::uint8_t b = 0;
        for (unsigned i = 0; i < 4; ++i)
            if (g.count[i])
                b = static_cast<std::uint8_t>(b | (1u << i));
        return normalize(b);
    }

    void activate(Group &g, MembershipId id) {
        Member &m = members.at(id);
        m.state = MState::active;
        count(g, m.bits, +1);
        g.settled.insert(id);
        if (!m.sent)
            ++st.joins_local;
        McRecord rec = member_record(g, m);
        // Routine notes carry no text: describe() makes it for the observers that print it,
        // so a join answered locally costs no string formatting.
        EngineNote n{EngineNote::Kind::joined, g.port, g.mgid, g.rec.mlid, m.bits, m.client, {}, {}};
        n.local = !m.sent;
        note(std::move(n));
        reply(m, id, std::nullopt, rec);
    }

    // Drops a member that never became active, telling its client why.
    void fail(Group &g, MembershipId id, Error err) {
        Member &m = members.at(id);
        ++st.joins_failed;
        note_group(EngineNote::Kind::join_failed, g, m.bits, m.client, err.message, err.sa_status);
        reply(m, id, std::move(err), {});
        erase_member(id);
    }

    void erase_member(MembershipId id) {
        auto it = members.find(id);
        if (it == members.end())
            return;
        Member &m = it->second;
        if (auto c = clients.find(m.client); c != clients.end())
            c->second.members.erase(id);
        if (auto gi = groups.find(m.group); gi != groups.end()) {
            Group &g = gi->second;
            if (m.state == MState::active)
                count(g, m.bits, -1);
            g.settled.erase(id);
            if (auto q = std::find(g.queue.begin(), g.queue.end(), id); q != g.queue.end())
                g.queue.erase(q);
        }
        members.erase(it);
    }

    // Fails the queue head and every queued join identical to it: they would send the same
    // request and get the same answer.
    void fail_head_and_identical(Group &g, MembershipId head, const Error &err) {
        auto hm = members.find(head);
        if (hm == members.end())
            return;
        const std::uint8_t bits = hm->second.bits;
        const GroupParams params = hm->second.params;
        std::vector<MembershipId> doomed;
        for (MembershipId id : g.queue) {
            const Member &m = members.at(id);
            if (id == head || (m.bits == bits && m.params == params))
                doomed.push_back(id);
        }
        for (MembershipId id : doomed)
            fail(g, id, err);
    }

    void lose(Group &g, MembershipId id, const Error &why) {
        Member &m = members.at(id);
        if (m.state != MState::active)
            return;
        count(g, m.bits, -1);
        m.state = MState::lost;
        note_group(EngineNote::Kind::lost, g, m.bits, m.client, "lost " + where(g) + ": " + why.message,
                   why.sa_status);
        if (sink) {
            MembershipEvent ev{MembershipEvent::Kind::lost, member_record(g, m), 0, why};
            deferred.push_back([this, c = m.client, id, ev = std::move(ev)] {
                if (sink) sink->membership_event(c, id, ev);
            });
        }
    }

    // Tells every active member its membership holds (again), and what changed.
    // Tells active members their membership is gone for now (port down) while keeping them
    // counted, so that the re-join brings them back.
    void suspend(Group &g, const Error &why) {
        for (MembershipId id : g.settled) {
            Member &m = members.at(id);
            if (m.state != MState::active || m.suspended)
                continue;
            m.suspended = true;
            note_group(EngineNote::Kind::lost, g, m.bits, m.client, "lost " + where(g) + ": " + why.message);
            if (sink) {
                MembershipEvent ev{MembershipEvent::Kind::lost, member_record(g, m), 0, why};
                deferred.push_back([this, c = m.client, id, ev = std::move(ev)] {
                    if (sink) sink->membership_event(c, id, ev);
                });
            }
        }
    }

    void tell_restored(Group &g, std::uint64_t changed) {
        for (MembershipId id : g.settled) {
            Member &m = members.at(id);
            if (m.state != MState::active)
                continue;
            m.suspended = false;
            note_group(EngineNote::Kind::restored, g, m.bits, m.client,
                       changed ? "record of " + where(g) + " changed" : where(g) + " holds again");
            if (sink) {
                MembershipEvent ev{MembershipEvent::Kind::restored, member_record(g, m), changed, {}};
                deferred.push_back([this, c = m.client, id, ev = std::move(ev)] {
                    if (sink) sink->membership_event(c, id, ev);
                });
            }
        }
    }

    // ---- SA work ----

    void submit(Group &g, Op op, SaMethod method, const McRecord &rec, std::uint64_t mask) {
        switch (method) {
        case SaMethod::get: ++st.sa_gets; break;
        case SaMethod::set: ++st.sa_sets; break;
        case SaMethod::del: ++st.sa_deletes; break;
        }
        const GroupId gid = g.id;
        op.epoch = ports[g.port].epoch;
        op.txn = sa.submit(SaRequest{g.port, method, rec, mask},
                           [this, gid](const SaResult &r) { on_result(gid, r); });
        g.op = std::move(op);
    }

    McRecord base_record(const Group &g, std::uint8_t bits) const {
        McRecord r;
        r.mgid = g.mgid;
        r.port_gid = ports[g.port].gid;
        r.join_state = bits;
        return r;
    }

    void start_probe(Group &g, bool resync) {
        Op op;
        op.resync = resync;
        McRecord r = base_record(g, 0);
        if (!resync && !g.have_rec) {
            op.kind = OpKind::probe_group;
            submit(g, std::move(op), SaMethod::get, r, field::mgid);
        } else {
            op.kind = OpKind::probe_member;
            submit(g, std::move(op), SaMethod::get, r, field::mgid | field::port_gid);
        }
    }

    void start_exact_probe(Group &g, Op op) {
        const std::uint8_t c = op.candidates.front();
        op.candidates.erase(op.candidates.begin());
        op.kind = OpKind::probe_exact;
        op.bits = c;
        submit(g, std::move(op), SaMethod::get, base_record(g, c),
               field::mgid | field::port_gid | field::join_state);
    }

    // The exact-match probe can only test one JoinState at a time (untrusted queries hide the
    // stored value), so try the likely values first.
    std::vector<std::uint8_t> probe_candidates(const Group &g, bool resync) const {
        std::vector<std::uint8_t> c;
        auto add = [&c](std::uint8_t v) {
            if (v && std::find(c.begin(), c.end(), v) == c.end())
                c.push_back(v);
        };
        if (resync) {
            add(static_cast<std::uint8_t>(g.held | g.foreign | g.uncertain));
            add(static_cast<std::uint8_t>(g.held | g.foreign));
            add(g.foreign);
        }
        for (std::uint8_t v : {kFull, kSendOnlyFull, join::non_member, std::uint8_t(0x3), join::send_only_non_member})
            add(v);
        for (std::uint8_t v = 1; v <= 15; ++v)
            add(v);
        return c;
    }

    void finish_probe(Group &g, const Op &op, std::uint8_t stored) {
        if (op.resync) {
            g.held = static_cast<std::uint8_t>(stored & ~g.foreign);
            g.uncertain = 0;
        } else {
            g.foreign = stored;
            g.probed = true;
            if (stored)
                note_group(EngineNote::Kind::warning, g, stored, 0,
                           "port already holds " + join_state_name(stored) + " in " + where(g) +
                               " from another agent; those bits are left alone");
        }
    }

    void start_join_set(Group &g, MembershipId id, std::uint8_t bits) {
        Member &m = members.at(id);
        McRecord r = base_record(g, bits);
        std::uint64_t mask = field::join_mask | apply_params(r, m.params);
        // Only the first Set of an MGID-0 group creates it; later members join the MGID the SA
        // assigned with their own asserted fields.
        const bool create = g.absent || (g.sa_assigned && is_zero(g.mgid));
        if (create) {
            const auto &d = cfg.create;
            if (!(mask & field::qkey)) r.qkey = d.qkey;
            if (!(mask & field::pkey)) r.pkey = d.pkey;
            if (!(mask & field::sl)) r.sl = d.sl;
            if (!(mask & field::tclass)) r.tclass = d.tclass;
            if (!(mask & field::flow_label)) r.flow_label = d.flow_label;
            mask |= field::create_mask;
            if (g.sa_assigned) {
                r.scope = g.create_scope;
                mask |= field::scope;
            }
        }
        m.sent = true;
        Op op;
        op.kind = OpKind::join_set;
        op.bits = bits;
        op.member = id;
        op.create = create;
        submit(g, std::move(op), SaMethod::set, r, mask);
    }

    // Re-sets bits the group's active members need, from the cached record. Uses the create
    // mask with the record's exact values, because the group may be gone at the SA.
    void start_repair_set(Group &g, std::uint8_t bits) {
        McRecord r = g.rec;
        r.port_gid = ports[g.port].gid;
        r.join_state = bits;
        r.mtu_selector = Selector::exactly;
        r.rate_selector = Selector::exactly;
        r.proxy_join = false;
        const std::uint64_t mask = field::create_mask | field::mtu_selector | field::mtu |
                                   field::rate_selector | field::rate | field::hop_limit;
        Op op;
        op.kind = OpKind::repair_set;
        op.bits = bits;
        submit(g, std::move(op), SaMethod::set, r, mask);
    }

    void start_delete(Group &g, std::uint8_t bits) {
        Op op;
        op.kind = OpKind::del;
        op.bits = bits;
        submit(g, std::move(op), SaMethod::del, base_record(g, bits), field::join_mask);
    }

    void schedule_retry(Group &g) {
        g.backoff = g.backoff.count() ? std::min(g.backoff * 2, cfg.retry_max) : cfg.retry_min;
        const GroupId gid = g.id;
        g.retry_timer = timers.start(g.backoff, [this, gid] {
            Entry e(*this);
            auto it = groups.find(gid);
            if (it == groups.end())
                return;
            it->second.retry_timer = 0;
            advance(gid);
        });
    }

    // ---- the group state machine ----

    void pump(Group &g) {
        if (g.op)
            return;
        const Port &port = ports[g.port];
        if (g.rejoin) {
            // The re-join comes first; joins queued meanwhile wait for it. It needs a usable
            // port, the end of the port's jitter, and the end of any backoff.
            if (!port.active || port.rejoin_timer || g.retry_timer || rejoin_step(g))
                return;
        }
        while (!g.queue.empty()) {
            const MembershipId id = g.queue.front();
            Member &m = members.at(id);
            if (fresh(g)) {
                if (auto why = mismatch(m.params, g.rec)) {
                    fail(g, id, Error{Errc::conflict, "cannot join " + where(g) + ": " + *why, {}});
                    continue;
                }
            }
            const std::uint8_t present = cover(static_cast<std::uint8_t>(g.held | g.foreign));
            const std::uint8_t need = static_cast<std::uint8_t>(m.bits & ~present);
            if (!need && fresh(g)) {
                g.queue.pop_front();
                activate(g, id);
                continue;
            }
            if (!need && g.probed && port.active) {
                start_refresh(g); // the bits are there, the record may be old: ask first
                return;
            }
            if (!port.active) {
                fail(g, id, Error{Errc::port_not_active,
                                  port.device + "/" + std::to_string(port.num) + " is not active", {}});
                continue;
            }
            if (!g.probed) {
                start_probe(g, false);
                return;
            }
            // Holding 0x1 beside another agent's 0x8 (or the reverse) would make a later
            // Delete 0x1 pin the MLID forever (sa-multicast.md §13).
            if ((need & kFull) && (g.foreign & kSendOnlyFull)) {
                fail(g, id, Error{Errc::conflict,
                                  "cannot join " + where(g) + " as full member: another agent on "
                                  "this port holds sendonly-full, and a full member beside it "
                                  "would leak the group's MLID at the SA when it leaves",
                                  {}});
                continue;
            }
            start_join_set(g, id, normalize(need));
            return;
        }
        if (g.retry_timer)
            return;
        reconcile(g);
    }

    // With no joins waiting: bring the held bits in line with what active members need.
    void reconcile(Group &g) {
        const std::uint8_t want = wanted(g);
        if (g.uncertain & ~want) {
            start_probe(g, true);
            return;
        }
        const std::uint8_t present = cover(static_cast<std::uint8_t>(g.held | g.foreign));
        const std::uint8_t missing = static_cast<std::uint8_t>(want & ~present);
        std::uint8_t extra = static_cast<std::uint8_t>(g.held & ~want);
        if ((extra & kFull) && (g.foreign & kSendOnlyFull)) {
            // Deleting our 0x1 would pin the MLID (§13), deleting 0x9 would cut the other
            // agent off: leave 0x1 in place and say so once.
            extra = static_cast<std::uint8_t>(extra & ~kFull);
            if (!g.warned_leak_hazard) {
                g.warned_leak_hazard = true;
                note_group(EngineNote::Kind::warning, g, kFull, 0,
                           "keeping full membership of " + where(g) +
                               ": another agent holds sendonly-full, and deleting full now would "
                               "leak the MLID at the SA");
            }
        }
        if (missing && !(extra & kFull)) {
            start_repair_set(g, missing);
            return;
        }
        if (extra) {
            // Deleting 0x1 is safe only when the port surely does not hold 0x8: if 0x8 may
            // still be there (a lost answer), learn the exact state first.
            if ((extra & kFull) && (g.uncertain & kSendOnlyFull)) {
                start_probe(g, true);
                return;
            }
            std::uint8_t del = extra;
            // Never Delete 0x1 while 0x8 stays held: delete both, then re-set 0x8.
            if ((del & kFull) && (g.held & kSendOnlyFull))
                del = static_cast<std::uint8_t>(del | kSendOnlyFull);
            start_delete(g, del);
            return;
        }
        if (wanted(g) && g.have_rec && !fresh(g)) {
            // The bits are right, the record may not be (a Set that went unanswered may have
            // re-created the group): members must hear of a new MLID.
            start_refresh(g);
            return;
        }
        g.backoff = Duration{0};
    }

    // ---- re-join ----

    // The SA may have lost this group's bits: what we held becomes uncertain (a Set confirms
    // it), and if members want anything the group is re-set before anything else happens.
    void mark_rejoin(Group &g) {
        g.uncertain = static_cast<std::uint8_t>(g.uncertain | g.held);
        g.held = 0;
        if (wanted(g))
            g.rejoin = true;
    }

    // A record confirmed since the port's last invalidation; an older one is only good for
    // re-creating the group, never for answering a join.
    bool fresh(const Group &g) const {
        return g.have_rec && !g.rec_doubt && g.rec_epoch == ports[g.port].epoch;
    }

    // One step of a group's re-join. Returns true when an SA transaction is now in flight.
    bool rejoin_step(Group &g) {
        const std::uint8_t present = cover(static_cast<std::uint8_t>(g.held | g.foreign));
        const std::uint8_t missing = static_cast<std::uint8_t>(wanted(g) & ~present);
        if (missing && g.have_rec) {
            start_repair_set(g, missing);
            return true;
        }
        if (wanted(g) && g.have_rec) {
            // Another agent's bits serve the members (the kernel re-joined by itself): nothing
            // to set, but the group may have come back under another MLID. Ask for its record.
            start_refresh(g);
            return true;
        }
        finish_rejoin(g, 0);
        return false;
    }

    // The group's record, asked for because the cached one predates the last invalidation
    // (or a re-join that needs no Set wants the current one).
    void start_refresh(Group &g) {
        Op op;
        op.kind = OpKind::refresh;
        submit(g, std::move(op), SaMethod::get, base_record(g, 0), field::mgid);
    }

    void on_refresh(Group &g, const SaResult &r) {
        if (r.kind != SaResult::Kind::response || (r.status && r.status != sa_status::no_records)) {
            if (g.rejoin)
                schedule_retry(g);
            else if (!g.queue.empty())
                fail_head_and_identical(g, g.queue.front(),
                                        r.kind == SaResult::Kind::response
                                            ? Error::sa(r.status, "join of " + where(g))
                                            : Error{Errc::sa_timeout, "join of " + where(g) + ": " + timeout_text(r), {}});
            return;
        }
        if (r.status == sa_status::no_records) {
            // The group is gone: no one holds bits in it, whatever was believed. pump() sets
            // (and creates) what the members need.
            g.foreign = 0;
            g.held = 0;
            g.absent = true;
            g.have_rec = g.rejoin; // a re-join re-creates it from the old record
            return;
        }
        McRecord now = r.record;
        now.port_gid = g.rec.port_gid;
        now.join_state = g.rec.join_state;
        now.scope = mgid_scope(now.mgid);
        const std::uint64_t changed = g.have_rec ? record_diff(g.rec, now) : 0;
        g.rec = now;
        g.have_rec = true;
        g.rec_epoch = ports[g.port].epoch;
        g.rec_doubt = false;
        if (g.rejoin)
            finish_rejoin(g, changed);
        else if (changed)
            tell_restored(g, changed);
    }

    void finish_rejoin(Group &g, std::uint64_t changed) {
        g.rejoin = false;
        tell_restored(g, changed);
        finish_port_rejoin(ports[g.port]);
    }

    void finish_port_rejoin(Port &p) {
        if (!p.rejoining || p.rejoin_timer)
            return;
        for (const auto &[id, g] : groups)
            if (g.rejoin && &ports[g.port] == &p)
                return;
        p.rejoining = false;
        p.rejoin_finished = timers.now();
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*p.rejoin_finished -
                                                                              *p.rejoin_started);
        note(EngineNote{EngineNote::Kind::warning, static_cast<PortIndex>(&p - ports.data()), {}, 0, 0, 0, {},
                        "re-joined " + std::to_string(p.rejoin_groups) + " group(s) on " + p.device + "/" +
                            std::to_string(p.num) + " in " + std::to_string(ms.count()) + " ms (" +
                            p.rejoin_reason + ")"});
    }

    // Starts (or restarts) a port's re-join after the jitter, if the port is usable.
    void arm_rejoin(PortIndex pi) {
        Port &p = ports[pi];
        if (!p.active)
            return;
        timers.cancel(p.rejoin_timer);
        const auto max = std::max<std::int64_t>(cfg.rejoin_jitter.count(), 0);
        const Duration pause{max ? std::uniform_int_distribution<std::int64_t>(0, max)(rng) : 0};
        p.rejoin_timer = timers.start(pause, [this, pi] {
            Entry e(*this);
            Port &port = ports[pi];
            port.rejoin_timer = 0;
            std::vector<GroupId> on_port;
            for (const auto &[id, g] : groups)
                if (g.port == pi)
                    on_port.push_back(id);
            for (GroupId id : on_port)
                advance(id);
            finish_port_rejoin(port);
        });
    }

    void start_port_rejoin(PortIndex pi, const std::string &why) {
        Port &p = ports[pi];
        std::size_t n = 0;
        for (auto &[id, g] : groups)
            if (g.port == pi && g.rejoin)
                ++n;
        if (!p.rejoining) {
            p.rejoining = n > 0;
            p.rejoin_started = timers.now();
            p.rejoin_groups = n;
            if (n == 0)
                p.rejoin_finished = p.rejoin_started; // nothing to redo: done as it starts
        } else {
            p.rejoin_groups = std::max(p.rejoin_groups, n);
        }
        p.rejoin_reason = why;
        arm_rejoin(pi);
    }

    void invalidate(PortIndex pi, const std::string &why) {
        Port &p = ports[pi];
        ++p.epoch;
        for (auto &[id, g] : groups)
            if (g.port == pi)
                mark_rejoin(g);
        note(EngineNote{EngineNote::Kind::warning, pi, {}, 0, 0, 0, {},
                        // The log and `monitor` events name the port already.
                        "the SA may have lost the memberships of " + p.device + "/" + std::to_string(p.num) +
                            " (" + why + "); re-joining"});
        start_port_rejoin(pi, why);
    }

    void set_active(PortIndex pi, bool active, const std::string &why) {
        Port &p = ports[pi];
        if (p.active == active)
            return;
        p.active = active;
        const std::string name = p.device + "/" + std::to_string(p.num);
        if (active) {
            start_port_rejoin(pi, why.empty() ? "port back" : why);
            return;
        }
        // The SA drops a port's memberships when its link goes down: members are told, and
        // stay counted for the re-join when it comes back. Joins still waiting cannot go on.
        ++p.epoch;
        timers.cancel(p.rejoin_timer);
        p.rejoin_timer = 0;
        const Error down{Errc::port_not_active, name + " is down" + (why.empty() ? "" : ": " + why), {}};
        std::vector<GroupId> on_port;
        for (auto &[id, g] : groups)
            if (g.port == pi)
                on_port.push_back(id);
        for (GroupId id : on_port) {
            Group &g = groups.at(id);
            mark_rejoin(g);
            suspend(g, down);
            const std::vector<MembershipId> waiting(g.queue.begin(), g.queue.end());
            for (MembershipId m : waiting)
                if (!g.op || g.op->member != m)
                    fail(g, m, down);
        }
    }

    // ---- audit ----

    void audit(PortIndex pi) {
        Port &p = ports[pi];
        if (!p.active)
            return;
        // The next group after the cursor, in MGID order, that holds something and is idle.
        Group *pick = nullptr, *first = nullptr;
        for (auto &[id, g] : groups) {
            if (g.port != pi || g.op || g.retry_timer || g.rejoin || !g.have_rec || !wanted(g) ||
                !((g.held | g.foreign) & wanted(g)))
                continue;
            if (!first || g.mgid < first->mgid)
                first = &g;
            if (p.audit_cursor < g.mgid && (!pick || g.mgid < pick->mgid))
                pick = &g;
        }
        if (!pick)
            pick = first; // wrap around
        if (!pick)
            return;
        p.audit_cursor = pick->mgid;
        Op op;
        op.kind = OpKind::audit;
        submit(*pick, std::move(op), SaMethod::get, base_record(*pick, 0), field::mgid | field::port_gid);
    }

    void on_audit(Group &g, const SaResult &r) {
        if (r.kind != SaResult::Kind::response)
            return; // no answer: the next round asks again
        if (r.status == sa_status::no_records) {
            // A full-type membership goes away only with the SA's whole state for the port
            // (an SM restart whose ActCount did not fall, because the old SM had not run
            // long; a port flap between two PortInfo polls): the other groups are gone too,
            // and one audit Get at a time would take G / audit_per_second to find them. A
            // non-member alone can lose its group legitimately (the last full member left),
            // so that re-joins just the group.
            if (g.held & (kFull | kSendOnlyFull)) {
                invalidate(g.port, "the SA no longer holds this port's " + join_state_name(g.held) +
                                       " membership of " + where(g) + ", so it has probably lost them all");
                return;
            }
            note_group(EngineNote::Kind::warning, g, g.held, 0,
                       "the SA no longer holds this port's membership of " + where(g) + "; re-joining");
            mark_rejoin(g);
            return; // pump() re-joins it
        }
        if (r.status == 0 && r.record.mlid && r.record.mlid != g.rec.mlid) {
            // Someone re-created the group (after an SM restart, say) with another MLID.
            g.rec.mlid = r.record.mlid;
            tell_restored(g, field::mlid);
        }
    }

    // Moves a group on after anything happened to it, and forgets it once nothing is left.
    // The one place a group is destroyed: callers must not touch it afterwards.
    void advance(GroupId id) {
        auto it = groups.find(id);
        if (it == groups.end())
            return;
        pump(it->second);
        maybe_destroy(it->second);
    }

    void maybe_destroy(Group &g) {
        if (g.op || g.retry_timer || !g.queue.empty() || !g.settled.empty() || g.held || g.uncertain)
            return;
        Port &p = ports[g.port];
        if (auto it = p.by_mgid.find(g.mgid); it != p.by_mgid.end() && it->second == g.id)
            p.by_mgid.erase(it);
        groups.erase(g.id);
    }

    // The port holds nothing in this group any more, so what the engine knew about it (its
    // record, whether it exists) may be stale: a join queued behind the last Delete must see
    // the SA afresh, and create the group with its own parameters if it is gone.
    void forget_group_state(Group &g) {
        if (!g.settled.empty())
            return; // lost members keep the last record they were told
        g.have_rec = false;
        g.absent = false;
        g.probed = false;
    }

    // A Set answered: take the record. Returns the group fields that changed (field:: bits),
    // for the caller to tell the members.
    // An answer from before an invalidation (`trust_bits` false) gives a record but says
    // nothing about the bits the port holds now.
    std::uint64_t adopt_record(Group &g, const McRecord &resp, std::uint8_t set_bits, bool trust_bits = true) {
        const bool had = g.have_rec;
        const McRecord old = g.rec;
        g.rec = resp;
        g.rec.port_gid = ports[g.port].gid;
        // OpenSM stores whatever scope the Set carried; the MGID's own nibble is the truth.
        g.rec.scope = mgid_scope(g.rec.mgid);
        g.have_rec = true;
        g.absent = false;
        if (!trust_bits) {
            g.uncertain = static_cast<std::uint8_t>(g.uncertain | set_bits);
            return had && !is_zero(old.mgid) ? record_diff(old, g.rec) : 0;
        }
        g.rec_epoch = ports[g.port].epoch;
        g.rec_doubt = false;
        // The response's JoinState is exactly what the port now holds, so it settles every
        // uncertainty. Bits nobody here accounts for were set by another agent since the
        // probe: never ours to delete. Bits that vanished are no longer held by anyone.
        const std::uint8_t stored = static_cast<std::uint8_t>(resp.join_state | set_bits);
        const std::uint8_t others =
            static_cast<std::uint8_t>(stored & ~(g.held | g.uncertain | g.foreign | set_bits));
        g.foreign = static_cast<std::uint8_t>((g.foreign & stored) | others);
        g.held = static_cast<std::uint8_t>(stored & ~g.foreign);
        g.uncertain = 0;
        if (others) {
            note_group(EngineNote::Kind::warning, g, others, 0,
                       "another agent set " + join_state_name(others) + " in " + where(g) +
                           "; those bits are left alone");
        }
        return had && !is_zero(old.mgid) ? record_diff(old, g.rec) : 0;
    }

    // An MGID-0 group learned its MGID. If the daemon already has a group of that MGID on
    // the port (the SA handed an MGID out again, e.g. after a restart), they are one SA
    // membership: fold this one into it.
    Group &rekey(Group &g) {
        Port &p = ports[g.port];
        auto [it, inserted] = p.by_mgid.try_emplace(g.mgid, g.id);
        if (inserted)
            return g;
        Group &into = groups.at(it->second);
        into.held = static_cast<std::uint8_t>(into.held | g.held);
        into.rec = g.rec;
        into.have_rec = true;
        into.absent = false;
        into.probed = true;
        for (MembershipId id : g.queue) {
            members.at(id).group = into.id;
            into.queue.push_back(id);
        }
        for (MembershipId id : g.settled) {
            Member &m = members.at(id);
            m.group = into.id;
            if (m.state == MState::active)
                count(into, m.bits, +1);
            into.settled.insert(id);
        }
        groups.erase(g.id);
        return into;
    }

    std::string timeout_text(const SaResult &r) const {
        return std::string("the SA ") +
               (r.bounced ? "was unreachable (requests came back undelivered)" : "did not answer") +
               " after " + std::to_string(r.tries) + (r.tries == 1 ? " try" : " tries");
    }

    void on_result(GroupId gid, const SaResult &r) {
        Entry e(*this);
        auto it = groups.find(gid);
        if (it == groups.end())
            return;
        Group *g = &it->second;
        Op op = std::move(*g->op);
        g->op.reset();
        const bool answered = r.kind == SaResult::Kind::response;
        const bool stale = op.epoch != ports[g->port].epoch;

        if (stale && (op.kind == OpKind::probe_group || op.kind == OpKind::probe_member ||
                      op.kind == OpKind::probe_exact || op.kind == OpKind::audit)) {
            advance(g->id); // a Get from before the SA lost everything says nothing: ask again
            return;
        }
        if (stale && op.kind == OpKind::refresh) {
            advance(g->id);
            return;
        }
        switch (op.kind) {
        case OpKind::audit:
            on_audit(*g, r);
            break;
        case OpKind::refresh:
            on_refresh(*g, r);
            break;
        case OpKind::probe_group:
            if (answered && r.status == 0) {
                g->rec = r.record;
                g->rec.port_gid = ports[g->port].gid;
                g->rec.join_state = 0;
                g->have_rec = true;
                g->rec_epoch = op.epoch;
                start_probe(*g, false); // now: is this port a member?
                return;
            }
            if (answered && r.status == sa_status::no_records) {
                g->absent = true;
                finish_probe(*g, op, 0);
                break;
            }
            probe_failed(*g, op, r);
            break;
        case OpKind::probe_member:
            if (answered && r.status == sa_status::no_records) {
                finish_probe(*g, op, 0);
                break;
            }
            if (answered && r.status == 0) {
                op.candidates = probe_candidates(*g, op.resync);
                start_exact_probe(*g, std::move(op));
                return;
            }
            probe_failed(*g, op, r);
            break;
        case OpKind::probe_exact:
            if (answered && r.status == 0) {
                finish_probe(*g, op, op.bits);
                break;
            }
            if (answered && r.status == sa_status::no_records && !op.candidates.empty()) {
                start_exact_probe(*g, std::move(op));
                return;
            }
            probe_failed(*g, op, r);
            break;
        case OpKind::join_set:
            g = &on_join_set(*g, op, r);
            break;
        case OpKind::repair_set:
            on_repair_set(*g, op, r);
            break;
        case OpKind::del:
            on_delete(*g, op, r);
            break;
        }
        advance(g->id);
    }

    void probe_failed(Group &g, const Op &op, const SaResult &r) {
        const std::string why = r.kind == SaResult::Kind::timeout
                                    ? timeout_text(r)
                                    : (r.status == sa_status::no_records
                                           ? std::string("no JoinState value matched (the membership changed while probing)")
                                           : sa_status_describe(r.status));
        if (!op.resync && g.queue.empty())
            return; // the joins that wanted to know were withdrawn
        if (op.resync) {
            note_group(EngineNote::Kind::warning, g, 0, 0,
                       "could not learn this port's membership of " + where(g) + ": " + why +
                           "; retrying");
            schedule_retry(g);
            return;
        }
        Error err = r.kind == SaResult::Kind::timeout
                        ? Error{Errc::sa_timeout, "join of " + where(g) + ": " + timeout_text(r), {}}
                        : (r.status == sa_status::no_records
                               ? Error{Errc::internal, "join of " + where(g) + ": " + why, {}}
                               : Error::sa(r.status, "join of " + where(g) + " (membership probe)"));
        fail_head_and_identical(g, g.queue.front(), err);
    }

    Group &on_join_set(Group &g, const Op &op, const SaResult &r) {
        if (r.ok()) {
            Group *gp = &g;
            if (g.sa_assigned && is_zero(g.mgid)) {
                g.mgid = r.record.mgid;
                gp = &rekey(g);
            }
            const bool stale = op.epoch != ports[gp->port].epoch;
            if (const std::uint64_t changed = adopt_record(*gp, r.record, op.bits, !stale))
                tell_restored(*gp, changed);
            if (stale)
                mark_rejoin(*gp); // answered before the SA lost everything: set it again
            return *gp; // the member, if still queued, is answered by pump()
        }
        if (r.kind == SaResult::Kind::timeout) {
            // The Set may have reached the SA: its bits are uncertain until probed, and it may
            // have created the group under an MLID nobody told us.
            g.uncertain = static_cast<std::uint8_t>(g.uncertain | (op.bits & ~g.held));
            g.rec_doubt = true;
            if (members.count(op.member))
                fail_head_and_identical(g, op.member,
                                        Error{Errc::sa_timeout, "join of " + where(g) + ": " + timeout_text(r), {}});
            return g;
        }
        if (r.status == sa_status::insufficient_components && !op.create) {
            // The group does not exist (OpenSM wants the create fields): create it. The
            // member stays at the head of the queue and pump() sends the create.
            g.absent = true;
            return g;
        }
        if (members.count(op.member))
            fail_head_and_identical(g, op.member, Error::sa(r.status, "join of " + where(g)));
        return g;
    }

    void on_repair_set(Group &g, const Op &op, const SaResult &r) {
        if (op.epoch != ports[g.port].epoch) {
            // Sent before the SA lost the port's memberships: whatever it did is gone or
            // unknown. The group is already marked for re-join.
            g.uncertain = static_cast<std::uint8_t>(g.uncertain | op.bits);
            return;
        }
        if (r.ok()) {
            const std::uint64_t changed = adopt_record(g, r.record, op.bits);
            g.backoff = Duration{0};
            if (g.rejoin)
                finish_rejoin(g, changed);
            else if (changed)
                tell_restored(g, changed);
            return;
        }
        if (r.kind == SaResult::Kind::timeout) {
            g.uncertain = static_cast<std::uint8_t>(g.uncertain | (op.bits & ~g.held));
            g.rec_doubt = true;
            note_group(EngineNote::Kind::warning, g, op.bits, 0,
                       "re-join of " + join_state_name(op.bits) + " in " + where(g) + ": " +
                           timeout_text(r) + "; retrying");
            schedule_retry(g);
            return;
        }
        // The SA refuses the bits these members need: they have lost the membership.
        const Error why = Error::sa(r.status, "re-join of " + where(g));
        const std::uint8_t present = cover(static_cast<std::uint8_t>(g.held | g.foreign));
        std::vector<MembershipId> victims;
        for (MembershipId id : g.settled) {
            const Member &m = members.at(id);
            if (m.state == MState::active && (m.bits & ~present))
                victims.push_back(id);
        }
        for (MembershipId id : victims)
            lose(g, id, why);
        // Members served by bits the SA did not refuse (another agent's) carry on with the
        // re-join: pump() fetches the group's record for them and tells them.
        if (g.rejoin && !wanted(g)) {
            g.rejoin = false;
            finish_port_rejoin(ports[g.port]);
        }
    }

    void on_delete(Group &g, const Op &op, const SaResult &r) {
        if (op.epoch != ports[g.port].epoch) {
            g.held = static_cast<std::uint8_t>(g.held & ~op.bits);
            g.uncertain = static_cast<std::uint8_t>(g.uncertain | op.bits);
            return;
        }
        if (r.ok()) {
            g.held = static_cast<std::uint8_t>(g.held & ~op.bits);
            g.uncertain = static_cast<std::uint8_t>(g.uncertain & ~op.bits);
            note_group(EngineNote::Kind::sa_left, g, op.bits, 0, {});
            // The DeleteResp carries what the port still holds. OpenSM drops a port entirely
            // when no full member is left, taking bits we still hold with it.
            const std::uint8_t dropped = static_cast<std::uint8_t>(g.held & ~r.record.join_state);
            if (dropped)
                g.held = static_cast<std::uint8_t>(g.held & ~dropped);
            // If that was the port's last full-type bit and nobody else on the fabric is a
            // full member, OpenSM deletes the whole group after answering, even though the
            // DeleteResp still shows our non-member bits. Mark them uncertain: reconcile()
            // re-sets them if members need them (a no-op if the group lives on, `lost` if
            // not), or probes before deleting them.
            constexpr std::uint8_t fullish = kFull | kSendOnlyFull;
            if ((op.bits & fullish) && !((g.held | g.foreign) & fullish)) {
                g.uncertain = static_cast<std::uint8_t>(g.uncertain | g.held);
                g.held = 0;
            }
            if (!g.held && !g.foreign && !g.uncertain)
                forget_group_state(g);
            g.backoff = Duration{0};
            return;
        }
        // Unanswered, or refused: the SA may or may not still hold these bits.
        g.held = static_cast<std::uint8_t>(g.held & ~op.bits);
        g.uncertain = static_cast<std::uint8_t>(g.uncertain | op.bits);
        // 0x0200 on a retransmitted Delete usually means an earlier try went through:
        // re-sync at once. Anything else waits for the backoff.
        if (r.kind == SaResult::Kind::response && r.status == sa_status::req_invalid && r.tries > 1)
            return;
        note_group(EngineNote::Kind::warning, g, op.bits, 0,
                   "leave of " + join_state_name(op.bits) + " from " + where(g) + ": " +
                       (r.kind == SaResult::Kind::timeout ? timeout_text(r) : sa_status_describe(r.status)) +
                       "; retrying",
                   r.kind == SaResult::Kind::response ? std::optional<std::uint16_t>(r.status) : std::nullopt);
        schedule_retry(g);
    }

    // ---- entry points ----

    MembershipId join(ClientId client, const JoinRequest &req, JoinCallback done) {
        ++st.joins;
        const MembershipId id = next_member++;
        auto reject = [&](Error err) {
            ++st.joins_failed;
            JoinResult res{id, std::move(err), {}};
            deferred.push_back([cb = std::move(done), res = std::move(res)] { if (cb) cb(res); });
            return id;
        };
        auto c = clients.find(client);
        if (c == clients.end())
            return reject(Error{Errc::internal, "unknown client " + std::to_string(client), {}});
        if (auto err = validate_request(req, cfg))
            return reject(*err);

        PortIndex pi = 0;
        bool device_known = false;
        std::string known_ports;
        for (; pi < ports.size(); ++pi) {
            if (ports[pi].device != req.device)
                continue;
            device_known = true;
            if (ports[pi].num == req.port)
                break;
            known_ports += (known_ports.empty() ? "" : ", ") + std::to_string(ports[pi].num);
        }
        if (!device_known) {
            std::string names;
            for (const Port &p : ports)
                if (names.find(p.device) == std::string::npos)
                    names += (names.empty() ? "" : ", ") + p.device;
            return reject(Error{Errc::no_such_device,
                                "no InfiniBand device '" + req.device + "' (devices: " +
                                    (names.empty() ? "none" : names) + ")",
                                {}});
        }
        if (pi == ports.size())
            return reject(Error{Errc::no_such_port,
                                req.device + " has no port " + std::to_string(req.port) +
                                    " (ports: " + known_ports + ")",
                                {}});
        Port &port = ports[pi];
        if (!port.active)
            return reject(Error{Errc::port_not_active,
                                req.device + "/" + std::to_string(req.port) + " is not active", {}});

        Group *g = nullptr;
        if (!is_zero(req.mgid)) {
            auto [it, inserted] = port.by_mgid.try_emplace(req.mgid, next_group);
            if (inserted)
                g = &new_group(pi, req.mgid);
            else
                g = &groups.at(it->second);
        } else {
            g = &new_group(pi, kZeroGid);
            g->sa_assigned = true;
            g->probed = true; // a group the SA creates for us cannot hold anyone's bits yet
            g->create_scope = req.scope.value_or(cfg.create.scope);
        }
        Member m;
        m.client = client;
        m.group = g->id;
        m.bits = req.join_state;
        m.params = req.params;
        m.done = std::move(done);
        members.emplace(id, std::move(m));
        c->second.members.insert(id);
        g->queue.push_back(id);
        pump(*g);
        return id;
    }

    Group &new_group(PortIndex pi, const Gid &mgid) {
        const GroupId gid = next_group++;
        Group &g = groups[gid];
        g.id = gid;
        g.port = pi;
        g.mgid = mgid;
        return g;
    }

    // Releases one membership (leave or client gone). `tell` says whether a pending join's
    // callback still gets its `cancelled` answer.
    void release(MembershipId id, bool tell) {
        Member &m = members.at(id);
        Group &g = groups.at(m.group);
        ++st.leaves;
        if (m.state == MState::queued) {
            if (tell)
                reply(m, id, Error{Errc::cancelled, "the join was withdrawn before it completed", {}}, {});
            else
                m.done = nullptr;
        } else {
            note_group(EngineNote::Kind::left, g, m.bits, m.client, {});
        }
        const GroupId gid = g.id;
        erase_member(id);
        advance(gid);
    }
};

std::string describe(const EngineNote &n, const std::string &port) {
    if (!n.message.empty())
        return n.message;
    const std::string group = "group " + format_gid(n.mgid) + " on " + port;
    switch (n.kind) {
    case EngineNote::Kind::joined:
        return "joined " + group + " as " + join_state_name(n.join_state) + (n.local ? " (answered locally)" : "");
    case EngineNote::Kind::left: return "left " + group;
    case EngineNote::Kind::sa_left: return "deleted " + join_state_name(n.join_state) + " from " + group;
    default: return group;
    }
}

// ---- public interface ----

Engine::Engine(EngineConfig cfg, SaService &sa, Timers &timers)
    : impl_(std::make_unique<Impl>(std::move(cfg), sa, timers)) {}

Engine::~Engine() = default;

void Engine::set_event_sink(MembershipEventSink *sink) { impl_->sink = sink; }
void Engine::set_observer(EngineObserver observer) { impl_->observer = std::move(observer); }

PortIndex Engine::add_port(std::string device, std::uint8_t port, const Gid &port_gid, bool active) {
    Impl::Port p;
    p.device = std::move(device);
    p.num = port;
    p.gid = port_gid;
    p.active = active;
    impl_->ports.push_back(std::move(p));
    return static_cast<PortIndex>(impl_->ports.size() - 1);
}

void Engine::set_port_active(PortIndex port, bool active, const std::string &why) {
    Impl::Entry e(*impl_);
    impl_->ports.at(port);
    impl_->set_active(port, active, why);
}

void Engine::invalidate_port(PortIndex port, const std::string &why) {
    Impl::Entry e(*impl_);
    impl_->ports.at(port);
    impl_->invalidate(port, why);
}

void Engine::audit_next(PortIndex port) {
    Impl::Entry e(*impl_);
    impl_->ports.at(port);
    impl_->audit(port);
}

ClientId Engine::add_client(ClientInfo info) {
    const ClientId id = impl_->next_client++;
    impl_->clients[id].info = std::move(info);
    return id;
}

void Engine::remove_client(ClientId client) {
    Impl::Entry e(*impl_);
    auto it = impl_->clients.find(client);
    if (it == impl_->clients.end())
        return;
    const std::vector<MembershipId> ids(it->second.members.begin(), it->second.members.end());
    for (MembershipId id : ids)
        impl_->release(id, false);
    impl_->clients.erase(client);
}

const ClientInfo *Engine::client_info(ClientId client) const {
    auto it = impl_->clients.find(client);
    return it == impl_->clients.end() ? nullptr : &it->second.info;
}

MembershipId Engine::join(ClientId client, const JoinRequest &req, JoinCallback done) {
    Impl::Entry e(*impl_);
    return impl_->join(client, req, std::move(done));
}

std::optional<Error> Engine::leave(ClientId client, MembershipId id) {
    Impl::Entry e(*impl_);
    auto it = impl_->members.find(id);
    if (it == impl_->members.end() || it->second.client != client)
        return Error{Errc::not_found, "no membership " + std::to_string(id) + " for this client", {}};
    impl_->release(id, true);
    return std::nullopt;
}

std::vector<PortView> Engine::ports() const {
    std::vector<PortView> out;
    for (PortIndex i = 0; i < impl_->ports.size(); ++i) {
        const auto &p = impl_->ports[i];
        out.push_back(PortView{i, p.device, p.num, p.gid, p.active, p.rejoining, p.rejoin_reason,
                               p.rejoin_started, p.rejoin_finished, p.rejoin_groups, 0});
    }
    for (const auto &[gid, g] : impl_->groups)
        ++out.at(g.port).groups;
    return out;
}

std::vector<GroupView> Engine::groups() const {
    std::vector<GroupView> out;
    for (const auto &[gid, g] : impl_->groups) {
        GroupView v;
        v.port = g.port;
        v.mgid = g.mgid;
        v.have_record = g.have_rec;
        v.record = g.rec;
        v.held = g.held;
        v.foreign = g.foreign;
        v.counts = g.count;
        v.busy = g.op.has_value();
        auto add = [&](MembershipId id) {
            const auto &m = impl_->members.at(id);
            MemberView mv{id, m.client, m.bits, MemberView::State::pending};
            if (m.state == Impl::MState::active)
                mv.state = m.suspended ? MemberView::State::lost : MemberView::State::active;
            if (m.state == Impl::MState::lost) mv.state = MemberView::State::lost;
            v.members.push_back(mv);
        };
        for (MembershipId id : g.settled) add(id);
        for (MembershipId id : g.queue) add(id);
        std::sort(v.members.begin(), v.members.end(),
                  [](const MemberView &a, const MemberView &b) { return a.id < b.id; });
        out.push_back(std::move(v));
    }
    std::sort(out.begin(), out.end(), [](const GroupView &a, const GroupView &b) {
        return a.port != b.port ? a.port < b.port : a.mgid < b.mgid;
    });
    return out;
}

const EngineStats &Engine::stats() const { return impl_->st; }

bool Engine::idle() const { return impl_->is_idle(); }

void Engine::when_idle(std::function<void()> fn) {
    Impl::Entry e(*impl_);
    impl_->idle_waiters.push_back(std::move(fn));
}

} // namespace mcastd
