// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
#include "core/sa_knowledge.hpp"

namespace mcastd {

namespace {

constexpr std::uint8_t kFull = join::full;
constexpr std::uint8_t kSendOnlyFull = join::send_only_full;
constexpr std::uint8_t kFullish = kFull | kSendOnlyFull;

std::uint8_t bits(unsigned v) { return static_cast<std::uint8_t>(v); }

} // namespace

std::uint64_t changed_fields(const McRecord &a, const McRecord &b) {
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
    // A RoCE group's source: a new index means a new address handle (doc/roce-multicast.md).
    if (a.sgid_index != b.sgid_index) d |= field::sgid_index;
    if (a.netdev != b.netdev) d |= field::netdev;
    return d;
}

void SaKnowledge::sa_may_have_lost() {
    uncertain = bits(uncertain | held);
    held = 0;
}

void SaKnowledge::probed_foreign(std::uint8_t stored) {
    foreign = stored;
    probed = true;
}

void SaKnowledge::resynced(std::uint8_t stored) {
    // Every bit the daemon may have set is held or uncertain: a bit the port holds beyond those
    // is another agent's (one that joined since, or one an owned prefix's lone Set, unanswered,
    // never saw), never the daemon's to delete.
    const std::uint8_t ours = bits(held | uncertain);
    foreign = bits((foreign | (stored & ~ours)) & stored);
    held = bits(stored & ours & ~foreign);
    uncertain = 0;
}

void SaKnowledge::group_found(const McRecord &rec, const Gid &port_gid, std::uint64_t epoch) {
    record = rec;
    record.port_gid = port_gid;
    record.join_state = 0;
    have_record = true;
    record_epoch = epoch;
}

void SaKnowledge::group_gone(bool keep_record) {
    foreign = 0;
    held = 0;
    absent = true;
    have_record = keep_record;
}

std::uint64_t SaKnowledge::refreshed(const McRecord &rec, std::uint64_t epoch) {
    McRecord now = rec;
    now.port_gid = record.port_gid;
    now.join_state = record.join_state;
    // OpenSM stores whatever scope the Set carried; the MGID's own nibble is the truth.
    now.scope = mgid_scope(now.mgid);
    const std::uint64_t changed = have_record ? changed_fields(record, now) : 0;
    record = now;
    have_record = true;
    record_epoch = epoch;
    record_doubt = false;
    return changed;
}

std::uint64_t SaKnowledge::mlid_seen(std::uint16_t mlid) {
    if (!mlid || mlid == record.mlid)
        return 0;
    record.mlid = mlid;
    return field::mlid;
}

SaKnowledge::SetAnswer SaKnowledge::set_answered(const McRecord &resp, std::uint8_t set_bits, bool trusted,
                                                 const Gid &port_gid, std::uint64_t epoch) {
    const bool had = have_record;
    const McRecord old = record;
    record = resp;
    record.port_gid = port_gid;
    record.scope = mgid_scope(record.mgid);
    have_record = true;
    absent = false;
    SetAnswer out;
    out.changed = had && !is_zero(old.mgid) ? changed_fields(old, record) : 0;
    if (!trusted) {
        uncertain = bits(uncertain | set_bits);
        return out;
    }
    record_epoch = epoch;
    record_doubt = false;
    // The response's JoinState is exactly what the port now holds, so it settles every
    // uncertainty. Bits nobody here accounts for were set by another agent since the probe:
    // never ours to delete. Bits that vanished are no longer held by anyone.
    const std::uint8_t stored = bits(resp.join_state | set_bits);
    out.others = bits(stored & ~(held | uncertain | foreign | set_bits));
    foreign = bits((foreign & stored) | out.others);
    held = bits(stored & ~foreign);
    uncertain = 0;
    return out;
}

void SaKnowledge::set_unanswered(std::uint8_t set_bits) {
    uncertain = bits(uncertain | (set_bits & ~held));
    record_doubt = true;
}

void SaKnowledge::deleted(std::uint8_t del_bits, std::uint8_t remaining) {
    held = bits(held & ~del_bits);
    uncertain = bits(uncertain & ~del_bits);
    // The DeleteResp carries what the port still holds. OpenSM drops a port entirely when no
    // full member is left, taking bits we still hold with it.
    held = bits(held & remaining);
    // If that was the port's last full-type bit and nobody else on the fabric is a full
    // member, OpenSM deletes the whole group after answering, even though the DeleteResp
    // still shows our non-member bits. They become uncertain: reconcile() re-sets them if
    // members need them (a no-op if the group lives on, `lost` if not), or probes before
    // deleting them.
    if ((del_bits & kFullish) && !((held | foreign) & kFullish)) {
        uncertain = bits(uncertain | held);
        held = 0;
    }
}

void SaKnowledge::delete_uncertain(std::uint8_t del_bits) {
    held = bits(held & ~del_bits);
    uncertain = bits(uncertain | del_bits);
}

void SaKnowledge::forget() {
    have_record = false;
    absent = false;
    probed = false;
}

void SaKnowledge::fold_in(const SaKnowledge &other) {
    held = bits(held | other.held);
    record = other.record;
    have_record = true;
    absent = false;
    probed = true;
}

SaKnowledge::Step SaKnowledge::reconcile(std::uint8_t want, std::uint64_t epoch) const {
    using K = Step::Kind;
    if (uncertain & ~want)
        return {K::resync, 0, false};
    const std::uint8_t missing = bits(want & ~present());
    std::uint8_t extra = bits(held & ~want);
    bool kept = false;
    if ((extra & kFull) && (foreign & kSendOnlyFull)) {
        // Deleting our 0x1 would pin the MLID, deleting 0x9 would cut the other agent off:
        // leave 0x1 in place.
        extra = bits(extra & ~kFull);
        kept = true;
    }
    if (missing && !(extra & kFull))
        return {K::repair, missing, kept};
    if (extra) {
        // Deleting 0x1 is safe only when the port surely does not hold 0x8: if 0x8 may still
        // be there (a lost answer), learn the exact state first.
        if ((extra & kFull) && (uncertain & kSendOnlyFull))
            return {K::resync, 0, kept};
        std::uint8_t del = extra;
        // Never Delete 0x1 while 0x8 stays held: delete both, then re-set 0x8.
        if ((del & kFull) && (held & kSendOnlyFull))
            del = bits(del | kSendOnlyFull);
        return {K::remove, del, kept};
    }
    // The bits are right, the record may not be (a Set that went unanswered may have
    // re-created the group): members must hear of a new MLID.
    if (want && have_record && !fresh(epoch))
        return {K::refresh, 0, kept};
    return {K::none, 0, kept};
}

} // namespace mcastd
