// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// An in-memory subnet administrator with OpenSM 3.3.23's MCMemberRecord rules
// (doc/sa-multicast.md §5-§15), behind the SaService interface with scripted delivery and
// failure injection. Unit tests use it to check the engine against what a real SA would hold,
// including OpenSM's MLID leak (§13), which it detects instead of hiding.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "common/record.hpp"
#include "core/sa_service.hpp"
#include "common/sa_status.hpp"

namespace mcastd::test {

class FakeSaState {
public:
    struct Group {
        McRecord rec; // group fields; port_gid/join_state unused
        std::map<Gid, std::uint8_t> members;
        int full_members = 0; // OpenSM counts ports holding 0x1 or 0x8
    };

    std::uint64_t subnet_prefix = 0xfe80000000000000ULL;
    std::uint8_t port_mtu = 4;  // 2048, like ibsim ports
    std::uint8_t port_rate = 3; // 10 Gb/s
    std::uint16_t mlid_limit = 0xc3ff;
    std::map<Gid, Group> groups;
    std::set<std::uint16_t> mlids{0xc000}; // the IPoIB broadcast group holds 0xC000
    std::uint32_t mgid_counter = 0;
    // The MGID the next create with MGID 0 is given instead of the counter's (then cleared), to
    // play an SA that hands out what it should not: a unicast GID, a kernel signature, an MGID
    // in use (the port is then added to that group, whose record stays).
    std::optional<Gid> assign_next;
    int mlid_leaks = 0; // groups left with full_members > 0 and no full member port
    std::vector<std::string> violations; // things the daemon must never do (e.g. proxy joins)

    std::optional<std::uint8_t> join_state(const Gid &mgid, const Gid &port) const {
        auto g = groups.find(mgid);
        if (g == groups.end())
            return std::nullopt;
        auto m = g->second.members.find(port);
        if (m == g->second.members.end())
            return std::nullopt;
        return m->second;
    }

    // Seeds a membership as another agent (the kernel, another host) would have made it.
    void seed(const Gid &mgid, const Gid &port, std::uint8_t bits, std::uint32_t qkey = 0x1234) {
        auto [it, created] = groups.try_emplace(mgid);
        if (created) {
            it->second.rec.mgid = mgid;
            it->second.rec.qkey = qkey;
            it->second.rec.pkey = 0xffff;
            it->second.rec.mtu_selector = Selector::exactly;
            it->second.rec.mtu = port_mtu;
            it->second.rec.rate_selector = Selector::exactly;
            it->second.rec.rate = port_rate;
            it->second.rec.mlid = alloc_mlid();
        }
        add(it->second, port, bits);
    }

    // The SM's drop manager when a port's link goes down: every membership of the port goes,
    // and groups left without a full member go with it.
    void drop_port(const Gid &port) {
        for (auto it = groups.begin(); it != groups.end();) {
            Group &g = it->second;
            auto m = g.members.find(port);
            if (m != g.members.end()) {
                if (fullish(m->second))
                    --g.full_members;
                g.members.erase(m);
            }
            if (g.full_members <= 0) {
                mlids.erase(g.rec.mlid);
                it = groups.erase(it);
            } else {
                ++it;
            }
        }
    }

    // Applies one request from `requester` and returns (status, response record).
    std::pair<std::uint16_t, McRecord> handle(const SaRequest &req, const Gid &requester) {
        const McRecord &r = req.record;
        McRecord echo = r;
        if (req.method == SaMethod::get)
            return get(req);
        if ((req.comp_mask & field::join_mask) != field::join_mask)
            return {sa_status::insufficient_components, echo};
        if (r.port_gid != requester)
            violations.push_back("proxy join/leave for another port");
        if (prefix_of(r.port_gid) != subnet_prefix)
            return {sa_status::invalid_gid, echo};
        return req.method == SaMethod::set ? set(req, echo) : del(req, echo);
    }

private:
    static std::uint64_t prefix_of(const Gid &g) {
        std::uint64_t p = 0;
        for (int i = 0; i < 8; ++i)
            p = p << 8 | g[static_cast<std::size_t>(i)];
        return p;
    }

    std::uint16_t alloc_mlid() {
        for (std::uint32_t m = 0xc000; m <= mlid_limit; ++m)
            if (!mlids.count(static_cast<std::uint16_t>(m))) {
                mlids.insert(static_cast<std::uint16_t>(m));
                return static_cast<std::uint16_t>(m);
            }
        return 0;
    }

    static bool fullish(std::uint8_t js) { return js & (join::full | join::send_only_full); }

    void add(Group &g, const Gid &port, std::uint8_t bits) {
        std::uint8_t &js = g.members[port];
        const std::uint8_t prev = js;
        js = static_cast<std::uint8_t>(js | bits);
        if (fullish(bits) && !fullish(prev))
            ++g.full_members;
    }

    std::pair<std::uint16_t, McRecord> get(const SaRequest &req) {
        const McRecord &r = req.record;
        McRecord out;
        if (!(req.comp_mask & field::mgid))
            return {sa_status::req_invalid, r}; // the engine never asks without an MGID
        auto g = groups.find(r.mgid);
        if (g == groups.end())
            return {sa_status::no_records, r};
        out = g->second.rec;
        out.port_gid = {}; // untrusted: PortGID, JoinState and ProxyJoin are zeroed (§15)
        out.join_state = 0;
        if (req.comp_mask & field::port_gid) {
            auto m = g->second.members.find(r.port_gid);
            if (m == g->second.members.end())
                return {sa_status::no_records, r};
            if ((req.comp_mask & field::join_state) && m->second != r.join_state)
                return {sa_status::no_records, r};
        }
        return {0, out};
    }

    std::pair<std::uint16_t, McRecord> set(const SaRequest &req, McRecord echo) {
        const McRecord &r = req.record;
        const std::uint64_t m = req.comp_mask;
        if (r.join_state == 0)
            return {sa_status::req_invalid, echo};
        auto it = is_zero(r.mgid) ? groups.end() : groups.find(r.mgid);
        if (it != groups.end()) {
            const McRecord &g = it->second.rec;
            auto sel_ok = [](Selector s, std::uint8_t want, std::uint8_t have) {
                return selector_matches(s, want, have);
            };
            if (((m & field::qkey) && r.qkey != g.qkey) ||
                ((m & field::pkey) && (r.pkey & 0x7fff) != (g.pkey & 0x7fff)) ||
                ((m & field::tclass) && r.tclass != g.tclass) || ((m & field::sl) && r.sl != g.sl) ||
                ((m & field::flow_label) && r.flow_label != g.flow_label) ||
                ((m & field::hop_limit) && r.hop_limit != g.hop_limit) ||
                ((m & field::mtu) && (m & field::mtu_selector) && !sel_ok(r.mtu_selector, r.mtu, g.mtu)) ||
                ((m & field::rate) && (m & field::rate_selector) && !sel_ok(r.rate_selector, r.rate, g.rate)) ||
                port_mtu < g.mtu || port_rate < g.rate)
                return {sa_status::req_invalid, echo};
            add(it->second, r.port_gid, r.join_state);
            McRecord out = g;
            out.port_gid = r.port_gid;
            out.join_state = it->second.members[r.port_gid];
            return {0, out};
        }
        // Create.
        if (!fullish(r.join_state))
            return {sa_status::req_invalid, echo};
        if ((m & field::create_mask) != field::create_mask)
            return {sa_status::insufficient_components, echo};
        Gid mgid = r.mgid;
        if (is_zero(mgid) && assign_next) {
            mgid = *std::exchange(assign_next, std::nullopt);
            if (auto in_use = groups.find(mgid); in_use != groups.end()) {
                add(in_use->second, r.port_gid, r.join_state);
                McRecord out = in_use->second.rec;
                out.port_gid = r.port_gid;
                out.join_state = in_use->second.members[r.port_gid];
                return {0, out};
            }
        } else if (is_zero(mgid)) {
            const std::uint8_t scope = (m & field::scope) ? r.scope : 2;
            mgid = {0xff, static_cast<std::uint8_t>(0x10 | scope), 0xa0, 0x1b};
            for (int i = 0; i < 8; ++i)
                mgid[static_cast<std::size_t>(4 + i)] = static_cast<std::uint8_t>(subnet_prefix >> (56 - 8 * i));
            do { // OpenSM skips MGIDs in use (its counter restarts at 0 with the SM)
                const std::uint32_t c = mgid_counter++;
                for (int i = 0; i < 4; ++i) // little-endian into bytes 10-13, over the prefix (§9)
                    mgid[static_cast<std::size_t>(10 + i)] = static_cast<std::uint8_t>(c >> (8 * i));
            } while (groups.count(mgid));
        } else if (mgid[0] != 0xff || (mgid[1] & 0xe0)) {
            return {sa_status::req_invalid, echo};
        }
        McRecord g;
        g.mgid = mgid;
        g.qkey = r.qkey;
        g.pkey = r.pkey;
        g.tclass = r.tclass;
        g.sl = r.sl;
        g.flow_label = r.flow_label;
        g.hop_limit = (m & field::hop_limit) ? r.hop_limit : 0;
        g.scope = mgid_scope(mgid);
        auto realise = [&](bool given, Selector s, std::uint8_t v, std::uint8_t port) -> int {
            if (!given || s == Selector::best) return port;
            if (s == Selector::greater) return port > v ? port : -1;
            if (s == Selector::less) return std::min<int>(port, v - 1);
            return v <= port ? v : -1;
        };
        const int mtu = realise((m & field::mtu) && (m & field::mtu_selector), r.mtu_selector, r.mtu, port_mtu);
        const int rate = realise((m & field::rate) && (m & field::rate_selector), r.rate_selector, r.rate, port_rate);
        if (mtu <= 0 || rate <= 0)
            return {sa_status::req_invalid, echo};
        g.mtu_selector = g.rate_selector = g.life_selector = Selector::exactly;
        g.mtu = static_cast<std::uint8_t>(mtu);
        g.rate = static_cast<std::uint8_t>(rate);
        g.mlid = alloc_mlid();
        if (!g.mlid)
            return {sa_status::no_resources, echo};
        Group &grp = groups[mgid];
        grp.rec = g;
        add(grp, r.port_gid, r.join_state);
        McRecord out = g;
        out.port_gid = r.port_gid;
        out.join_state = grp.members[r.port_gid];
        return {0, out};
    }

    std::pair<std::uint16_t, McRecord> del(const SaRequest &req, McRecord echo) {
        const McRecord &r = req.record;
        auto it = groups.find(r.mgid);
        if (it == groups.end())
            return {sa_status::req_invalid, echo};
        Group &g = it->second;
        auto mit = g.members.find(r.port_gid);
        if (mit == g.members.end())
            return {sa_status::req_invalid, echo};
        const std::uint8_t stored = mit->second;
        const std::uint8_t bits = r.join_state;
        if (!bits || (bits & ~stored))
            return {sa_status::req_invalid, echo};
        const std::uint8_t now = static_cast<std::uint8_t>(stored & ~bits);
        // osm_mgrp_remove_port: keep the port only on FullMember, or when someone else is full.
        const bool others_full = g.full_members > ((stored & join::full) ? 1 : 0);
        if ((now & join::full) || (now && others_full)) {
            mit->second = now;
            echo.join_state = now;
        } else {
            g.members.erase(mit);
            echo.join_state = 0;
        }
        // ...but the full_members count treats 0x8 as full: 0x9 minus 0x1 removes the port
        // without decrementing, and the MLID stays pinned (doc/sa-multicast.md §13).
        if (fullish(stored) && !fullish(now) && --g.full_members == 0) {
            mlids.erase(g.rec.mlid);
            groups.erase(it);
            return {0, echo};
        }
        bool any_full_port = false;
        for (const auto &[port, js] : g.members)
            any_full_port = any_full_port || fullish(js);
        if (!any_full_port && g.full_members > 0)
            ++mlid_leaks;
        return {0, echo};
    }
};

// SaService over FakeSaState. Requests queue until the test delivers them; a fate chosen per
// request decides whether it is answered, lost on the way in, lost on the way back (applied
// but unanswered), bounced, or answered with an injected status.
class FakeSa : public SaService {
public:
    // retransmitted: the first try was applied but its answer lost; the retransmit is applied
    // again and answered (a Delete then sees ERR_REQ_INVALID, as from a real SA).
    enum class Fate { deliver, lose_request, lose_response, bounce, inject_status, retransmitted };

    FakeSaState state;
    std::map<PortIndex, Gid> port_gids;
    std::vector<SaRequest> log; // every request submitted, in order
    std::function<Fate(const SaRequest &)> fate = [](const SaRequest &) { return Fate::deliver; };
    std::uint16_t injected_status = sa_status::no_resources;

    TxnId submit(const SaRequest &req, Callback done) override {
        log.push_back(req);
        const TxnId id = next_++;
        queue_.push_back(Pending{id, req, std::move(done)});
        return id;
    }

    void cancel(TxnId id) override {
        for (auto it = queue_.begin(); it != queue_.end(); ++it)
            if (it->id == id) {
                queue_.erase(it);
                return;
            }
    }

    // Nothing is ranked here (requests are handled in the order the test steps them): this only
    // records which were hastened and makes them the client's.
    void hasten(TxnId id) override {
        hastened.push_back(id);
        for (Pending &p : queue_)
            if (p.id == id && p.req.lane == SaLane::background)
                p.req.lane = SaLane::window;
    }
    std::vector<TxnId> hastened; // every hasten() call, in order

    std::size_t pending() const { return queue_.size(); }

    // Handles the oldest queued request. Returns false when none is queued.
    bool step() {
        if (queue_.empty())
            return false;
        Pending p = std::move(queue_.front());
        queue_.pop_front();
        SaResult res;
        res.tries = 1;
        switch (fate(p.req)) {
        case Fate::deliver: {
            auto [status, rec] = state.handle(p.req, port_gids.at(p.req.port));
            res.kind = SaResult::Kind::response;
            res.status = status;
            res.record = rec;
            break;
        }
        case Fate::lose_response:
            state.handle(p.req, port_gids.at(p.req.port));
            res.tries = 3;
            break;
        case Fate::lose_request:
            res.tries = 3;
            break;
        case Fate::bounce:
            res.tries = 3;
            res.bounced = true;
            break;
        case Fate::retransmitted: {
            state.handle(p.req, port_gids.at(p.req.port));
            auto [status, rec] = state.handle(p.req, port_gids.at(p.req.port));
            res.kind = SaResult::Kind::response;
            res.status = status;
            res.record = rec;
            res.tries = 2;
            break;
        }
        case Fate::inject_status:
            res.kind = SaResult::Kind::response;
            res.status = injected_status;
            res.record = p.req.record;
            break;
        }
        p.done(res);
        return true;
    }

    // Delivers until nothing is queued (answers may queue more). Returns requests handled.
    int run() {
        int n = 0;
        while (step())
            ++n;
        return n;
    }

    int count(SaMethod m) const {
        int n = 0;
        for (const auto &r : log)
            n += r.method == m;
        return n;
    }

private:
    struct Pending {
        TxnId id;
        SaRequest req;
        Callback done;
    };
    std::deque<Pending> queue_;
    TxnId next_ = 1;
};

} // namespace mcastd::test
